//! The worker itself, shared by the example and its emulator test.

use chrono::{TimeDelta, Utc};
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, CommandRequest, Connection, Execution, Journal, JournalError, Provider,
    ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use tokio::sync::Notify;

/// Payouts drained by default.
#[allow(dead_code)] // main.rs reads it; the emulator test that includes this file does not
pub const DEFAULT_PAYOUTS: u64 = 50;
/// The longest list the example accepts.
#[allow(dead_code)] // likewise
pub const MAX_PAYOUTS: u64 = 1_000;

/// A fake payout provider: it deduplicates by idempotency key as a real one does, and
/// "loses" the answer to one chosen payout: it makes the payout, then never answers.
pub struct FakeProvider {
    payouts: Mutex<HashMap<String, Value>>,
    sends: Mutex<u64>,
    lose: Mutex<Option<String>>,
    lost: Notify,
}

impl FakeProvider {
    fn new(lose_amount_of: Option<i64>) -> Self {
        Self {
            payouts: Mutex::new(HashMap::new()),
            sends: Mutex::new(0),
            lose: Mutex::new(lose_amount_of.map(|cents| cents.to_string())),
            lost: Notify::new(),
        }
    }

    fn payouts(&self) -> usize {
        self.payouts.lock().map_or(0, |p| p.len())
    }

    fn sends(&self) -> u64 {
        self.sends.lock().map_or(0, |s| *s)
    }
}

impl Provider for FakeProvider {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        if let Ok(mut sends) = self.sends.lock() {
            *sends += 1;
        }
        let amount = request.parameters["amount"].to_string();
        let payout = {
            let Ok(mut payouts) = self.payouts.lock() else {
                return ProviderAnswer::Unknown;
            };
            let next = payouts.len() + 1;
            payouts
                .entry(request.key.to_owned())
                .or_insert_with(|| {
                    json!({"id": format!("po_{next:04}"), "amount": request.parameters["amount"],
                           "status": "paid"})
                })
                .clone()
        };
        let lose = self
            .lose
            .lock()
            .ok()
            .and_then(|mut lose| lose.take_if(|a| *a == amount));
        if lose.is_some() {
            // The payout exists; its answer never arrives.
            self.lost.notify_one();
            return std::future::pending().await;
        }
        ResultEnvelope::new(&payout).map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded)
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        let found = self.payouts.lock().ok().and_then(|p| p.get(key).cloned());
        match found.map(|payout| ResultEnvelope::new(&payout)) {
            Some(Ok(envelope)) => ProviderAnswer::Succeeded(envelope),
            Some(Err(_)) => ProviderAnswer::Unknown,
            None => ProviderAnswer::NotFound,
        }
    }
}

/// What the run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Payouts in the list.
    pub commands: u64,
    /// Payouts the provider holds.
    pub provider_payouts: usize,
    /// Sends the provider received (a re-send of the lost answer included).
    pub provider_sends: u64,
    /// Answers of the first run, before the crash.
    pub first_run_paid: u64,
    /// Answers of the restarted run: paid now, and replayed from the journal.
    pub restart_paid: u64,
    /// Stored results replayed to the restarted run without a send.
    pub restart_replayed: u64,
    /// Whether `verify` found the journal clean.
    pub verify_clean: bool,
}

impl Report {
    /// Every payout made once, each answered, and the journal clean.
    pub fn all_once(&self) -> bool {
        self.provider_payouts as u64 == self.commands
            && self.provider_sends == self.commands + 1
            && self.restart_paid + self.restart_replayed == self.commands
            && self.verify_clean
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "payouts: {}", self.commands)?;
        writeln!(
            f,
            "first run: {} paid, then a crash mid-send",
            self.first_run_paid
        )?;
        writeln!(
            f,
            "restart (61 s later, simulated clock): {} paid, {} replayed from the journal",
            self.restart_paid, self.restart_replayed
        )?;
        writeln!(
            f,
            "provider: {} payouts, {} sends (the lost answer re-sent once with its key)",
            self.provider_payouts, self.provider_sends
        )?;
        writeln!(
            f,
            "verify: {}",
            if self.verify_clean {
                "clean"
            } else {
                "NOT clean"
            }
        )
    }
}

fn payout(n: u64) -> Result<(CommandInput, ProviderPlan), JournalError> {
    let amount = 1_000 + i64::try_from(n).unwrap_or(0);
    let command_id =
        uuid::Uuid::from_u128(0x5eed_0000_0000_4000_8000_0000_0000_0000 | u128::from(n))
            .to_string();
    let payload = json!({"payee": format!("payee-{n}"), "amount": amount});
    let command = CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "service",
        caller_id: "payout_worker",
        command_id: &command_id,
        command_type: "payout",
        endpoint_schema_version: 1,
        payload: &payload,
    })?;
    let plan = ProviderPlan::new(ProviderPlanRequest {
        provider: "fake_payouts",
        account: "acct_example",
        mode: "test",
        api_version: "2026-01-01",
        operation: "payout",
        endpoint: "POST /v1/payouts",
        parameters: &json!({"amount": amount, "destination": format!("payee-{n}")}),
        key_retention_seconds: 86_400,
    })?;
    Ok((command, plan))
}

/// Drains `payouts` commands: a first worker crashes on the payout a third of the
/// way in (its answer lost mid-send), a restarted worker drains the whole list.
pub async fn run(connection: &Connection, payouts: u64) -> Result<Report, String> {
    drain(connection, payouts).await
}

async fn drain(connection: &Connection, payouts: u64) -> Result<Report, String> {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let crash_at = payouts / 3;
    let list: Vec<_> = (0..payouts)
        .map(payout)
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let provider = FakeProvider::new(Some(1_000 + i64::try_from(crash_at).unwrap_or(0)));
    let mut report = Report {
        commands: payouts,
        ..Report::default()
    };

    // The first worker: drains until the provider swallows an answer, then dies.
    let first = Journal::new(connection.clone()).with_clock(clock.clone());
    let drain = async {
        for (command, plan) in &list {
            if let Execution::Succeeded(_) = first.execute(command, plan, &provider).await? {
                report.first_run_paid += 1;
            }
        }
        Ok::<(), JournalError>(())
    };
    tokio::select! {
        drained = drain => drained.map_err(|e| e.to_string())?,
        () = provider.lost.notified() => {} // the crash: the drain is dropped mid-send
    }

    // The restart: a new journal, after the dead worker's lease has expired.
    clock.advance(TimeDelta::seconds(61));
    let restarted = Journal::new(connection.clone()).with_clock(clock.clone());
    for (index, (command, plan)) in list.iter().enumerate() {
        let sent_before = provider.sends();
        let answer = restarted
            .execute(command, plan, &provider)
            .await
            .map_err(|e| e.to_string())?;
        match answer {
            Execution::Succeeded(_) if provider.sends() == sent_before => {
                report.restart_replayed += 1;
            }
            Execution::Succeeded(_) => report.restart_paid += 1,
            other => return Err(format!("payout {index} did not finish: {other:?}")),
        }
    }
    report.provider_payouts = provider.payouts();
    report.provider_sends = provider.sends();
    let verified = command_journal::verify(connection, &mut |_| {})
        .await
        .map_err(|e| e.to_string())?;
    report.verify_clean = verified.clean;
    Ok(report)
}

//! A seeded randomized concurrency check of the send layer: workers race over a few
//! commands, acquiring leases, beginning sends, recording outcomes (or crashing
//! without one), reconciling, while a shared manual clock jumps across lease expiries
//! and send cutoffs. Every answer is checked as it comes (no permit at or after its
//! cutoff, one key per attempt, a new attempt only after an answered absence) and the
//! stored documents afterwards by the verifier's pure send checks.
//!
//! `CJ_RANDOM_SEED=<n>` replays a seed; a failing run prints its seed.

use super::support;
use chrono::{DateTime, TimeDelta};
use command_journal::ProviderAnswer;
use command_journal::identity::OperationSlug;
use command_journal::sends::{AttemptNumber, BeginSendOutput, SendOutcomeOutput};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, FenceEpoch, JournalError, LeaseId, LeaseOutput, ProviderPlan,
    ProviderPlanRequest, TerminalReferenceFingerprint,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

const WORKERS: u64 = 6;
const COMMANDS: u64 = 3;
const ROUNDS: u64 = 30;
const DEFAULT_SEED: u64 = 0x5eed_5e4d;
/// One hour of key retention: a 45 min cutoff.
const RETENTION: i64 = 3_600;

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: "acct_random",
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 700}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid plan")
}

/// What a worker holds: its lease id, fence and command, and the attempt it last got.
type Held = Option<(LeaseId, Option<FenceEpoch>, usize, Option<AttemptNumber>)>;

struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "send randomized check failed; replay with CJ_RANDOM_SEED={}",
                self.0
            );
        }
    }
}

/// What the workers were told, per command.
#[derive(Default)]
struct Told {
    /// attempt -> the key every permit of it carried.
    keys: BTreeMap<AttemptNumber, String>,
    /// Attempts answered `send_absent`.
    absent: BTreeSet<AttemptNumber>,
    permits: usize,
    terminal: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_racing_sends_outcomes_and_reconciliation_keep_every_send_invariant() {
    let seed = std::env::var("CJ_RANDOM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let _report = SeedReport(seed);
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_920_000_000, 0).expect("time"),
    ));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let commands: Vec<CommandInput> = (0..COMMANDS)
        .map(|n| support::command(8000 + n, json!({"n": n})))
        .collect();
    for cmd in &commands {
        journal.register_command(cmd).await.expect("register");
    }
    let told: Arc<Mutex<Vec<Told>>> =
        Arc::new(Mutex::new((0..COMMANDS).map(|_| Told::default()).collect()));
    let mut rng = fastrand::Rng::with_seed(seed);
    // Per worker: the lease it holds (id, fence, command) and the attempt it last got.
    let mut held: Vec<Held> = (0..WORKERS).map(|_| None).collect();
    let mut lease_counter = 0u64;
    for round in 0..ROUNDS {
        let now = command_journal::Clock::now(&*clock);
        let mut tasks = Vec::new();
        for holding in &held {
            let choice = rng.u8(0..100);
            let (lease, fence, c, last) = match holding.clone() {
                Some(h) => h,
                None => {
                    lease_counter += 1;
                    let lease = LeaseId::parse(&support::uuid(9, lease_counter)).expect("lease id");
                    (lease, None, rng.usize(0..COMMANDS as usize), None)
                }
            };
            let (journal, cmd, told) = (journal.clone(), commands[c].clone(), told.clone());
            let reference =
                TerminalReferenceFingerprint::parse(&format!("{:02x}", rng.u8(..)).repeat(32))
                    .expect("reference");
            let evidence_pick = rng.u8(0..10);
            tasks.push(tokio::spawn(async move {
                let cutoff_check = |permit_cutoff: command_journal::Timestamp| {
                    assert!(
                        now < permit_cutoff.to_datetime(),
                        "round {round}: a permit at or after its cutoff"
                    );
                };
                let Some(fence) = fence else {
                    return match journal.acquire_lease(&cmd, &lease).await {
                        Ok(LeaseOutput::Acquired { fence_epoch, .. }) => {
                            Some((lease, Some(fence_epoch), c, None))
                        }
                        Ok(_) => None,
                        Err(e) => panic!("round {round}: acquire {e:?}"),
                    };
                };
                let keep = Some((lease.clone(), Some(fence), c, last));
                let refusal = |e: JournalError| {
                    assert!(
                        matches!(
                            e,
                            JournalError::LeaseNotHeld
                                | JournalError::StaleFence
                                | JournalError::LeaseExpired
                                | JournalError::ClockRegression
                                | JournalError::SendCutoffPassed
                                | JournalError::AttemptMismatch
                                | JournalError::TerminalConflict
                                | JournalError::AbsenceNotProvable { .. }
                        ),
                        "round {round}: {e:?}"
                    );
                };
                let action = match (choice, last) {
                    (0..10, _) => 0,
                    (10..45, _) | (45..80, None) => 1,
                    (45..80, Some(_)) => 2,
                    _ => 3,
                };
                match (action, last) {
                    // Crash: the lease is abandoned.
                    (0, _) => None,
                    (1, _) => match journal.begin_send(&cmd, &lease, fence, &plan()).await {
                        Ok(BeginSendOutput::Permitted(p)) => {
                            cutoff_check(p.send_cutoff_at);
                            let mut told = told.lock().expect("lock");
                            let t = &mut told[c];
                            t.permits += 1;
                            let key = t
                                .keys
                                .entry(p.attempt)
                                .or_insert_with(|| p.provider_idempotency_key.clone());
                            assert_eq!(key, &p.provider_idempotency_key, "one key per attempt");
                            Some((lease, Some(fence), c, Some(p.attempt)))
                        }
                        Ok(BeginSendOutput::Terminal(_)) => None,
                        Err(e) => {
                            refusal(e);
                            keep
                        }
                    },
                    (2, Some(attempt)) => {
                        let outcome = match choice % 3 {
                            0 => ProviderAnswer::SucceededWithReference(reference),
                            1 => ProviderAnswer::Declined,
                            _ => ProviderAnswer::Unknown,
                        };
                        match journal
                            .record_send_outcome(&cmd, &lease, fence, &plan(), attempt, &outcome)
                            .await
                        {
                            Ok(SendOutcomeOutput::Terminal(_)) => {
                                told.lock().expect("lock")[c].terminal += 1;
                                None
                            }
                            Ok(_) => keep,
                            Err(e) => {
                                refusal(e);
                                keep
                            }
                        }
                    }
                    _ => {
                        // Reconcile the command's current attempt, as status shows it.
                        let status = journal.send_status(&cmd).await.expect("status");
                        let Some(send) = status.send else {
                            return keep;
                        };
                        let evidence = match evidence_pick {
                            0 => ProviderAnswer::SucceededWithReference(reference),
                            1 => ProviderAnswer::Declined,
                            _ => ProviderAnswer::NotFound,
                        };
                        match journal
                            .reconcile_send(&cmd, &lease, fence, &plan(), send.attempt, &evidence)
                            .await
                        {
                            Ok(SendOutcomeOutput::Absent { attempt }) => {
                                told.lock().expect("lock")[c].absent.insert(attempt);
                                keep
                            }
                            Ok(SendOutcomeOutput::Terminal(_)) => None,
                            Ok(other) => panic!("round {round}: {other:?}"),
                            Err(e) => {
                                refusal(e);
                                keep
                            }
                        }
                    }
                }
            }));
        }
        for (worker, task) in tasks.into_iter().enumerate() {
            held[worker] = task.await.expect("worker");
        }
        // The clock: stay, a second, past a lease, or far (toward a cutoff).
        let step = match rng.u8(0..10) {
            0..3 => TimeDelta::zero(),
            3..6 => TimeDelta::seconds(1),
            6..9 => TimeDelta::seconds(61),
            _ => TimeDelta::seconds(1_200),
        };
        clock.advance(step);
    }
    // The stored documents, checked by the verifier.
    assert_verified(&connection).await;
    let told = std::mem::take(&mut *told.lock().expect("lock"));
    let mut sent = 0;
    for (c, cmd) in commands.iter().enumerate() {
        if let Some(key) = told[c].keys.get(&AttemptNumber::FIRST) {
            let op = OperationSlug::parse("charge").expect("slug");
            assert_eq!(key, &cmd.identity().provider_idempotency_key(&op));
        }
        sent += told[c].permits;
        // A new attempt (a new key) only after the previous one was answered absent.
        for attempt in told[c].keys.keys().filter(|a| **a >= 2) {
            assert!(
                told[c].absent.iter().any(|a| a.next() == Some(*attempt)),
                "command {c}: attempt {attempt} without a recorded absence"
            );
        }
    }
    let summary: Vec<String> = told
        .iter()
        .map(|t| {
            format!(
                "{} permits, attempts {:?}, absent {:?}, {} terminal answers",
                t.permits,
                t.keys.keys().collect::<Vec<_>>(),
                t.absent,
                t.terminal
            )
        })
        .collect();
    println!("send randomized (seed {seed}): {summary:?}");
    assert!(sent > 0, "the run issued no permit at all: seed {seed}");
}

/// `verify` finds nothing wrong with the whole project: every command's send
/// documents, send events and their agreement with its lifecycle, with everything else
/// the journal stores.
pub async fn assert_verified(connection: &command_journal::Connection) {
    let report = command_journal::verify(connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}

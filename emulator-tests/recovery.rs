//! `Journal::recover` against the emulator, in this binary's mode: a command whose
//! caller crashed after the provider charged and before the outcome was recorded is
//! settled by the recovery with that charge, exactly once, with no client; the
//! client's late retry replays it; a lookup that fails writes nothing and leaves it
//! listed; a request lost before the provider is recorded absent once provable, at
//! the plan's own account only, and the client's retry charges once under the next
//! key; 24 recovery jobs racing each other and a returning client settle it once; a
//! run resumes from its cursor; the recovery never sends; nothing leaks. `runs`: the
//! runs of a deployment (schedules, tasks, checkpoints, deadlines).

use super::support::{self, command};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::recovery::{RecoverOptions, Recovered, Recovery};
use command_journal::sends::LookupRequest;
use command_journal::sends::{AttemptNumber, AttemptState};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Execution, Journal, JournalError, Provider, ProviderAccount, ProviderAnswer,
    ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

mod runs;

fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_930_000_000, 0).expect("time")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_CANARYrecovery",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

/// The plan's account, as the recovery job declares it.
fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_CANARYrecovery", "test").expect("valid account")
}

/// Options declaring the plan's account, as the reference job does.
fn options() -> RecoverOptions {
    RecoverOptions {
        account: Some(account()),
        ..RecoverOptions::default()
    }
}

/// A provider holding one charge per key, as a real one does: a re-send with the same
/// key answers the charge already made. A send can crash its caller: the charge is
/// made, then the answer never comes (the test drops the call).
#[derive(Default)]
struct Charges {
    held: Mutex<HashMap<String, Value>>,
    sends: AtomicUsize,
    lookups: AtomicUsize,
    /// The next send makes the charge, then never answers.
    crash_next: AtomicBool,
    /// The next send is lost before it reaches the provider: no charge, no answer.
    lose_next: AtomicBool,
    charged: Notify,
    /// Notified at each lookup.
    looked_up: Notify,
    /// Lookups answer unavailable.
    failing: AtomicBool,
    /// Lookups answer a decline.
    declining: AtomicBool,
    /// Lookups are asked at another account, which holds nothing.
    other_account: AtomicBool,
}

impl Charges {
    fn charges(&self) -> usize {
        self.held.lock().expect("held").len()
    }

    fn envelope(charge: &Value) -> ResultEnvelope {
        ResultEnvelope::new(charge).expect("envelope")
    }
}

impl Provider for Charges {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.sends.fetch_add(1, Ordering::SeqCst);
        if self.lose_next.swap(false, Ordering::SeqCst) {
            self.charged.notify_one();
            return std::future::pending().await;
        }
        let charge = {
            let mut held = self.held.lock().expect("held");
            let n = held.len() + 1;
            held.entry(request.key.to_owned())
                .or_insert_with(|| {
                    json!({"id": format!("ch_CANARYreceipt{n}"), "amount": 1250, "currency": "eur", "status": "succeeded"})
                })
                .clone()
        };
        if self.crash_next.swap(false, Ordering::SeqCst) {
            self.charged.notify_one();
            return std::future::pending().await;
        }
        ProviderAnswer::Succeeded(Self::envelope(&charge))
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.looked_up.notify_one();
        if self.failing.load(Ordering::SeqCst) {
            return ProviderAnswer::Unknown;
        }
        if self.declining.load(Ordering::SeqCst) {
            return ProviderAnswer::Declined;
        }
        if self.other_account.load(Ordering::SeqCst) {
            return ProviderAnswer::NotFound;
        }
        match self.held.lock().expect("held").get(key) {
            Some(charge) => ProviderAnswer::Succeeded(Self::envelope(charge)),
            None => ProviderAnswer::NotFound,
        }
    }
}

struct Fixture {
    connection: command_journal::Connection,
    clock: Arc<ManualClock>,
    journal: Journal,
    provider: Arc<Charges>,
}

impl Fixture {
    async fn new() -> Self {
        let connection = support::fresh_connection().await;
        let clock = Arc::new(ManualClock::new(start_time()));
        let journal = support::clocked_journal(connection.clone(), clock.clone());
        Self {
            connection,
            clock,
            journal,
            provider: Arc::new(Charges::default()),
        }
    }

    /// `cmd`'s caller sends and crashes once the provider has charged: the attempt
    /// is `sending`, the charge exists, no outcome is recorded.
    async fn crash_after_the_charge(&self, cmd: &CommandInput) {
        self.crash_mid_send(cmd, &self.provider.crash_next, 1).await;
    }

    /// `cmd`'s caller sends and crashes while its request is lost on the way: the
    /// attempt is `sending`, the provider holds nothing.
    async fn crash_before_the_provider(&self, cmd: &CommandInput) {
        self.crash_mid_send(cmd, &self.provider.lose_next, 0).await;
    }

    /// `cmd`'s caller sends with `fault` set and is dropped once the provider took
    /// the request, which made `charged` new charges.
    async fn crash_mid_send(&self, cmd: &CommandInput, fault: &AtomicBool, charged: usize) {
        fault.store(true, Ordering::SeqCst);
        let charges = self.provider.charges();
        let plan = plan();
        let execute = self.journal.execute(cmd, &plan, self.provider.as_ref());
        tokio::select! {
            answer = execute => panic!("the crashed call answered {answer:?}"),
            () = self.provider.charged.notified() => {}
        }
        assert_eq!(self.provider.charges(), charges + charged);
    }

    /// `cmd`'s current attempt and its state.
    async fn send_state(&self, cmd: &CommandInput) -> (AttemptNumber, AttemptState) {
        let status = self.journal.send_status(cmd).await.expect("status");
        let send = status.send.expect("send");
        (send.attempt, send.state)
    }

    /// A run declaring the plan's account.
    async fn recover(&self) -> Recovery {
        self.recover_with(&options()).await
    }

    async fn recover_with(&self, options: &RecoverOptions) -> Recovery {
        self.journal
            .recover(self.provider.as_ref(), options, |_| {})
            .await
            .expect("recover")
    }

    async fn verify_clean(&self) {
        let report = command_journal::verify(&self.connection, &mut |_| {})
            .await
            .expect("verify");
        assert!(report.clean, "verify: {:?}", report.findings);
    }
}

fn outcomes(report: &Recovery) -> Vec<Result<Recovered, JournalError>> {
    report.commands.iter().map(|c| c.outcome).collect()
}

#[tokio::test]
async fn recovery_settles_a_crash_after_the_charge_and_the_late_retry_replays_it() {
    let f = Fixture::new().await;
    let cmd = command(1201, json!({"order": "CANARYorder"}));
    f.crash_after_the_charge(&cmd).await;

    // The lease still runs: nothing is pending, nothing is recovered.
    let early = f.recover().await;
    assert_eq!((early.pending.len(), early.commands.len()), (0, 0));

    // No client comes back; the job runs past the lease.
    f.clock.advance(TimeDelta::seconds(61));
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!(listing.pending.len(), 1);
    let before = f.journal.stats();
    let report = f.recover().await;
    // Round trips after the listing's query: its read of the command, the recovery's
    // first read (identity and status), the takeover (read, commit) and the
    // reconciliation, one commit planned from the takeover in preconditions mode.
    let reconcile = match support::mode() {
        command_journal::Concurrency::Preconditions => 1,
        command_journal::Concurrency::Transaction => 2,
    };
    assert_eq!(
        f.journal.stats().since(&before).rpcs(),
        2 * support::observation_rpcs() + 2 + reconcile
    );
    assert_eq!(report.pending.len(), 1);
    assert_eq!(outcomes(&report), [Ok(Recovered::Succeeded)]);
    assert_eq!(
        report.commands[0].command_key_hash,
        *cmd.identity().command_key_hash()
    );
    assert_eq!(report.cursor, None);
    assert_eq!(f.provider.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(
        f.provider.sends.load(Ordering::SeqCst),
        1,
        "recovery never sends"
    );
    let status = f.journal.send_status(&cmd).await.expect("status");
    assert_eq!(status.command.state.as_str(), "succeeded");
    let send = status.send.expect("send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Succeeded)
    );
    assert!(
        f.journal
            .pending()
            .await
            .expect("pending")
            .pending
            .is_empty()
    );

    // The client's late retry: the stored charge, byte for byte, and no send.
    f.clock.advance(TimeDelta::seconds(600));
    let late = f
        .journal
        .execute(&cmd, &plan(), f.provider.as_ref())
        .await
        .expect("late retry");
    let charge = json!({"id": "ch_CANARYreceipt1", "amount": 1250, "currency": "eur", "status": "succeeded"});
    let Execution::Succeeded(envelope) = late else {
        panic!("{late:?}");
    };
    assert_eq!(envelope.canonical(), Charges::envelope(&charge).canonical());
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 1);
    assert_eq!(f.provider.charges(), 1, "exactly one charge");

    // Nothing is left to recover; the journal verifies clean; nothing leaks.
    let again = f.recover().await;
    assert_eq!((again.pending.len(), again.commands.len()), (0, 0));
    f.verify_clean().await;
    let text = format!("{report:?} {listing:?}");
    assert!(!text.contains("CANARY"), "{text}");
}

#[tokio::test]
async fn recovery_with_a_failing_lookup_writes_nothing_and_leaves_it_listed() {
    let f = Fixture::new().await;
    let cmd = command(1202, json!({"order": 2}));
    f.crash_after_the_charge(&cmd).await;
    f.clock.advance(TimeDelta::seconds(61));
    f.provider.failing.store(true, Ordering::SeqCst);
    let before = support::documents(&f.connection).await;
    let report = f.recover().await;
    assert_eq!(outcomes(&report), [Ok(Recovered::LookupUnavailable)]);
    assert_eq!(
        support::documents(&f.connection).await,
        before,
        "nothing written"
    );
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!(listing.pending.len(), 1, "still listed");

    // The provider answers again: the next run settles it.
    f.provider.failing.store(false, Ordering::SeqCst);
    assert_eq!(outcomes(&f.recover().await), [Ok(Recovered::Succeeded)]);
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 1);
    f.verify_clean().await;
}

#[tokio::test]
async fn recovery_records_a_decline_and_leaves_a_command_without_a_send_to_its_client() {
    let f = Fixture::new().await;
    let declined = command(1203, json!({"order": 3}));
    f.crash_after_the_charge(&declined).await;
    // Started, never sent: nothing to look up.
    let lease = command_journal::LeaseId::parse(&support::uuid(0x52, 1)).expect("lease");
    let idle = command(1204, json!({"order": 4}));
    f.journal.start(&idle, &lease).await.expect("start");
    f.clock.advance(TimeDelta::seconds(61));
    f.provider.declining.store(true, Ordering::SeqCst);
    let report = f.recover().await;
    assert_eq!(report.pending.len(), 2);
    assert_eq!(report.waiting(command_journal::pending::Unblock::Retry), 1);
    assert_eq!(outcomes(&report), [Ok(Recovered::Declined)]);
    assert_eq!(
        f.journal
            .status(&declined)
            .await
            .expect("status")
            .state
            .as_str(),
        "failed_final"
    );
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!(
        listing.pending.len(),
        1,
        "the idle command waits for its client"
    );
    assert_eq!(
        listing.pending[0].command_key_hash,
        *idle.identity().command_key_hash()
    );
    let late = f
        .journal
        .execute(&declined, &plan(), f.provider.as_ref())
        .await
        .expect("late retry");
    assert_eq!(late, Execution::Declined);
    f.verify_clean().await;
}

#[tokio::test]
async fn recovery_jobs_racing_each_other_and_a_returning_client_settle_it_once() {
    race_with_a_client(1205, false).await;
}

#[tokio::test]
async fn recovery_jobs_racing_a_client_that_returns_once_they_found_the_charge_settle_it_once() {
    race_with_a_client(1206, true).await;
}

/// 24 recovery jobs and the crashed command's client, racing: the client starts
/// with the jobs, or once the first job has found the charge.
async fn race_with_a_client(n: u64, client_after_a_lookup: bool) {
    const JOBS: u64 = 24;
    let f = Fixture::new().await;
    let cmd = command(n, json!({"order": n}));
    f.crash_after_the_charge(&cmd).await;
    f.clock.advance(TimeDelta::seconds(61));
    let client = {
        let journal = f.journal.clone();
        let provider = Arc::clone(&f.provider);
        let cmd = cmd.clone();
        tokio::spawn(async move {
            if client_after_a_lookup {
                provider.looked_up.notified().await;
            }
            journal.execute(&cmd, &plan(), provider.as_ref()).await
        })
    };
    let jobs = support::race(JOBS, |_| {
        let journal = f.journal.clone();
        let provider = Arc::clone(&f.provider);
        async move {
            journal
                .recover(provider.as_ref(), &RecoverOptions::default(), |_| {})
                .await
        }
    })
    .await;
    let client = client.await.expect("client task").expect("client");
    let mut recovered = Vec::new();
    for job in jobs {
        let report = job.expect("job");
        recovered.extend(outcomes(&report));
    }
    let succeeded = recovered
        .iter()
        .filter(|o| **o == Ok(Recovered::Succeeded))
        .count();
    assert!(
        recovered.iter().all(|o| matches!(
            o,
            Ok(Recovered::Succeeded | Recovered::AlreadySettled | Recovered::InProgress)
        )),
        "{recovered:?}"
    );
    assert_eq!(f.provider.charges(), 1, "exactly one charge");
    let status = f.journal.send_status(&cmd).await.expect("status");
    assert_eq!(status.command.state.as_str(), "succeeded");

    // Exactly one settlement: by a job (the client then waited or replayed), or by
    // the client's re-send under the same key (every job then stood back).
    let documents = support::documents(&f.connection).await;
    let count = |part: &str| documents.iter().filter(|(n, _)| n.contains(part)).count();
    let sends_after = f.provider.sends.load(Ordering::SeqCst);
    println!(
        "recovery race: settled by {}; client answered {client:?}",
        if succeeded == 1 {
            "a recovery job"
        } else {
            "the client"
        }
    );
    if succeeded == 1 {
        assert!(
            matches!(client, Execution::InProgress | Execution::Succeeded(_)),
            "{client:?}"
        );
        assert_eq!(sends_after, 1, "the client did not re-send");
        // Sends: opened, reconciled.
        assert_eq!(count("provider_send_"), 2, "{documents:#?}");
    } else {
        assert_eq!(succeeded, 0, "{recovered:?}");
        assert!(matches!(client, Execution::Succeeded(_)), "{client:?}");
        assert_eq!(sends_after, 2, "the client re-sent once under the same key");
        // Sends: opened, resent, succeeded.
        assert_eq!(count("provider_send_"), 3, "{documents:#?}");
    }
    // Registration, first lease, one takeover, one terminal transition.
    assert_eq!(
        count("/auditEvents/") - count("provider_send_"),
        4,
        "{documents:#?}"
    );
    let replay = f
        .journal
        .execute(&cmd, &plan(), f.provider.as_ref())
        .await
        .expect("replay");
    let charge = json!({"id": "ch_CANARYreceipt1", "amount": 1250, "currency": "eur", "status": "succeeded"});
    assert_eq!(replay, Execution::Succeeded(Charges::envelope(&charge)));
    f.verify_clean().await;
}

#[tokio::test]
async fn recovery_resumes_from_its_cursor_and_reports_progress_in_order() {
    let f = Fixture::new().await;
    let mut hashes = Vec::new();
    for n in 0..3 {
        let cmd = command(1210 + n, json!({"order": 10 + n}));
        f.crash_after_the_charge(&cmd).await;
        hashes.push(cmd.identity().command_key_hash().clone());
    }
    hashes.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    f.clock.advance(TimeDelta::seconds(61));
    let options = RecoverOptions {
        concurrency: 2,
        per_second: Some(50),
        limit: Some(2),
        account: Some(account()),
        ..RecoverOptions::default()
    };
    let mut seen = Vec::new();
    let first = f
        .journal
        .recover(f.provider.as_ref(), &options, |p| {
            seen.push((p.done, p.total, p.command.command_key_hash.clone()));
        })
        .await
        .expect("first run");
    assert_eq!(seen, [(1, 2, hashes[0].clone()), (2, 2, hashes[1].clone())]);
    assert_eq!(first.cursor.as_ref(), Some(&hashes[1]));
    assert_eq!(first.count(Recovered::Succeeded), 2);
    let second = f
        .journal
        .recover(
            f.provider.as_ref(),
            &RecoverOptions {
                after: first.cursor.clone(),
                ..options
            },
            |_| {},
        )
        .await
        .expect("resumed run");
    let handled: Vec<_> = second
        .commands
        .iter()
        .map(|c| c.command_key_hash.clone())
        .collect();
    assert_eq!(handled, [hashes[2].clone()]);
    assert_eq!(second.cursor, None);
    assert_eq!(second.errors(), 0);
    assert!(
        f.journal
            .pending()
            .await
            .expect("pending")
            .pending
            .is_empty()
    );
    assert_eq!(f.provider.charges(), 3);
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn recovery_reports_a_broken_command_and_settles_the_others() {
    let f = Fixture::new().await;
    let broken = command(1220, json!({"order": 20}));
    let sound = command(1221, json!({"order": 21}));
    f.crash_after_the_charge(&broken).await;
    f.crash_after_the_charge(&sound).await;
    f.clock.advance(TimeDelta::seconds(61));
    // The broken command's send record gains a field no codec accepts.
    let path = format!(
        "checkoutRequests/{}/providerSends/current",
        broken.identity().command_key_hash()
    );
    let mut record = support::get(&f.connection, &path)
        .await
        .expect("send record")
        .fields;
    record.insert(
        "note".into(),
        gcloud_sdk::google::firestore::v1::Value {
            value_type: Some(
                gcloud_sdk::google::firestore::v1::value::ValueType::StringValue("x".into()),
            ),
        },
    );
    support::put(&f.connection, &path, record).await;

    // The listing fails closed; the recovery reports the broken one and goes on.
    let listing = f.journal.pending().await;
    assert!(
        matches!(listing, Err(JournalError::JournalCorrupt { .. })),
        "{listing:?}"
    );
    let before = f.provider.lookups.load(Ordering::SeqCst);
    let report = f.recover().await;
    let by_hash: HashMap<String, Result<Recovered, JournalError>> = report
        .commands
        .iter()
        .map(|c| (c.command_key_hash.to_string(), c.outcome))
        .collect();
    assert_eq!(by_hash.len(), 2);
    assert!(matches!(
        by_hash[&broken.identity().command_key_hash().to_string()],
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(
        by_hash[&sound.identity().command_key_hash().to_string()],
        Ok(Recovered::Succeeded)
    );
    assert_eq!(report.errors(), 1);
    assert_eq!(
        f.provider.lookups.load(Ordering::SeqCst),
        before + 1,
        "the broken command's provider is never asked"
    );
}

#[tokio::test]
async fn recovery_records_a_proven_absence_and_the_clients_retry_charges_once() {
    let f = Fixture::new().await;
    let cmd = command(1231, json!({"order": 31}));
    f.crash_before_the_provider(&cmd).await;
    let hash = cmd.identity().command_key_hash().clone();

    // Past the lease but within the settle window: "not found" proves nothing yet.
    f.clock.advance(TimeDelta::seconds(61));
    let before = support::documents(&f.connection).await;
    let early = f.recover().await;
    assert_eq!(outcomes(&early), [Ok(Recovered::NotFound)]);
    assert_eq!(
        support::documents(&f.connection).await,
        before,
        "nothing written"
    );

    // Past the settle window (300 s after the lease that sent it): the absence,
    // at the plan's own account.
    f.clock.advance(TimeDelta::seconds(300));
    let report = f.recover().await;
    assert_eq!(outcomes(&report), [Ok(Recovered::Absent)]);
    // The early run's lookup, then this run's two: before the lease and under it.
    assert_eq!(f.provider.lookups.load(Ordering::SeqCst), 3);
    assert_eq!(
        f.provider.sends.load(Ordering::SeqCst),
        1,
        "recovery never sends"
    );
    let before: HashMap<String, String> = before.into_iter().collect();
    let after: HashMap<String, String> = support::documents(&f.connection)
        .await
        .into_iter()
        .collect();
    let new: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let changed: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    // The takeover's and the absence's events, and the job's release of the lease it
    // took (the command is not finished: its client's retry takes it over at once);
    // the lifecycle and the send record.
    assert_eq!(new.len(), 3, "{new:?}");
    assert!(new.iter().any(|k| k.contains("_0000000003")), "{new:?}");
    assert!(new.iter().any(|k| k.contains("provider_send_")), "{new:?}");
    assert!(
        new.iter().any(|k| k.ends_with("/leaseReleases/0000000002")),
        "{new:?}"
    );
    let mut changed: Vec<&str> = changed
        .iter()
        .filter_map(|k| k.split(hash.as_str()).nth(1))
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, ["/lifecycle/current", "/providerSends/current"]);
    assert_eq!(
        f.send_state(&cmd).await,
        (AttemptNumber::FIRST, AttemptState::Absent)
    );
    // Still listed, for its client: once the job's lease has run out, a retry goes on.
    f.clock.advance(TimeDelta::seconds(61));
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!(listing.pending.len(), 1);
    assert_eq!(listing.pending[0].command_key_hash, hash);
    assert_eq!(listing.pending[0].unblocked_by.as_str(), "retry");
    let again = f.recover().await;
    assert!(again.commands.is_empty(), "nothing to look up: {again:?}");

    // The client's retry opens attempt 2 under a new key and charges once.
    let late = f
        .journal
        .execute(&cmd, &plan(), f.provider.as_ref())
        .await
        .expect("late retry");
    assert!(matches!(late, Execution::Succeeded(_)), "{late:?}");
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 2);
    assert_eq!(f.provider.charges(), 1, "exactly one charge");
    assert_eq!(
        f.send_state(&cmd).await,
        (support::attempt_at(2), AttemptState::Succeeded)
    );
    f.verify_clean().await;
    let text = format!("{report:?} {listing:?}");
    assert!(!text.contains("CANARY"), "{text}");
}

#[tokio::test]
async fn recovery_asking_another_account_never_opens_a_second_key() {
    let f = Fixture::new().await;
    let cmd = command(1230, json!({"order": 30}));
    f.crash_after_the_charge(&cmd).await;
    let before = support::documents(&f.connection).await;
    // A job that declares another account (or another mode) asks nothing and writes
    // nothing, however late.
    let other = RecoverOptions {
        account: Some(ProviderAccount::new("stub", "acct_other", "test").expect("account")),
        ..RecoverOptions::default()
    };
    let live = RecoverOptions {
        account: Some(
            ProviderAccount::new("stub", "acct_CANARYrecovery", "live").expect("account"),
        ),
        ..RecoverOptions::default()
    };
    f.clock.advance(TimeDelta::minutes(10));
    for options in [&other, &live] {
        let report = f.recover_with(options).await;
        assert_eq!(outcomes(&report), [Ok(Recovered::OtherAccount)]);
    }
    assert_eq!(
        f.provider.lookups.load(Ordering::SeqCst),
        0,
        "nothing asked"
    );
    assert_eq!(
        support::documents(&f.connection).await,
        before,
        "nothing written"
    );

    // A job that declares no account, deployed against another one: its lookups find
    // nothing, long after the settle window, the cutoff and the key's retention would
    // have made a "not found" from the right account provable. It proves nothing.
    f.provider.other_account.store(true, Ordering::SeqCst);
    for late in [TimeDelta::zero(), TimeDelta::hours(19)] {
        f.clock.advance(late);
        let report = f.recover_with(&RecoverOptions::default()).await;
        assert_eq!(outcomes(&report), [Ok(Recovered::NotFound)]);
        assert_eq!(
            support::documents(&f.connection).await,
            before,
            "nothing written"
        );
    }
    assert_eq!(
        f.send_state(&cmd).await,
        (AttemptNumber::FIRST, AttemptState::Sending)
    );

    // The client comes back past the cutoff with the right plan: its own lookup finds
    // the charge; no second key, no second charge.
    f.provider.other_account.store(false, Ordering::SeqCst);
    let late = f
        .journal
        .execute(&cmd, &plan(), f.provider.as_ref())
        .await
        .expect("late retry");
    assert!(matches!(late, Execution::Succeeded(_)), "{late:?}");
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 1);
    assert_eq!(f.provider.charges(), 1);
    f.verify_clean().await;
}

#[tokio::test]
async fn recovery_refuses_options_out_of_range() {
    let f = Fixture::new().await;
    for (options, field) in [
        (
            RecoverOptions {
                concurrency: 0,
                ..RecoverOptions::default()
            },
            "recoverConcurrency",
        ),
        (
            RecoverOptions {
                concurrency: command_journal::recovery::MAX_CONCURRENCY + 1,
                ..RecoverOptions::default()
            },
            "recoverConcurrency",
        ),
        (
            RecoverOptions {
                per_second: Some(0),
                ..RecoverOptions::default()
            },
            "recoverPerSecond",
        ),
        (
            RecoverOptions {
                per_second: Some(u32::MAX),
                ..RecoverOptions::default()
            },
            "recoverPerSecond",
        ),
        (
            RecoverOptions {
                limit: Some(0),
                ..RecoverOptions::default()
            },
            "recoverLimit",
        ),
    ] {
        let error = f
            .journal
            .recover(f.provider.as_ref(), &options, |_| {})
            .await
            .expect_err("refused");
        assert_eq!(error.code(), "invalid_input", "{error:?}");
        assert!(format!("{error}").contains(field), "{error}");
    }
}

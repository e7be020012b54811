//! `Journal::record_evidence` against the emulator: evidence given from outside (a
//! provider's event, as the webhook endpoint will give it) settles an ambiguous
//! attempt with no lookup and no client, the client's next call replays the stored
//! result, the same evidence again writes nothing; a decline; an earlier attempt's
//! charge (a roll-forward after the next attempt charged) is a late charge; an ended
//! command and an unknown key write nothing; a "not found" proves nothing; a client's
//! running lease is left to it, and the evidence settles once it has ended.

use super::support::{self, command};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::evidence::{Evidence, EvidenceOptions, EvidenceOutcome};
use command_journal::recovery::{RecoverOptions, Recovered};
use command_journal::sends::{AttemptNumber, AttemptState, LookupRequest};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Execution, Journal, Provider, ProviderAccount, ProviderAnswer, ProviderPlan,
    ProviderPlanRequest, ResultEnvelope, SendRequest,
};
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_930_000_000, 0).expect("time")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_CANARYevents",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_CANARYevents", "test").expect("valid account")
}

fn options() -> EvidenceOptions {
    EvidenceOptions {
        account: Some(account()),
    }
}

fn envelope(n: usize) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": format!("ch_CANARYevent{n}"), "status": "succeeded"}))
        .expect("envelope")
}

/// A provider whose sends answer from a script (a charge once it runs out), and which
/// records every key it was sent and counts its lookups (each answering "not found").
#[derive(Default)]
struct Desk {
    keys: Mutex<Vec<String>>,
    sends: AtomicUsize,
    lookups: AtomicUsize,
    script: Mutex<VecDeque<ProviderAnswer>>,
    /// The next send is lost on its way: no answer ever comes.
    lose_next: AtomicBool,
    lost: Notify,
}

impl Desk {
    fn key(&self, n: usize) -> String {
        self.keys.lock().expect("keys")[n].clone()
    }

    fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

impl Provider for Desk {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        let n = self.sends.fetch_add(1, Ordering::SeqCst) + 1;
        self.keys.lock().expect("keys").push(request.key.to_owned());
        if self.lose_next.swap(false, Ordering::SeqCst) {
            self.lost.notify_one();
            return std::future::pending().await;
        }
        let scripted = self.script.lock().expect("script").pop_front();
        scripted.unwrap_or_else(|| ProviderAnswer::Succeeded(envelope(n)))
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        ProviderAnswer::NotFound
    }
}

struct Fixture {
    connection: command_journal::Connection,
    clock: Arc<ManualClock>,
    journal: Journal,
    desk: Arc<Desk>,
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
            desk: Arc::new(Desk::default()),
        }
    }

    async fn execute(&self, cmd: &CommandInput) -> Execution {
        self.journal
            .execute(cmd, &plan(), self.desk.as_ref())
            .await
            .expect("execute")
    }

    /// `cmd` sent once, its answer unknown: the attempt stays open under the
    /// client's lease (60 s from now).
    async fn ambiguous(&self, cmd: &CommandInput) {
        self.desk
            .script
            .lock()
            .expect("script")
            .push_back(ProviderAnswer::Unknown);
        let answer = self.execute(cmd).await;
        assert!(matches!(answer, Execution::RetryLater { .. }), "{answer:?}");
    }

    async fn record(&self, key: String, answer: ProviderAnswer) -> EvidenceOutcome {
        self.journal
            .record_evidence(Evidence::new(key, answer), &options())
            .await
            .expect("record_evidence")
    }

    async fn send_state(&self, cmd: &CommandInput) -> (AttemptNumber, AttemptState) {
        let status = self.journal.send_status(cmd).await.expect("status");
        let send = status.send.expect("send");
        (send.attempt, send.state)
    }

    /// The journal's documents per collection: exact counts.
    async fn census(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for (name, _) in support::documents(&self.connection).await {
            let (_, path) = name.rsplit_once("/documents/").expect("relative");
            let segments: Vec<&str> = path.split('/').collect();
            let collection = segments[segments.len() - 2].to_owned();
            *counts.entry(collection).or_insert(0) += 1;
        }
        counts
    }

    async fn verify_clean(&self) {
        let report = command_journal::verify(&self.connection, &mut |_| {})
            .await
            .expect("verify");
        assert!(report.clean, "verify: {:?}", report.findings);
    }
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
}

#[tokio::test]
async fn a_charge_given_settles_an_ambiguous_attempt_with_no_lookup_and_the_client_replays_it() {
    let f = Fixture::new().await;
    let cmd = command(5601, json!({"order": "CANARYevent"}));
    f.ambiguous(&cmd).await;
    let key = f.desk.key(0);
    // The client's call released its lease although its request may still be in
    // flight: the event settles the command at once, the same second.
    let charge = || ProviderAnswer::Succeeded(envelope(1));
    assert_eq!(
        f.record(key.clone(), charge()).await,
        EvidenceOutcome::Succeeded
    );
    assert_eq!(f.desk.lookups(), 0, "no lookup");
    assert_eq!(
        f.send_state(&cmd).await,
        (AttemptNumber::FIRST, AttemptState::Succeeded)
    );
    // Root, lifecycle, plan, send record, result; the client's lease release;
    // register, acquire, takeover, success events; opened, ambiguous, reconciled send
    // events; the key's index.
    let settled = counts(&[
        ("checkoutRequests", 1),
        ("lifecycle", 1),
        ("leaseReleases", 1),
        ("providerSends", 2),
        ("results", 1),
        ("auditEvents", 7),
        ("providerKeys", 1),
    ]);
    assert_eq!(f.census().await, settled);
    // The same event again, and a decline after it: nothing written.
    let after = support::documents(&f.connection).await;
    for answer in [charge(), ProviderAnswer::Declined, charge()] {
        assert_eq!(
            f.record(key.clone(), answer).await,
            EvidenceOutcome::AlreadySettled
        );
    }
    assert_eq!(support::documents(&f.connection).await, after);
    assert_eq!(f.census().await, settled);
    // The client's next call replays the stored charge, sending nothing.
    let Execution::Succeeded(replayed) = f.execute(&cmd).await else {
        panic!("not a replay");
    };
    assert_eq!(replayed.canonical(), envelope(1).canonical());
    assert_eq!(f.desk.sends.load(Ordering::SeqCst), 1);
    assert_eq!(f.desk.lookups(), 0);
    f.verify_clean().await;
}

#[tokio::test]
async fn a_decline_given_fails_the_command_for_good() {
    let f = Fixture::new().await;
    let cmd = command(5602, json!({"order": 2}));
    f.ambiguous(&cmd).await;
    f.clock.advance(TimeDelta::seconds(61));
    let key = f.desk.key(0);
    assert_eq!(
        f.record(key.clone(), ProviderAnswer::Declined).await,
        EvidenceOutcome::Declined
    );
    let before = support::documents(&f.connection).await;
    assert_eq!(
        f.record(key, ProviderAnswer::Declined).await,
        EvidenceOutcome::AlreadySettled
    );
    assert_eq!(support::documents(&f.connection).await, before);
    assert!(matches!(f.execute(&cmd).await, Execution::Declined));
    assert_eq!(
        (f.desk.sends.load(Ordering::SeqCst), f.desk.lookups()),
        (1, 0)
    );
    f.verify_clean().await;
}

#[tokio::test]
async fn a_charge_for_an_earlier_attempts_key_is_a_late_charge_never_a_second_success() {
    let f = Fixture::new().await;
    let cmd = command(5603, json!({"order": 3}));
    // Attempt 1's request is lost; recovery proves it absent once provable; the
    // client's retry charges under attempt 2's key.
    f.desk.lose_next.store(true, Ordering::SeqCst);
    tokio::select! {
        answer = f.execute(&cmd) => panic!("the lost send answered {answer:?}"),
        () = f.desk.lost.notified() => {}
    }
    f.clock.advance(TimeDelta::seconds(400));
    let recovery = f
        .journal
        .recover(
            f.desk.as_ref(),
            &RecoverOptions {
                account: Some(account()),
                ..RecoverOptions::default()
            },
            |_| {},
        )
        .await
        .expect("recover");
    assert_eq!(recovery.count(Recovered::Absent), 1);
    // Once the job's lease has run out.
    f.clock.advance(TimeDelta::seconds(61));
    let retried = f.execute(&cmd).await;
    assert!(matches!(retried, Execution::Succeeded(_)), "{retried:?}");
    let (first, second) = (f.desk.key(0), f.desk.key(1));
    assert_ne!(first, second);
    // Attempt 1's object completes after all (a roll-forward): a late charge, listed
    // for a person; the command keeps attempt 2's charge.
    let lookups = f.desk.lookups();
    assert_eq!(
        f.record(first.clone(), ProviderAnswer::Succeeded(envelope(9)))
            .await,
        EvidenceOutcome::LateCharge
    );
    let before = support::documents(&f.connection).await;
    assert_eq!(
        f.record(first, ProviderAnswer::Succeeded(envelope(9)))
            .await,
        EvidenceOutcome::LateCharge,
        "recorded already"
    );
    assert_eq!(support::documents(&f.connection).await, before);
    assert_eq!(f.census().await.get("lateCharges"), Some(&1));
    assert_eq!(f.census().await.get("providerKeys"), Some(&2));
    // Attempt 2's own charge given: the command's own, nothing written.
    assert_eq!(
        f.record(second, ProviderAnswer::Succeeded(envelope(2)))
            .await,
        EvidenceOutcome::AlreadySettled
    );
    assert_eq!(support::documents(&f.connection).await, before);
    assert_eq!(f.desk.lookups(), lookups, "no lookup");
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!(listing.late_charges.len(), 1, "listed for a person");
}

#[tokio::test]
async fn an_unknown_key_or_a_not_found_writes_nothing() {
    let f = Fixture::new().await;
    let cmd = command(5604, json!({"order": 4}));
    f.ambiguous(&cmd).await;
    f.clock.advance(TimeDelta::seconds(4000));
    let before = support::documents(&f.connection).await;
    // Another integration's object, and a journal-shaped key of no attempt.
    for key in [
        "pi_CANARYother".to_owned(),
        format!("cj1-{}", "0".repeat(64)),
    ] {
        assert_eq!(
            f.record(key, ProviderAnswer::Succeeded(envelope(1))).await,
            EvidenceOutcome::UnknownObject
        );
    }
    // A "not found" given, long past the settle window: no absence from an event.
    assert_eq!(
        f.record(f.desk.key(0), ProviderAnswer::NotFound).await,
        EvidenceOutcome::NotFound
    );
    assert_eq!(
        f.record(f.desk.key(0), ProviderAnswer::Unknown).await,
        EvidenceOutcome::Inconclusive
    );
    assert_eq!(support::documents(&f.connection).await, before);
    assert_eq!(
        f.send_state(&cmd).await,
        (AttemptNumber::FIRST, AttemptState::Ambiguous)
    );
    assert_eq!(f.desk.lookups(), 0);
    // Another account's endpoint: nothing written either.
    let other = EvidenceOptions {
        account: Some(ProviderAccount::new("stub", "acct_other", "test").expect("account")),
    };
    let evidence = Evidence::new(f.desk.key(0), ProviderAnswer::Succeeded(envelope(1)));
    let answer = f.journal.record_evidence(evidence, &other).await;
    assert_eq!(answer, Ok(EvidenceOutcome::OtherAccount));
    assert_eq!(support::documents(&f.connection).await, before);
    // Nothing leaks: the key is in no document, error or output.
    let shown = format!(
        "{:?}",
        Evidence::new(f.desk.key(0), ProviderAnswer::Declined)
    );
    assert!(!shown.contains(&f.desk.key(0)), "{shown}");
}

#[tokio::test]
async fn evidence_for_an_ended_command_writes_nothing() {
    let f = Fixture::new().await;
    let cmd = command(5605, json!({"order": 5}));
    assert!(matches!(f.execute(&cmd).await, Execution::Succeeded(_)));
    let key = f.desk.key(0);
    let before = support::documents(&f.connection).await;
    for answer in [
        ProviderAnswer::Succeeded(envelope(1)),
        ProviderAnswer::Declined,
        ProviderAnswer::NotFound,
    ] {
        assert_eq!(
            f.record(key.clone(), answer).await,
            EvidenceOutcome::AlreadySettled
        );
    }
    assert_eq!(support::documents(&f.connection).await, before);
    f.verify_clean().await;
}

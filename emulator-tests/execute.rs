//! `Journal::execute` against the emulator with a scripted provider: every path of the
//! protocol, with the provider's sends and lookups counted exactly, the stored result
//! replayed byte for byte, and a send dropped mid-flight re-sent with its key.

use super::proxy::{Proxy, Rpc};
use super::send_randomized::assert_verified;
use super::support::{self, command};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::sends::AttemptNumber;
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Execution, Journal, Provider, ProviderAnswer,
    ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest, Target,
};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// 24 h of key retention: an 18 h cutoff.
const RETENTION: i64 = 86_400;
const PAST_CUTOFF: TimeDelta = TimeDelta::seconds(64_801);
const LEASE: TimeDelta = TimeDelta::seconds(60);

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_execute",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid plan")
}

fn charge(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(
        &json!({"id": id, "amount": 1250, "currency": "eur", "status": "succeeded"}),
    )
    .expect("envelope")
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_920_000_000, 250_000_000).expect("time")
}

/// One provider call as the stub saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Send {
        key: String,
        attempt: AttemptNumber,
        resend: bool,
    },
    Lookup {
        key: String,
    },
}

/// What the stub does on a send.
#[derive(Debug, Clone)]
enum OnSend {
    Answer(ProviderAnswer),
    /// Never answers; signals `entered` first.
    Hang,
}

/// A provider answering from scripts and recording every call.
#[derive(Default)]
struct Scripted {
    sends: Mutex<VecDeque<OnSend>>,
    lookups: Mutex<VecDeque<ProviderAnswer>>,
    calls: Mutex<Vec<Call>>,
    entered: Notify,
}

impl Scripted {
    fn new(sends: Vec<OnSend>, lookups: Vec<ProviderAnswer>) -> Self {
        Self {
            sends: Mutex::new(sends.into()),
            lookups: Mutex::new(lookups.into()),
            ..Self::default()
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }

    fn clear(&self) {
        self.calls.lock().expect("calls").clear();
    }
}

impl Provider for Scripted {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        assert_eq!(
            &request.parameters,
            &json!({"amount": 1250, "currency": "eur"})
        );
        assert!(
            request.deadline <= Duration::from_secs(50),
            "{:?}",
            request.deadline
        );
        self.calls.lock().expect("calls").push(Call::Send {
            key: request.key.to_owned(),
            attempt: request.attempt,
            resend: request.resend,
        });
        let next = self.sends.lock().expect("sends").pop_front();
        match next.expect("an unscripted send") {
            OnSend::Answer(result) => result,
            OnSend::Hang => {
                self.entered.notify_one();
                std::future::pending().await
            }
        }
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        self.calls.lock().expect("calls").push(Call::Lookup {
            key: key.to_owned(),
        });
        let next = self.lookups.lock().expect("lookups").pop_front();
        next.expect("an unscripted lookup")
    }
}

struct Fixture {
    connection: Connection,
    clock: Arc<ManualClock>,
    journal: Journal,
    command: CommandInput,
}

async fn fixture(n: u64) -> Fixture {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let command = command(n, json!({"order": format!("order-{n}")}));
    Fixture {
        connection,
        clock,
        journal,
        command,
    }
}

impl Fixture {
    async fn execute(&self, provider: &Scripted) -> Execution {
        self.journal
            .execute(&self.command, &plan(), provider)
            .await
            .expect("execute")
    }

    fn key(&self) -> String {
        let operation = command_journal::identity::OperationSlug::parse("charge").expect("slug");
        self.command.identity().provider_idempotency_key(&operation)
    }
}

fn send(key: &str, attempt: i64, resend: bool) -> Call {
    Call::Send {
        key: key.to_owned(),
        attempt: support::attempt_at(attempt),
        resend,
    }
}

fn succeeded(execution: &Execution) -> &ResultEnvelope {
    match execution {
        Execution::Succeeded(envelope) => envelope,
        other => panic!("expected success, got {other:?}"),
    }
}

#[tokio::test]
async fn execute_success_then_every_replay_answers_the_stored_result_without_a_send() {
    let f = fixture(1).await;
    let provider = Scripted::new(
        vec![OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_1")))],
        vec![],
    );
    let first = f.execute(&provider).await;
    assert_eq!(succeeded(&first).canonical(), charge("ch_1").canonical());
    assert_eq!(provider.calls(), vec![send(&f.key(), 1, false)]);
    provider.clear();
    for _ in 0..3 {
        f.clock.advance(TimeDelta::seconds(90));
        let again = f.execute(&provider).await;
        assert_eq!(succeeded(&again).canonical(), succeeded(&first).canonical());
    }
    assert_eq!(provider.calls(), vec![]);
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_decline_is_final_and_never_sent_again() {
    let f = fixture(2).await;
    let provider = Scripted::new(vec![OnSend::Answer(ProviderAnswer::Declined)], vec![]);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    f.clock.advance(LEASE);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(provider.calls(), vec![send(&f.key(), 1, false)]);
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_ambiguous_then_a_retry_before_the_cutoff_re_sends_the_same_key() {
    let f = fixture(3).await;
    let provider = Scripted::new(
        vec![
            OnSend::Answer(ProviderAnswer::Unknown),
            OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_3"))),
        ],
        vec![],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::RetryLater {
            after: Duration::from_secs(60)
        }
    );
    // The first call released its lease, but its request may still be in flight
    // until its send + 60 s: a retry takes the lease over, is refused the re-send,
    // sends nothing and retries later for the time left.
    assert_eq!(
        f.execute(&provider).await,
        Execution::RetryLater {
            after: Duration::from_secs(60)
        }
    );
    f.clock.advance(LEASE);
    let done = f.execute(&provider).await;
    assert_eq!(succeeded(&done), &charge("ch_3"));
    let key = f.key();
    assert_eq!(
        provider.calls(),
        vec![send(&key, 1, false), send(&key, 1, true)]
    );
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_past_the_cutoff_with_the_charge_found_reconciles_without_a_send() {
    let f = fixture(4).await;
    let provider = Scripted::new(
        vec![OnSend::Answer(ProviderAnswer::Unknown)],
        vec![ProviderAnswer::Succeeded(charge("ch_4"))],
    );
    f.execute(&provider).await;
    f.clock.advance(PAST_CUTOFF);
    let done = f.execute(&provider).await;
    assert_eq!(succeeded(&done), &charge("ch_4"));
    let key = f.key();
    assert_eq!(
        provider.calls(),
        vec![send(&key, 1, false), Call::Lookup { key: key.clone() }]
    );
    // The replay is the stored result, without the provider.
    provider.clear();
    f.clock.advance(LEASE);
    assert_eq!(succeeded(&f.execute(&provider).await), &charge("ch_4"));
    assert_eq!(provider.calls(), vec![]);
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_past_the_cutoff_with_a_declined_charge_fails_without_a_send() {
    let f = fixture(5).await;
    let provider = Scripted::new(
        vec![OnSend::Answer(ProviderAnswer::Unknown)],
        vec![ProviderAnswer::Declined],
    );
    f.execute(&provider).await;
    f.clock.advance(PAST_CUTOFF);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(provider.calls().len(), 2);
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_past_the_cutoff_with_no_charge_sends_once_under_a_new_key() {
    let f = fixture(6).await;
    let provider = Scripted::new(
        vec![
            OnSend::Answer(ProviderAnswer::Unknown),
            OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_6"))),
        ],
        vec![ProviderAnswer::NotFound],
    );
    f.execute(&provider).await;
    f.clock.advance(PAST_CUTOFF);
    let done = f.execute(&provider).await;
    assert_eq!(succeeded(&done), &charge("ch_6"));
    let calls = provider.calls();
    let first = f.key();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[0], send(&first, 1, false));
    assert_eq!(calls[1], Call::Lookup { key: first.clone() });
    let Call::Send {
        key: second,
        attempt,
        resend: false,
    } = &calls[2]
    else {
        panic!("attempt 2 not sent: {calls:?}")
    };
    assert_eq!(*attempt, 2, "attempt 2 not sent: {calls:?}");
    assert_ne!(second, &first);
    assert!(second.starts_with("cj"), "{second}");
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_past_the_cutoff_with_the_lookup_unavailable_records_nothing() {
    let f = fixture(7).await;
    let provider = Scripted::new(
        vec![OnSend::Answer(ProviderAnswer::Unknown)],
        vec![
            ProviderAnswer::Unknown,
            ProviderAnswer::Succeeded(charge("ch_7")),
        ],
    );
    f.execute(&provider).await;
    f.clock.advance(PAST_CUTOFF);
    let before = f.journal.send_status(&f.command).await.expect("status");
    assert_eq!(f.execute(&provider).await, Execution::PendingReconciliation);
    let after = f.journal.send_status(&f.command).await.expect("status");
    assert_eq!(after.send, before.send);
    assert!(after.send.expect("send state").needs_reconciliation);
    // Asked again later, the provider answers and the command ends.
    f.clock.advance(LEASE);
    assert_eq!(succeeded(&f.execute(&provider).await), &charge("ch_7"));
    let key = f.key();
    assert_eq!(
        provider.calls(),
        vec![
            send(&key, 1, false),
            Call::Lookup { key: key.clone() },
            Call::Lookup { key }
        ]
    );
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_a_send_dropped_mid_flight_is_re_sent_with_its_key_by_the_next_call() {
    let f = fixture(8).await;
    let provider = Scripted::new(
        vec![
            OnSend::Hang,
            OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_8"))),
        ],
        vec![],
    );
    {
        let call = f.execute(&provider);
        tokio::pin!(call);
        tokio::select! {
            execution = &mut call => panic!("the hanging send answered: {execution:?}"),
            () = provider.entered.notified() => {}
        }
        // The future is dropped here, mid-send, as a crashed worker's would be.
    }
    let status = f.journal.send_status(&f.command).await.expect("status");
    let send_state = status.send.expect("a permit was recorded before the send");
    assert_eq!(
        (send_state.attempt, send_state.state.as_str()),
        (AttemptNumber::FIRST, "sending")
    );
    assert_eq!(f.execute(&provider).await, Execution::InProgress);
    f.clock.advance(LEASE);
    assert_eq!(succeeded(&f.execute(&provider).await), &charge("ch_8"));
    let key = f.key();
    assert_eq!(
        provider.calls(),
        vec![send(&key, 1, false), send(&key, 1, true)]
    );
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn execute_races_send_once() {
    let f = fixture(9).await;
    let provider = Arc::new(Scripted::new(
        vec![OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_9")))],
        vec![],
    ));
    let journal = f.journal.clone();
    let command = f.command.clone();
    let shared = provider.clone();
    let answers = support::race(12, move |_| {
        let (journal, command, provider) = (journal.clone(), command.clone(), provider.clone());
        async move { journal.execute(&command, &plan(), provider.as_ref()).await }
    })
    .await;
    let answers: Vec<Execution> = answers.into_iter().map(|a| a.expect("execute")).collect();
    let won = answers
        .iter()
        .filter(|a| matches!(a, Execution::Succeeded(_)))
        .count();
    let busy = answers
        .iter()
        .filter(|a| matches!(a, Execution::InProgress))
        .count();
    assert_eq!(won + busy, 12, "{answers:?}");
    assert!(won >= 1);
    assert_eq!(shared.calls(), vec![send(&f.key(), 1, false)]);
    assert_verified(&f.connection).await;
}

mod fenced;
mod floor;
#[path = "../examples/payout-worker/worker.rs"]
mod payout_worker;

#[tokio::test]
async fn execute_payout_worker_example_crashes_restarts_and_pays_each_payout_once() {
    let connection = support::fresh_connection().await;
    let report = payout_worker::run(&connection, 12)
        .await
        .expect("the worker runs");
    assert_eq!(
        report,
        payout_worker::Report {
            commands: 12,
            provider_payouts: 12,
            provider_sends: 13,
            first_run_paid: 4,
            restart_paid: 8,
            restart_replayed: 4,
            verify_clean: true,
        }
    );
    assert!(report.all_once());
    assert!(report.to_string().ends_with("verify: clean\n"), "{report}");
}

/// A wall clock at `at` until the proxy has seen a commit answered (the one that
/// holds the permit: `execute`'s first), then 120 s earlier.
struct SteppedBackAfterTheFirstCommit {
    at: DateTime<Utc>,
    proxy: Arc<Proxy>,
}

impl command_journal::Clock for SteppedBackAfterTheFirstCommit {
    fn now(&self) -> DateTime<Utc> {
        let exchanges = self.proxy.exchanges();
        let committed = exchanges
            .iter()
            .any(|e| e.rpc == Some(Rpc::Commit) && e.answered);
        match committed {
            true => self.at - TimeDelta::seconds(120),
            false => self.at,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn execute_a_clock_stepped_back_after_the_permit_gives_the_provider_no_more_than_the_lease_less_its_margin()
 {
    for (n, mode) in [Concurrency::Preconditions, Concurrency::Transaction]
        .into_iter()
        .enumerate()
    {
        let f = fixture(20 + n as u64).await;
        let proxy = Arc::new(Proxy::start(support::emulator().host()).await);
        let project = f.connection.project();
        let through = Connection::connect(project, Target::Emulator(proxy.host()))
            .await
            .expect("connect through the proxy");
        let stepped = SteppedBackAfterTheFirstCommit {
            at: start(),
            proxy: proxy.clone(),
        };
        let journal = Journal::new(through)
            .with_clock(Arc::new(stepped))
            .with_concurrency(mode);
        let provider = Scripted::new(
            vec![
                OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_20"))),
                OnSend::Answer(ProviderAnswer::Succeeded(charge("ch_20"))),
            ],
            vec![],
        );
        // The provider's deadline is at most the lease less its 10 s margin (the
        // stub asserts it: without the monotonic clock it would be 170 s). Recording
        // the answer at a time before the permit is refused, nothing written...
        let answer = journal.execute(&f.command, &plan(), &provider).await;
        assert_eq!(answer, Err(command_journal::JournalError::ClockRegression));
        assert_eq!(provider.calls(), vec![send(&f.key(), 1, false)], "{mode:?}");
        // ... and the next call, once the lease has run out, re-sends under the same
        // key and records the charge: nothing lost.
        f.clock.advance(LEASE);
        let again = f.journal.clone().with_concurrency(mode);
        let answer = again.execute(&f.command, &plan(), &provider).await;
        assert_eq!(succeeded(&answer.expect("execute")), &charge("ch_20"));
        let key = f.key();
        assert_eq!(
            provider.calls(),
            vec![send(&key, 1, false), send(&key, 1, true)]
        );
        assert_verified(&f.connection).await;
    }
}

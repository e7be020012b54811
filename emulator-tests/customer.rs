//! The customer in the loop against the emulator, with a scripted provider (no
//! Stripe): a send answered "the customer must act" hands the action to the caller
//! and records `awaiting_customer`; the customer's return reads the object by id
//! (never a re-send, never a second key) and its answer settles the command: paid,
//! a failed challenge (declined), abandoned (cancelled, then closed: nothing charged),
//! by the customer's late return or by the recovery job once the window ended.
//! The action's secret and URL are canaries: no stored document shows them.

use super::send_randomized::assert_verified;
use super::support::{self, command, list};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::sends::{
    ActionName, AttemptNumber, CustomerAction, Handoff, LookupRequest, RetrieveRequest,
};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Connection, Execution, Journal, Provider, ProviderAnswer, ProviderPlan,
    ProviderPlanRequest, ResultEnvelope, SendRequest, Timestamp,
};
use serde_json::json;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

const SECRET: &str = "pi_CANARYsecret_CANARYclient";
const URL: &str = "https://pay.example/CANARYsession";
const PAST_CUTOFF: TimeDelta = TimeDelta::seconds(64_801);

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_customer",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn confirm() -> CustomerAction {
    CustomerAction::Confirm {
        client_secret: Handoff::new(SECRET),
        next_action: ActionName::new("use_stripe_sdk").expect("name"),
    }
}

fn open() -> CustomerAction {
    CustomerAction::Open {
        url: Handoff::new(URL),
    }
}

fn charge(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": id, "amount": 1250, "status": "succeeded"}))
        .expect("envelope")
}

/// One provider call as the stub saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    Send {
        key: String,
        resend: bool,
        act_by: Timestamp,
    },
    Retrieve {
        key: String,
        replayable: bool,
        cancel: bool,
        act_by: Timestamp,
    },
}

/// A provider answering from scripts and recording every call; it never looks up.
#[derive(Default)]
struct Scripted {
    sends: Mutex<VecDeque<ProviderAnswer>>,
    retrieves: Mutex<VecDeque<ProviderAnswer>>,
    calls: Mutex<Vec<Call>>,
}

impl Scripted {
    fn new(sends: Vec<ProviderAnswer>, retrieves: Vec<ProviderAnswer>) -> Self {
        Self {
            sends: Mutex::new(sends.into()),
            retrieves: Mutex::new(retrieves.into()),
            ..Self::default()
        }
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().expect("calls").clone()
    }
}

impl Provider for Scripted {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.calls.lock().expect("calls").push(Call::Send {
            key: request.key,
            resend: request.resend,
            act_by: request.act_by,
        });
        let next = self.sends.lock().expect("sends").pop_front();
        next.expect("an unscripted send")
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        panic!("an attempt that waits for its customer is never looked up")
    }

    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        // A caller's read carries the plan's parameters; a recovery job's none (it
        // holds only the key hash), and it never replays the key.
        if request.parameters.is_null() {
            assert!(!request.replayable, "a job's read replayable");
        } else {
            assert_eq!(
                request.parameters,
                json!({"amount": 1250, "currency": "eur"})
            );
        }
        self.calls.lock().expect("calls").push(Call::Retrieve {
            key: request.key,
            replayable: request.replayable,
            cancel: request.cancel,
            act_by: request.act_by,
        });
        let next = self.retrieves.lock().expect("retrieves").pop_front();
        next.expect("an unscripted retrieve")
    }
}

struct Fixture {
    connection: Connection,
    clock: Arc<ManualClock>,
    journal: Journal,
    command: CommandInput,
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_920_000_000, 0).expect("time")
}

async fn fixture(n: u64) -> Fixture {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let command = command(n, json!({"order": format!("customer-{n}")}));
    Fixture {
        connection,
        clock,
        journal,
        command,
    }
}

impl Fixture {
    async fn execute(&self, provider: &Scripted) -> Execution {
        let answer = self.journal.execute(&self.command, &plan(), provider).await;
        let shown = format!("{answer:?}");
        assert!(!shown.contains("CANARY"), "{shown}");
        answer.expect("execute")
    }

    fn key(&self) -> String {
        let operation = command_journal::identity::OperationSlug::parse("charge").expect("slug");
        self.command.identity().provider_idempotency_key(&operation)
    }

    /// The attempt's stored cutoff: 18 h after its first send, at the start.
    fn cutoff(&self) -> Timestamp {
        Timestamp::from_datetime(start() + TimeDelta::seconds(64_800)).expect("time")
    }

    /// Every stored document, whole: none shows the secret or the URL.
    async fn assert_no_handoff(&self) {
        let mut texts = Vec::new();
        for collection in ["checkoutRequests", "auditEvents"] {
            for document in list(&self.connection, "", collection).await {
                texts.push(format!("{document:?}"));
            }
        }
        for root in list(&self.connection, "", "checkoutRequests").await {
            let relative = root
                .name
                .rsplit_once("/documents/")
                .map(|(_, path)| path.to_owned())
                .expect("relative path");
            for collection in ["lifecycle", "providerSends", "results"] {
                for document in list(&self.connection, &relative, collection).await {
                    texts.push(format!("{document:?}"));
                }
            }
        }
        assert!(texts.len() >= 6, "{} documents", texts.len());
        for text in texts {
            assert!(!text.contains("CANARY"), "{text}");
        }
        let status = self
            .journal
            .send_status(&self.command)
            .await
            .expect("status");
        assert!(!format!("{status:?}").contains("CANARY"));
    }
}

fn sent(f: &Fixture) -> Call {
    Call::Send {
        key: f.key(),
        resend: false,
        act_by: f.cutoff(),
    }
}

fn retrieved(f: &Fixture, replayable: bool, cancel: bool) -> Call {
    Call::Retrieve {
        key: f.key(),
        replayable,
        cancel,
        act_by: f.cutoff(),
    }
}

#[tokio::test]
async fn must_act_then_paid_on_the_customers_return() {
    let f = fixture(1).await;
    let provider = Scripted::new(
        vec![ProviderAnswer::CustomerMustAct(confirm())],
        vec![
            ProviderAnswer::CustomerMustAct(confirm()),
            ProviderAnswer::Succeeded(charge("pi_paid")),
        ],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(confirm())
    );
    let status = f.journal.send_status(&f.command).await.expect("status");
    let send = status.send.expect("a send");
    assert_eq!(send.state.as_str(), "awaiting_customer");
    assert!(send.needs_reconciliation && send.absence_provable_from.is_none());
    f.assert_no_handoff().await;
    // A second tab at once (the first call released its lease): the same action, read
    // by id, nothing re-sent.
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(confirm())
    );
    // The customer has confirmed: the return settles the payment.
    let paid = f.execute(&provider).await;
    assert_eq!(paid, Execution::Succeeded(charge("pi_paid")));
    assert_eq!(f.execute(&provider).await, paid);
    assert_eq!(
        provider.calls(),
        vec![
            sent(&f),
            retrieved(&f, true, false),
            retrieved(&f, true, false)
        ]
    );
    f.assert_no_handoff().await;
    assert_verified(&f.connection).await;
}

#[tokio::test]
async fn a_failed_challenge_ends_declined() {
    let f = fixture(2).await;
    let provider = Scripted::new(
        vec![ProviderAnswer::CustomerMustAct(open())],
        vec![ProviderAnswer::Declined],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(open())
    );
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(provider.calls(), vec![sent(&f), retrieved(&f, true, false)]);
    f.assert_no_handoff().await;
    assert_verified(&f.connection).await;
}

/// Abandoned: no second key while the customer could still pay (an unknown read
/// writes nothing, before and after the cutoff); from the end of the window the
/// read cancels the object, and its closed state ends the command with nothing
/// charged.
#[tokio::test]
async fn abandoned_is_cancelled_then_closed_with_nothing_charged_and_one_key() {
    let f = fixture(3).await;
    let provider = Scripted::new(
        vec![ProviderAnswer::CustomerMustAct(open())],
        vec![
            ProviderAnswer::Unknown,
            ProviderAnswer::Unknown,
            ProviderAnswer::Closed,
        ],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(open())
    );
    f.clock.advance(TimeDelta::seconds(3_600));
    assert_eq!(f.execute(&provider).await, Execution::PendingReconciliation);
    f.clock.advance(PAST_CUTOFF);
    assert_eq!(f.execute(&provider).await, Execution::PendingReconciliation);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(
        provider.calls(),
        vec![
            sent(&f),
            retrieved(&f, true, false),
            retrieved(&f, false, true),
            retrieved(&f, false, true),
        ]
    );
    let attempt = f.journal.send_status(&f.command).await.expect("status");
    assert_eq!(attempt.send.expect("a send").attempt, AttemptNumber::FIRST);
    f.assert_no_handoff().await;
    assert_verified(&f.connection).await;
}

/// Abandoned, and the customer never returns: the recovery job reads the object by
/// id without a lease (never cancelling) while the window runs, and once it ended it
/// takes the lease and cancels: the closed object ends the command with nothing
/// charged, one key, and the client's late call is told declined.
#[tokio::test]
async fn abandoned_is_cancelled_by_the_recovery_job_once_the_window_ended() {
    use command_journal::ProviderAccount;
    use command_journal::recovery::{RecoverOptions, Recovered};
    let f = fixture(4).await;
    let provider = Scripted::new(
        vec![ProviderAnswer::CustomerMustAct(confirm())],
        vec![
            ProviderAnswer::CustomerMustAct(confirm()),
            ProviderAnswer::Closed,
        ],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(confirm())
    );
    let options = RecoverOptions {
        account: Some(ProviderAccount::new("stub", "acct_customer", "test").expect("account")),
        ..RecoverOptions::default()
    };
    let recover = || async {
        f.journal
            .recover(&provider, &options, |_| {})
            .await
            .expect("recover")
    };
    f.clock.advance(TimeDelta::seconds(3_600));
    let before = support::documents(&f.connection).await;
    assert_eq!(recover().await.count(Recovered::AwaitingCustomer), 1);
    assert_eq!(
        support::documents(&f.connection).await,
        before,
        "a job wrote while the customer could still act"
    );
    f.clock.advance(PAST_CUTOFF);
    assert_eq!(recover().await.count(Recovered::Declined), 1);
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    let job = |cancel| Call::Retrieve {
        key: f.key(),
        replayable: false,
        cancel,
        act_by: f.cutoff(),
    };
    assert_eq!(provider.calls(), vec![sent(&f), job(false), job(true)]);
    let attempt = f.journal.send_status(&f.command).await.expect("status");
    assert_eq!(attempt.send.expect("a send").attempt, AttemptNumber::FIRST);
    f.assert_no_handoff().await;
    assert_verified(&f.connection).await;
}

/// Once the window ended, a job whose cancel did not take (the object still waits
/// for its customer) answers `awaiting_customer` and releases the lease it took: the
/// caller's next call at that same instant takes it over (not `InProgress`) and its
/// own read with cancel settles the command.
#[tokio::test]
async fn a_jobs_cancel_that_did_not_take_leaves_the_lease_released() {
    use command_journal::ProviderAccount;
    use command_journal::recovery::{RecoverOptions, Recovered};
    let f = fixture(5).await;
    let provider = Scripted::new(
        vec![ProviderAnswer::CustomerMustAct(confirm())],
        vec![
            ProviderAnswer::CustomerMustAct(confirm()),
            ProviderAnswer::Closed,
        ],
    );
    assert_eq!(
        f.execute(&provider).await,
        Execution::CustomerMustAct(confirm())
    );
    let options = RecoverOptions {
        account: Some(ProviderAccount::new("stub", "acct_customer", "test").expect("account")),
        ..RecoverOptions::default()
    };
    f.clock.advance(PAST_CUTOFF);
    let run = f
        .journal
        .recover(&provider, &options, |_| {})
        .await
        .expect("recover");
    assert_eq!(run.count(Recovered::AwaitingCustomer), 1);
    let root = format!(
        "checkoutRequests/{}",
        f.command.identity().command_key_hash()
    );
    // The caller's call released fence 1 before it answered, the job fence 2.
    let released: Vec<String> = list(&f.connection, &root, "leaseReleases")
        .await
        .into_iter()
        .filter_map(|d| d.name.rsplit('/').next().map(str::to_owned))
        .collect();
    assert_eq!(released, ["0000000001", "0000000002"]);
    // No clock moved: the job's released lease is taken over at once.
    assert_eq!(f.execute(&provider).await, Execution::Declined);
    assert_eq!(
        provider.calls(),
        vec![
            sent(&f),
            retrieved(&f, false, true),
            retrieved(&f, false, true)
        ]
    );
    f.assert_no_handoff().await;
    assert_verified(&f.connection).await;
}

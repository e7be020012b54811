//! A call dropped at any await point leaves nothing locked, in either mode: each
//! operation is polled by hand and dropped, unpolled, right after its `k`-th await
//! point's answer arrived (an RPC's, a read task's, a backoff's, the provider's),
//! for every `k` until it answers; then the lease holder's next commit must land at
//! its first attempt, never aborted on a lock the dropped call left. The hardest
//! point is a transaction-opening read that answered to a caller that never polls
//! again: the read task owns the transaction and hands it over with the answer, so a
//! dropped caller drops it to the reaper, which rolls it back.
//!
//! Every row is on a command whose lease a holder holds, but the last, whose `execute`
//! takes the lease itself (and calls the provider): there the next holder is one whose
//! clock is a lease later, taking it over. Ledger operations and recovery run through
//! the same driver and the same transaction ownership; they are not rows here.

use super::support::{self, command};
use chrono::{TimeDelta, Utc};
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Journal, JournalError, LeaseId, LeaseOutput, Provider,
    ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest,
    TerminalReferenceFingerprint,
};
use serde_json::json;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use tokio::sync::Notify;

/// A waker that tells the test it was woken.
struct Woken(Notify);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }
}

/// Polls `future` by hand and drops it, without polling it again, once it has been
/// woken `wakes` times: each wake is an await point whose answer has arrived (an
/// RPC's, a read task's, a timer's, the provider's). Its answer if it finished first.
pub async fn drop_once_woken<F: Future>(future: F, wakes: usize) -> Option<F::Output> {
    let woken = Arc::new(Woken(Notify::new()));
    let waker = Waker::from(woken.clone());
    let mut future = pin!(future);
    let mut seen = 0;
    loop {
        if let Poll::Ready(answer) = future.as_mut().poll(&mut Context::from_waker(&waker)) {
            return Some(answer);
        }
        woken.0.notified().await;
        seen += 1;
        if seen == wakes {
            return None;
        }
    }
}

/// The operations dropped, each by a caller other than the holder (but `Execute`'s
/// last row, which takes the lease).
#[derive(Debug, Clone, Copy)]
enum Row {
    Register,
    Acquire,
    Start,
    Status,
    SendStatus,
    Result,
    Complete,
    Fail,
    BeginSend,
    RecordSendOutcome,
    ReconcileSend,
    ExecuteBusy,
    ExecuteTakingTheLease,
}

const ROWS: [Row; 13] = [
    Row::Register,
    Row::Acquire,
    Row::Start,
    Row::Status,
    Row::SendStatus,
    Row::Result,
    Row::Complete,
    Row::Fail,
    Row::BeginSend,
    Row::RecordSendOutcome,
    Row::ReconcileSend,
    Row::ExecuteBusy,
    Row::ExecuteTakingTheLease,
];

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(58, n)).expect("lease id")
}

fn reference() -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&"58".repeat(32)).expect("reference")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_dropped",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

/// A provider that charges at once (after one yield: an await point of its own).
struct Charges;

impl Provider for Charges {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        tokio::task::yield_now().await;
        let charge = json!({"id": "ch_dropped", "amount": 1250, "status": "succeeded"});
        ProviderAnswer::Succeeded(ResultEnvelope::new(&charge).expect("envelope"))
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

/// Runs `row` by `caller` on `cmd`; its answer, whatever it is, as `()`.
async fn run(row: Row, caller: &Journal, cmd: &CommandInput) -> Result<(), JournalError> {
    let (other, fence, attempt) = (lease(2), support::fence_at(1), support::attempt_at(1));
    let charged = ProviderAnswer::Declined;
    match row {
        Row::Register => caller.register_command(cmd).await.map(drop),
        Row::Acquire => caller.acquire_lease(cmd, &other).await.map(drop),
        Row::Start => caller.start(cmd, &other).await.map(drop),
        Row::Status => caller.status(cmd).await.map(drop),
        Row::SendStatus => caller.send_status(cmd).await.map(drop),
        Row::Result => caller.result(cmd).await.map(drop),
        Row::Complete => {
            let reference = reference();
            let completed = caller.complete_command(cmd, &other, fence, &reference);
            completed.await.map(drop)
        }
        Row::Fail => caller.fail_command(cmd, &other, fence).await.map(drop),
        Row::BeginSend => caller
            .begin_send(cmd, &other, fence, &plan())
            .await
            .map(drop),
        Row::RecordSendOutcome => {
            let plan = plan();
            let recorded = caller.record_send_outcome(cmd, &other, fence, &plan, attempt, &charged);
            recorded.await.map(drop)
        }
        Row::ReconcileSend => {
            let plan = plan();
            let reconciled = caller.reconcile_send(cmd, &other, fence, &plan, attempt, &charged);
            reconciled.await.map(drop)
        }
        Row::ExecuteBusy | Row::ExecuteTakingTheLease => {
            caller.execute(cmd, &plan(), &Charges).await.map(drop)
        }
    }
}

/// One case: `row` dropped at its `wakes`-th await point, then the holder's next
/// commit. Whether the row answered before being dropped.
async fn case(connection: &Connection, mode: Concurrency, row: Row, wakes: usize, n: u64) -> bool {
    let holder = Journal::new(connection.clone()).with_concurrency(mode);
    let caller = Journal::new(connection.clone()).with_concurrency(mode);
    let cmd = command(n, json!({"dropped": n}));
    holder.register_command(&cmd).await.expect("register");
    let taking = matches!(row, Row::ExecuteTakingTheLease);
    if !taking {
        let held = holder
            .acquire_lease(&cmd, &lease(1))
            .await
            .expect("acquire");
        assert!(matches!(held, LeaseOutput::Acquired { .. }), "{held:?}");
    }
    let answered = drop_once_woken(run(row, &caller, &cmd), wakes)
        .await
        .is_some();
    let where_ = format!("{mode:?} {row:?}, dropped at await point {wakes}");
    // The dropped call's transaction, if it opened one, is rolled back in the
    // background: wait for that (a read still running that opened one included), so
    // the next commit meets whatever the rollback left.
    caller.reaped().await;
    let before = holder.stats();
    if taking {
        // The next holder: a clock a lease later, so that it takes over whatever
        // lease the dropped call took, with a commit in either case.
        let later = Arc::new(ManualClock::new(Utc::now() + TimeDelta::seconds(61)));
        let next = holder.clone().with_clock(later);
        let took = next.acquire_lease(&cmd, &lease(9)).await;
        let used = next.stats().since(&before);
        assert!(took.is_ok(), "{where_}: {took:?}");
        assert_eq!(
            used.conflicts, 0,
            "{where_}: the next holder's commit waited on a lock"
        );
    } else {
        let reference = reference();
        let fence = support::fence_at(1);
        let done = holder
            .complete_command(&cmd, &lease(1), fence, &reference)
            .await;
        let used = holder.stats().since(&before);
        assert!(done.is_ok(), "{where_}: {done:?}");
        assert_eq!(
            (used.attempts, used.conflicts),
            (1, 0),
            "{where_}: the holder's commit waited on a lock"
        );
    }
    answered
}

async fn every_await_point(mode: Concurrency) {
    let connection = support::fresh_connection().await;
    let mut n = 0;
    for row in ROWS {
        let mut wakes = 1;
        loop {
            n += 1;
            let answered = case(&connection, mode, row, wakes, n).await;
            if answered {
                println!(
                    "dropped mode={mode:?} row={row:?} await_points={}",
                    wakes - 1
                );
                assert!(wakes > 1, "{mode:?} {row:?}: no await point at all");
                break;
            }
            wakes += 1;
            assert!(
                wakes < 40,
                "{mode:?} {row:?}: still running at its 40th await point"
            );
        }
    }
}

// One thread: the connection's tasks and the read task run only while the test waits
// for a wake, so that every await point is one (on two threads, an RPC may answer
// within the poll that sent it, under load).
#[tokio::test]
async fn a_call_dropped_at_any_await_point_leaves_nothing_locked_in_transaction_mode() {
    every_await_point(Concurrency::Transaction).await;
}

#[tokio::test]
async fn a_call_dropped_at_any_await_point_leaves_nothing_locked_in_preconditions_mode() {
    every_await_point(Concurrency::Preconditions).await;
}

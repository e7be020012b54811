//! No transaction the journal opens is left holding its locks, in transaction mode:
//! a duplicate caller's read-write transaction whose rollback is lost on the way (the
//! proxy cuts the connection before the `Rollback` message reaches the emulator) is
//! rolled back again within the call, or, lost every time the call tries, by the
//! background reaper; one whose caller drops the call right after its
//! transaction-opening read answered is rolled back by the reaper. Otherwise the
//! emulator keeps the abandoned transaction's locks for about a minute, and the lease
//! holder's commits wait on them: before these fixes, 60 to 66 s and 9 or 10 attempts.
//!
//! `cargo test -p command-journal-cli --test emulator stranded -- --nocapture` prints
//! one `stranded` line per case: how long the holder's next operation took, its
//! attempts and its answer (docs/flows/stranded-transaction.md).

use super::dropped::drop_once_woken;
use super::proxy::{Fault, Proxy, Rpc};
use super::support::{self, command};
use command_journal::sends::LookupRequest;
use command_journal::{
    CommandInput, Concurrency, Connection, Execution, Journal, LeaseId, Provider, ProviderAnswer,
    ProviderPlan, ProviderPlanRequest, ResultEnvelope, RetryPolicy, SendRequest, Stats, Target,
    TerminalReferenceFingerprint,
};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A holder on a direct connection, a duplicate caller through the proxy, both in
/// transaction mode.
struct Rig {
    proxy: Proxy,
    holder: Journal,
    duplicate: Journal,
}

async fn rig() -> Rig {
    let direct = support::fresh_connection().await;
    let proxy = Proxy::start(support::emulator().host()).await;
    let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
        .await
        .expect("connect through the proxy");
    Rig {
        proxy,
        holder: Journal::new(direct).with_concurrency(Concurrency::Transaction),
        duplicate: Journal::new(through).with_concurrency(Concurrency::Transaction),
    }
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(57, n)).expect("lease id")
}

fn reference() -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&"57".repeat(32)).expect("reference")
}

/// What the holder's operation after the stranding cost.
#[derive(Debug)]
struct Cost<T> {
    answer: T,
    elapsed: Duration,
    used: Stats,
}

async fn cost<T, F: Future<Output = T>>(journal: &Journal, operation: F) -> Cost<T> {
    let before = journal.stats();
    let began = Instant::now();
    let answer = operation.await;
    Cost {
        answer,
        elapsed: began.elapsed(),
        used: journal.stats().since(&before),
    }
}

fn report<T: std::fmt::Debug>(case: &str, cost: &Cost<T>) {
    println!(
        "stranded case={case} holder_ms={} attempts={} commits={} answer={:?}",
        cost.elapsed.as_millis(),
        cost.used.attempts,
        cost.used.commits,
        cost.answer
    );
}

/// The holder takes the lease of a registered command.
async fn holding(rig: &Rig, n: u64) -> CommandInput {
    let cmd = command(n, json!({"stranded": n}));
    rig.holder.register_command(&cmd).await.expect("register");
    rig.holder
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("acquire");
    cmd
}

async fn complete(
    rig: &Rig,
    cmd: &CommandInput,
) -> Cost<Result<(), command_journal::JournalError>> {
    let (lease, reference) = (lease(1), reference());
    let complete = rig
        .holder
        .complete_command(cmd, &lease, support::fence_at(1), &reference);
    cost(&rig.holder, async { complete.await.map(|_| ()) }).await
}

/// The holder's commit landed at its first attempt, never aborted on a lock.
fn landed_at_once(cost: &Cost<Result<(), command_journal::JournalError>>) {
    assert!(cost.answer.is_ok(), "{:?}", cost.answer);
    assert_eq!(
        (cost.used.attempts, cost.used.conflicts),
        (1, 0),
        "{:?}",
        cost.used
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_rollback_is_sent_again_within_the_call_and_the_holder_commits_at_once() {
    let rig = rig().await;
    let cmd = holding(&rig, 1).await;
    rig.proxy.arm(Rpc::Rollback, Fault::LoseRequest);
    let before = rig.duplicate.stats();
    rig.duplicate.status(&cmd).await.expect("status");
    let used = rig.duplicate.stats().since(&before);
    assert_eq!(rig.proxy.fired(), 1, "the status's rollback was lost");
    // Lost once, delivered by the call's next attempt: nothing for the reaper.
    assert!(used.rollbacks >= 2, "{used:?}");
    assert_eq!(used.reaped, 0, "{used:?}");
    let cost = complete(&rig, &cmd).await;
    report("status_rollback_lost", &cost);
    landed_at_once(&cost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_lost_at_every_try_of_the_call_is_delivered_by_the_reaper() {
    let rig = rig().await;
    let cmd = holding(&rig, 4).await;
    // As many losses as the call makes attempts: the call gives up and hands the
    // transaction over; the reaper's first try goes through.
    rig.proxy.arm_times(Rpc::Rollback, Fault::LoseRequest, 3);
    let before = rig.duplicate.stats();
    rig.duplicate.status(&cmd).await.expect("status");
    let used = rig.duplicate.stats().since(&before);
    assert_eq!(used.reaped, 1, "handed to the reaper: {used:?}");
    let cost = complete(&rig, &cmd).await;
    report("status_rollback_lost_in_every_try", &cost);
    landed_at_once(&cost);
    assert_eq!(rig.proxy.fired(), 3, "every armed loss fired");
    let rollbacks = rig
        .proxy
        .exchanges()
        .into_iter()
        .filter(|e| e.rpc == Some(Rpc::Rollback) && e.fault.is_none() && e.answered)
        .count();
    assert_eq!(
        rollbacks, 1,
        "the reaper's rollback reached the emulator once"
    );
}

// One thread, as in `dropped.rs`: the read cannot answer within the poll that sent it.
#[tokio::test]
async fn a_status_dropped_once_its_read_answered_leaves_nothing_locked() {
    let rig = rig().await;
    let cmd = holding(&rig, 2).await;
    let before = rig.duplicate.stats();
    let status = rig.duplicate.status(&cmd);
    assert!(drop_once_woken(status, 1).await.is_none(), "dropped");
    assert_eq!(rig.duplicate.stats().since(&before).reaped, 1);
    let cost = complete(&rig, &cmd).await;
    report("status_dropped_after_read", &cost);
    landed_at_once(&cost);
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_stranded",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

/// A provider whose send waits until the test lets it answer a charge.
#[derive(Default)]
struct Gated {
    entered: Notify,
    open: Notify,
}

impl Provider for Gated {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        self.entered.notify_one();
        self.open.notified().await;
        let charge = json!({"id": "ch_stranded", "amount": 1250, "status": "succeeded"});
        ProviderAnswer::Succeeded(ResultEnvelope::new(&charge).expect("envelope"))
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_execute_whose_rollback_is_lost_never_keeps_the_holder_from_recording() {
    let rig = rig().await;
    let cmd = command(3, json!({"stranded": 3}));
    let (provider, plan) = (Gated::default(), plan());
    let holder = rig.holder.execute(&cmd, &plan, &provider);
    let duplicate = async {
        provider.entered.notified().await;
        rig.proxy.arm(Rpc::Rollback, Fault::LoseRequest);
        let answer = rig.duplicate.execute(&cmd, &plan, &provider).await;
        assert_eq!(answer, Ok(Execution::InProgress), "the lease is busy");
        assert_eq!(rig.proxy.fired(), 1, "the duplicate's rollback was lost");
        provider.open.notify_one();
        Instant::now()
    };
    let before = rig.holder.stats();
    let (answer, released) = tokio::join!(holder, duplicate);
    let cost = Cost {
        answer,
        elapsed: released.elapsed(),
        used: rig.holder.stats().since(&before),
    };
    report("execute_duplicate_rollback_lost", &cost);
    // The charge is recorded in the same call: its opening and its record, one
    // attempt each, no commit aborted on a lock.
    let charged = json!({"id": "ch_stranded", "amount": 1250, "status": "succeeded"});
    let charge = ResultEnvelope::new(&charged).expect("envelope");
    assert_eq!(cost.answer, Ok(Execution::Succeeded(charge)));
    assert_eq!(
        (cost.used.attempts, cost.used.commits, cost.used.conflicts),
        (2, 2, 0),
        "{:?}",
        cost.used
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_stalled_once_it_opened_its_transaction_hands_it_to_the_reaper_at_its_timeout() {
    // The duplicate's status read delivers its first message (the one that carries
    // the transaction id) and then stalls: no more frames, no end. At the read's
    // timeout the transaction is the reaper's, whose rollback reaches the emulator
    // (its answer stalls with everything else on that connection), and the holder
    // commits at once, not after the stalled stream or the server's expiry.
    let rig = rig().await;
    let cmd = holding(&rig, 5).await;
    let duplicate = rig.duplicate.clone().with_retry_policy(RetryPolicy {
        attempts: std::num::NonZeroU32::MIN,
        rpc_timeout: Duration::from_millis(500),
        ..RetryPolicy::default()
    });
    rig.proxy
        .arm(Rpc::BatchGet, Fault::StallResponse { after_frames: 2 });
    let before = duplicate.stats();
    let answer = duplicate.status(&cmd).await;
    assert!(
        matches!(
            answer,
            Err(command_journal::JournalError::Unavailable { .. })
        ),
        "{answer:?}"
    );
    assert_eq!(
        duplicate.stats().since(&before).reaped,
        1,
        "the stalled read's transaction went to the reaper"
    );
    let cost = complete(&rig, &cmd).await;
    report("status_read_stalled_after_its_transaction", &cost);
    rig.proxy.release();
    landed_at_once(&cost);
}

/// Runs `calls` on a runtime of its own, as a service's process does, and stops that
/// runtime once they are done: the runtime stops the reaper's tasks with it.
fn on_a_runtime_that_stops<T: Send + 'static>(
    calls: impl Future<Output = T> + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let answer = runtime.block_on(calls);
        drop(runtime);
        answer
    })
    .join()
    .expect("the runtime's thread")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_that_waits_for_the_reaper_before_stopping_leaves_nothing_locked() {
    // A status dropped once its read answered, its transaction's first two rollbacks
    // lost: the reaper is still at it when the call is gone. Awaiting `reaped` before
    // the runtime stops (a service's shutdown) lets it finish: released, nothing
    // abandoned, the holder commits at once.
    let rig = rig().await;
    let cmd = holding(&rig, 6).await;
    rig.proxy.arm_times(Rpc::Rollback, Fault::LoseRequest, 2);
    let (duplicate, dropped) = (rig.duplicate.clone(), cmd.clone());
    let used = on_a_runtime_that_stops(async move {
        let before = duplicate.stats();
        let status = duplicate.status(&dropped);
        assert!(drop_once_woken(status, 1).await.is_none(), "dropped");
        duplicate.reaped().await;
        duplicate.stats().since(&before)
    });
    assert_eq!((used.reaped, used.abandoned), (1, 0), "{used:?}");
    assert_eq!(
        rig.proxy.fired(),
        2,
        "the reaper's first two rollbacks were lost"
    );
    let cost = complete(&rig, &cmd).await;
    report("reaper_awaited_before_the_runtime_stopped", &cost);
    landed_at_once(&cost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_that_stops_while_the_reaper_is_at_it_counts_the_transaction_abandoned() {
    // The same, but the runtime stops at once: the reaper's task is dropped with it,
    // and the transaction is counted abandoned (the server releases it when it
    // expires), never silently lost. The holder is not asked: it would wait that
    // minute.
    let rig = rig().await;
    let cmd = holding(&rig, 7).await;
    rig.proxy.arm_times(Rpc::Rollback, Fault::LoseRequest, 2);
    let duplicate = rig.duplicate.clone();
    let used = on_a_runtime_that_stops(async move {
        let before = duplicate.stats();
        let status = duplicate.status(&cmd);
        assert!(drop_once_woken(status, 1).await.is_none(), "dropped");
        (duplicate, before)
    });
    let (duplicate, before) = used;
    let used = duplicate.stats().since(&before);
    assert_eq!((used.reaped, used.abandoned), (1, 1), "{used:?}");
}

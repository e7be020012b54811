//! What a transaction the journal opened and did not end costs the lease holder, in
//! transaction mode: a duplicate caller's read-write transaction whose rollback is
//! lost on the way (the proxy cuts the connection before the `Rollback` message
//! reaches the emulator), or whose caller drops the call right after its
//! transaction-opening read answered, before polling it again. The emulator keeps an
//! abandoned transaction's locks, and the holder's commits wait on them.
//!
//! `cargo test -p command-journal-cli --test emulator stranded -- --nocapture` prints
//! one `stranded` line per case: how long the holder's next operation took, its
//! attempts and its answer (docs/concurrency.md, "Stranded transactions").

use super::proxy::{Fault, Proxy, Rpc};
use super::support::{self, command};
use command_journal::{
    CommandInput, Concurrency, Connection, Execution, Journal, LeaseId, Provider, ProviderAnswer,
    ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest, Stats, Target,
    TerminalReferenceFingerprint,
};
use serde_json::json;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
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

/// A waker that tells the test it was woken.
struct Woken(Notify);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.0.notify_one();
    }
}

/// Polls `future` by hand and drops it, without polling it again, once it has been
/// woken `wakes` times: each wake is an await point whose answer has arrived (an
/// RPC's, a read task's, a timer's). Its answer if it finished first.
async fn drop_once_woken<F: Future>(future: F, wakes: usize) -> Option<F::Output> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_after_a_status_whose_rollback_was_lost() {
    let rig = rig().await;
    let cmd = holding(&rig, 1).await;
    rig.proxy.arm(Rpc::Rollback, Fault::LoseRequest);
    rig.duplicate.status(&cmd).await.expect("status");
    assert_eq!(rig.proxy.fired(), 1, "the status's rollback was lost");
    let cost = complete(&rig, &cmd).await;
    report("status_rollback_lost", &cost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_after_a_status_dropped_once_its_read_answered() {
    let rig = rig().await;
    let cmd = holding(&rig, 2).await;
    let status = rig.duplicate.status(&cmd);
    assert!(drop_once_woken(status, 1).await.is_none(), "dropped");
    let cost = complete(&rig, &cmd).await;
    report("status_dropped_after_read", &cost);
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
    async fn send(&self, _request: SendRequest<'_>) -> ProviderAnswer {
        self.entered.notify_one();
        self.open.notified().await;
        let charge = json!({"id": "ch_stranded", "amount": 1250, "status": "succeeded"});
        ProviderAnswer::Succeeded(ResultEnvelope::new(&charge).expect("envelope"))
    }

    async fn lookup(&self, _key: &str) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_s_execute_after_a_duplicate_whose_rollback_was_lost() {
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
}

//! Transaction mode's creations without a lock, against the emulator: a blind
//! creation first (register, start), then, for register, acquire and start, a first
//! read without a transaction whose observation is the answer and whose creation is
//! committed under `exists: false` alone. Every other decision, and every commit such
//! a read loses, is taken again inside a read-write transaction. Each step is
//! checked by its exact RPCs and by the documents it leaves.

use super::proxy::{Fault, Proxy, Rpc};
use super::support::{self, command};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, Concurrency, Connection, Journal, LeaseId, LeaseOutput, RegistrationOutcome,
    Stats, Target,
};
use serde_json::json;
use std::sync::Arc;

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(13, n)).expect("lease id")
}

fn at() -> DateTime<Utc> {
    DateTime::from_timestamp(1_910_000_000, 0).expect("time")
}

/// `(attempts, batch gets, commits, rollbacks, RPCs)` since `before`.
fn used(journal: &Journal, before: &Stats) -> (u64, u64, u64, u64, u64) {
    let used = journal.stats().since(before);
    (
        used.attempts,
        used.batch_gets,
        used.commits,
        used.rollbacks,
        used.rpcs(),
    )
}

/// The names of every document of `cmd`, relative and sorted: its root, its audit
/// events and its lifecycle.
async fn names(connection: &Connection, cmd: &CommandInput) -> Vec<String> {
    let hash = cmd.identity().command_key_hash().to_string();
    support::documents(connection)
        .await
        .into_iter()
        .filter_map(|(name, _)| {
            let relative = name.rsplit_once("/documents/")?.1.to_owned();
            relative.contains(&hash).then_some(relative)
        })
        .collect()
}

/// The names a command registered and leased `events - 1` times leaves.
fn expected_names(cmd: &CommandInput, events: u64, lifecycle: bool) -> Vec<String> {
    let hash = cmd.identity().command_key_hash().to_string();
    let mut names: Vec<String> = (1..=events)
        .map(|r| format!("auditEvents/commerce_command_{hash}_{r:010}"))
        .collect();
    names.push(format!("checkoutRequests/{hash}"));
    if lifecycle {
        names.push(format!("checkoutRequests/{hash}/lifecycle/current"));
    }
    names.sort();
    names
}

/// `(state, revision, fence)` of `cmd` as `status` reads it.
async fn status(journal: &Journal, cmd: &CommandInput) -> (&'static str, i64, Option<i64>) {
    let status = journal.status(cmd).await.expect("status");
    (
        status.state.as_str(),
        status.command_revision,
        status.fence_epoch.map(|f| f.get()),
    )
}

fn fence(output: LeaseOutput) -> i64 {
    match output {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch.get(),
        other => panic!("expected a lease: {other:?}"),
    }
}

#[tokio::test]
async fn in_transaction_mode_creations_take_no_lock_and_everything_else_falls_back_to_the_transaction()
 {
    let connection = support::fresh_connection().await;
    let clock = Arc::new(ManualClock::new(at()));
    let journal = Journal::new(connection.clone())
        .with_clock(clock.clone())
        .with_concurrency(Concurrency::Transaction);
    let cmd = command(13_000, json!({"unlocked": 1}));

    // A new registration: its blind creation, 1 RPC, no transaction.
    let before = journal.stats();
    let registered = journal.register_command(&cmd).await.expect("register");
    assert_eq!(registered.outcome(), RegistrationOutcome::RegisteredNew);
    assert_eq!(used(&journal, &before), (1, 0, 1, 0, 1), "register (new)");
    assert_eq!(
        names(&connection, &cmd).await,
        expected_names(&cmd, 1, false)
    );
    let written = support::documents(&connection).await;

    // Again: the blind creation is refused (the root exists), then one read without
    // a transaction observes it. Nothing written, no rollback to send.
    let before = journal.stats();
    let again = journal
        .register_command(&cmd)
        .await
        .expect("register again");
    assert_eq!(again.outcome(), RegistrationOutcome::RegisteredExisting);
    assert_eq!(
        used(&journal, &before),
        (2, 1, 1, 0, 2),
        "register (existing)"
    );
    assert_eq!(journal.stats().since(&before).conflicts, 1);
    assert_eq!(support::documents(&connection).await, written);

    // Start of the registered command: the refused blind creation, then the read
    // without a transaction and the lifecycle's creation committed without one.
    let before = journal.stats();
    let started = journal.start(&cmd, &lease(1)).await.expect("start");
    assert_eq!(fence(started.lease), 1);
    assert_eq!(
        used(&journal, &before),
        (2, 1, 2, 0, 3),
        "start (registered)"
    );
    assert_eq!(
        names(&connection, &cmd).await,
        expected_names(&cmd, 2, true)
    );
    assert_eq!(status(&journal, &cmd).await, ("leased", 2, Some(1)));
    let written = support::documents(&connection).await;

    // Another holder while the lease runs: busy, observed from that read.
    let before = journal.stats();
    let busy = journal.acquire_lease(&cmd, &lease(2)).await.expect("busy");
    assert_eq!(busy, LeaseOutput::Busy);
    assert_eq!(used(&journal, &before), (1, 1, 0, 0, 1), "acquire (busy)");
    let before = journal.stats();
    let busy = journal.start(&cmd, &lease(2)).await.expect("busy start");
    assert_eq!(busy.lease, LeaseOutput::Busy);
    assert_eq!(used(&journal, &before), (2, 1, 1, 0, 2), "start (busy)");
    assert_eq!(support::documents(&connection).await, written);

    // After the lease, a takeover replaces the lifecycle: the read without a
    // transaction sends nothing more, and the transaction reads and commits it.
    clock.advance(TimeDelta::seconds(61));
    let before = journal.stats();
    let taken = journal
        .acquire_lease(&cmd, &lease(2))
        .await
        .expect("takeover");
    assert_eq!(fence(taken), 2);
    assert_eq!(
        used(&journal, &before),
        (2, 2, 1, 0, 3),
        "acquire (takeover)"
    );
    assert_eq!(journal.stats().since(&before).conflicts, 0);
    assert_eq!(
        names(&connection, &cmd).await,
        expected_names(&cmd, 3, true)
    );
    assert_eq!(status(&journal, &cmd).await, ("leased", 3, Some(2)));
    clock.advance(TimeDelta::seconds(61));
    let before = journal.stats();
    let taken = journal
        .start(&cmd, &lease(3))
        .await
        .expect("start takeover");
    assert_eq!(fence(taken.lease), 3);
    assert_eq!(used(&journal, &before), (3, 2, 2, 0, 4), "start (takeover)");
    assert_eq!(
        names(&connection, &cmd).await,
        expected_names(&cmd, 4, true)
    );
    assert_eq!(status(&journal, &cmd).await, ("leased", 4, Some(3)));

    let report = command_journal::verify(&connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "verify: {:?}", report.findings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_transaction_mode_a_first_acquire_that_loses_its_unlocked_commit_answers_from_the_transaction()
 {
    // The loser's read is answered by the emulator and held at the proxy; the winner
    // acquires meanwhile; released, the loser decides a creation from its read, its
    // commit is refused (the lifecycle exists), and the transaction reads it busy.
    let direct = support::fresh_connection().await;
    let proxy = Proxy::start(support::emulator().host()).await;
    let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
        .await
        .expect("connect through the proxy");
    let loser = Journal::new(through).with_concurrency(Concurrency::Transaction);
    let winner = Journal::new(direct.clone()).with_concurrency(Concurrency::Transaction);
    let cmd = command(13_001, json!({"unlocked": 2}));
    winner.register_command(&cmd).await.expect("register");

    proxy.arm(Rpc::BatchGet, Fault::HoldResponse);
    let losing = {
        let (loser, cmd) = (loser.clone(), cmd.clone());
        tokio::spawn(async move { loser.acquire_lease(&cmd, &lease(1)).await })
    };
    proxy.until_held().await;
    let won = winner.acquire_lease(&cmd, &lease(2)).await.expect("winner");
    assert_eq!(fence(won), 1);
    proxy.release();
    let lost = losing.await.expect("task").expect("loser");
    assert_eq!(lost, LeaseOutput::Busy);

    // Its read and refused commit, then the transaction's read and rollback.
    let nothing = Stats::default();
    assert_eq!(used(&loser, &nothing), (2, 2, 1, 1, 4));
    assert_eq!(loser.stats().conflicts, 1, "the refused commit");
    assert_eq!(proxy.fired(), 1);
    assert_eq!(names(&direct, &cmd).await, expected_names(&cmd, 2, true));
    assert_eq!(status(&winner, &cmd).await, ("leased", 2, Some(1)));
    // The lease is the winner's: it observes its own, the loser is still busy.
    assert_eq!(
        winner.acquire_lease(&cmd, &lease(2)).await.expect("again"),
        won
    );
    let report = command_journal::verify(&direct, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "verify: {:?}", report.findings);
    drop(proxy);
}

#[tokio::test]
async fn in_transaction_mode_without_fast_paths_every_decision_is_read_in_its_transaction() {
    let journal = Journal::new(support::fresh_connection().await)
        .with_concurrency(Concurrency::Transaction)
        .with_fast_paths(false);
    let cmd = command(13_002, json!({"unlocked": 3}));
    let before = journal.stats();
    journal.register_command(&cmd).await.expect("register");
    assert_eq!(used(&journal, &before), (1, 1, 1, 0, 2), "register (new)");
    let before = journal.stats();
    journal
        .register_command(&cmd)
        .await
        .expect("register again");
    assert_eq!(
        used(&journal, &before),
        (1, 1, 0, 1, 2),
        "register (existing)"
    );
    let before = journal.stats();
    journal
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("acquire");
    assert_eq!(used(&journal, &before), (1, 1, 1, 0, 2), "acquire (first)");
    let before = journal.stats();
    journal.acquire_lease(&cmd, &lease(2)).await.expect("busy");
    assert_eq!(used(&journal, &before), (1, 1, 0, 1, 2), "acquire (busy)");
}

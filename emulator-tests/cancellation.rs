//! Deadlines and cancellation: an operation whose future is dropped at any point —
//! before its first poll, while its read is in flight, while its commit is in flight —
//! leaves the journal consistent, holds no lock, and a later call converges with no
//! extra event. Run in both concurrency modes.

use super::proxy::{Fault, Proxy, Rpc};
use super::support::{self, command, list};
use command_journal::Concurrency;
use command_journal::Journal;
use command_journal::LeaseId;
use command_journal::LeaseOutput;
use command_journal::{Connection, Target};
use serde_json::json;
use std::time::Duration;

/// How long the proxy holds a response back: longer than the caller waits, shorter
/// than the emulator's 2 s lock timeout, so that a transaction the dropped read
/// opened is released (the read task, once the answer arrives, finds no caller and
/// drops it to the reaper, which rolls it back) before a later caller waiting on its
/// lock gives up.
const HOLD: Duration = Duration::from_millis(1500);
/// How long the caller waits before dropping the operation.
const CANCEL_AFTER: Duration = Duration::from_millis(300);

#[derive(Debug, Clone, Copy)]
enum Point {
    BeforeFirstPoll,
    ReadInFlight,
    CommitInFlight,
}

async fn documents(direct: &Connection, hash: &str) -> (usize, usize) {
    let lifecycles = list(direct, &format!("checkoutRequests/{hash}"), "lifecycle").await;
    let events = list(direct, "", "auditEvents").await;
    (lifecycles.len(), events.len())
}

async fn cancelled_acquire_converges(mode: Concurrency, point: Point) {
    let direct = support::fresh_connection().await;
    let proxy = Proxy::start(support::emulator().host()).await;
    let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
        .await
        .expect("connect through the proxy");
    let cancelled = Journal::new(through).with_concurrency(mode);
    let journal = Journal::new(direct.clone()).with_concurrency(mode);
    let cmd = command(700, json!({"case": "cancel"}));
    journal.register_command(&cmd).await.expect("register");
    let hash = cmd.identity().command_key_hash().to_string();
    let lease = LeaseId::parse(&support::uuid(7, 1)).expect("lease");

    match point {
        Point::BeforeFirstPoll => {
            let future = cancelled.acquire_lease(&cmd, &lease);
            drop(future);
            assert_eq!(cancelled.stats().rpcs(), 0, "nothing was sent");
        }
        Point::ReadInFlight | Point::CommitInFlight => {
            let rpc = match point {
                Point::ReadInFlight => Rpc::BatchGet,
                _ => Rpc::Commit,
            };
            proxy.arm(rpc, Fault::DelayResponse(HOLD));
            let outcome =
                tokio::time::timeout(CANCEL_AFTER, cancelled.acquire_lease(&cmd, &lease)).await;
            assert!(
                outcome.is_err(),
                "{point:?}: the operation was still waiting"
            );
            assert_eq!(proxy.fired(), 1, "{point:?}: the held RPC was reached");
        }
    }
    let (lifecycles, events) = documents(&direct, &hash).await;
    match point {
        // The commit reached the emulator before its answer was held back.
        Point::CommitInFlight => assert_eq!((lifecycles, events), (1, 2), "{point:?}"),
        _ => assert_eq!((lifecycles, events), (0, 1), "{point:?}: nothing written"),
    }

    // Calling again converges: the same holder gets fence 1 whether or not the dropped
    // call's commit landed, in one attempt — no lock of the dropped call is waited for.
    let before = journal.stats();
    let again = journal
        .acquire_lease(&cmd, &lease)
        .await
        .unwrap_or_else(|e| panic!("{mode:?} {point:?}: retry failed: {e:?}"));
    let LeaseOutput::Acquired { fence_epoch, .. } = again else {
        panic!("{point:?}: expected acquired, got {again:?}");
    };
    assert_eq!(fence_epoch, 1, "{point:?}");
    assert_eq!(
        journal.stats().since(&before).attempts,
        1,
        "{mode:?} {point:?}: no conflict, no lock wait"
    );
    assert_eq!(
        documents(&direct, &hash).await,
        (1, 2),
        "{point:?}: no extra event"
    );
    drop(proxy);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_operation_leaves_the_journal_consistent_in_both_modes() {
    for mode in [Concurrency::Preconditions, Concurrency::Transaction] {
        for point in [
            Point::BeforeFirstPoll,
            Point::ReadInFlight,
            Point::CommitInFlight,
        ] {
            cancelled_acquire_converges(mode, point).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_bounds_an_operation_against_a_silent_server() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = silent.local_addr().expect("addr").to_string();
    let connection = Connection::connect("silent-deadline", Target::Emulator(host))
        .await
        .expect("connections are lazy");
    let journal = Journal::new(connection).with_retry_policy(command_journal::RetryPolicy {
        deadline: Some(Duration::from_millis(500)),
        ..Default::default()
    });
    let began = std::time::Instant::now();
    let error = journal
        .register_command(&command(701, json!({})))
        .await
        .expect_err("nothing answers");
    assert!(
        matches!(
            error,
            command_journal::JournalError::Unavailable {
                deadline: true,
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
    // The one attempt is the new registration's blind creation, cut at the deadline.
    assert_eq!(
        (journal.stats().commits, journal.stats().batch_gets),
        (1, 0)
    );
    // The one commit was cut at the deadline, not at the 10 s per-RPC timeout.
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    drop(silent);
}

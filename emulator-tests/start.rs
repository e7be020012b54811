//! One-call start against the emulator: races of start alone and mixed with the two
//! separate calls, its RPC counts, and documents identical to register + acquire.

use super::support::{self, command, get, list, race};
use chrono::{DateTime, Utc};
use command_journal::Journal;
use command_journal::LeaseOutput;
use command_journal::RegistrationOutcome;
use command_journal::StartOutput;
use command_journal::Stats;
use command_journal::time::ManualClock;
use command_journal::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::sync::Arc;

const ROUNDS: u64 = 3;

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(7, n)).expect("lease id")
}

fn instant() -> DateTime<Utc> {
    DateTime::from_timestamp(1_910_000_000, 125_000_000).expect("time")
}

async fn manual_journal() -> Journal {
    let clock = Arc::new(ManualClock::new(instant()));
    support::clocked_journal(support::fresh_connection().await, clock)
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

fn paths(cmd: &CommandInput) -> [String; 4] {
    let hash = hash(cmd);
    [
        format!("checkoutRequests/{hash}"),
        format!("auditEvents/commerce_command_{hash}_0000000001"),
        format!("checkoutRequests/{hash}/lifecycle/current"),
        format!("auditEvents/commerce_command_{hash}_0000000002"),
    ]
}

/// The command's root, revision-1 event, lifecycle and revision-2 event (fields only),
/// and how many documents each of its collections holds.
async fn stored(journal: &Journal, cmd: &CommandInput) -> (Vec<Option<Document>>, [usize; 3]) {
    let connection = journal.connection();
    let mut docs = Vec::new();
    for path in paths(cmd) {
        docs.push(get(connection, &path).await.map(|d| Document {
            name: String::new(),
            create_time: None,
            update_time: None,
            ..d
        }));
    }
    let prefix = format!("commerce_command_{}_", hash(cmd));
    let audits = list(connection, "", "auditEvents")
        .await
        .iter()
        .filter(|d| {
            d.name
                .rsplit('/')
                .next()
                .is_some_and(|id| id.starts_with(&prefix))
        })
        .count();
    let roots = list(connection, "", "checkoutRequests")
        .await
        .iter()
        .filter(|d| d.name.ends_with(&hash(cmd)))
        .count();
    let lifecycles = list(
        connection,
        &format!("checkoutRequests/{}", hash(cmd)),
        "lifecycle",
    )
    .await
    .len();
    (docs, [roots, audits, lifecycles])
}

fn count<T>(results: &[Result<T, command_journal::JournalError>], f: impl Fn(&T) -> bool) -> usize {
    results.iter().filter(|r| r.as_ref().is_ok_and(&f)).count()
}

/// How many of a race's answers registered new, acquired at fence 1, and were busy.
fn registered_acquired_busy(
    results: &[Result<StartOutput, command_journal::JournalError>],
) -> (usize, usize, usize) {
    let new = count(results, |o: &StartOutput| {
        o.registration_outcome() == RegistrationOutcome::RegisteredNew
    });
    let acquired = count(
        results,
        |o: &StartOutput| matches!(o.lease, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 1),
    );
    let busy = count(results, |o: &StartOutput| o.lease == LeaseOutput::Busy);
    (new, acquired, busy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_racing_starts_register_once_and_lease_once() {
    let journal = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(1_100 + round, json!({"round": round}));
        let results = race(24, |i| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move { journal.start(&cmd, &lease(i)).await }
        })
        .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(
            registered_acquired_busy(&results),
            (1, 1, 23),
            "round {round}: {results:?}"
        );
        // The caller that registered is the one that holds the lease: one commit.
        let winner = count(&results, |o: &StartOutput| {
            o.registration_outcome() == RegistrationOutcome::RegisteredNew
                && matches!(o.lease, LeaseOutput::Acquired { .. })
        });
        assert_eq!(winner, 1);
        let (docs, counts) = stored(&journal, &cmd).await;
        assert!(docs.iter().all(Option::is_some), "round {round}");
        assert_eq!(
            counts,
            [1, 2, 1],
            "round {round}: 1 root, events 1 and 2 only, 1 lifecycle"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn starts_racing_register_then_acquire_callers_agree_on_one_history() {
    let journal = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(1_200 + round, json!({"round": round}));
        let results = race(24, |i| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move {
                if i % 2 == 0 {
                    journal.start(&cmd, &lease(i)).await
                } else {
                    let registration = journal.register_command(&cmd).await?;
                    let lease = journal.acquire_lease(&cmd, &lease(i)).await?;
                    Ok(StartOutput {
                        registration,
                        lease,
                    })
                }
            }
        })
        .await;
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(
            registered_acquired_busy(&results),
            (1, 1, 23),
            "round {round}: {results:?}"
        );
        let (docs, counts) = stored(&journal, &cmd).await;
        assert!(docs.iter().all(Option::is_some));
        assert_eq!(counts, [1, 2, 1], "round {round}");
    }
}

fn check(before: Stats, journal: &Journal, expected: (u64, u64, u64, u64), what: &str) {
    let used = journal.stats().since(&before);
    assert_eq!(
        (used.attempts, used.batch_gets, used.commits, used.rpcs()),
        expected,
        "{what}: (attempts, batch gets, commits, RPCs)"
    );
}

#[tokio::test]
async fn an_uncontended_start_is_one_commit_and_a_command_end_to_end_three_rpcs() {
    // A new command's start is its blind creation alone (1 RPC), start + complete 3,
    // in either mode: a creation takes no lock.
    let journal = manual_journal().await;
    let cmd = command(1_300, json!({}));
    let before = journal.stats();
    let started = journal.start(&cmd, &lease(1)).await.expect("start");
    check(before, &journal, (1, 0, 1, 1), "start of a new command");
    let LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
        panic!("expected a lease: {started:?}");
    };
    let reference = TerminalReferenceFingerprint::parse(&"cd".repeat(32)).expect("reference");
    journal
        .complete_command(&cmd, &lease(1), fence_epoch, &reference)
        .await
        .expect("complete");
    check(before, &journal, (2, 1, 2, 3), "start + complete");

    // A lost-response retry of start, or a start after the end, is one read after its
    // blind creation is refused; in transaction mode that read takes no lock (an
    // observation needs none).
    let before = journal.stats();
    let again = journal.start(&cmd, &lease(2)).await.expect("start");
    assert_eq!(again.lease, LeaseOutput::Succeeded);
    check(
        before,
        &journal,
        (2, 1, 1, 2),
        "start of a finished command",
    );

    // Against register + acquire: 3 RPCs before the provider call instead of 1.
    let other = command(1_301, json!({}));
    let before = journal.stats();
    journal.register_command(&other).await.expect("register");
    journal
        .acquire_lease(&other, &lease(1))
        .await
        .expect("acquire");
    check(before, &journal, (2, 1, 2, 3), "register + acquire");
    let registered = command(1_302, json!({}));
    journal
        .register_command(&registered)
        .await
        .expect("register");
    let before = journal.stats();
    journal.start(&registered, &lease(1)).await.expect("start");
    check(
        before,
        &journal,
        // The refused blind creation, then a read and a commit: in transaction mode
        // both without a transaction, since creating the lifecycle needs no lock.
        (2, 1, 2, 3),
        "start of a registered command",
    );
}

#[tokio::test]
async fn start_stores_exactly_the_documents_of_register_then_acquire() {
    let by_start = manual_journal().await;
    let by_two = manual_journal().await;
    for n in 0..2 {
        let cmd = command(1_400 + n, json!({"n": n, "sku": "CANARYpayload_start"}));
        let started = by_start.start(&cmd, &lease(n)).await.expect("start");
        let registration = by_two.register_command(&cmd).await.expect("register");
        let acquired = by_two
            .acquire_lease(&cmd, &lease(n))
            .await
            .expect("acquire");
        assert_eq!(
            started,
            StartOutput {
                registration,
                lease: acquired
            }
        );
        let (docs, counts) = stored(&by_start, &cmd).await;
        assert_eq!((docs.clone(), counts), stored(&by_two, &cmd).await);
        assert!(docs.iter().all(Option::is_some));
        let text = format!("{docs:?}");
        assert!(!text.contains("CANARY"), "a canary was stored");
    }
}

//! Leases, fencing and terminal commitments (B2B) against the emulator.

use super::support::{self, command, get, list, put, race};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::Connection;
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::RegistrationOutcome;
use command_journal::time::ManualClock;
use command_journal::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::sync::Arc;

const ROUNDS: u64 = 3;

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(2, n)).expect("lease id")
}

fn reference(n: u8) -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&format!("{n:02x}").repeat(32)).expect("reference")
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_900_000_000, 250_000_000).expect("time")
}

async fn manual_journal() -> (Journal, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(start()));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    (journal, clock)
}

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

fn lifecycle_path(cmd: &CommandInput) -> String {
    format!("checkoutRequests/{}/lifecycle/current", hash(cmd))
}

fn audit_path(cmd: &CommandInput, revision: i64) -> String {
    format!("auditEvents/commerce_command_{}_{revision:010}", hash(cmd))
}

/// Root, revision-1 audit and lifecycle of `cmd`, and the number of audit events.
async fn state(connection: &Connection, cmd: &CommandInput) -> (Vec<Option<Document>>, usize) {
    let docs = vec![
        get(connection, &format!("checkoutRequests/{}", hash(cmd))).await,
        get(connection, &audit_path(cmd, 1)).await,
        get(connection, &lifecycle_path(cmd)).await,
    ];
    let prefix = format!("commerce_command_{}_", hash(cmd));
    let audits = list(connection, "", "auditEvents")
        .await
        .into_iter()
        .filter(|d| {
            d.name
                .rsplit('/')
                .next()
                .is_some_and(|id| id.starts_with(&prefix))
        })
        .count();
    (docs, audits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_distinct_holders_race_the_first_acquire() {
    let (journal, _clock) = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(100 + round, json!({"round": round}));
        journal.register_command(&cmd).await.expect("register");
        let results = race(24, |i| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move { journal.acquire_lease(&cmd, &lease(i)).await }
        })
        .await;
        let acquired: Vec<_> = results
            .iter()
            .filter(
                |r| matches!(r, Ok(LeaseOutput::Acquired { fence_epoch: f, .. }) if f.get() == 1),
            )
            .collect();
        let busy = results
            .iter()
            .filter(|r| matches!(r, Ok(LeaseOutput::Busy)))
            .count();
        assert_eq!(
            (acquired.len(), busy),
            (1, 23),
            "round {round}: {results:?}"
        );
        let (docs, audits) = state(journal.connection(), &cmd).await;
        assert!(docs[2].is_some(), "one lifecycle");
        assert_eq!(audits, 2, "round {round}: revision 1 and 2 only");
        assert!(
            get(journal.connection(), &audit_path(&cmd, 2))
                .await
                .is_some()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn twenty_four_same_holder_lost_response_retries_mutate_once() {
    let (journal, _clock) = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(200 + round, json!({"round": round}));
        journal.register_command(&cmd).await.expect("register");
        let before = journal.stats();
        let results = race(24, |_| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move { journal.acquire_lease(&cmd, &lease(7)).await }
        })
        .await;
        let first = results[0].expect("acquired");
        assert!(matches!(first, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 1));
        assert!(
            results.iter().all(|r| r.as_ref() == Ok(&first)),
            "{results:?}"
        );
        let (_, audits) = state(journal.connection(), &cmd).await;
        assert_eq!(audits, 2, "exactly one mutation");
        let used = journal.stats().since(&before);
        assert_eq!(used.commits - used.conflicts, 1, "one successful commit");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_lease_is_taken_over_once_and_the_old_holder_cannot_finish() {
    let (journal, clock) = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(300 + round, json!({"round": round}));
        journal.register_command(&cmd).await.expect("register");
        let old = lease(1000 + round);
        let LeaseOutput::Acquired { fence_epoch, .. } =
            journal.acquire_lease(&cmd, &old).await.expect("acquire")
        else {
            panic!("expected a lease");
        };
        assert_eq!(fence_epoch, 1);
        clock.advance(TimeDelta::seconds(60));
        let results = race(24, |i| {
            let (journal, cmd) = (journal.clone(), cmd.clone());
            async move { journal.acquire_lease(&cmd, &lease(i)).await }
        })
        .await;
        let winners = results
            .iter()
            .filter(
                |r| matches!(r, Ok(LeaseOutput::Acquired { fence_epoch: f, .. }) if f.get() == 2),
            )
            .count();
        let busy = results
            .iter()
            .filter(|r| matches!(r, Ok(LeaseOutput::Busy)))
            .count();
        assert_eq!((winners, busy), (1, 23), "round {round}: {results:?}");
        assert_eq!(
            journal
                .complete_command(&cmd, &old, crate::support::fence_at(1), &reference(1))
                .await,
            Err(JournalError::LeaseNotHeld)
        );
        assert_eq!(
            journal
                .fail_command(&cmd, &old, crate::support::fence_at(1))
                .await,
            Err(JournalError::LeaseNotHeld)
        );
        let (_, audits) = state(journal.connection(), &cmd).await;
        assert_eq!(audits, 3, "registration, acquisition, one takeover");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_holder_taking_over_its_own_expired_lease_gets_a_new_fence() {
    let (journal, clock) = manual_journal().await;
    let cmd = command(350, json!({}));
    journal.register_command(&cmd).await.expect("register");
    let holder = lease(1);
    journal.acquire_lease(&cmd, &holder).await.expect("acquire");
    clock.advance(TimeDelta::seconds(61));
    let again = journal
        .acquire_lease(&cmd, &holder)
        .await
        .expect("takeover");
    assert!(matches!(again, LeaseOutput::Acquired { fence_epoch: f, .. } if f.get() == 2));
    assert_eq!(
        journal
            .complete_command(&cmd, &holder, crate::support::fence_at(1), &reference(1))
            .await,
        Err(JournalError::StaleFence)
    );
    assert_eq!(
        journal
            .complete_command(&cmd, &holder, crate::support::fence_at(2), &reference(1))
            .await,
        Ok(TerminalOutput::Succeeded)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn complete_versus_fail_races_record_exactly_one_terminal_event() {
    let (journal, _clock) = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(400 + round, json!({"round": round}));
        journal.register_command(&cmd).await.expect("register");
        let holder = lease(5);
        journal.acquire_lease(&cmd, &holder).await.expect("acquire");
        let results = race(24, |i| {
            let (journal, cmd, holder) = (journal.clone(), cmd.clone(), holder.clone());
            async move {
                if i % 2 == 0 {
                    journal
                        .complete_command(&cmd, &holder, crate::support::fence_at(1), &reference(9))
                        .await
                } else {
                    journal
                        .fail_command(&cmd, &holder, crate::support::fence_at(1))
                        .await
                }
            }
        })
        .await;
        let succeeded = results
            .iter()
            .filter(|r| r == &&Ok(TerminalOutput::Succeeded))
            .count();
        let failed = results
            .iter()
            .filter(|r| r == &&Ok(TerminalOutput::FailedFinal))
            .count();
        let conflicts = results
            .iter()
            .filter(|r| r == &&Err(JournalError::TerminalConflict))
            .count();
        // One side won; every caller on that side saw it, every other one conflicts.
        assert_eq!(succeeded + failed + conflicts, 24, "{results:?}");
        assert!((succeeded == 12 && failed == 0) || (failed == 12 && succeeded == 0));
        let (docs, audits) = state(journal.connection(), &cmd).await;
        assert_eq!(audits, 3, "exactly one terminal event");
        // Terminal state never changes afterwards.
        let again = journal
            .fail_command(&cmd, &holder, crate::support::fence_at(1))
            .await;
        let again2 = journal
            .complete_command(&cmd, &holder, crate::support::fence_at(1), &reference(9))
            .await;
        assert!(again.is_err() || again2.is_err());
        assert_eq!(state(journal.connection(), &cmd).await, (docs, 3));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn distinct_commitment_races_record_exactly_one_commitment() {
    let (journal, _clock) = manual_journal().await;
    for round in 0..ROUNDS {
        let cmd = command(500 + round, json!({"round": round}));
        journal.register_command(&cmd).await.expect("register");
        let holder = lease(6);
        journal.acquire_lease(&cmd, &holder).await.expect("acquire");
        let results = race(24, |i| {
            let (journal, cmd, holder) = (journal.clone(), cmd.clone(), holder.clone());
            async move {
                let r = reference(u8::try_from(i).expect("small"));
                journal
                    .complete_command(&cmd, &holder, crate::support::fence_at(1), &r)
                    .await
            }
        })
        .await;
        let succeeded = results
            .iter()
            .filter(|r| r == &&Ok(TerminalOutput::Succeeded))
            .count();
        let conflicts = results
            .iter()
            .filter(|r| r == &&Err(JournalError::TerminalConflict))
            .count();
        assert_eq!((succeeded, conflicts), (1, 23), "{results:?}");
        let (_, audits) = state(journal.connection(), &cmd).await;
        assert_eq!(audits, 3);
    }
}

#[tokio::test]
async fn terminal_retries_and_later_acquires_are_read_only_even_after_expiry() {
    let (journal, clock) = manual_journal().await;
    for (n, succeed) in [(600, true), (601, false)] {
        let cmd = command(n, json!({}));
        journal.register_command(&cmd).await.expect("register");
        let holder = lease(8);
        journal.acquire_lease(&cmd, &holder).await.expect("acquire");
        let expected = if succeed {
            journal
                .complete_command(&cmd, &holder, crate::support::fence_at(1), &reference(3))
                .await
        } else {
            journal
                .fail_command(&cmd, &holder, crate::support::fence_at(1))
                .await
        }
        .expect("terminal");
        let before = state(journal.connection(), &cmd).await;
        clock.advance(TimeDelta::seconds(3600));
        let stats = journal.stats();
        let retry = if succeed {
            journal
                .complete_command(&cmd, &holder, crate::support::fence_at(1), &reference(3))
                .await
        } else {
            journal
                .fail_command(&cmd, &holder, crate::support::fence_at(1))
                .await
        };
        assert_eq!(retry, Ok(expected));
        let later = journal
            .acquire_lease(&cmd, &lease(9))
            .await
            .expect("acquire");
        assert_eq!(later, LeaseOutput::from(expected));
        assert_eq!(journal.stats().since(&stats).commits, 0, "read-only");
        assert_eq!(state(journal.connection(), &cmd).await, before);
    }
}

#[tokio::test]
async fn uncontended_acquire_complete_and_fail_are_one_attempt_of_two_rpcs() {
    let (journal, _clock) = manual_journal().await;
    let cmd = command(700, json!({}));
    let other = command(701, json!({}));
    journal.register_command(&cmd).await.expect("register");
    journal.register_command(&other).await.expect("register");
    let check = |before: command_journal::Stats, journal: &Journal| {
        let used = journal.stats().since(&before);
        assert_eq!(
            (used.attempts, used.batch_gets, used.commits, used.rpcs()),
            (1, 1, 1, 2)
        );
    };
    let before = journal.stats();
    journal
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("acquire");
    check(before, &journal);
    let before = journal.stats();
    journal
        .complete_command(&cmd, &lease(1), crate::support::fence_at(1), &reference(1))
        .await
        .expect("complete");
    check(before, &journal);
    journal
        .acquire_lease(&other, &lease(1))
        .await
        .expect("acquire");
    let before = journal.stats();
    journal
        .fail_command(&other, &lease(1), crate::support::fence_at(1))
        .await
        .expect("fail");
    check(before, &journal);
}

#[tokio::test]
async fn root_and_registration_audit_stay_identical_through_every_state() {
    let (journal, clock) = manual_journal().await;
    let connection = journal.connection();
    for (n, end) in [(800, "succeed"), (801, "fail"), (802, "leased")] {
        let cmd = command(n, json!({"n": n}));
        journal.register_command(&cmd).await.expect("register");
        let (pair, _) = state(connection, &cmd).await;
        let pair = &pair[..2];
        let holder = lease(11);
        journal.acquire_lease(&cmd, &holder).await.expect("acquire");
        clock.advance(TimeDelta::seconds(70));
        journal
            .acquire_lease(&cmd, &holder)
            .await
            .expect("takeover");
        match end {
            "succeed" => {
                journal
                    .complete_command(&cmd, &holder, crate::support::fence_at(2), &reference(2))
                    .await
                    .expect("ok");
            }
            "fail" => {
                journal
                    .fail_command(&cmd, &holder, crate::support::fence_at(2))
                    .await
                    .expect("ok");
            }
            _ => {}
        }
        let output = journal
            .register_command(&cmd)
            .await
            .expect("register again");
        assert_eq!(output.outcome(), RegistrationOutcome::RegisteredExisting);
        let (now, _) = state(connection, &cmd).await;
        assert_eq!(
            &now[..2],
            pair,
            "root and revision-1 audit unchanged ({end})"
        );
    }
}

/// Seeds `cmd` registered and leased, then lets `corrupt` damage the stored state,
/// and checks every operation is rejected as corrupt with nothing changed.
async fn assert_corrupt_untouched(n: u64, corrupt: impl AsyncFnOnce(&Connection, &CommandInput)) {
    let (journal, _clock) = manual_journal().await;
    let connection = journal.connection();
    let cmd = command(n, json!({}));
    journal.register_command(&cmd).await.expect("register");
    journal
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("acquire");
    corrupt(connection, &cmd).await;
    let before = state(connection, &cmd).await;
    let results = [
        journal.acquire_lease(&cmd, &lease(2)).await.map(|_| ()),
        journal.acquire_lease(&cmd, &lease(1)).await.map(|_| ()),
        journal
            .complete_command(&cmd, &lease(1), crate::support::fence_at(1), &reference(1))
            .await
            .map(|_| ()),
        journal
            .fail_command(&cmd, &lease(1), crate::support::fence_at(1))
            .await
            .map(|_| ()),
        journal.status(&cmd).await.map(|_| ()),
    ];
    for result in results {
        assert!(
            matches!(result, Err(JournalError::JournalCorrupt { .. })),
            "expected journal_corrupt, got {result:?}"
        );
    }
    assert_eq!(state(connection, &cmd).await, before, "nothing changed");
}

fn set(
    doc: &mut Document,
    field: &str,
    value: gcloud_sdk::google::firestore::v1::value::ValueType,
) {
    doc.fields.insert(
        field.to_owned(),
        gcloud_sdk::google::firestore::v1::Value {
            value_type: Some(value),
        },
    );
}

use gcloud_sdk::google::firestore::v1::value::ValueType;

#[tokio::test]
async fn a_preseeded_next_audit_event_is_corrupt_and_nothing_changes() {
    assert_corrupt_untouched(900, async |connection, cmd| {
        let partner = get(connection, &audit_path(cmd, 2)).await.expect("partner");
        put(connection, &audit_path(cmd, 3), partner.fields).await;
    })
    .await;
}

#[tokio::test]
async fn a_malformed_lifecycle_is_corrupt_and_untouched() {
    assert_corrupt_untouched(901, async |connection, cmd| {
        let mut doc = get(connection, &lifecycle_path(cmd))
            .await
            .expect("lifecycle");
        set(&mut doc, "fenceEpoch", ValueType::DoubleValue(1.0));
        put(connection, &lifecycle_path(cmd), doc.fields).await;
    })
    .await;
}

#[tokio::test]
async fn a_future_schema_lifecycle_is_corrupt_and_untouched() {
    assert_corrupt_untouched(902, async |connection, cmd| {
        let mut doc = get(connection, &lifecycle_path(cmd))
            .await
            .expect("lifecycle");
        set(
            &mut doc,
            "lifecycleSchemaVersion",
            ValueType::IntegerValue(2),
        );
        put(connection, &lifecycle_path(cmd), doc.fields).await;
    })
    .await;
}

#[tokio::test]
async fn a_lifecycle_without_its_current_audit_event_is_corrupt_and_untouched() {
    assert_corrupt_untouched(903, async |connection, cmd| {
        support::delete(connection, &audit_path(cmd, 2)).await;
    })
    .await;
}

#[tokio::test]
async fn a_current_audit_event_that_disagrees_is_corrupt_and_untouched() {
    assert_corrupt_untouched(904, async |connection, cmd| {
        let mut doc = get(connection, &audit_path(cmd, 2)).await.expect("partner");
        set(
            &mut doc,
            "occurredAt",
            ValueType::TimestampValue(gcloud_sdk::prost_types::Timestamp {
                seconds: 1_900_000_001,
                nanos: 0,
            }),
        );
        put(connection, &audit_path(cmd, 2), doc.fields).await;
    })
    .await;
}

#[tokio::test]
async fn an_orphan_lifecycle_without_registration_is_rejected_and_untouched() {
    let (journal, _clock) = manual_journal().await;
    let connection = journal.connection();
    let cmd = command(905, json!({}));
    // Build a valid lifecycle elsewhere, then plant it without root or audits.
    let (scratch, _c) = manual_journal().await;
    scratch.register_command(&cmd).await.expect("register");
    scratch
        .acquire_lease(&cmd, &lease(1))
        .await
        .expect("acquire");
    let lifecycle = get(scratch.connection(), &lifecycle_path(&cmd))
        .await
        .expect("lifecycle");
    put(connection, &lifecycle_path(&cmd), lifecycle.fields).await;
    let before = get(connection, &lifecycle_path(&cmd)).await;
    let result = journal.acquire_lease(&cmd, &lease(2)).await;
    assert!(
        matches!(result, Err(JournalError::JournalCorrupt { .. })),
        "{result:?}"
    );
    let registered = journal.register_command(&cmd).await;
    assert!(
        matches!(registered, Err(JournalError::JournalCorrupt { .. })),
        "registration must not adopt an orphan lifecycle: {registered:?}"
    );
    assert_eq!(get(connection, &lifecycle_path(&cmd)).await, before);
    assert!(list(connection, "", "checkoutRequests").await.is_empty());
}

//! One timestamp, repeatable decisions, races.

use super::*;

fn snapshot_of<T: Transition>(op: &T, store: &Store, extra: &[String]) -> Snapshot {
    store.snapshot(&[op.paths(), extra.to_vec()].concat())
}

#[track_caller]
fn assert_repeatable<T>(op: &T, snapshot: &Snapshot) -> Decision<T::Output>
where
    T: Transition + Clone,
    T::Output: Debug + PartialEq,
{
    let first = op.decide(snapshot);
    for _ in 0..10 {
        assert_eq!(op.decide(snapshot), first);
        assert_eq!(op.clone().decide(snapshot), first);
    }
    first
}

#[test]
fn decide_is_repeatable_over_one_prepared_timestamp() {
    let registered = registered_store();
    let (leased, first) = leased_store();
    // First acquisition: the same writes (same expiry) on every call.
    let op = acquire(0, T0);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &registered, &[])),
        Decision::Mutate(create_writes(&first), first.held())
    );
    // Takeover, completion, failure, busy, recovery.
    let later = T0 + LEASE + 9;
    let op = acquire(1, later);
    let taken = first.taken_over(1, later);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &leased, &[])),
        Decision::Mutate(replace_writes(&taken), taken.held())
    );
    let op = complete(0, 1, 1, T0 + 1);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &leased, &[])),
        Decision::Mutate(
            replace_writes(&first.succeeded(T0 + 1, 1)),
            TerminalOutput::Succeeded
        )
    );
    let op = fail(0, 1, T0 + 1);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &leased, &[])),
        Decision::Mutate(
            replace_writes(&first.failed(T0 + 1)),
            TerminalOutput::FailedFinal
        )
    );
    let op = acquire(2, T0 + 1);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &leased, &[])),
        Decision::Observe(LeaseOutput::Busy)
    );
    // A follow-up read, then the decision once the documents are there.
    let deep = Life::leased_at(0, 6, T0, REGISTERED);
    let store = store_with(&deep);
    let op = acquire(1, deep.expires);
    assert_eq!(
        assert_repeatable(&op, &snapshot_of(&op, &store, &[])),
        Decision::Read(vec![audit_path(7), audit_path(8)])
    );
    let taken = deep.taken_over(1, deep.expires);
    assert_eq!(
        assert_repeatable(
            &op,
            &snapshot_of(&op, &store, &[audit_path(7), audit_path(8)])
        ),
        Decision::Mutate(replace_writes(&taken), taken.held())
    );
}

#[test]
fn one_prepared_acquisition_reruns_with_its_captured_time_and_recovers_after_commit() {
    let op = acquire(0, T0);
    let life = Life::first(0, T0);
    // Two attempts against the same state (a commit lost, then a rerun) write the
    // same documents: the expiry comes from the captured time, not a new clock read.
    for _ in 0..2 {
        let mut store = registered_store();
        mutated(run(&op, &mut store), life.held(), create_writes(&life));
    }
    // After its commit, rerunning the same prepared op recovers the same lease, even
    // when the rerun happens "later" in wall time.
    let mut store = registered_store();
    run(&op, &mut store).result.expect("acquire");
    for _ in 0..3 {
        observed(run(&op, &mut store), life.held());
    }
    // Likewise for a prepared terminal call.
    let op = complete(0, 1, 0, T0 + SEC);
    run(&op, &mut store).result.expect("complete");
    observed(run(&op, &mut store), TerminalOutput::Succeeded);
}

#[test]
fn racing_distinct_first_acquisitions_leave_one_fence_one_holder_and_the_rest_busy() {
    let mut store = registered_store();
    let ops: Vec<Acquire> = (0..24)
        .map(|h| acquire(h, T0 + i64::try_from(h).expect("h")))
        .collect();
    let results = store.race(&ops);
    assert_eq!(results[0], Ok(held(1, T0 + LEASE)));
    for result in &results[1..] {
        assert_eq!(*result, Ok(LeaseOutput::Busy));
    }
    assert_eq!(store[&lifecycle_path()], Life::first(0, T0).fields());
    assert_eq!(audit_revisions(&store), [1, 2]);
}

#[test]
fn racing_same_holder_retries_mutate_once_with_identical_results() {
    let mut store = registered_store();
    let ops: Vec<Acquire> = (0..24).map(|_| acquire(0, T0)).collect();
    let results = store.race(&ops);
    assert!(results.iter().all(|r| *r == Ok(held(1, T0 + LEASE))));
    assert_eq!(audit_revisions(&store), [1, 2]);
}

#[test]
fn racing_expired_takeovers_advance_the_fence_once_and_the_old_holder_cannot_finish() {
    let (mut store, first) = leased_store();
    let now = T0 + LEASE;
    // The old holder's completion was captured while its lease was active.
    let stale_complete = complete(0, 1, 0, now - 1);
    let stale_attempt = store.attempt(&stale_complete);
    assert!(matches!(stale_attempt.decision, Decision::Mutate(..)));
    let ops: Vec<Acquire> = (1..6).map(|h| acquire(h, now)).collect();
    let results = store.race(&ops);
    let taken = first.taken_over(1, now);
    assert_eq!(results[0], Ok(taken.held()));
    assert!(results[1..].iter().all(|r| *r == Ok(LeaseOutput::Busy)));
    assert_eq!(store[&lifecycle_path()], taken.fields());
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
    // The old holder's mutation loses its precondition and its rerun is refused.
    assert!(!store.commit(&stale_attempt));
    rejected(
        run(&stale_complete, &mut store),
        JournalError::LeaseNotHeld,
        "old holder rerun",
    );
    rejected(
        run(&fail(0, 1, now + 1), &mut store),
        JournalError::LeaseNotHeld,
        "old holder later",
    );
    observed(run(&acquire(0, now + 1), &mut store), LeaseOutput::Busy);
    assert_eq!(store[&lifecycle_path()], taken.fields());
}

#[test]
fn racing_terminal_outcomes_commit_exactly_one() {
    let now = T0 + SEC;
    // Success first: the failure and a different commitment then conflict.
    let (mut store, first) = leased_store();
    let ops = vec![
        complete(0, 1, 0, now),
        fail(0, 1, now),
        complete(0, 1, 1, now),
    ];
    let results = store.race(&ops);
    assert_eq!(
        results,
        vec![
            Ok(TerminalOutput::Succeeded),
            Err(JournalError::TerminalConflict),
            Err(JournalError::TerminalConflict),
        ]
    );
    assert_eq!(store[&lifecycle_path()], first.succeeded(now, 0).fields());
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
    // Failure first.
    let (mut store, first) = leased_store();
    let ops = vec![fail(0, 1, now), complete(0, 1, 0, now), fail(0, 1, now)];
    let results = store.race(&ops);
    assert_eq!(
        results,
        vec![
            Ok(TerminalOutput::FailedFinal),
            Err(JournalError::TerminalConflict),
            Ok(TerminalOutput::FailedFinal),
        ]
    );
    assert_eq!(store[&lifecycle_path()], first.failed(now).fields());
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
}

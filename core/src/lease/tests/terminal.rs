//! Terminal transitions: completion, failure, exact retries, conflicts and status.

use super::*;

#[test]
fn completion_by_the_active_holder_stores_only_the_commitment() {
    let (mut store, first) = leased_store();
    let now = T0 + 10 * SEC;
    let done = first.succeeded(now, 0);
    assert_eq!(
        done,
        Life {
            state: "succeeded",
            revision: 3,
            fence: 1,
            owner: owner(0),
            acquired: T0,
            expires: T0 + LEASE,
            created: T0,
            updated: now,
            commitment: Some(commitment(0)),
        }
    );
    let fields = done.fields();
    assert_eq!(
        fields["terminalCommitmentKind"],
        fields::string("business_record_digest")
    );
    assert_eq!(
        fields["terminalCommitmentHash"],
        fields::string(commitment(0).as_str())
    );
    let event = done.event();
    assert_eq!(event["eventType"], fields::string("command_succeeded"));
    assert_eq!(event["fromState"], fields::string("leased"));
    assert_eq!(event["toState"], fields::string("succeeded"));
    assert_eq!(event["fenceEpoch"], fields::int(1));
    assert_eq!(event["leaseExpiresAt"], ts(T0 + LEASE));
    assert_eq!(event["occurredAt"], ts(now));
    mutated(
        run(&complete(0, 1, 0, now), &mut store),
        TerminalOutput::Succeeded,
        replace_writes(&done),
    );
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
    // The commitment and the owner are derived and command-bound: never the raw
    // value, and different for another command id with the same reference/lease id.
    assert_ne!(commitment(0).as_str(), REFERENCES[0]);
    let other_input = input_for("ca1a0000-c0de-4bad-8eed-00000000ca1b", json!({}));
    let other = other_input.identity();
    assert_ne!(other.command_key_hash(), &hash());
    let reference = TerminalReferenceFingerprint::parse(REFERENCES[0]).expect("reference");
    assert_ne!(other.terminal_commitment(&reference), commitment(0));
    let lease = LeaseId::parse(LEASE_IDS[0]).expect("lease");
    assert_ne!(
        other_input.lease_owner(&other, &lease).expect("owner"),
        owner(0)
    );
}

#[test]
fn failure_by_the_active_holder_is_final_with_null_commitment() {
    let (mut store, first) = leased_store();
    let now = T0 + 59 * SEC;
    let done = first.failed(now);
    assert_eq!(
        (
            done.state,
            done.revision,
            done.fence,
            done.updated,
            &done.commitment
        ),
        ("failed_final", 3, 1, now, &None)
    );
    let fields = done.fields();
    assert_eq!(fields["terminalCommitmentKind"], fields::null());
    assert_eq!(fields["terminalCommitmentHash"], fields::null());
    assert_eq!(
        done.event()["eventType"],
        fields::string("command_failed_final")
    );
    assert_eq!(done.event()["toState"], fields::string("failed_final"));
    mutated(
        run(&fail(0, 1, now), &mut store),
        TerminalOutput::FailedFinal,
        replace_writes(&done),
    );
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
}

#[test]
fn terminal_after_a_takeover_uses_the_new_fence_and_next_revision() {
    let (mut store, first) = leased_store();
    let t1 = T0 + 2 * LEASE;
    let second = first.taken_over(1, t1);
    mutated(
        run(&acquire(1, t1), &mut store),
        second.held(),
        replace_writes(&second),
    );
    let done = second.succeeded(t1 + SEC, 1);
    assert_eq!((done.revision, done.fence, done.created), (4, 2, T0));
    mutated(
        run(&complete(1, 2, 1, t1 + SEC), &mut store),
        TerminalOutput::Succeeded,
        replace_writes(&done),
    );
    assert_eq!(audit_revisions(&store), [1, 2, 3, 4]);
}

#[test]
fn holder_fence_and_expiry_mismatch_matrix_rejects_without_writes() {
    use JournalError::{LeaseExpired, LeaseNotHeld, StaleFence};
    // First lease: holder 0, fence 1.
    let (mut store, first) = leased_store();
    // Fence 2 held by holder 1 after a takeover.
    let mut taken = store.clone();
    let t1 = T0 + LEASE + 30 * SEC;
    let second = first.taken_over(1, t1);
    mutated(
        run(&acquire(1, t1), &mut taken),
        second.held(),
        replace_writes(&second),
    );
    type Case = (&'static str, usize, i64, i64, JournalError);
    let first_cases: Vec<Case> = vec![
        ("other holder, right fence", 1, 1, T0 + SEC, LeaseNotHeld),
        ("third holder, right fence", 2, 1, T0 + SEC, LeaseNotHeld),
        ("holder, higher fence", 0, 2, T0 + SEC, StaleFence),
        ("holder, fence 0", 0, 0, T0 + SEC, StaleFence),
        ("holder, negative fence", 0, -1, T0 + SEC, StaleFence),
        ("holder, maximum fence", 0, MAX_REV, T0 + SEC, StaleFence),
        ("holder, i64::MAX fence", 0, i64::MAX, T0 + SEC, StaleFence),
        ("holder at expiry", 0, 1, T0 + LEASE, LeaseExpired),
        (
            "holder long after expiry",
            0,
            1,
            T0 + 1_000 * SEC,
            LeaseExpired,
        ),
        ("other holder after expiry", 1, 1, T0 + LEASE, LeaseNotHeld),
        (
            "holder, stale fence after expiry",
            0,
            2,
            T0 + LEASE,
            StaleFence,
        ),
    ];
    let taken_cases: Vec<Case> = vec![
        ("old holder, old fence", 0, 1, t1 + SEC, LeaseNotHeld),
        ("old holder, new fence", 0, 2, t1 + SEC, LeaseNotHeld),
        ("third holder, new fence", 2, 2, t1 + SEC, LeaseNotHeld),
        ("new holder, stale lower fence", 1, 1, t1 + SEC, StaleFence),
        ("new holder, higher fence", 1, 3, t1 + SEC, StaleFence),
        ("new holder at expiry", 1, 2, t1 + LEASE, LeaseExpired),
        (
            "new holder long after expiry",
            1,
            2,
            t1 + 1_000 * SEC,
            LeaseExpired,
        ),
        ("old holder after expiry", 0, 2, t1 + LEASE, LeaseNotHeld),
        (
            "new holder, stale fence after expiry",
            1,
            1,
            t1 + LEASE,
            StaleFence,
        ),
    ];
    for (store, cases) in [(&mut store, first_cases), (&mut taken, taken_cases)] {
        let before = store.clone();
        for (case, holder, fence, now, error) in cases {
            rejected(
                run(&complete(holder, fence, 0, now), store),
                error,
                &format!("complete: {case}"),
            );
            rejected(
                run(&fail(holder, fence, now), store),
                error,
                &format!("fail: {case}"),
            );
        }
        assert_eq!(*store, before);
    }
    // The matrix's base states are otherwise completable.
    mutated(
        run(&complete(1, 2, 0, t1 + SEC), &mut taken),
        TerminalOutput::Succeeded,
        replace_writes(&second.succeeded(t1 + SEC, 0)),
    );
    mutated(
        run(&fail(0, 1, T0 + SEC), &mut store),
        TerminalOutput::FailedFinal,
        replace_writes(&first.failed(T0 + SEC)),
    );
}

#[test]
fn exact_success_retry_is_read_only_even_after_expiry() {
    let (mut store, first) = leased_store();
    let now = T0 + 5 * SEC;
    mutated(
        run(&complete(0, 1, 0, now), &mut store),
        TerminalOutput::Succeeded,
        replace_writes(&first.succeeded(now, 0)),
    );
    let before = store.clone();
    for retry in [
        now,
        now + 1,
        T0 + LEASE - 1,
        T0 + LEASE,
        T0 + 10 * 86_400 * SEC,
    ] {
        observed(
            run(&complete(0, 1, 0, retry), &mut store),
            TerminalOutput::Succeeded,
        );
    }
    assert_eq!(store, before);
}

#[test]
fn exact_failure_retry_is_read_only_even_after_expiry() {
    let (mut store, first) = leased_store();
    let now = T0 + 5 * SEC;
    mutated(
        run(&fail(0, 1, now), &mut store),
        TerminalOutput::FailedFinal,
        replace_writes(&first.failed(now)),
    );
    let before = store.clone();
    for retry in [
        now,
        now + 1,
        T0 + LEASE - 1,
        T0 + LEASE,
        T0 + 10 * 86_400 * SEC,
    ] {
        observed(
            run(&fail(0, 1, retry), &mut store),
            TerminalOutput::FailedFinal,
        );
    }
    assert_eq!(store, before);
}

#[test]
fn terminal_state_conflicts_and_mismatches_reject_without_writes() {
    use JournalError::{LeaseNotHeld, StaleFence, TerminalConflict};
    let now = T0 + 5 * SEC;
    let (mut succeeded, first) = leased_store();
    mutated(
        run(&complete(0, 1, 0, now), &mut succeeded),
        TerminalOutput::Succeeded,
        replace_writes(&first.succeeded(now, 0)),
    );
    let (mut failed, _) = leased_store();
    mutated(
        run(&fail(0, 1, now), &mut failed),
        TerminalOutput::FailedFinal,
        replace_writes(&first.failed(now)),
    );
    for retry in [now + 1, T0 + LEASE + SEC] {
        let before = succeeded.clone();
        let s = &mut succeeded;
        rejected(
            run(&complete(0, 1, 1, retry), s),
            TerminalConflict,
            "other commitment",
        );
        rejected(
            run(&fail(0, 1, retry), s),
            TerminalConflict,
            "fail after success",
        );
        rejected(
            run(&complete(1, 1, 0, retry), s),
            LeaseNotHeld,
            "wrong holder",
        );
        rejected(
            run(&fail(2, 1, retry), s),
            LeaseNotHeld,
            "wrong holder fail",
        );
        rejected(
            run(&complete(0, 2, 0, retry), s),
            StaleFence,
            "higher fence",
        );
        rejected(run(&complete(0, 0, 0, retry), s), StaleFence, "lower fence");
        rejected(run(&fail(0, 2, retry), s), StaleFence, "fail, higher fence");
        assert_eq!(succeeded, before);

        let before = failed.clone();
        let f = &mut failed;
        rejected(
            run(&complete(0, 1, 0, retry), f),
            TerminalConflict,
            "success after fail",
        );
        rejected(
            run(&complete(0, 1, 1, retry), f),
            TerminalConflict,
            "success after fail",
        );
        rejected(run(&fail(1, 1, retry), f), LeaseNotHeld, "wrong holder");
        rejected(
            run(&complete(2, 1, 0, retry), f),
            LeaseNotHeld,
            "wrong holder success",
        );
        rejected(run(&fail(0, 2, retry), f), StaleFence, "higher fence");
        rejected(run(&fail(0, 0, retry), f), StaleFence, "lower fence");
        assert_eq!(failed, before);
    }
}

#[test]
fn acquire_after_terminal_state_observes_the_terminal_outcome() {
    let now = T0 + 5 * SEC;
    let (mut succeeded, _) = leased_store();
    run(&complete(0, 1, 0, now), &mut succeeded)
        .result
        .expect("complete");
    let (mut failed, _) = leased_store();
    run(&fail(0, 1, now), &mut failed).result.expect("fail");
    for (store, output) in [
        (&mut succeeded, LeaseOutput::Succeeded),
        (&mut failed, LeaseOutput::FailedFinal),
    ] {
        let before = store.clone();
        for holder in 0..3 {
            for t in [now, T0 + LEASE - 1, T0 + LEASE, T0 + 86_400 * SEC] {
                observed(run(&acquire(holder, t), store), output);
            }
        }
        assert_eq!(*store, before);
    }
}

#[test]
fn nothing_registered_is_not_registered() {
    let mut store = Store::new();
    every_op_rejects(&mut store, JournalError::NotRegistered, "empty store");
    assert!(store.is_empty());
}

#[test]
fn terminal_call_with_registration_but_no_lifecycle_is_lease_not_held() {
    let mut store = registered_store();
    let before = store.clone();
    for holder in 0..3 {
        for fence in [0, 1, 2] {
            for now in [REGISTERED, T0, T0 + 1_000 * SEC] {
                rejected(
                    run(&complete(holder, fence, 0, now), &mut store),
                    JournalError::LeaseNotHeld,
                    "complete unleased",
                );
                rejected(
                    run(&fail(holder, fence, now), &mut store),
                    JournalError::LeaseNotHeld,
                    "fail unleased",
                );
            }
        }
    }
    assert_eq!(store, before);
}

#[test]
fn status_reports_the_redacted_state_without_writes() {
    let check = |store: &mut Store, now: i64, expected: serde_json::Value| {
        let before = store.clone();
        let ran = run(&status(now), store);
        assert!(ran.writes.is_empty());
        assert_eq!(
            serde_json::to_value(ran.result.expect("status")).expect("json"),
            expected
        );
        assert_eq!(*store, before);
    };
    let mut store = registered_store();
    check(
        &mut store,
        T0,
        json!({"journalSchemaVersion":1,"state":"registered","commandRevision":1,"fenceEpoch":null,"leaseActive":false}),
    );
    let (mut store, _) = leased_store();
    check(
        &mut store,
        T0 + LEASE - 1,
        json!({"journalSchemaVersion":1,"state":"leased","commandRevision":2,"fenceEpoch":1,"leaseActive":true}),
    );
    check(
        &mut store,
        T0 + LEASE,
        json!({"journalSchemaVersion":1,"state":"leased","commandRevision":2,"fenceEpoch":1,"leaseActive":false}),
    );
    run(&fail(0, 1, T0 + SEC), &mut store).result.expect("fail");
    check(
        &mut store,
        T0 + 2 * SEC,
        json!({"journalSchemaVersion":1,"state":"failed_final","commandRevision":3,"fenceEpoch":1,"leaseActive":false}),
    );
}

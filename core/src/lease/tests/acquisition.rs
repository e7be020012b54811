//! Acquisition, recovery of the same holder, busy, expiry and takeover.

use super::*;

#[test]
fn lease_duration_is_sixty_seconds_owned_by_code() {
    assert_eq!(LEASE_SECONDS, 60);
    assert_eq!(LEASE, LEASE_SECONDS * SEC);
}

#[test]
fn first_acquisition_creates_fence_one_revision_two_lifecycle_and_acquired_audit() {
    let mut store = registered_store();
    let registration = store.clone();
    let ran = run(&acquire(0, T0), &mut store);
    let h = hash();
    let now = Value {
        value_type: Some(ValueType::TimestampValue(
            crate::document::value::ValueTime {
                seconds: 1_800_000_002,
                nanos: 623_456_000,
            },
        )),
    };
    let expiry = Value {
        value_type: Some(ValueType::TimestampValue(
            crate::document::value::ValueTime {
                seconds: 1_800_000_062,
                nanos: 623_456_000,
            },
        )),
    };
    let lifecycle = fields::map([
        ("lifecycleSchemaVersion", fields::int(1)),
        ("commandKeyHash", fields::string(h.as_str())),
        ("state", fields::string("leased")),
        ("commandRevision", fields::int(2)),
        ("fenceEpoch", fields::int(1)),
        ("leaseOwnerFingerprint", fields::string(owner(0).as_str())),
        ("leaseAcquiredAt", now.clone()),
        ("leaseExpiresAt", expiry.clone()),
        ("createdAt", now.clone()),
        ("updatedAt", now.clone()),
        ("terminalCommitmentKind", fields::null()),
        ("terminalCommitmentHash", fields::null()),
    ]);
    let event = fields::map([
        ("auditSchemaVersion", fields::int(2)),
        ("aggregateType", fields::string("commerce_command")),
        ("commandKeyHash", fields::string(h.as_str())),
        ("commandRevision", fields::int(2)),
        ("eventType", fields::string("command_lease_acquired")),
        ("fromState", fields::string("registered")),
        ("toState", fields::string("leased")),
        ("environment", fields::string("test")),
        ("callerScopeKind", fields::string("member")),
        ("commandType", fields::string("checkout")),
        ("fenceEpoch", fields::int(1)),
        ("leaseExpiresAt", expiry),
        ("occurredAt", now),
    ]);
    mutated(
        ran,
        LeaseOutput::Acquired {
            fence_epoch: crate::fence::FenceEpoch::stored(1),
            lease_expires_at: at(1_800_000_062_623_456),
        },
        vec![
            Write::Create {
                path: format!("checkoutRequests/{h}/lifecycle/current"),
                fields: lifecycle.clone(),
            },
            Write::Create {
                path: format!("auditEvents/commerce_command_{h}_0000000002"),
                fields: event.clone(),
            },
        ],
    );
    // The independent builders agree with the literal documents.
    assert_eq!(Life::first(0, T0).fields(), lifecycle);
    assert_eq!(Life::first(0, T0).event(), event);
    // Exactly the registration plus the two new documents; the registration untouched.
    assert_eq!(store.len(), 4);
    for (path, doc) in registration.iter() {
        assert_eq!(store.get(path), Some(doc));
    }
}

#[test]
fn same_holder_recovery_before_expiry_returns_original_fence_and_expiry_without_writes() {
    let (mut store, life) = leased_store();
    let before = store.clone();
    // The original prepared op (lost response), fresh ops at later times, and the
    // last active microsecond.
    for now in [T0, T0 + 1, T0 + 30 * SEC, T0 + LEASE - 1] {
        observed(run(&acquire(0, now), &mut store), held(1, T0 + LEASE));
    }
    assert_eq!(store, before);
    assert_eq!(life.held(), held(1, T0 + LEASE));
}

#[test]
fn another_holder_while_active_is_busy_without_writes_or_lease_details() {
    let (mut store, _) = leased_store();
    let before = store.clone();
    for holder in [1, 2] {
        for now in [T0, T0 + 1, T0 + 30 * SEC, T0 + LEASE - 1] {
            observed(run(&acquire(holder, now), &mut store), LeaseOutput::Busy);
        }
    }
    assert_eq!(store, before);
    let busy = serde_json::to_value(LeaseOutput::Busy).expect("json");
    assert_eq!(
        busy,
        json!({"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_busy","state":"leased"})
    );
    let keys: Vec<&String> = busy.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 4);
    assert!(busy.get("fenceEpoch").is_none() && busy.get("leaseExpiresAt").is_none());
}

#[test]
fn expired_lease_is_taken_over_by_a_different_holder() {
    let (mut store, first) = leased_store();
    let now = T0 + LEASE + 5 * SEC;
    let ran = run(&acquire(1, now), &mut store);
    let next = first.taken_over(1, now);
    assert_eq!(
        next,
        Life {
            state: "leased",
            revision: 3,
            fence: 2,
            owner: owner(1),
            acquired: now,
            expires: now + 60 * SEC,
            created: T0,
            updated: now,
            commitment: None,
        }
    );
    let h = hash();
    let event = fields::map([
        ("auditSchemaVersion", fields::int(2)),
        ("aggregateType", fields::string("commerce_command")),
        ("commandKeyHash", fields::string(h.as_str())),
        ("commandRevision", fields::int(3)),
        ("eventType", fields::string("command_lease_taken_over")),
        ("fromState", fields::string("leased")),
        ("toState", fields::string("leased")),
        ("environment", fields::string("test")),
        ("callerScopeKind", fields::string("member")),
        ("commandType", fields::string("checkout")),
        ("fenceEpoch", fields::int(2)),
        ("leaseExpiresAt", ts(now + LEASE)),
        ("occurredAt", ts(now)),
    ]);
    assert_eq!(next.event(), event);
    mutated(
        ran,
        held(2, now + LEASE),
        vec![
            Write::Replace {
                path: lifecycle_path(),
                fields: next.fields(),
            },
            Write::Create {
                path: format!("auditEvents/commerce_command_{h}_0000000003"),
                fields: event,
            },
        ],
    );
    assert_eq!(audit_revisions(&store), [1, 2, 3]);
    // The new holder recovers; the old one and a third are busy.
    observed(
        run(&acquire(1, now + SEC), &mut store),
        held(2, now + LEASE),
    );
    observed(run(&acquire(0, now + SEC), &mut store), LeaseOutput::Busy);
    observed(run(&acquire(2, now + SEC), &mut store), LeaseOutput::Busy);
}

#[test]
fn expired_lease_is_taken_over_by_the_same_lease_id_with_a_new_fence() {
    let (mut store, first) = leased_store();
    let now = T0 + LEASE + 7 * SEC + 3;
    let next = first.taken_over(0, now);
    assert_eq!((next.fence, next.revision, next.created), (2, 3, T0));
    assert_eq!(next.owner, first.owner);
    mutated(
        run(&acquire(0, now), &mut store),
        held(2, now + LEASE),
        replace_writes(&next),
    );
    // The old fence can no longer finish, even for the same lease id.
    rejected(
        run(&complete(0, 1, 0, now + SEC), &mut store),
        JournalError::StaleFence,
        "old fence",
    );
    // A second expiry: fence 3, revision 4, creation still preserved.
    let later = now + LEASE;
    let third = next.taken_over(0, later);
    mutated(
        run(&acquire(0, later), &mut store),
        held(3, later + LEASE),
        replace_writes(&third),
    );
    assert_eq!((third.fence, third.revision, third.created), (3, 4, T0));
    assert_eq!(audit_revisions(&store), [1, 2, 3, 4]);
}

#[test]
fn expiry_equality_is_expired_and_one_microsecond_before_is_active() {
    let expiry = T0 + LEASE;
    // One microsecond before: active.
    let (mut store, first) = leased_store();
    observed(run(&acquire(1, expiry - 1), &mut store), LeaseOutput::Busy);
    observed(run(&acquire(0, expiry - 1), &mut store), first.held());
    mutated(
        run(&complete(0, 1, 0, expiry - 1), &mut store),
        TerminalOutput::Succeeded,
        replace_writes(&first.succeeded(expiry - 1, 0)),
    );
    let (mut store, first) = leased_store();
    mutated(
        run(&fail(0, 1, expiry - 1), &mut store),
        TerminalOutput::FailedFinal,
        replace_writes(&first.failed(expiry - 1)),
    );
    // Exactly at expiry: expired.
    let (mut store, first) = leased_store();
    let before = store.clone();
    rejected(
        run(&complete(0, 1, 0, expiry), &mut store),
        JournalError::LeaseExpired,
        "complete at expiry",
    );
    rejected(
        run(&fail(0, 1, expiry), &mut store),
        JournalError::LeaseExpired,
        "fail at expiry",
    );
    assert_eq!(store, before);
    mutated(
        run(&acquire(1, expiry), &mut store),
        held(2, expiry + LEASE),
        replace_writes(&first.taken_over(1, expiry)),
    );
    let (mut store, first) = leased_store();
    mutated(
        run(&acquire(0, expiry), &mut store),
        held(2, expiry + LEASE),
        replace_writes(&first.taken_over(0, expiry)),
    );
}

#[test]
fn earlier_captured_time_only_observes_an_existing_lease() {
    let (mut store, first) = leased_store();
    // Holder 1 takes over 40 s after the first lease expired.
    let t1 = T0 + LEASE + 40 * SEC;
    let second = first.taken_over(1, t1);
    mutated(
        run(&acquire(1, t1), &mut store),
        second.held(),
        replace_writes(&second),
    );
    let before = store.clone();
    // Times captured before the takeover's updatedAt, including ones after the old
    // expiry, where a fresh read would have taken over.
    for now in [T0, T0 + LEASE, T0 + LEASE + 10 * SEC, t1 - 1] {
        observed(run(&acquire(1, now), &mut store), second.held());
        observed(run(&acquire(0, now), &mut store), LeaseOutput::Busy);
        observed(run(&acquire(2, now), &mut store), LeaseOutput::Busy);
        // Never finalizes.
        rejected(
            run(&complete(1, 2, 0, now), &mut store),
            JournalError::ClockRegression,
            "earlier complete",
        );
        rejected(
            run(&fail(1, 2, now), &mut store),
            JournalError::ClockRegression,
            "earlier fail",
        );
        // The previous holder is no longer the holder at all.
        rejected(
            run(&complete(0, 1, 0, now), &mut store),
            JournalError::LeaseNotHeld,
            "earlier old holder",
        );
    }
    assert_eq!(store, before);
}

#[test]
fn earlier_captured_time_observes_terminal_state() {
    let (mut store, first) = leased_store();
    let done = T0 + 20 * SEC;
    mutated(
        run(&complete(0, 1, 0, done), &mut store),
        TerminalOutput::Succeeded,
        replace_writes(&first.succeeded(done, 0)),
    );
    let before = store.clone();
    for now in [T0, done - 1] {
        for holder in 0..3 {
            observed(
                run(&acquire(holder, now), &mut store),
                LeaseOutput::Succeeded,
            );
        }
        observed(
            run(&complete(0, 1, 0, now), &mut store),
            TerminalOutput::Succeeded,
        );
        rejected(
            run(&fail(0, 1, now), &mut store),
            JournalError::TerminalConflict,
            "earlier fail after success",
        );
    }
    assert_eq!(store, before);
}

#[test]
fn first_acquisition_before_registration_time_is_clock_regression() {
    let mut store = registered_store();
    let before = store.clone();
    for now in [REGISTERED - 1, REGISTERED - 3_600 * SEC] {
        for holder in 0..3 {
            rejected(
                run(&acquire(holder, now), &mut store),
                JournalError::ClockRegression,
                "before registration",
            );
        }
    }
    assert_eq!(store, before);
    // At the registration time itself: allowed.
    let life = Life::first(2, REGISTERED);
    mutated(
        run(&acquire(2, REGISTERED), &mut store),
        life.held(),
        create_writes(&life),
    );
}

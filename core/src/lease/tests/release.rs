//! `release_lease`, every state it can meet, the released (version 2) lifecycle's
//! strict parse, and what every lease operation does after a release.

use super::*;
use crate::document::release as record;

fn release(holder: usize, fence: i64, now: i64) -> Release {
    Release::new(call(holder, now), FenceEpoch::stored(fence))
}

fn record_path(fence: i64) -> String {
    format!("checkoutRequests/{}/leaseReleases/{fence:010}", hash())
}

/// The exact release record, built here rather than by the codec.
fn record_fields(fence: i64, released: i64) -> FieldMap {
    fields::map([
        ("leaseReleaseSchemaVersion", fields::int(1)),
        ("commandKeyHash", fields::string(hash().as_str())),
        ("fenceEpoch", fields::int(fence)),
        ("releasedAt", ts(released)),
    ])
}

/// The exact released lifecycle of `life` released at `released`.
fn released_fields(life: &Life, released: i64) -> FieldMap {
    let mut fields = Life {
        expires: released,
        updated: released,
        ..life.clone()
    }
    .fields();
    fields.insert("lifecycleSchemaVersion".into(), fields::int(2));
    fields
}

fn release_writes(life: &Life, released: i64) -> Vec<Write> {
    vec![
        Write::Replace {
            path: lifecycle_path(),
            fields: released_fields(life, released),
        },
        Write::Create {
            path: record_path(life.fence),
            fields: record_fields(life.fence, released),
        },
    ]
}

/// Holder 0's first lease at `T0`, released at `T0 + 5 s`.
fn released_store() -> (Store, Life, i64) {
    let (mut store, life) = leased_store();
    let released = T0 + 5 * SEC;
    mutated(
        run(&release(0, 1, released), &mut store),
        ReleaseOutput::Released,
        release_writes(&life, released),
    );
    (store, life, released)
}

#[test]
fn the_holder_releases_its_active_lease_in_one_commit_and_no_event() {
    let (store, _, released) = released_store();
    // The revision chain is untouched: the record is the release's audit record.
    assert_eq!(audit_revisions(&store), [1, 2]);
    assert_eq!(
        store.get(&record_path(1)),
        Some(&record_fields(1, released))
    );
    // Released as it would be at the very first instant of the lease too.
    let (mut store, life) = leased_store();
    mutated(
        run(&release(0, 1, T0), &mut store),
        ReleaseOutput::Released,
        release_writes(&life, T0),
    );
}

#[test]
fn a_release_already_made_is_observed_and_nothing_else_releases() {
    let (mut store, _, released) = released_store();
    let before = store.clone();
    // The same holder again (a lost response), at any time after.
    for now in [released, released + SEC, T0 + 1_000 * SEC] {
        observed(
            run(&release(0, 1, now), &mut store),
            ReleaseOutput::AlreadyReleased,
        );
    }
    // Another holder, or another fence: not theirs to release.
    observed(
        run(&release(1, 1, released), &mut store),
        ReleaseOutput::NotHeld,
    );
    observed(
        run(&release(0, 2, released), &mut store),
        ReleaseOutput::NotHeld,
    );
    assert!(store == before);
}

#[test]
fn a_lease_not_held_active_by_the_caller_is_never_released() {
    // No lifecycle yet.
    let mut store = registered_store();
    observed(run(&release(0, 1, T0), &mut store), ReleaseOutput::NotHeld);
    // Another holder's active lease; the holder's own, at another fence.
    let (mut store, life) = leased_store();
    observed(
        run(&release(1, 1, T0 + SEC), &mut store),
        ReleaseOutput::NotHeld,
    );
    observed(
        run(&release(0, 2, T0 + SEC), &mut store),
        ReleaseOutput::NotHeld,
    );
    // Expired: at and after the expiry.
    for now in [T0 + LEASE, T0 + LEASE + SEC] {
        observed(run(&release(0, 1, now), &mut store), ReleaseOutput::Expired);
    }
    // An earlier-captured time (clock skew) never writes.
    rejected(
        run(&release(0, 1, T0 - 1), &mut store),
        JournalError::ClockRegression,
        "skew",
    );
    // Taken over: the old fence is no longer held, by its holder or anyone.
    let later = T0 + LEASE + 2 * SEC;
    let taken = life.taken_over(1, later);
    mutated(
        run(&acquire(1, later), &mut store),
        taken.held(),
        replace_writes(&taken),
    );
    observed(
        run(&release(0, 1, later + SEC), &mut store),
        ReleaseOutput::NotHeld,
    );
    // Terminal, succeeded or failed.
    let done = taken.succeeded(later + SEC, 0);
    let mut store = store_with(&done);
    observed(
        run(&release(1, 2, later + 2 * SEC), &mut store),
        ReleaseOutput::Terminal,
    );
    let mut store = store_with(&taken.failed(later + SEC));
    observed(
        run(&release(1, 2, later + 2 * SEC), &mut store),
        ReleaseOutput::Terminal,
    );
    // (The store holds registration and the failure's event only.)
    assert_eq!(audit_revisions(&store), [1, 4]);
}

#[test]
fn a_released_lease_is_taken_over_at_once_by_any_holder() {
    for holder in [0, 1] {
        let (mut store, life, released) = released_store();
        let taken = life.taken_over(holder, released);
        mutated(
            run(&acquire(holder, released), &mut store),
            taken.held(),
            replace_writes(&taken),
        );
        assert_eq!(taken.fence, 2);
        assert_eq!(audit_revisions(&store), [1, 2, 3]);
        // The new lifecycle is version 1 again; the old fence's record stays.
        assert_eq!(store.get(&lifecycle_path()), Some(&taken.fields()));
        assert!(store.contains_key(&record_path(1)));
    }
}

#[test]
fn an_earlier_clock_never_takes_a_released_lease_and_its_holder_is_told_busy() {
    let (mut store, _, released) = released_store();
    let before = store.clone();
    for holder in [0, 1] {
        observed(
            run(&acquire(holder, released - 1), &mut store),
            LeaseOutput::Busy,
        );
    }
    assert!(store == before);
    // The status says no lease is active from the release on.
    let ran = run(&status(released), &mut store);
    assert_eq!(ran.result.map(|s| s.lease_active), Ok(false));
}

#[test]
fn the_released_fence_can_never_finish_the_command() {
    let (mut store, _, released) = released_store();
    let before = store.clone();
    // Even at a time inside the lease it was granted, even before the release.
    for now in [released - 1, released, released + SEC, T0 + LEASE - 1] {
        let case = format!("at {now}");
        rejected(
            run(&complete(0, 1, 0, now), &mut store),
            JournalError::LeaseExpired,
            &case,
        );
        rejected(
            run(&fail(0, 1, now), &mut store),
            JournalError::LeaseExpired,
            &case,
        );
    }
    assert!(store == before);
}

#[test]
fn a_release_record_out_of_step_with_the_lifecycle_is_corrupt() {
    const WITHOUT_RECORD: &str = "a released lifecycle without its release record";
    const STILL_HELD: &str = "a release record of a lease still held";
    // Released, its record gone.
    let (mut store, _, released) = released_store();
    store.remove(&record_path(1));
    rejected(
        run(&release(0, 1, released + SEC), &mut store),
        corrupt(WITHOUT_RECORD),
        "no record",
    );
    // Released, its record at another instant.
    let (mut store, _, released) = released_store();
    store.insert(record_path(1), record_fields(1, released + 1));
    rejected(
        run(&release(0, 1, released + SEC), &mut store),
        corrupt(WITHOUT_RECORD),
        "record disagrees",
    );
    // A record for a fence still held (version 1).
    let (mut store, _) = leased_store();
    store.insert(record_path(1), record_fields(1, T0 + SEC));
    rejected(
        run(&release(0, 1, T0 + 2 * SEC), &mut store),
        corrupt(STILL_HELD),
        "held",
    );
    // A malformed record: each field wrong in turn.
    for (field, value) in [
        ("leaseReleaseSchemaVersion", fields::int(2)),
        ("commandKeyHash", fields::string("ab".repeat(32))),
        ("fenceEpoch", fields::int(2)),
        ("releasedAt", fields::string("now")),
    ] {
        let (mut store, _) = leased_store();
        let mut fields = record_fields(1, T0 + SEC);
        fields.insert(field.into(), value);
        store.insert(record_path(1), fields);
        let ran = run(&release(0, 1, T0 + 2 * SEC), &mut store);
        assert!(
            matches!(ran.result, Err(JournalError::JournalCorrupt { .. })),
            "{field}: {:?}",
            ran.result
        );
        assert!(ran.writes.is_empty());
    }
}

#[test]
fn the_release_record_codec_round_trips_and_parses_strictly() {
    let fence = FenceEpoch::stored(7);
    assert_eq!(record::id(fence), "0000000007");
    assert_eq!(record::parse_id("0000000007"), Some(fence));
    for bad in ["7", "000000007", "00000000070", "0000000000", "000000000x"] {
        assert_eq!(record::parse_id(bad), None, "{bad}");
    }
    assert_eq!(record::path(&hash(), fence), record_path(7));
    let parsed =
        record::LeaseRelease::parse(&hash(), "0000000007", &record_fields(7, T0)).expect("parses");
    assert_eq!(parsed.released_at, at(T0));
    assert_eq!(parsed.encode(), record_fields(7, T0));
    // Under another id, with an extra or a missing field: corrupt.
    assert!(record::LeaseRelease::parse(&hash(), "0000000008", &record_fields(7, T0)).is_err());
    let mut extra = record_fields(7, T0);
    extra.insert(
        "leaseOwnerFingerprint".into(),
        fields::string(owner(0).as_str()),
    );
    assert!(record::LeaseRelease::parse(&hash(), "0000000007", &extra).is_err());
    let mut missing = record_fields(7, T0);
    missing.remove("releasedAt");
    assert!(record::LeaseRelease::parse(&hash(), "0000000007", &missing).is_err());
}

#[test]
fn a_released_lifecycle_parses_only_with_every_relation_holding() {
    let life = Life::first(0, T0);
    let good = released_fields(&life, T0 + 5 * SEC);
    let parsed = Lifecycle::parse(&hash(), &good).expect("a released lifecycle parses");
    assert!(parsed.released);
    assert_eq!(parsed.released_at(), Some(at(T0 + 5 * SEC)));
    assert_eq!(parsed.encode(), good);
    // A version-1 lifecycle stays byte for byte what it was.
    let v1 = Lifecycle::parse(&hash(), &life.fields()).expect("v1");
    assert!(!v1.released);
    assert_eq!(v1.encode(), life.fields());
    let broken: Vec<(&str, FieldMap)> = vec![
        ("a version 1 with the expiry at its update", {
            let mut f = good.clone();
            f.insert("lifecycleSchemaVersion".into(), fields::int(1));
            f
        }),
        ("version 3", {
            let mut f = good.clone();
            f.insert("lifecycleSchemaVersion".into(), fields::int(3));
            f
        }),
        ("expiry other than the update", {
            let mut f = good.clone();
            f.insert("leaseExpiresAt".into(), ts(T0 + 6 * SEC));
            f
        }),
        (
            "released at the end of the lease",
            released_fields(&life, T0 + LEASE),
        ),
        (
            "released after the lease",
            released_fields(&life, T0 + LEASE + 1),
        ),
        ("released before it was acquired", {
            let mut f = released_fields(&life, T0 - 1);
            f.insert("createdAt".into(), ts(T0));
            f
        }),
        ("a revision off the fence", {
            let mut f = good.clone();
            f.insert("commandRevision".into(), fields::int(3));
            f
        }),
        ("terminal", {
            let mut f = released_fields(&life.succeeded(T0 + 5 * SEC, 0), T0 + 5 * SEC);
            f.insert("commandRevision".into(), fields::int(2));
            f
        }),
        ("failed", {
            let mut f = good.clone();
            f.insert("state".into(), fields::string("failed_final"));
            f
        }),
        ("a commitment while leased", {
            let mut f = good.clone();
            f.insert(
                "terminalCommitmentKind".into(),
                fields::string("business_record_digest"),
            );
            f.insert(
                "terminalCommitmentHash".into(),
                fields::string(commitment(0).as_str()),
            );
            f
        }),
        ("created after the acquisition of fence 1", {
            let mut f = good.clone();
            f.insert("createdAt".into(), ts(T0 + 1));
            f
        }),
    ];
    for (case, fields) in broken {
        assert!(
            Lifecycle::parse(&hash(), &fields).is_err(),
            "{case} must not parse"
        );
        // And every lease operation over it is refused, nothing written.
        let mut store = registered_store();
        store.insert(lifecycle_path(), fields);
        store.insert(audit_path(2), life.event());
        let ran = run(&acquire(1, T0 + 100 * SEC), &mut store);
        assert!(
            matches!(ran.result, Err(JournalError::JournalCorrupt { .. })),
            "{case}: {:?}",
            ran.result
        );
        assert!(ran.writes.is_empty(), "{case}");
    }
}

#[test]
fn a_released_lifecycle_must_keep_its_acquisition_event_as_its_partner() {
    let (store, life, released) = released_store();
    // The event of the acquisition stays the partner: any other is corrupt.
    for (field, value) in [
        ("leaseExpiresAt", ts(released)),
        ("occurredAt", ts(released)),
    ] {
        let mut store = store.clone();
        let mut event = life.event();
        event.insert(field.into(), value);
        store.insert(audit_path(2), event);
        rejected(
            run(&acquire(1, released + SEC), &mut store),
            corrupt(PARTNER_DISAGREES),
            field,
        );
    }
}

//! State × operation tables (`docs/providers.md`, "Transitions").

use super::*;
use Op::{Acquire as Acq, Begin, BeginOther, Complete, Fail, Outcome, Reconcile as Rec, Status};

/// Takeover time after holder 0's lease expired (fence 2 for holder 1).
const TK: i64 = T0 + 61 * SEC;
const T1: i64 = T0 + SEC;

#[test]
fn no_plan_bound() {
    case(
        "first send",
        &[
            (Begin(1, 1, T1), "lease_not_held", 0),
            (Begin(0, 2, T1), "stale_fence", 0),
            (Begin(0, 1, T0 - 1), "clock_regression", 0),
            (Begin(0, 1, T0 + 60 * SEC), "lease_expired", 0),
            (Outcome(0, 1, 1, Ambiguous, T1), "attempt_mismatch", 0),
            (Rec(0, 1, 1, Absent, T1), "attempt_mismatch", 0),
            // plan + unchanged lifecycle + send record + opened event
            (Begin(0, 1, T1), "permit 1 false", 5),
            (Begin(0, 1, T1 + 5), "permit 1 false", 0),
            // An earlier-captured retry of the same holder recovers, as with the lease.
            (Begin(0, 1, T1 - 5), "permit 1 false", 0),
            (BeginOther(0, 1, T1 - 5), "plan_conflict", 0),
            (Begin(0, 1, T0 + 60 * SEC), "lease_expired", 0),
            (BeginOther(0, 1, T1 + 5), "plan_conflict", 0),
            (Begin(1, 1, T1 + 5), "lease_not_held", 0),
        ],
    );
    // Without a plan the terminal transitions are B2B's, and a later begin observes.
    case(
        "complete without sends",
        &[
            (Complete(0, 1, T1), "terminal_succeeded", 2),
            (Begin(0, 1, T1), "terminal_succeeded", 0),
            (Status(T1), STATUS_SUCCEEDED_NO_SEND, 0),
        ],
    );
    case(
        "fail without sends",
        &[
            (Fail(0, 1, T1), "terminal_failed_final", 2),
            (Begin(0, 1, T1), "terminal_failed_final", 0),
        ],
    );
}

const STATUS_SUCCEEDED_NO_SEND: &str = r#"{"journalSchemaVersion":1,"state":"succeeded","commandRevision":3,"fenceEpoch":1,"leaseActive":false}"#;

#[test]
fn sending() {
    let store = case(
        "sending",
        &[
            (Begin(0, 1, T1), "permit 1 false", 5),
            (Complete(0, 1, T1), "send_outcome_required", 0),
            (Fail(0, 1, T1), "send_outcome_required", 0),
            (Outcome(0, 1, 2, Ambiguous, T1), "attempt_mismatch", 0),
            (Outcome(1, 1, 1, Ambiguous, T1), "lease_not_held", 0),
            (Outcome(0, 2, 1, Ambiguous, T1), "stale_fence", 0),
            (
                Outcome(0, 1, 1, Ambiguous, T0 + 60 * SEC),
                "lease_expired",
                0,
            ),
            (Outcome(0, 1, 1, Ambiguous, T1 - 1), "clock_regression", 0),
            (Outcome(0, 1, 1, Ambiguous, T1 + 1), "send_ambiguous 1", 2),
        ],
    );
    assert_eq!(send_counts(&store), (2, 2));
}

#[test]
fn sending_then_succeeded_or_declined() {
    let store = case(
        "succeeded",
        &[
            (Begin(0, 1, T1), "permit 1 false", 5),
            // lifecycle + command_succeeded + send record + event, one commit
            (
                Outcome(0, 1, 1, succeeded(0), T1 + 1),
                "terminal_succeeded",
                4,
            ),
            (
                Outcome(0, 1, 1, succeeded(0), T0 + 90 * SEC),
                "terminal_succeeded",
                0,
            ),
            (
                Outcome(0, 1, 1, succeeded(1), T1 + 2),
                "terminal_conflict",
                0,
            ),
            (Outcome(0, 1, 1, Declined, T1 + 2), "terminal_conflict", 0),
            (Outcome(0, 1, 1, Ambiguous, T1 + 2), "terminal_conflict", 0),
            (Rec(0, 1, 1, succeeded(0), T1 + 2), "terminal_succeeded", 0),
            (Rec(0, 1, 1, Absent, T1 + 2), "terminal_conflict", 0),
            (Begin(0, 1, T1 + 2), "terminal_succeeded", 0),
            (Complete(0, 1, T1 + 2), "send_outcome_required", 0),
            (Acq(1, T0 + 90 * SEC), "terminal_succeeded", 0),
        ],
    );
    assert_eq!(send_counts(&store), (2, 2));
    case(
        "declined",
        &[
            (Begin(0, 1, T1), "permit 1 false", 5),
            (
                Outcome(0, 1, 1, Declined, T1 + 1),
                "terminal_failed_final",
                4,
            ),
            (
                Outcome(0, 1, 1, Declined, T1 + 2),
                "terminal_failed_final",
                0,
            ),
            (
                Outcome(0, 1, 1, succeeded(0), T1 + 2),
                "terminal_conflict",
                0,
            ),
            (Fail(0, 1, T1 + 2), "send_outcome_required", 0),
            (Begin(0, 1, T1 + 2), "terminal_failed_final", 0),
        ],
    );
}

#[test]
fn ambiguous() {
    case(
        "ambiguous",
        &[
            (Begin(0, 1, T1), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T1), "send_ambiguous 1", 2),
            (Outcome(0, 1, 1, Ambiguous, T1 + 9), "send_ambiguous 1", 0),
            // The same fence again: the same permit, no write.
            (Begin(0, 1, T1 + 9), "permit 1 false", 0),
            (
                Outcome(0, 1, 1, succeeded(0), T1 + 9),
                "terminal_succeeded",
                4,
            ),
        ],
    );
}

#[test]
fn takeover_resend() {
    let store = case(
        "resend",
        &[
            (Begin(0, 1, T1), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T1), "send_ambiguous 1", 2),
            (Acq(1, TK), "acquired 2", 2),
            (Begin(0, 1, TK), "lease_not_held", 0),
            (Outcome(0, 1, 1, succeeded(0), TK), "lease_not_held", 0),
            // The new holder has not sent: its outcome is not this attempt's.
            (Outcome(1, 2, 1, Ambiguous, TK), "attempt_mismatch", 0),
            (BeginOther(1, 2, TK), "plan_conflict", 0),
            (Begin(1, 2, TK), "permit 1 true", 2),
            (Begin(1, 2, TK + 1), "permit 1 true", 0),
            (
                Outcome(1, 2, 1, succeeded(0), TK + 2),
                "terminal_succeeded",
                4,
            ),
        ],
    );
    assert_eq!(send_counts(&store), (2, 4));
}

#[test]
fn cutoff_boundary_to_the_microsecond() {
    let late = CUTOFF - 30 * SEC;
    case(
        "before the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, CUTOFF - 1), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, Ambiguous, CUTOFF - 1),
                "send_ambiguous 1",
                2,
            ),
        ],
    );
    case(
        "at the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, CUTOFF), "send_cutoff_passed", 0),
            // Every caller, the expired first holder and a stranger included.
            (Begin(0, 1, CUTOFF), "send_cutoff_passed", 0),
            (Begin(2, 9, CUTOFF + 1), "send_cutoff_passed", 0),
            // The plan first: another plan is a conflict before the cutoff rule.
            (BeginOther(1, 2, CUTOFF), "plan_conflict", 0),
            (Outcome(0, 1, 1, succeeded(0), CUTOFF), "lease_not_held", 0),
            (Complete(1, 2, CUTOFF), "send_outcome_required", 0),
        ],
    );
    case(
        "the sender at the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, late + SEC), "permit 1 true", 2),
            (Begin(1, 2, CUTOFF), "send_cutoff_passed", 0),
            // The cutoff stops sending, not the recording of an answer: "ambiguous"
            // is refused, the sender's success is evidence and recorded.
            (Outcome(1, 2, 1, Ambiguous, CUTOFF), "send_cutoff_passed", 0),
            (
                Outcome(1, 2, 1, succeeded(0), CUTOFF),
                "terminal_succeeded",
                4,
            ),
            (
                Rec(1, 2, 1, succeeded(0), CUTOFF + 1),
                "terminal_succeeded",
                0,
            ),
        ],
    );
    case(
        "a decline after the cutoff, by the sender",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Begin(1, 2, late + SEC), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, Declined, CUTOFF + SEC),
                "terminal_failed_final",
                4,
            ),
        ],
    );
    case(
        "after the cutoff, reconciliation moves it too",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, late), "acquired 2", 2),
            (Rec(1, 2, 1, succeeded(0), CUTOFF), "terminal_succeeded", 4),
        ],
    );
}

#[test]
fn reconciliation_and_proven_safe_advancement() {
    let late = CUTOFF + SEC;
    let store = case(
        "absent",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T0 + 1), "send_ambiguous 1", 2),
            (Acq(1, late), "acquired 2", 2),
            (Status(late), STATUS_NEEDS_RECONCILIATION, 0),
            (Begin(1, 2, late), "send_cutoff_passed", 0),
            (Rec(1, 2, 2, Absent, late), "attempt_mismatch", 0),
            (Rec(0, 1, 1, Absent, late), "lease_not_held", 0),
            (Rec(1, 2, 1, Absent, late + 1), "send_absent 1", 2),
            (Rec(1, 2, 1, Absent, late + 2), "send_absent 1", 0),
            (Rec(1, 2, 1, succeeded(0), late + 2), "attempt_mismatch", 0),
            (
                Outcome(1, 2, 1, succeeded(0), late + 2),
                "attempt_mismatch",
                0,
            ),
            (Complete(1, 2, late + 2), "send_outcome_required", 0),
            (BeginOther(1, 2, late + 3), "plan_conflict", 0),
            // Only now: attempt 2, a new key and its own cutoff.
            (Begin(1, 2, late + 3), "permit 2 false", 3),
            (Begin(1, 2, late + 4), "permit 2 false", 0),
            (Rec(1, 2, 1, Absent, late + 4), "attempt_mismatch", 0),
            (
                Outcome(1, 2, 2, Declined, late + 5),
                "terminal_failed_final",
                4,
            ),
        ],
    );
    assert_eq!(send_counts(&store), (2, 5));
    case(
        "reconciled before the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Rec(0, 1, 1, Declined, T0 + 1), "terminal_failed_final", 4),
            (Rec(0, 1, 1, Declined, T0 + 2), "terminal_failed_final", 0),
            (
                Outcome(0, 1, 1, Declined, T0 + 2),
                "terminal_failed_final",
                0,
            ),
        ],
    );
}

const STATUS_NEEDS_RECONCILIATION: &str = r#"{"journalSchemaVersion":1,"state":"leased","commandRevision":3,"fenceEpoch":2,"leaseActive":true,"send":{"planFingerprint":"4764dde0395278881d52515c475fdb1513de1fc9e8c22c172b1dd5400c60368b","attempt":1,"state":"ambiguous","sendCutoffAt":{"seconds":1800064801,"nanoseconds":123456000},"needsReconciliation":true,"absenceProvableFrom":{"seconds":1800000361,"nanoseconds":123456000}}}"#;

#[test]
fn status_shows_the_send_state() {
    case(
        "status",
        &[
            (Status(T0), STATUS_LEASED_NO_SEND, 0),
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Status(T0 + 1), STATUS_SENDING, 0),
        ],
    );
}

const STATUS_LEASED_NO_SEND: &str = r#"{"journalSchemaVersion":1,"state":"leased","commandRevision":2,"fenceEpoch":1,"leaseActive":true}"#;
const STATUS_SENDING: &str = r#"{"journalSchemaVersion":1,"state":"leased","commandRevision":2,"fenceEpoch":1,"leaseActive":true,"send":{"planFingerprint":"4764dde0395278881d52515c475fdb1513de1fc9e8c22c172b1dd5400c60368b","attempt":1,"state":"sending","sendCutoffAt":{"seconds":1800064801,"nanoseconds":123456000},"needsReconciliation":false,"absenceProvableFrom":{"seconds":1800000361,"nanoseconds":123456000}}}"#;

#[test]
fn an_unreadable_send_record_stops_every_permit() {
    let mut store = leased();
    assert_eq!(apply(&mut store, &Begin(0, 1, T0)).0, "permit 1 false");
    let path = format!("checkoutRequests/{}/providerSends/current", hash());
    for field in ["firstSentAt", "sendCutoffAt", "lastSentAt", "state"] {
        let mut broken = store.clone();
        broken.get_mut(&path).expect("send record").remove(field);
        for (op, answer) in [
            (Begin(0, 1, T1), "send_cutoff_passed"),
            (Begin(1, 7, T1), "send_cutoff_passed"),
            (Outcome(0, 1, 1, succeeded(0), T1), "journal_corrupt"),
            (Rec(0, 1, 1, Absent, T1), "journal_corrupt"),
            // The guard reads the send documents as the send operations do.
            (Complete(0, 1, T1), "journal_corrupt"),
            (Status(T1), "journal_corrupt"),
        ] {
            assert_eq!(
                apply(&mut broken, &op),
                (answer.to_owned(), 0),
                "{field}: {op:?}"
            );
        }
    }
    // A cutoff that disagrees with the plan's retention is an unknown send time too.
    let mut moved = store.clone();
    let later = crate::document::fields::timestamp(at(CUTOFF + SEC));
    moved
        .get_mut(&path)
        .expect("send record")
        .insert("sendCutoffAt".to_owned(), later);
    assert_eq!(apply(&mut moved, &Begin(0, 1, T1)).0, "send_cutoff_passed");
}

#[test]
fn malformed_or_orphan_send_documents_fail_closed() {
    let mut store = leased();
    assert_eq!(apply(&mut store, &Begin(0, 1, T0)).0, "permit 1 false");
    let h = hash();
    let plan = format!("checkoutRequests/{h}/providerSends/plan");
    let current = format!("checkoutRequests/{h}/providerSends/current");
    let event1 = format!("auditEvents/provider_send_{h}_0000000001");
    let event2 = format!("auditEvents/provider_send_{h}_0000000002");
    let mut without_plan = store.clone();
    without_plan.remove(&plan);
    let mut without_event = store.clone();
    without_event.remove(&event1);
    let mut preseeded = store.clone();
    let copy = store[&event1].clone();
    preseeded.insert(event2, copy);
    let mut bad_plan = store.clone();
    bad_plan.get_mut(&plan).expect("plan").remove("mode");
    let mut orphan_event = leased();
    orphan_event.insert(event1.clone(), store[&event1].clone());
    let mut wrong_attempt = store.clone();
    wrong_attempt
        .get_mut(&current)
        .expect("record")
        .insert("attempt".to_owned(), crate::document::fields::int(2));
    for (name, mut broken) in [
        ("no plan", without_plan),
        ("no partner event", without_event),
        ("next event exists", preseeded),
        ("malformed plan", bad_plan),
        ("event without a record", orphan_event),
    ] {
        for op in [
            Begin(0, 1, T1),
            Outcome(0, 1, 1, Ambiguous, T1),
            Rec(0, 1, 1, Absent, T1),
            Status(T1),
        ] {
            assert_eq!(
                apply(&mut broken, &op),
                ("journal_corrupt".to_owned(), 0),
                "{name}: {op:?}"
            );
        }
    }
    // An attempt number the chain cannot hold is a malformed record.
    assert_eq!(
        apply(&mut wrong_attempt, &Begin(0, 1, T1)).0,
        "send_cutoff_passed"
    );
    assert_eq!(
        apply(&mut wrong_attempt, &Outcome(0, 1, 1, Ambiguous, T1)).0,
        "journal_corrupt"
    );
}

#[test]
fn stored_documents_are_exact() {
    let mut store = leased();
    assert_eq!(apply(&mut store, &Begin(0, 1, T0)).0, "permit 1 false");
    let h = hash();
    let plan = &store[&format!("checkoutRequests/{h}/providerSends/plan")];
    let mut names: Vec<&String> = plan.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "accountFingerprint",
            "boundAt",
            "boundFenceEpoch",
            "commandKeyHash",
            "keyRetentionSeconds",
            "lookup",
            "lookupSettleSeconds",
            "mode",
            "operation",
            "planFingerprint",
            "provider",
            "sendSchemaVersion"
        ]
    );
    let text = format!("{plan:?}");
    assert!(text.contains(&super::plan(0).fingerprint(&identity()).to_string()));
    let account = super::plan(0).provider_account().fingerprint(&h);
    assert!(text.contains(account.as_str()));
    let event = &store[&format!("auditEvents/provider_send_{h}_0000000001")];
    let mut names: Vec<&String> = event.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "aggregateType",
            "attempt",
            "auditSchemaVersion",
            "commandKeyHash",
            "eventType",
            "fenceEpoch",
            "fromState",
            "occurredAt",
            "sendCutoffAt",
            "sendRevision",
            "toState"
        ]
    );
    // The lifecycle and the B2B events are exactly as before the send.
    let lease_only = leased();
    for (path, doc) in lease_only.iter() {
        assert_eq!(store.get(path), Some(doc), "{path}");
    }
}

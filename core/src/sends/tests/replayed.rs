//! A send whose provider replayed an unknown answer it stored for the key (Stripe's
//! stored 5xx), or answered one it documents as indeterminate (a fresh 500): the
//! attempt is kept open as `replayed_unknown` or `indeterminate`, never re-sent, by its
//! sender or a later holder, never proven absent (the provider may still complete
//! it), and only its final state found by a lookup settles it: no second key.

use super::*;
use crate::sends::AttemptNumber;
use crate::sends::attempt::{self, AttemptState};
use crate::sends::event::{self, SendEventType};
use Op::{Acquire as Acq, Begin, Outcome, Reconcile as Rec, Status};

fn state(store: &Store) -> String {
    let doc = store.get(&attempt::path(&hash())).expect("a send record");
    format!("{:?}", doc.get("state").expect("a state"))
}

#[test]
fn a_replayed_unknown_is_never_re_sent_nor_proven_absent_and_only_its_final_state_settles_it() {
    let refused = JournalError::SendCutoffPassed.code();
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    let long_after = CUTOFF + 7 * 86_400 * SEC;
    let store = case(
        "replayed unknown",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (
                Outcome(0, 1, 1, ReplayedUnknown, T0 + SEC),
                "send_ambiguous 1",
                2,
            ),
            // An unknown again, replayed or not, changes nothing.
            (
                Outcome(0, 1, 1, Ambiguous, T0 + 2 * SEC),
                "send_ambiguous 1",
                0,
            ),
            (
                Outcome(0, 1, 1, ReplayedUnknown, T0 + 2 * SEC),
                "send_ambiguous 1",
                0,
            ),
            (
                Outcome(0, 1, 1, Indeterminate, T0 + 2 * SEC),
                "send_ambiguous 1",
                0,
            ),
            // No permit again, not even the sender's own while its lease runs.
            (Begin(0, 1, T0 + 3 * SEC), refused, 0),
            (Acq(1, T0 + 61 * SEC), "acquired 2", 2),
            (Begin(1, 2, T0 + 62 * SEC), refused, 0),
            // Stripe may still complete it: no "not found" proves its absence, not
            // once the usual window has passed, not past the cutoff, not days later.
            (Rec(1, 2, 1, Absent, T0 + 62 * SEC), never, 0),
            (Acq(1, PROVABLE), "acquired 3", 2),
            (Rec(1, 3, 1, Absent, PROVABLE), never, 0),
            (Begin(1, 3, PROVABLE + 1), refused, 0),
            (Acq(1, long_after), "acquired 4", 2),
            (Rec(1, 4, 1, Absent, long_after), never, 0),
            (Begin(1, 4, long_after + 1), refused, 0),
            // Its final state, whenever it is found, settles it: one key, one charge.
            (
                Rec(1, 4, 1, succeeded(0), long_after + 2),
                "terminal_succeeded",
                4,
            ),
        ],
    );
    assert_eq!(
        send_counts(&store),
        (2, 3),
        "attempt 1 alone: no second key"
    );
    let replayed = store.get(&event::path(&hash(), 2)).expect("event 2");
    let kind = format!("{:?}", replayed.get("eventType").expect("a type"));
    assert!(
        kind.contains(SendEventType::ReplayedUnknown.as_str()),
        "{kind}"
    );
}

/// A fresh answer the provider documents as indeterminate (Stripe's 500): kept open
/// as `indeterminate` in a version-3 send document and a version-4 event, never
/// re-sent, never proven absent; a success found for its key closes it, back in
/// version 2. Reached from a re-send too.
#[test]
fn an_indeterminate_answer_is_kept_open_never_re_sent_nor_proven_absent() {
    let refused = JournalError::SendCutoffPassed.code();
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    let version = |store: &Store| {
        let doc = store.get(&attempt::path(&hash())).expect("a send record");
        format!("{:?}", doc.get("sendSchemaVersion").expect("a version"))
    };
    let event_version = |store: &Store, revision: i64| {
        let doc = store.get(&event::path(&hash(), revision)).expect("event");
        format!("{:?}", doc.get("auditSchemaVersion").expect("a version"))
    };
    let mut store = leased();
    for (op, answer, writes) in [
        (Begin(0, 1, T0), "permit 1 false", 5),
        (
            Outcome(0, 1, 1, Indeterminate, T0 + SEC),
            "send_ambiguous 1",
            2,
        ),
    ] {
        assert_eq!(
            apply(&mut store, &op),
            (answer.to_owned(), writes),
            "{op:?}"
        );
    }
    assert!(
        state(&store).contains("\"indeterminate\""),
        "{}",
        state(&store)
    );
    assert!(
        version(&store).contains("IntegerValue(3)"),
        "{}",
        version(&store)
    );
    assert!(event_version(&store, 1).contains("IntegerValue(3)"));
    assert!(event_version(&store, 2).contains("IntegerValue(4)"));
    let (status, _) = apply(&mut store, &Status(T0 + 2 * SEC));
    assert!(status.contains("\"state\":\"indeterminate\""), "{status}");
    assert!(status.contains("\"needsReconciliation\":true"), "{status}");
    assert!(status.contains("\"absenceProvableFrom\":null"), "{status}");
    for (op, answer, writes) in [
        (
            Outcome(0, 1, 1, Ambiguous, T0 + 2 * SEC),
            "send_ambiguous 1",
            0,
        ),
        (
            Outcome(0, 1, 1, ReplayedUnknown, T0 + 2 * SEC),
            "send_ambiguous 1",
            0,
        ),
        (Begin(0, 1, T0 + 3 * SEC), refused, 0),
        (Acq(1, PROVABLE + 3_600 * SEC), "acquired 2", 2),
        (Rec(1, 2, 1, Absent, PROVABLE + 3_600 * SEC), never, 0),
        (Begin(1, 2, PROVABLE + 3_601 * SEC), refused, 0),
        (
            Rec(1, 2, 1, succeeded(0), PROVABLE + 3_602 * SEC),
            "terminal_succeeded",
            4,
        ),
    ] {
        assert_eq!(
            apply(&mut store, &op),
            (answer.to_owned(), writes),
            "{op:?}"
        );
    }
    assert!(
        version(&store).contains("IntegerValue(2)"),
        "{}",
        version(&store)
    );
    assert!(
        event_version(&store, 3).contains("IntegerValue(4)"),
        "from indeterminate"
    );
    assert_no_canary(&store);

    // After a re-send: the sender of attempt 1's second permit hears the 500.
    let tk = T0 + 61 * SEC;
    case(
        "re-sent, then indeterminate",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T0 + SEC), "send_ambiguous 1", 2),
            (Acq(1, tk), "acquired 2", 2),
            (Begin(1, 2, tk), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, Indeterminate, tk + SEC),
                "send_ambiguous 1",
                2,
            ),
            (Acq(2, tk + 3_600 * SEC), "acquired 3", 2),
            (Rec(2, 3, 1, Absent, tk + 3_600 * SEC), never, 0),
            (
                Rec(2, 3, 1, Declined, tk + 3_601 * SEC),
                "terminal_failed_final",
                4,
            ),
        ],
    );
}

#[test]
fn a_replayed_unknown_says_it_needs_reconciliation_at_once() {
    let mut store = leased();
    apply(&mut store, &Begin(0, 1, T0));
    let (before, _) = apply(&mut store, &Status(T0 + SEC));
    assert!(before.contains("\"needsReconciliation\":false"), "{before}");
    apply(&mut store, &Outcome(0, 1, 1, ReplayedUnknown, T0 + SEC));
    assert!(state(&store).contains(AttemptState::ReplayedUnknown.as_str()));
    let (after, _) = apply(&mut store, &Status(T0 + 2 * SEC));
    assert!(after.contains("\"needsReconciliation\":true"), "{after}");
    assert!(after.contains("\"state\":\"replayed_unknown\""), "{after}");
}

#[test]
fn evidence_for_a_replayed_unknown_settles_it_whenever_it_arrives() {
    case(
        "found",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (
                Outcome(0, 1, 1, ReplayedUnknown, T0 + SEC),
                "send_ambiguous 1",
                2,
            ),
            (
                Rec(0, 1, 1, succeeded(0), T0 + 2 * SEC),
                "terminal_succeeded",
                4,
            ),
        ],
    );
    // A sender whose answer comes late still records it (as before the replay).
    case(
        "the sender's success",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T0 + SEC), "send_ambiguous 1", 2),
            (
                Outcome(0, 1, 1, ReplayedUnknown, T0 + 2 * SEC),
                "send_ambiguous 1",
                2,
            ),
            (
                Outcome(0, 1, 1, Declined, T0 + 3 * SEC),
                "terminal_failed_final",
                4,
            ),
        ],
    );
}

#[test]
fn a_replayed_unknown_past_the_cutoff_is_refused_as_any_unknown() {
    case(
        "past the cutoff",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, CUTOFF - 30 * SEC), "acquired 2", 2),
            (Begin(1, 2, CUTOFF - SEC), "permit 1 true", 2),
            (
                Outcome(1, 2, 1, ReplayedUnknown, CUTOFF),
                JournalError::SendCutoffPassed.code(),
                0,
            ),
        ],
    );
}

#[test]
fn a_replayed_unknown_is_nobodys_evidence_and_a_send_proves_no_absence() {
    use crate::sends::provider::ProviderAnswer;
    use crate::sends::record::{Mode, Record};
    // (the answer, the mode, the field refused) checked before anything is read.
    let refused = [
        (
            ProviderAnswer::ReplayedUnknown,
            Mode::Reconciliation,
            "evidence",
        ),
        (ProviderAnswer::Unknown, Mode::Reconciliation, "evidence"),
        (ProviderAnswer::NotFound, Mode::Outcome, "outcome"),
    ];
    for (answer, mode, field) in refused {
        let prepared = Record::prepare(
            call(0, T0 + SEC),
            FenceEpoch::stored(1),
            AttemptNumber::FIRST,
            &answer,
            Some(plan(0)),
            mode,
        );
        assert_eq!(
            prepared.err(),
            Some(JournalError::invalid(field)),
            "{answer:?} in {mode:?}"
        );
    }
    // The sender records it; a reconciliation refuses it whether or not it names
    // the plan (a recovery job names none).
    assert!(
        Record::prepare(
            call(0, T0 + SEC),
            FenceEpoch::stored(1),
            AttemptNumber::FIRST,
            &ProviderAnswer::ReplayedUnknown,
            Some(plan(0)),
            Mode::Outcome,
        )
        .is_ok()
    );
    assert!(
        Record::prepare(
            call(0, T0 + SEC),
            FenceEpoch::stored(1),
            AttemptNumber::FIRST,
            &ProviderAnswer::ReplayedUnknown,
            None,
            Mode::Reconciliation,
        )
        .is_err()
    );
}

#[test]
fn a_replay_heard_after_a_re_send_is_recorded_by_its_latest_sender_only() {
    let tk = T0 + 61 * SEC;
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    case(
        "re-sent, then replayed",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Outcome(0, 1, 1, Ambiguous, T0 + SEC), "send_ambiguous 1", 2),
            (Acq(1, tk), "acquired 2", 2),
            (Begin(1, 2, tk), "permit 1 true", 2),
            // The first sender, whose lease was taken over, cannot record a replay.
            (
                Outcome(0, 1, 1, ReplayedUnknown, tk + SEC),
                JournalError::LeaseNotHeld.code(),
                0,
            ),
            (
                Outcome(1, 2, 1, ReplayedUnknown, tk + SEC),
                "send_ambiguous 1",
                2,
            ),
            // Past the re-send's lease and window too: still never an absence.
            (Acq(2, tk + 360 * SEC), "acquired 3", 2),
            (Rec(2, 3, 1, Absent, tk + 360 * SEC), never, 0),
            (
                Begin(2, 3, tk + 360 * SEC + 1),
                JournalError::SendCutoffPassed.code(),
                0,
            ),
        ],
    );
}

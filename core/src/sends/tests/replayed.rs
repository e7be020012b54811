//! A send whose provider replayed an unknown answer it stored for the key (Stripe's
//! stored 5xx): the attempt is kept open as `replayed_unknown`, never re-sent, by its
//! sender or a later holder, and only a lookup settles it: its evidence at once, its
//! absence under the usual rule, then attempt 2 under a new key, all before the
//! cutoff.

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
fn a_replayed_unknown_is_never_re_sent_and_its_absence_opens_attempt_2_before_the_cutoff() {
    let refused = JournalError::SendCutoffPassed.code();
    let not_provable = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    let store = case(
        "replayed unknown",
        &[
            (Begin(0, 1, T0), "permit 1 false", 4),
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
            // No permit again, not even the sender's own while its lease runs.
            (Begin(0, 1, T0 + 3 * SEC), refused, 0),
            (Acq(1, T0 + 61 * SEC), "acquired 2", 2),
            (Begin(1, 2, T0 + 62 * SEC), refused, 0),
            // The absence waits for the sender's lease and the settle window.
            (Rec(1, 2, 1, Absent, T0 + 62 * SEC), not_provable, 0),
            (Acq(1, PROVABLE), "acquired 3", 2),
            (Rec(1, 3, 1, Absent, PROVABLE), "send_absent 1", 2),
            (Begin(1, 3, PROVABLE + 1), "permit 2 false", 2),
        ],
    );
    const { assert!(PROVABLE + 1 < CUTOFF) };
    assert_eq!(send_counts(&store), (2, 4));
    let types: Vec<_> = (1..=4)
        .map(|r| {
            let doc = store.get(&event::path(&hash(), r)).expect("event");
            format!("{:?}", doc.get("eventType").expect("type"))
        })
        .collect();
    assert!(types[1].contains(SendEventType::ReplayedUnknown.as_str()));
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
            (Begin(0, 1, T0), "permit 1 false", 4),
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
            (Begin(0, 1, T0), "permit 1 false", 4),
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
            (Begin(0, 1, T0), "permit 1 false", 4),
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
fn the_absence_of_a_replayed_key_waits_for_its_latest_sender_and_a_stale_one_records_nothing() {
    let tk = T0 + 61 * SEC;
    let not_provable = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    case(
        "re-sent, then replayed",
        &[
            (Begin(0, 1, T0), "permit 1 false", 4),
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
            // Past the first send's provable instant, but not the re-send's: the
            // re-sent request may still be in flight.
            (Acq(2, PROVABLE + 5 * SEC), "acquired 3", 2),
            (Rec(2, 3, 1, Absent, PROVABLE + 10 * SEC), not_provable, 0),
            (Rec(2, 3, 1, Absent, tk + 359 * SEC), not_provable, 0),
            (Rec(2, 3, 1, Absent, tk + 360 * SEC), "send_absent 1", 2),
            (Begin(2, 3, tk + 360 * SEC + 1), "permit 2 false", 2),
        ],
    );
}

//! `record_late_charge`: a charge its command ended without is recorded once, from
//! the command's own documents, with the reason its attempt's recorded state gives;
//! the command's own charge, an open attempt or a later one are not late.

use super::*;
use crate::sends::late::{self, LateCharge};
use crate::transaction::Decision;
use Op::{Acquire as Acq, Begin, LateCharge as Late, Outcome, Reconcile as Rec};

const TK: i64 = PROVABLE + SEC;

#[test]
fn a_charge_of_an_attempt_proven_absent_is_recorded_once() {
    let mismatch = JournalError::AttemptMismatch.code();
    let conflict = JournalError::TerminalConflict.code();
    let store = case(
        "absent, then attempt 2 succeeded",
        &[
            // No plan bound: nothing sent, nothing of this command's.
            (Late(1, 0, T0), mismatch, 0),
            (Begin(0, 1, T0), "permit 1 false", 5),
            // Attempt 1 is open: its charge is its outcome (reconcile it), not late.
            (Late(1, 0, T0 + SEC), mismatch, 0),
            (Acq(1, PROVABLE), "acquired 2", 2),
            (Rec(1, 2, 1, Absent, PROVABLE), "send_absent 1", 2),
            (Begin(1, 2, TK), "permit 2 false", 3),
            // Proven absent, and yet charged (heard once attempt 2 was sent): recorded,
            // whatever comes next.
            (Late(1, 0, TK + 1), "late attempt_absent", 1),
            (Late(1, 0, TK + 2), "late again attempt_absent", 0),
            (Late(1, 1, TK + 2), conflict, 0),
            (
                Outcome(1, 2, 2, succeeded(1), TK + 2),
                "terminal_succeeded",
                4,
            ),
            // The command's own charge; another one for its key is a contradiction.
            (Late(2, 1, TK + 2), "own_charge", 0),
            (Late(2, 0, TK + 2), conflict, 0),
            (Late(3, 0, TK + 2), mismatch, 0),
            // Attempt 1's record stands, with the reason it was recorded with.
            (Late(1, 0, TK + 3), "late again attempt_absent", 0),
        ],
    );
    let h = hash();
    let doc = store.get(&late::path(&h, nth(1))).expect("the late charge");
    let parsed = LateCharge::parse(&h, nth(1), doc).expect("parses");
    assert_eq!(parsed.commitment, commitment(0));
    assert_eq!(parsed.recorded_at, at(TK + 1));
    assert_eq!(&parsed.encode(), doc);
}

#[test]
fn a_charge_of_a_declined_attempt_or_an_earlier_one_is_recorded() {
    case(
        "declined",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (
                Outcome(0, 1, 1, Declined, T0 + SEC),
                "terminal_failed_final",
                4,
            ),
            (Late(1, 0, T0 + 2 * SEC), "late attempt_declined", 1),
        ],
    );
    case(
        "an earlier attempt, the later one still open",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (Acq(1, PROVABLE), "acquired 2", 2),
            (Rec(1, 2, 1, Absent, PROVABLE), "send_absent 1", 2),
            (Begin(1, 2, TK), "permit 2 false", 3),
            (Late(1, 0, TK + 1), "late attempt_absent", 1),
            (Late(2, 0, TK + 1), JournalError::AttemptMismatch.code(), 0),
        ],
    );
}

#[test]
fn a_late_charge_document_is_read_strictly() {
    let store = case(
        "declined",
        &[
            (Begin(0, 1, T0), "permit 1 false", 5),
            (
                Outcome(0, 1, 1, Declined, T0 + SEC),
                "terminal_failed_final",
                4,
            ),
            (Late(1, 0, T0 + 2 * SEC), "late attempt_declined", 1),
        ],
    );
    let h = hash();
    let doc = &store[&late::path(&h, nth(1))];
    assert!(LateCharge::parse(&h, nth(1), doc).is_ok());
    assert!(
        LateCharge::parse(&h, nth(2), doc).is_err(),
        "another attempt's path"
    );
    let other = Digest::parse(&"0".repeat(64)).expect("digest");
    assert!(LateCharge::parse(&other, nth(1), doc).is_err());
    for (name, value) in [
        ("lateChargeSchemaVersion", crate::document::fields::int(2)),
        ("reason", crate::document::fields::string("refunded")),
        ("attempt", crate::document::fields::int(2)),
        ("extra", crate::document::fields::null()),
    ] {
        let mut changed = doc.clone();
        changed.insert(name.to_owned(), value);
        assert!(LateCharge::parse(&h, nth(1), &changed).is_err(), "{name}");
    }
    let mut missing = doc.clone();
    missing.remove("recordedAt");
    assert!(LateCharge::parse(&h, nth(1), &missing).is_err());
    assert_eq!(late::parse_id("0001"), Some(nth(1)));
    for bad in ["1", "0000", "00001", "000a"] {
        assert_eq!(late::parse_id(bad), None, "{bad}");
    }
}

#[test]
fn no_next_attempt_opens_beside_a_late_charge_of_the_absent_one() {
    let absent = || {
        case(
            "absent, then charged",
            &[
                (Begin(0, 1, T0), "permit 1 false", 5),
                (Acq(1, PROVABLE), "acquired 2", 2),
                (Rec(1, 2, 1, Absent, PROVABLE), "send_absent 1", 2),
            ],
        )
    };
    // Recorded first: no permit for attempt 2 (a second charge), nothing written.
    let mut store = absent();
    assert_eq!(
        apply(&mut store, &Late(1, 0, PROVABLE + 1)),
        ("late attempt_absent".to_owned(), 1)
    );
    let before = store.clone();
    assert_eq!(
        apply(&mut store, &Begin(1, 2, TK)),
        (JournalError::SendCutoffPassed.code().to_owned(), 0)
    );
    assert_eq!(store, before);
    // Decided on a read made before the late charge, attempt 2's permit commits only
    // while the late charge is still absent: never both.
    let mut store = absent();
    let begin = BeginSend::new(call(1, TK), FenceEpoch::stored(2), plan(0));
    let decided = store.attempt(&begin);
    assert!(matches!(
        decided.decision,
        Decision::Mutate(_, BeginSendOutput::Permitted(_))
    ));
    assert_eq!(
        apply(&mut store, &Late(1, 0, TK)),
        ("late attempt_absent".to_owned(), 1)
    );
    assert!(
        !store.commit(&decided),
        "the permit's commit lost its proof"
    );
    assert_eq!(store.answer(&begin), Err(JournalError::SendCutoffPassed));
}

//! A send whose provider answered that the customer must act (3-D Secure, a hosted
//! page): the attempt is kept open as `awaiting_customer` (send record version 4, its
//! events audit version 5: every earlier document unchanged), never re-sent by its
//! sender or a later holder, never proven absent by a lookup's "not found" (the
//! customer may still pay), and settled by the provider's charge or refusal whenever
//! it arrives: no second key.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::sends::AttemptState;
use crate::sends::attempt::{self, SendAttempt};
use crate::sends::event::{self, SendEvent, SendEventType};
use Op::{Acquire as Acq, Begin, Outcome, Reconcile as Rec, Status};

const AWAITING: Closing = Closing::AwaitingCustomer;

fn field(store: &Store, path: &str, name: &str) -> String {
    let doc = store.get(path).expect("a document");
    format!("{:?}", doc.get(name).expect("the field"))
}

#[test]
fn a_customer_who_must_act_keeps_the_attempt_waiting_never_re_sent_nor_proven_absent() {
    let refused = JournalError::SendCutoffPassed.code();
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    let h = hash();
    let mut store = leased();
    for (op, answer, writes) in [
        (Begin(0, 1, T0), "permit 1 false", 4),
        (
            Outcome(0, 1, 1, AWAITING, T0 + SEC),
            "send_awaiting_customer 1",
            2,
        ),
    ] {
        assert_eq!(
            apply(&mut store, &op),
            (answer.to_owned(), writes),
            "{op:?}"
        );
    }
    let current = attempt::path(&h);
    assert!(field(&store, &current, "state").contains("\"awaiting_customer\""));
    assert!(field(&store, &current, "sendSchemaVersion").contains("IntegerValue(4)"));
    assert!(field(&store, &event::path(&h, 1), "auditSchemaVersion").contains("IntegerValue(3)"));
    assert!(field(&store, &event::path(&h, 2), "auditSchemaVersion").contains("IntegerValue(5)"));
    let (status, _) = apply(&mut store, &Status(T0 + 2 * SEC));
    assert!(
        status.contains("\"state\":\"awaiting_customer\""),
        "{status}"
    );
    assert!(status.contains("\"needsReconciliation\":true"), "{status}");
    assert!(status.contains("\"absenceProvableFrom\":null"), "{status}");
    for (op, answer, writes) in [
        // The customer's action answered again, or an unknown: nothing changes.
        (
            Outcome(0, 1, 1, AWAITING, T0 + 2 * SEC),
            "send_awaiting_customer 1",
            0,
        ),
        (
            Outcome(0, 1, 1, Ambiguous, T0 + 2 * SEC),
            "send_ambiguous 1",
            0,
        ),
        // Never re-sent, by its sender or by a later holder, whatever the time.
        (Begin(0, 1, T0 + 3 * SEC), refused, 0),
        (Acq(1, PROVABLE + 3_600 * SEC), "acquired 2", 2),
        (Begin(1, 2, PROVABLE + 3_600 * SEC), refused, 0),
        // No lookup's "not found" proves it absent: the customer may still pay.
        (Rec(1, 2, 1, Absent, PROVABLE + 3_601 * SEC), never, 0),
        (Acq(2, CUTOFF + SEC), "acquired 3", 2),
        (Rec(2, 3, 1, Absent, CUTOFF + SEC), never, 0),
        (Begin(2, 3, CUTOFF + SEC), refused, 0),
        // The customer paid: the charge settles it, past the cutoff too.
        (
            Rec(2, 3, 1, succeeded(0), CUTOFF + 2 * SEC),
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
    assert!(field(&store, &current, "sendSchemaVersion").contains("IntegerValue(2)"));
    assert!(
        field(&store, &event::path(&h, 3), "auditSchemaVersion").contains("IntegerValue(5)"),
        "from awaiting_customer"
    );
    assert_no_canary(&store);
}

/// A failed challenge: the provider's refusal settles the waiting attempt; a re-send's
/// must-act after an ambiguous answer waits too, recorded by its latest sender only.
#[test]
fn a_refusal_settles_a_waiting_attempt_recorded_by_its_latest_sender() {
    let tk = T0 + 61 * SEC;
    case(
        "re-sent, then the customer must act, then declined",
        &[
            (Begin(0, 1, T0), "permit 1 false", 4),
            (Outcome(0, 1, 1, Ambiguous, T0 + SEC), "send_ambiguous 1", 2),
            (Acq(1, tk), "acquired 2", 2),
            (Begin(1, 2, tk), "permit 1 true", 2),
            // Only the fence that sent it last records the sender's answer.
            (
                Outcome(0, 1, 1, AWAITING, tk + SEC),
                JournalError::LeaseNotHeld.code(),
                0,
            ),
            (
                Outcome(1, 2, 1, AWAITING, tk + SEC),
                "send_awaiting_customer 1",
                2,
            ),
            (
                Rec(1, 2, 1, Declined, tk + 2 * SEC),
                "terminal_failed_final",
                4,
            ),
        ],
    );
}

#[test]
fn an_awaiting_attempt_is_version_4_and_its_events_version_5_exactly() {
    let store = case(
        "awaiting codecs",
        &[
            (Op::Begin(0, 1, T0), "permit 1 false", 4),
            (
                Op::Outcome(0, 1, 1, AWAITING, T0 + SEC),
                "send_awaiting_customer 1",
                2,
            ),
        ],
    );
    let h = hash();
    let current_doc = &store[&attempt::path(&h)];
    let current = SendAttempt::parse(&h, current_doc).expect("record parses");
    assert_eq!((current.version, &current.encode()), (4, current_doc));
    assert_eq!(current.state, AttemptState::AwaitingCustomer);
    let event_id = event::id(&h, 2);
    let event_doc = &store[&event::path(&h, 2)];
    let parsed = SendEvent::parse(&event_id, event_doc).expect("event parses");
    assert_eq!(&parsed.encode(), event_doc);
    assert_eq!(parsed.event_type, SendEventType::AwaitingCustomer);
    let with = |doc: &FieldMap, name: &str, value| {
        let mut changed = doc.clone();
        changed.insert(name.to_owned(), value);
        changed
    };
    // Versions 1 to 3 never hold `awaiting_customer`; version 4 holds nothing else.
    for version in [1, 2, 3, 5] {
        let other = with(current_doc, "sendSchemaVersion", fields::int(version));
        assert!(SendAttempt::parse(&h, &other).is_err(), "version {version}");
    }
    for state in ["ambiguous", "indeterminate", "replayed_unknown"] {
        let other = with(current_doc, "state", fields::string(state));
        assert!(
            SendAttempt::parse(&h, &other).is_err(),
            "{state} as version 4"
        );
    }
    let as_v2 = with(
        &with(current_doc, "state", fields::string("ambiguous")),
        "sendSchemaVersion",
        fields::int(2),
    );
    assert!(
        SendAttempt::parse(&h, &as_v2).is_ok(),
        "the same fields, as version 2"
    );
    // An event naming `awaiting_customer` is version 5, and no other is.
    for version in [3, 4, 6] {
        let other = with(event_doc, "auditSchemaVersion", fields::int(version));
        assert!(
            SendEvent::parse(&event_id, &other).is_err(),
            "version {version}"
        );
    }
    let opened = &store[&event::path(&h, 1)];
    let v5 = with(opened, "auditSchemaVersion", fields::int(5));
    assert!(SendEvent::parse(&event::id(&h, 1), &v5).is_err());
    // The waiting state follows only a state that may be re-sent; evidence follows it.
    use crate::sends::AttemptState as S;
    let first = AttemptNumber::FIRST;
    for from in [S::Sending, S::Ambiguous] {
        assert!(SendEventType::AwaitingCustomer.allows_from(Some(from), first));
    }
    for from in [
        S::ReplayedUnknown,
        S::Indeterminate,
        S::AwaitingCustomer,
        S::Absent,
    ] {
        assert!(!SendEventType::AwaitingCustomer.allows_from(Some(from), first));
    }
    for evidence in [
        SendEventType::ReconciledSucceeded,
        SendEventType::ReconciledDeclined,
        SendEventType::Succeeded,
    ] {
        assert!(evidence.allows_from(Some(S::AwaitingCustomer), first));
    }
    assert!(!SendEventType::Resent.allows_from(Some(S::AwaitingCustomer), first));
}

/// Abandoned: the object read by id closed with nothing charged ends a waiting attempt
/// as the command's final failure, one commit; it proves no other attempt closed, and
/// a second "closed" is the same outcome, read-only.
#[test]
fn a_closed_object_ends_only_a_waiting_attempt_with_nothing_charged() {
    let never = JournalError::AbsenceNotProvable {
        provable_from: None,
    }
    .code();
    let tk = T0 + 61 * SEC;
    case(
        "closed ends a waiting attempt",
        &[
            (Begin(0, 1, T0), "permit 1 false", 4),
            (
                Outcome(0, 1, 1, AWAITING, T0 + SEC),
                "send_awaiting_customer 1",
                2,
            ),
            (Acq(1, tk), "acquired 2", 2),
            (
                Rec(1, 2, 1, Closing::Closed, tk + SEC),
                "terminal_failed_final",
                4,
            ),
            (
                Rec(1, 2, 1, Closing::Closed, tk + 2 * SEC),
                "terminal_failed_final",
                0,
            ),
            (
                Rec(1, 2, 1, succeeded(0), tk + 3 * SEC),
                JournalError::TerminalConflict.code(),
                0,
            ),
        ],
    );
    case(
        "closed proves no ambiguous attempt absent",
        &[
            (Begin(0, 1, T0), "permit 1 false", 4),
            (Outcome(0, 1, 1, Ambiguous, T0 + SEC), "send_ambiguous 1", 2),
            (Acq(1, tk), "acquired 2", 2),
            (Rec(1, 2, 1, Closing::Closed, tk + SEC), never, 0),
            (Begin(1, 2, tk + 2 * SEC), "permit 1 true", 2),
        ],
    );
}

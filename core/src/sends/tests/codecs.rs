//! Strict parsing of the three send documents: every document the decisions wrote
//! round-trips, and every single-field malformation (missing, wrong type, extra
//! field, out-of-range or unknown text) fails closed.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::document::value::ValueType;
use crate::sends::AttemptNumber;
use crate::sends::attempt::{self, SendAttempt};
use crate::sends::bound_plan::{self, BoundPlan};
use crate::sends::event::{self, SendEvent};

/// A history whose documents hold every kind of value: a re-send, an outcome.
fn written() -> Store {
    case(
        "codecs",
        &[
            (Op::Begin(0, 1, T0), "permit 1 false", 5),
            (
                Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
                "send_ambiguous 1",
                2,
            ),
            (Op::Acquire(1, T0 + 61 * SEC), "acquired 2", 2),
            (Op::Begin(1, 2, T0 + 61 * SEC), "permit 1 true", 2),
            (
                Op::Outcome(1, 2, 1, Ambiguous, T0 + 62 * SEC),
                "send_ambiguous 1",
                2,
            ),
        ],
    )
}

/// Values of every other type than `value`'s, and near misses of the same type
/// (a timestamp is only replaced by other types: its relations are the decisions'
/// tables' and the verifier's to check).
fn wrong_values(value: &crate::document::value::Value) -> Vec<crate::document::value::Value> {
    let mut out = vec![fields::null(), fields::string("x"), fields::int(0)];
    out.push(fields::timestamp(at(T0)));
    match value.value_type.as_ref() {
        Some(ValueType::IntegerValue(n)) => {
            out.retain(|v| !matches!(v.value_type, Some(ValueType::IntegerValue(_))));
            out.push(fields::int(-1));
            out.push(fields::int(n.saturating_add(10_000_000_000)));
            out.push(fields::string(n.to_string()));
        }
        Some(ValueType::StringValue(s)) => {
            out.retain(|v| !matches!(v.value_type, Some(ValueType::StringValue(_))));
            out.push(fields::string(s.to_uppercase()));
            out.push(fields::string(format!("{s} ")));
        }
        Some(ValueType::NullValue(_)) => {
            out.retain(|v| !matches!(v.value_type, Some(ValueType::NullValue(_))))
        }
        Some(ValueType::TimestampValue(_)) => {
            out.retain(|v| !matches!(v.value_type, Some(ValueType::TimestampValue(_))))
        }
        _ => {}
    }
    out
}

fn malformations(doc: &FieldMap) -> Vec<(String, FieldMap)> {
    let mut out = Vec::new();
    for (name, value) in doc {
        let mut missing = doc.clone();
        missing.remove(name);
        out.push((format!("{name} missing"), missing));
        for wrong in wrong_values(value) {
            let mut changed = doc.clone();
            changed.insert(name.clone(), wrong.clone());
            out.push((format!("{name} = {wrong:?}"), changed));
        }
    }
    let mut extra = doc.clone();
    extra.insert("extra".to_owned(), fields::null());
    out.push(("an extra field".to_owned(), extra));
    out
}

#[test]
fn documents_round_trip_and_every_malformation_fails_closed() {
    let store = written();
    let h = hash();
    let plan_doc = &store[&bound_plan::path(&h)];
    let current_doc = &store[&attempt::path(&h)];
    let event_id = event::id(&h, 4);
    let event_doc = &store[&event::path(&h, 4)];
    let plan = BoundPlan::parse(&h, plan_doc).expect("plan parses");
    assert_eq!(&plan.encode(), plan_doc);
    let current = SendAttempt::parse(&h, current_doc).expect("record parses");
    assert_eq!(&current.encode(), current_doc);
    assert!(current.outcome.is_some() && current.resent());
    let parsed = SendEvent::parse(&event_id, event_doc).expect("event parses");
    assert_eq!(&parsed.encode(), event_doc);

    for (what, doc) in malformations(plan_doc) {
        assert!(BoundPlan::parse(&h, &doc).is_err(), "plan: {what}");
    }
    for (what, doc) in malformations(current_doc) {
        assert!(SendAttempt::parse(&h, &doc).is_err(), "record: {what}");
    }
    for (what, doc) in malformations(event_doc) {
        assert!(SendEvent::parse(&event_id, &doc).is_err(), "event: {what}");
    }
    // Another command's hash, or the event read under another id.
    let other = Digest::parse(&"0".repeat(64)).expect("digest");
    assert!(BoundPlan::parse(&other, plan_doc).is_err());
    assert!(SendAttempt::parse(&other, current_doc).is_err());
    assert!(SendEvent::parse(&event::id(&h, 5), event_doc).is_err());
}

/// The state `indeterminate` lives in a version-3 send document and version-4 events
/// only: both round-trip, every malformation fails closed, and a version that
/// disagrees with the state either way is `journal_corrupt`, so no document an
/// earlier library wrote or reads changes meaning.
#[test]
fn an_indeterminate_attempt_is_version_3_and_its_events_version_4_exactly() {
    let store = case(
        "indeterminate codecs",
        &[
            (Op::Begin(0, 1, T0), "permit 1 false", 5),
            (
                Op::Outcome(0, 1, 1, Indeterminate, T0 + SEC),
                "send_ambiguous 1",
                2,
            ),
        ],
    );
    let h = hash();
    let current_doc = &store[&attempt::path(&h)];
    let current = SendAttempt::parse(&h, current_doc).expect("record parses");
    assert_eq!((current.version, &current.encode()), (3, current_doc));
    let event_id = event::id(&h, 2);
    let event_doc = &store[&event::path(&h, 2)];
    let parsed = SendEvent::parse(&event_id, event_doc).expect("event parses");
    assert_eq!(&parsed.encode(), event_doc);
    for (what, doc) in malformations(current_doc) {
        assert!(SendAttempt::parse(&h, &doc).is_err(), "record: {what}");
    }
    for (what, doc) in malformations(event_doc) {
        assert!(SendEvent::parse(&event_id, &doc).is_err(), "event: {what}");
    }
    let with = |doc: &FieldMap, name: &str, value| {
        let mut changed = doc.clone();
        changed.insert(name.to_owned(), value);
        changed
    };
    // Version 2 holding `indeterminate`, version 3 holding another state.
    let v2 = with(current_doc, "sendSchemaVersion", fields::int(2));
    assert!(SendAttempt::parse(&h, &v2).is_err());
    let other = with(current_doc, "state", fields::string("ambiguous"));
    assert!(SendAttempt::parse(&h, &other).is_err());
    let both = with(&other, "sendSchemaVersion", fields::int(2));
    assert!(
        SendAttempt::parse(&h, &both).is_ok(),
        "the same fields, as version 2"
    );
    // Version 3 naming `indeterminate`; version 4 naming none of it.
    let v3 = with(event_doc, "auditSchemaVersion", fields::int(3));
    assert!(SendEvent::parse(&event_id, &v3).is_err());
    let opened = &store[&event::path(&h, 1)];
    let v4 = with(opened, "auditSchemaVersion", fields::int(4));
    assert!(SendEvent::parse(&event::id(&h, 1), opened).is_ok());
    assert!(SendEvent::parse(&event::id(&h, 1), &v4).is_err());
}

#[test]
fn attempt_states_serialize_as_their_stored_names() {
    use crate::sends::AttemptState;
    for state in [
        AttemptState::Sending,
        AttemptState::Ambiguous,
        AttemptState::ReplayedUnknown,
        AttemptState::Indeterminate,
        AttemptState::AwaitingCustomer,
        AttemptState::Absent,
        AttemptState::Succeeded,
        AttemptState::Declined,
    ] {
        assert_eq!(
            serde_json::to_value(state).ok(),
            Some(state.as_str().into())
        );
        assert_eq!(AttemptState::parse(state.as_str()), Some(state));
    }
}

#[test]
fn a_provider_answer_is_one_outcome_and_its_evidence() {
    use crate::envelope::ResultEnvelope;
    use crate::sends::provider::Closing;
    use crate::sends::provider::ProviderAnswer;
    let identity = super::identity();
    let envelope = ResultEnvelope::new(&serde_json::json!({"id": "ch_1"})).expect("envelope");
    let outcome = ProviderAnswer::Succeeded(envelope.clone());
    let evidence = outcome.evidence().expect("a success is evidence");
    assert_eq!(evidence, ProviderAnswer::Succeeded(envelope.clone()));
    // The same finding and envelope whichever way the answer arrives.
    assert_eq!(outcome.closing(&identity), evidence.closing(&identity));
    let commitment = identity.terminal_commitment(&envelope.reference());
    assert_eq!(
        outcome.closing(&identity),
        (Closing::Succeeded(commitment), Some(&envelope))
    );
    let declined = ProviderAnswer::Declined;
    assert_eq!(declined.evidence(), Some(ProviderAnswer::Declined));
    assert_eq!(declined.closing(&identity), (Closing::Declined, None));
    let ambiguous = ProviderAnswer::Unknown;
    assert_eq!(ambiguous.evidence(), None);
    assert_eq!(ambiguous.closing(&identity), (Closing::Ambiguous, None));
    assert_eq!(
        ProviderAnswer::NotFound.closing(&identity),
        (Closing::Absent, None)
    );
    assert_eq!(ProviderAnswer::NotFound.evidence(), None);
    // A replayed unknown is no evidence either: only the sender records it.
    assert_eq!(ProviderAnswer::ReplayedUnknown.evidence(), None);
    assert_eq!(
        ProviderAnswer::ReplayedUnknown.closing(&identity),
        (Closing::ReplayedUnknown, None)
    );
}

/// The grammar of the send chain, whole: which state each event may follow (`None`:
/// no attempt yet). A replayed unknown follows only a state that may be re-sent, and
/// nothing but evidence or a proven absence follows it: no re-send, no plain
/// `ambiguous`, no second replay.
#[test]
fn each_send_event_follows_exactly_the_states_of_its_rule() {
    use crate::sends::AttemptState as S;
    use crate::sends::event::SendEventType as E;
    let states = [
        None,
        Some(S::Sending),
        Some(S::Ambiguous),
        Some(S::ReplayedUnknown),
        Some(S::Absent),
        Some(S::Succeeded),
        Some(S::Declined),
    ];
    let open = [
        Some(S::Sending),
        Some(S::Ambiguous),
        Some(S::ReplayedUnknown),
    ];
    let resendable = [Some(S::Sending), Some(S::Ambiguous)];
    let rows: [(E, i64, &[Option<S>]); 10] = [
        (E::Opened, 1, &[None]),
        (E::Opened, 2, &[Some(S::Absent)]),
        (E::Resent, 1, &resendable),
        (E::Ambiguous, 1, &[Some(S::Sending)]),
        (E::ReplayedUnknown, 1, &resendable),
        (E::Succeeded, 1, &open),
        (E::Declined, 1, &open),
        (E::ReconciledSucceeded, 1, &open),
        (E::ReconciledDeclined, 1, &open),
        (E::ReconciledAbsent, 1, &open),
    ];
    for (event_type, attempt, allowed) in rows {
        for from in states {
            assert_eq!(
                event_type.allows_from(from, AttemptNumber::new(attempt).unwrap()),
                allowed.contains(&from),
                "{event_type:?} (attempt {attempt}) from {from:?}"
            );
        }
    }
}

/// A stored fence or attempt number outside its type's range (0, negative, one past
/// the largest) fails the strict parse exactly as before the types: `journal_corrupt`
/// with the document's kind.
#[test]
fn a_stored_fence_or_attempt_out_of_range_fails_the_strict_parse() {
    use crate::document::MAX_REVISION;
    use crate::document::audit::{self, TransitionEvent};
    use crate::document::lifecycle::{self, Lifecycle};
    use crate::sends::attempt_number::MAX_ATTEMPT;
    type Parse<'a> = Box<dyn Fn(&FieldMap) -> Result<(), JournalError> + 'a>;
    let store = written();
    let h = hash();
    let event_id = event::id(&h, 4);
    let audit_id = audit::id(&h, 2);
    let out_of_range = |largest| [0, -1, largest + 1, i64::MIN];
    let cases: Vec<(&str, String, Parse, &str, [i64; 4])> = vec![
        (
            "malformed lifecycle document",
            lifecycle::path(&h),
            Box::new(|m| Lifecycle::parse(&h, m).map(drop)),
            "fenceEpoch",
            out_of_range(MAX_REVISION),
        ),
        (
            "malformed transition audit event",
            audit::path(&h, 2),
            Box::new(|m| TransitionEvent::parse(&audit_id, m).map(drop)),
            "fenceEpoch",
            out_of_range(MAX_REVISION),
        ),
        (
            bound_plan::KIND,
            bound_plan::path(&h),
            Box::new(|m| BoundPlan::parse(&h, m).map(drop)),
            "boundFenceEpoch",
            out_of_range(MAX_REVISION),
        ),
        (
            event::KIND,
            event::path(&h, 4),
            Box::new(|m| SendEvent::parse(&event_id, m).map(drop)),
            "fenceEpoch",
            out_of_range(MAX_REVISION),
        ),
        (
            event::KIND,
            event::path(&h, 4),
            Box::new(|m| SendEvent::parse(&event_id, m).map(drop)),
            "attempt",
            out_of_range(MAX_ATTEMPT),
        ),
    ];
    let current: Vec<(&str, i64)> = vec![
        ("attempt", MAX_ATTEMPT),
        ("firstSentFenceEpoch", MAX_REVISION),
        ("lastSentFenceEpoch", MAX_REVISION),
        ("outcomeFenceEpoch", MAX_REVISION),
    ];
    let cases = cases
        .into_iter()
        .chain(current.into_iter().map(|(field, largest)| {
            let parse: Parse = Box::new(|m| SendAttempt::parse(&h, m).map(drop));
            (
                attempt::KIND,
                attempt::path(&h),
                parse,
                field,
                out_of_range(largest),
            )
        }));
    for (kind, path, parse, field, bad) in cases {
        let doc = &store[&path];
        assert_eq!(parse(doc), Ok(()), "{field} of {kind} as written");
        for value in bad {
            let mut changed = doc.clone();
            changed.insert(field.to_owned(), fields::int(value));
            assert_eq!(
                parse(&changed),
                Err(JournalError::corrupt_at(kind, field)),
                "{field} = {value} in {kind}"
            );
        }
    }
}

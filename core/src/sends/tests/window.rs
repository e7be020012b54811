//! A plan that binds the customer's window: stored on a version-4 plan document (and
//! only then), parsed strictly, part of the plan's identity (`plan_conflict` for
//! another window, or none), and the end of the window (`act_by`) on every permit of
//! the attempt, the same on a re-send.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::sends::bound_plan::{self, BoundPlan};

/// One hour.
const WINDOW: i64 = 3_600;

fn windowed(seconds: i64) -> ProviderPlan {
    plan(0).with_customer_window(seconds).expect("fits")
}

fn begin(
    store: &mut Store,
    holder: usize,
    fence: i64,
    now: i64,
    plan: ProviderPlan,
) -> Result<BeginSendOutput, JournalError> {
    store.answer(&BeginSend::new(
        call(holder, now),
        FenceEpoch::stored(fence),
        plan,
    ))
}

fn permit(output: Result<BeginSendOutput, JournalError>) -> crate::sends::SendPermit {
    match output {
        Ok(BeginSendOutput::Permitted(permit)) => permit,
        other => panic!("no permit: {other:?}"),
    }
}

fn stored_plan(store: &Store) -> FieldMap {
    store
        .get(&bound_plan::path(&hash()))
        .expect("plan document")
        .clone()
}

#[test]
fn the_window_is_stored_only_when_set() {
    let mut store = leased();
    permit(begin(&mut store, 0, 1, T0, plan(0)));
    let unset = stored_plan(&store);
    assert_eq!(unset.len(), bound_plan::FIELDS_V3.len());
    assert_eq!(unset.get("sendSchemaVersion"), Some(&fields::int(3)));
    assert!(!unset.contains_key("customerWindowSeconds"));

    let mut store = leased();
    permit(begin(&mut store, 0, 1, T0, windowed(WINDOW)));
    let set = stored_plan(&store);
    assert_eq!(set.len(), bound_plan::FIELDS.len());
    assert_eq!(set.get("sendSchemaVersion"), Some(&fields::int(4)));
    assert_eq!(set.get("customerWindowSeconds"), Some(&fields::int(WINDOW)));
    assert_eq!(
        set.get("planFingerprint"),
        Some(&fields::string(
            windowed(WINDOW).fingerprint(&identity()).as_str()
        ))
    );
    let parsed = BoundPlan::parse(&hash(), &set).expect("a version-4 plan parses");
    assert_eq!(parsed.customer_window_seconds, Some(WINDOW));
    assert!(parsed.is(&windowed(WINDOW), &identity()));
    assert_eq!(parsed.encode(), set);
    assert_no_canary(&store);
}

/// Each broken rule of a version-4 plan document alone fails closed.
#[test]
fn a_version_four_plan_is_parsed_strictly() {
    let mut store = leased();
    permit(begin(&mut store, 0, 1, T0, windowed(WINDOW)));
    let good = stored_plan(&store);
    type Breaks = Box<dyn Fn(&mut FieldMap)>;
    let broken: Vec<(&str, Breaks)> = vec![
        (
            "under a minute",
            Box::new(|m| {
                m.insert("customerWindowSeconds".into(), fields::int(59));
            }),
        ),
        (
            "zero",
            Box::new(|m| {
                m.insert("customerWindowSeconds".into(), fields::int(0));
            }),
        ),
        (
            "negative",
            Box::new(|m| {
                m.insert("customerWindowSeconds".into(), fields::int(-3_600));
            }),
        ),
        (
            "past the cutoff span",
            Box::new(|m| {
                m.insert("customerWindowSeconds".into(), fields::int(64_801));
            }),
        ),
        (
            "a string",
            Box::new(|m| {
                m.insert("customerWindowSeconds".into(), fields::string("3600"));
            }),
        ),
        (
            "version 3 with the window",
            Box::new(|m| {
                m.insert("sendSchemaVersion".into(), fields::int(3));
            }),
        ),
        (
            "version 5",
            Box::new(|m| {
                m.insert("sendSchemaVersion".into(), fields::int(5));
            }),
        ),
        (
            "the window missing",
            Box::new(|m| {
                m.remove("customerWindowSeconds");
            }),
        ),
        (
            "another field in its place",
            Box::new(|m| {
                m.remove("customerWindowSeconds");
                m.insert("customerWindow".into(), fields::int(WINDOW));
            }),
        ),
        (
            "a shorter retention under the same window",
            Box::new(|m| {
                // 2,700 s is an hour's retention's span: 3,600 no longer fits.
                m.insert("keyRetentionSeconds".into(), fields::int(3_600));
                m.insert("lookupSettleSeconds".into(), fields::int(0));
            }),
        ),
    ];
    for (name, breaks) in broken {
        let mut map = good.clone();
        breaks(&mut map);
        let parsed = BoundPlan::parse(&hash(), &map);
        assert!(
            matches!(parsed, Err(JournalError::JournalCorrupt { .. })),
            "{name}: {parsed:?}"
        );
        // The journal refuses to act on it: nothing is written.
        let mut tampered = store.clone();
        *tampered.forge(&bound_plan::path(&hash())).expect("plan") = map;
        let before = tampered.clone();
        let answered = begin(&mut tampered, 0, 1, T0 + SEC, windowed(WINDOW));
        assert_eq!(
            answered.as_ref().map_err(JournalError::code).err(),
            Some("journal_corrupt"),
            "{name}: {answered:?}"
        );
        assert_eq!(tampered, before, "{name}: wrote");
    }
    // The range's edges still parse.
    for window in [60, 64_800] {
        let mut map = good.clone();
        map.insert("customerWindowSeconds".into(), fields::int(window));
        let parsed = BoundPlan::parse(&hash(), &map).expect("in range");
        assert_eq!(parsed.customer_window_seconds, Some(window));
    }
}

/// Another window, a window where none was bound, or none where one was: another plan.
#[test]
fn another_window_is_a_plan_conflict() {
    for (bound, asked) in [
        (Some(WINDOW), Some(WINDOW + 1)),
        (Some(WINDOW), None),
        (None, Some(WINDOW)),
        (None, Some(64_800)),
    ] {
        let with = |window: Option<i64>| window.map_or_else(|| plan(0), windowed);
        let mut store = leased();
        permit(begin(&mut store, 0, 1, T0, with(bound)));
        let before = store.clone();
        let name = format!("{bound:?} bound, {asked:?} asked");
        assert_eq!(
            begin(&mut store, 0, 1, T0 + SEC, with(asked)),
            Err(JournalError::PlanConflict),
            "{name}"
        );
        assert_eq!(
            store.answer(&Record::outcome(
                call(0, T0 + SEC),
                FenceEpoch::stored(1),
                nth(1),
                Ambiguous,
                with(asked)
            )),
            Err(JournalError::PlanConflict),
            "{name}"
        );
        assert_eq!(
            store.answer(
                &SendStatusRead::new(call(0, T0 + SEC).command().clone()).for_plan(&with(asked))
            ),
            Err(JournalError::PlanConflict),
            "{name}"
        );
        assert_eq!(store, before, "{name}: wrote");
        // The bound plan itself is still this plan.
        assert!(
            matches!(
                begin(&mut store, 0, 1, T0 + SEC, with(bound)),
                Ok(BeginSendOutput::Permitted(_))
            ),
            "{name}"
        );
    }
}

/// `act_by` is the window's end from the attempt's first send, on the first permit
/// and on a later holder's re-send of the same key; without a window, the cutoff.
#[test]
fn every_permit_of_the_attempt_carries_the_same_act_by() {
    let mut store = leased();
    let first = permit(begin(&mut store, 0, 1, T0, windowed(WINDOW)));
    assert_eq!(first.act_by, at(T0 + WINDOW * SEC));
    assert_eq!(first.send_cutoff_at, at(CUTOFF));
    // The same holder again (a lost response): the same permit.
    assert_eq!(
        permit(begin(&mut store, 0, 1, T0 + SEC, windowed(WINDOW))),
        first
    );
    apply(&mut store, &Op::Outcome(0, 1, 1, Ambiguous, T0 + 2 * SEC));
    // A later holder after the lease expired re-sends the key: the same act_by.
    assert_eq!(
        apply(&mut store, &Op::Acquire(1, T0 + 61 * SEC)).0,
        "acquired 2"
    );
    let again = permit(begin(&mut store, 1, 2, T0 + 62 * SEC, windowed(WINDOW)));
    assert!(again.resend);
    assert_eq!(
        again.provider_idempotency_key,
        first.provider_idempotency_key
    );
    assert_eq!(again.act_by, first.act_by);
    // Status carries it (not serialized).
    let status = store
        .answer(&SendStatusRead::new(
            call(0, T0 + 63 * SEC).command().clone(),
        ))
        .expect("status");
    let send = status.send.clone().expect("send");
    assert_eq!(send.act_by, first.act_by);
    assert!(
        !serde_json::to_string(&status)
            .expect("json")
            .contains("actBy")
    );

    // Without a window: act_by is the cutoff, and the permit prints what it printed.
    let mut store = leased();
    let plain = permit(begin(&mut store, 0, 1, T0, plan(0)));
    assert_eq!(plain.act_by, plain.send_cutoff_at);
    let text = serde_json::to_string(&plain).expect("json");
    assert!(!text.contains("actBy"), "{text}");
    // With one, the permit names it after the cutoff.
    let text = serde_json::to_string(&first).expect("json");
    let cutoff = text.find("\"sendCutoffAt\"").expect("cutoff");
    let act_by = text.find("\"actBy\"").expect("actBy");
    let lease = text.find("\"leaseExpiresAt\"").expect("lease");
    assert!(cutoff < act_by && act_by < lease, "{text}");
}

use super::*;
use crate::document::fields;
use crate::ledger::accept::Accept;
use crate::ledger::fingerprint::FingerprintInput;
use crate::ledger::fixtures::{
    accept_into, edit, key, now, plan, rid, scope, store, strip_digest, unlinked,
};
use crate::testing::Store;
use crate::verify::ledger_scan::{scan, scanned};
use serde_json::json;

/// An edit of a store of [`reversed`] whose original effect is the second argument.
type Tamper = Box<dyn Fn(&mut Store, &str)>;

fn reversal(original: &str, amount: &str) -> FingerprintInput {
    plan(
        json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
        {"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "REVERSAL",
         "amount": amount, "type": "REVERSAL", "original_transaction_id": original}]}),
    )
}

/// Key 1 charged 12.50; key 2 reversed 5.00 of it and key 3 the remaining 7.50.
fn reversed() -> (Store, String) {
    let mut memory = Store::default();
    accept_into(&mut memory, 1, &store(5, "-12.5"));
    let original = effect::effect_id(&rid(1), 0);
    accept_into(&mut memory, 2, &reversal(&original, "5.00"));
    accept_into(&mut memory, 3, &reversal(&original, "7.50"));
    (memory, original)
}

fn at(code: FindingCode, path: String) -> Finding {
    Finding { code, path }
}

#[test]
fn reversals_within_their_bound_are_clean() {
    let (memory, _) = reversed();
    assert_eq!(scan(&memory), vec![]);
}

#[test]
fn an_over_reversal_planted_by_hand_is_found() {
    // The bound and its whole log were deleted (a bound deleted alone is refused by
    // the next reversal), then another full reversal landed: it counted only itself,
    // but the three reversals return 25.00 of 12.50.
    let (mut memory, original) = reversed();
    memory.remove(&correction::path(&original));
    for position in [1, 2] {
        memory.remove(&correction::entry::path(&original, position));
    }
    accept_into(&mut memory, 4, &reversal(&original, "12.50"));
    assert_eq!(
        scan(&memory),
        vec![
            at(FindingCode::OverReversal, effect::path(&original)),
            at(
                FindingCode::CorrectionBoundMismatch,
                correction::path(&original)
            ),
        ]
    );
}

#[test]
fn a_bound_that_disagrees_with_its_reversals_is_found() {
    let cases: Vec<(&str, Tamper, Vec<FindingCode>)> = vec![
        (
            "total lowered",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversedAmount",
                    fields::string("5.00"),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "total raised past the original",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversedAmount",
                    fields::string("20.00"),
                )
            }),
            vec![
                FindingCode::OverReversal,
                FindingCode::CorrectionBoundMismatch,
            ],
        ),
        (
            "count changed",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversalEffectCount",
                    fields::int(3),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "bound deleted",
            Box::new(|m, o| {
                m.remove(&correction::path(o));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "original row deleted",
            Box::new(|m, o| {
                m.remove(&effect::path(o));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "bound and its log deleted",
            Box::new(|m, o| {
                m.remove(&correction::path(o));
                m.remove(&correction::entry::path(o, 1));
                m.remove(&correction::entry::path(o, 2));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "an entry deleted",
            Box::new(|m, o| {
                m.remove(&correction::entry::path(o, 1));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "an entry past the bound",
            Box::new(|m, o| {
                let last = m[&correction::entry::path(o, 2)].clone();
                m.insert(correction::entry::path(o, 3), last);
                let path = correction::entry::path(o, 3);
                edit(m, &path, "position", fields::int(3));
                edit(m, &path, "reversalEffectCount", fields::int(3));
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "an entry naming another reversal effect",
            Box::new(|m, o| {
                let other = effect::effect_id(&rid(9), 0);
                edit(
                    m,
                    &correction::entry::path(o, 1),
                    "reversalEffectId",
                    fields::string(other.as_str()),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "an earlier entry's total edited",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::entry::path(o, 1),
                    "reversedAmount",
                    fields::string("6.00"),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
        (
            "the bound and its last entry lowered alike",
            Box::new(|m, o| {
                edit(
                    m,
                    &correction::path(o),
                    "reversedAmount",
                    fields::string("5.00"),
                );
                edit(
                    m,
                    &correction::entry::path(o, 2),
                    "reversedAmount",
                    fields::string("5.00"),
                )
            }),
            vec![FindingCode::CorrectionBoundMismatch],
        ),
    ];
    for (case, tamper, expected) in cases {
        let (mut memory, original) = reversed();
        tamper(&mut memory, &original);
        let codes: Vec<FindingCode> = scan(&memory)
            .into_iter()
            .filter(|f| {
                matches!(
                    f.code,
                    FindingCode::OverReversal | FindingCode::CorrectionBoundMismatch
                )
            })
            .map(|f| f.code)
            .collect();
        assert_eq!(codes, expected, "{case}");
    }
}

#[test]
fn reversals_accepted_before_bounds_count_where_the_original_has_one() {
    // Key 2's reversal is as an earlier release left it (schema version 1, no bound
    // entry); key 3 reverses the rest under the bound, which does not count key 2.
    let mut memory = Store::default();
    accept_into(&mut memory, 1, &store(5, "-12.5"));
    let original = effect::effect_id(&rid(1), 0);
    accept_into(&mut memory, 2, &reversal(&original, "12.50"));
    strip_digest(&mut memory, 2);
    memory.remove(&correction::path(&original));
    memory.remove(&correction::entry::path(&original, 1));
    assert_eq!(scan(&memory), vec![], "unguarded, and no bound: not known");
    accept_into(&mut memory, 3, &reversal(&original, "12.50"));
    assert_eq!(
        scan(&memory),
        vec![at(FindingCode::OverReversal, effect::path(&original))]
    );
}

#[test]
fn an_imported_originals_bound_is_read_after_its_row() {
    let mut memory = Store::default();
    let item = crate::ledger::fingerprint::EffectPlanItem {
        amount: crate::ledger::fingerprint::Amount::parse("-8.00"),
        ..Default::default()
    };
    memory.insert(
        effect::path("legacy-1"),
        unlinked("legacy-1", &item).encode(),
    );
    memory
        .answer(&Accept::new(&key(2), &reversal("legacy-1", "8.00"), &scope(), now()).expect("op"))
        .expect("accepted");
    assert_eq!(scan(&memory), vec![]);
    edit(
        &mut memory,
        &correction::path("legacy-1"),
        "reversedAmount",
        fields::string("9.00"),
    );
    assert_eq!(
        scan(&memory),
        vec![
            at(FindingCode::OverReversal, effect::path("legacy-1")),
            at(
                FindingCode::CorrectionBoundMismatch,
                correction::path("legacy-1")
            ),
        ]
    );
}

#[test]
fn a_finding_involves_the_original_its_bound_and_every_reversal_naming_it() {
    let (mut memory, original) = reversed();
    edit(
        &mut memory,
        &correction::path(&original),
        "reversedAmount",
        fields::string("5.00"),
    );
    let (_, cross) = scanned(&memory);
    let found = cross.finish();
    assert_eq!(
        found,
        vec![at(
            FindingCode::CorrectionBoundMismatch,
            correction::path(&original)
        )]
    );
    let expected: BTreeSet<String> = [
        effect::path(&original),
        correction::path(&original),
        correction::entry::path(&original, 1),
        correction::entry::path(&original, 2),
        reservation::path(&rid(2)),
        effect::path(&effect::effect_id(&rid(2), 0)),
        reservation::path(&rid(3)),
        effect::path(&effect::effect_id(&rid(3), 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(cross.involved(&found), expected);
}

#[test]
fn a_reversal_a_migration_linked_counts_against_its_original() {
    use crate::ledger::fixtures::{historical_tagged, import, import_and_link};
    // A legacy charge, and a legacy reversal of all of it that a migration linked
    // under its own row ids; then a canonical reversal lands against no bound.
    let mut memory = Store::default();
    let charge = historical_tagged(&store(5, "-12.5"), 5, "legacy-charge");
    import(&mut memory, &charge);
    let original = charge.effect_ids[0].clone();
    let legacy_reversal = historical_tagged(&reversal(&original, "12.50"), 5, "legacy-refund");
    import_and_link(&mut memory, 1, &legacy_reversal);
    assert_eq!(
        scan(&memory),
        vec![],
        "no bound yet: the original's amount is not known"
    );
    accept_into(&mut memory, 2, &reversal(&original, "12.50"));
    let (found, cross) = scanned(&memory);
    assert_eq!(
        found,
        vec![at(FindingCode::OverReversal, effect::path(&original))]
    );
    // The finding is decided again from the linked reversal's documents too.
    let involved = cross.involved(&found);
    assert!(involved.contains(&reservation::path(&rid(1))));
    assert!(involved.contains(&effect::path(&legacy_reversal.effect_ids[0])));
    // Within what the original booked, a linked partial reversal and a canonical one
    // are clean.
    let mut memory = Store::default();
    import(&mut memory, &charge);
    let partial = historical_tagged(&reversal(&original, "5.00"), 5, "legacy-refund");
    import_and_link(&mut memory, 1, &partial);
    accept_into(&mut memory, 2, &reversal(&original, "7.50"));
    assert_eq!(scan(&memory), vec![]);
}

#[test]
fn a_reversal_of_several_effects_logs_one_run_of_entries_with_its_commits_totals() {
    let mut memory = Store::default();
    accept_into(&mut memory, 1, &store(5, "-12.5"));
    let original = effect::effect_id(&rid(1), 0);
    let two = plan(
        json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "2.00",
             "original_transaction_id": original},
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "3.00",
             "original_transaction_id": original},
        ]}),
    );
    accept_into(&mut memory, 2, &two);
    accept_into(&mut memory, 3, &reversal(&original, "1.00"));
    assert_eq!(scan(&memory), vec![]);
    // The run's first entry holding totals of its own, as if counted alone.
    edit(
        &mut memory,
        &correction::entry::path(&original, 1),
        "reversalEffectCount",
        fields::int(1),
    );
    edit(
        &mut memory,
        &correction::entry::path(&original, 1),
        "reversedAmount",
        fields::string("2.00"),
    );
    assert_eq!(
        scan(&memory),
        vec![at(
            FindingCode::CorrectionBoundMismatch,
            correction::path(&original)
        )]
    );
}

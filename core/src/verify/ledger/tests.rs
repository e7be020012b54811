use super::*;
use crate::document::fields;
use crate::verify::cross_checks::CrossChecks;

fn links(lineage: &str, reservation: bool, migration: bool, index: bool) -> FieldMap {
    let value = |present: bool, v| if present { v } else { fields::null() };
    fields::map([
        ("lineage", fields::string(lineage)),
        ("reservationId", value(reservation, fields::string("r"))),
        ("migrationId", value(migration, fields::string("m"))),
        ("effectIndex", value(index, fields::int(0))),
    ])
}

#[test]
fn lineage_rules_on_the_raw_link_fields() {
    assert_eq!(
        lineage_holds(&links("canonical_linked", true, false, true)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("canonical_linked", true, true, true)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("canonical_linked", false, false, false)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_linked", true, true, true)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("historical_linked", true, false, true)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", false, false, false)),
        Some(true)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", true, false, false)),
        Some(false)
    );
    assert_eq!(
        lineage_holds(&links("historical_unlinked", false, false, true)),
        Some(false)
    );
    assert_eq!(lineage_holds(&links("other", true, false, true)), None);
}

#[test]
fn a_standalone_row_claiming_a_reservation_is_a_lineage_violation() {
    let doc = StoredDoc::new(
        "ledgerTransactions/legacy-1",
        links("historical_unlinked", true, false, false),
        Default::default(),
    );
    assert_eq!(
        check_standalone_effect(&doc, &mut CrossChecks::default()),
        vec![finding(
            FindingCode::LineageViolation,
            "ledgerTransactions/legacy-1"
        )]
    );
}

/// `check_reservation` over key 1's reservation and every row in its derived slots,
/// as the scan hands them over.
fn check_key_1(memory: &crate::testing::Store) -> Vec<Finding> {
    use crate::ledger::fixtures::rid;
    let rid = rid(1);
    let reservation = reservation::path(&rid);
    let doc = |path: &str| StoredDoc::new(path, memory[path].clone(), Default::default());
    let prefix = effect::path(&format!("{rid}_"));
    let (bounds, effects): (Vec<StoredDoc>, Vec<StoredDoc>) = memory
        .keys()
        .filter(|path| path.starts_with(&prefix))
        .map(|path| doc(path))
        .partition(|d| d.path.contains("/corrections/"));
    let reservation = memory.get(&reservation).map(|_| doc(&reservation));
    check_reservation(
        &rid,
        reservation.as_ref(),
        &effects,
        &bounds,
        &mut CrossChecks::default(),
    )
}

#[test]
fn rows_that_contradict_their_reservation_are_found_at_the_reservation() {
    use crate::ledger::fixtures::{
        Setup, Tamper, accepted_effect_plan, accepted_reversal, accepted_store, accepted_transfer,
        edit, edit_amount, reseal, rid, strip_digest,
    };
    use FindingCode::{
        EffectFingerprintMismatch as F, EffectIntegrityMismatch as D, FixedFieldViolation as X,
    };
    let at = reservation::path(&rid(1));
    let row = |i| effect::path(&effect::effect_id(&rid(1), i));
    #[rustfmt::skip]
    let cases: Vec<(&str, Setup, Tamper, Vec<FindingCode>)> = vec![
        ("intact effect plan", accepted_effect_plan, Box::new(|_| {}), vec![]),
        ("intact transfer", accepted_transfer, Box::new(|_| {}), vec![]),
        ("intact charge", accepted_store, Box::new(|_| {}), vec![]),
        ("intact reversal", accepted_reversal, Box::new(|_| {}), vec![]),
        ("intact version-1 charge", accepted_store, Box::new(|m| strip_digest(m, 1)), vec![]),
        ("intact version-1 effect plan", accepted_effect_plan, Box::new(|m| strip_digest(m, 1)), vec![]),
        ("plan amount -10.00 -> -1000000.00", accepted_effect_plan, Box::new(|m| edit_amount(m, 1, 0, "-1000000.00")), vec![D, F]),
        ("plan amount, digest recomputed", accepted_effect_plan, Box::new(|m| { edit_amount(m, 1, 0, "-1000000.00"); reseal(m, 1) }), vec![F]),
        ("plan amount, version-1 reservation", accepted_effect_plan, Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "-1000000.00") }), vec![F]),
        ("transfer legs -> +-9999.00", accepted_transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00") }), vec![D, F]),
        ("transfer legs, digest recomputed", accepted_transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00"); reseal(m, 1) }), vec![F]),
        ("charge amount", accepted_store, Box::new(|m| edit_amount(m, 1, 0, "1.00")), vec![D]),
        ("charge digest field", accepted_store, Box::new(|m| edit(m, &reservation::path(&rid(1)), "integrityDigest", fields::string("ab".repeat(32)))), vec![D]),
        ("charge fingerprint", accepted_store, Box::new(|m| edit(m, &reservation::path(&rid(1)), "fingerprint", fields::string("ab".repeat(32)))), vec![D]),
        ("charge amount, version-1 reservation (not covered)", accepted_store, Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "1.00") }), vec![]),
        ("reversal actor, digest recomputed", accepted_reversal, Box::new(move |m| { edit(m, &row(0), "actorSeatId", fields::string("officer-2")); reseal(m, 1) }), vec![F]),
        ("reversal subtype", accepted_reversal, Box::new(move |m| edit(m, &row(0), "compensationSubtype", fields::string("GOODWILL"))), vec![D, F]),
        ("charge mechanism lower case, digest recomputed", accepted_store, Box::new(move |m| { edit(m, &row(0), "mechanism", fields::string("wallet")); reseal(m, 1) }), vec![X]),
        ("charge with a correction locator", accepted_store, Box::new(move |m| edit(m, &row(0), "correctionIntentLocator", fields::string("c-1"))), vec![D, X]),
        ("charge with a locator, version-1 reservation (not covered)", accepted_store, Box::new(move |m| { strip_digest(m, 1); edit(m, &row(0), "correctionIntentLocator", fields::string("c-1")) }), vec![]),
        // A structural break is reported as before, and not as well as an integrity one.
        ("one transfer leg", accepted_transfer, Box::new(|m| edit_amount(m, 1, 0, "-9999.00")), vec![FindingCode::ReservationMissingEffects]),
    ];
    for (case, setup, tamper, expected) in cases {
        let mut memory = crate::testing::Store::default();
        setup(&mut memory);
        tamper(&mut memory);
        let expected: Vec<Finding> = expected
            .into_iter()
            .map(|code| finding(code, &at))
            .collect();
        assert_eq!(check_key_1(&memory), expected, "{case}");
    }
}

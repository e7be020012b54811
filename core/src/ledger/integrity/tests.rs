use super::*;
use crate::document::fields;
use crate::ledger::effect;
use crate::ledger::fixtures::{
    Setup, Tamper, accepted_effect_plan, accepted_reversal, accepted_store, accepted_transfer,
    debit_plan, edit, edit_amount, historical, import_and_link, reseal, rid, stored_of,
    strip_digest,
};
use crate::ledger::reservation;
use crate::ledger::stored::contradictions;
use crate::testing::Store;
use Contradiction::{Digest as D, Fingerprint as F, FixedFields as X};
use serde_json::json;

fn reservation_path() -> String {
    reservation::path(&rid(1))
}

fn row(i: usize) -> String {
    effect::path(&effect::effect_id(&rid(1), i))
}

#[test]
fn the_digest_is_the_documented_frame() {
    let mut memory = Store::default();
    accepted_effect_plan(&mut memory);
    let stored = stored_of(&memory, 1);
    let rid = rid(1);
    let row = json!({
        "effectSchemaVersion": 1, "effectId": format!("{rid}_0000"),
        "lineage": "canonical_linked", "reservationId": rid.as_str(), "effectIndex": 0,
        "migrationId": null, "transferLeg": null, "seatId": "seat-A",
        "targetSeatId": "seat-A", "actorSeatId": "seat-A", "mechanism": null,
        "amount": "-10.00", "accountType": "checking", "type": "DEBIT",
        "originalTransactionId": null, "policyId": null, "compensationOriginLocator": null,
        "compensationAmountCents": 0, "correctionIntentLocator": null,
        "compensationSubtype": null, "acceptedAt": "1800000000123456",
    });
    let row = serde_json_canonicalizer::to_string(&row).expect("jcs");
    assert_eq!(
        row_canonical(&stored.effects[0]).as_deref(),
        Some(row.as_str())
    );
    let fingerprint = stored.reservation.fingerprint.clone();
    let row_hash = hex::encode(Sha256::digest(row.as_bytes()));
    assert_eq!(row_hash, super::row_hash(&stored.effects[0]).expect("hash"));
    let expected = frame_digest(
        "command-journal.ledger-integrity",
        2,
        &[
            b"3",
            rid.as_str().as_bytes(),
            b"effect_plan",
            fingerprint.as_str().as_bytes(),
            b"5",
            b"1800000000123456",
            b"seat-A",
            b"seat-A",
            b"",
            row_hash.as_bytes(),
        ],
    );
    assert_eq!(stored.reservation.integrity_digest, Some(expected.clone()));
    assert_eq!(
        memory[&reservation_path()]["integrityDigest"],
        fields::string(expected.as_str())
    );
    assert_eq!(
        memory[&reservation_path()]["reservationSchemaVersion"],
        fields::int(3)
    );
    // Schema version 2 kept framing version 1, without the schema part.
    let v2 = ReservationDocument {
        schema: ReservationSchema::V2,
        ..stored.reservation.clone()
    };
    let framed_v1 = frame_digest(
        "command-journal.ledger-integrity",
        1,
        &[
            rid.as_str().as_bytes(),
            b"effect_plan",
            fingerprint.as_str().as_bytes(),
            b"5",
            b"1800000000123456",
            b"seat-A",
            b"seat-A",
            row.as_bytes(),
        ],
    );
    assert_eq!(integrity_digest(&v2, &stored.effects), Some(framed_v1));
}

#[test]
fn contradictions_of_stored_rows() {
    let plan: Setup = accepted_effect_plan;
    let transfer: Setup = accepted_transfer;
    let charge: Setup = accepted_store;
    let reversal: Setup = accepted_reversal;
    let linked: Setup = |m| {
        import_and_link(m, 1, &historical(&debit_plan(), 5));
        debit_plan()
    };
    let digest = fields::string("ab".repeat(32));
    #[rustfmt::skip]
    let cases: Vec<(&str, Setup, Tamper, Vec<Contradiction>)> = vec![
        ("intact effect plan", plan, Box::new(|_| {}), vec![]),
        ("intact transfer", transfer, Box::new(|_| {}), vec![]),
        ("intact charge", charge, Box::new(|_| {}), vec![]),
        ("intact reversal", reversal, Box::new(|_| {}), vec![]),
        ("intact historical link", linked, Box::new(|_| {}), vec![]),
        ("plan amount -10.00 -> -1000000.00", plan, Box::new(|m| edit_amount(m, 1, 0, "-1000000.00")), vec![D, F]),
        ("plan amount, digest recomputed", plan, Box::new(|m| { edit_amount(m, 1, 0, "-1000000.00"); reseal(m, 1) }), vec![F]),
        ("plan amount, version-1 reservation", plan, Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "-1000000.00") }), vec![F]),
        ("transfer legs -> -9999.00/+9999.00", transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00") }), vec![D, F]),
        ("transfer legs, digest recomputed", transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00"); reseal(m, 1) }), vec![F]),
        ("charge amount", charge, Box::new(|m| edit_amount(m, 1, 0, "1.00")), vec![D]),
        ("charge policy", charge, Box::new(|m| edit(m, &row(0), "policyId", fields::string("policy-8"))), vec![D]),
        ("charge digest field", charge, Box::new(move |m| edit(m, &reservation_path(), "integrityDigest", digest.clone())), vec![D]),
        ("charge fingerprint", charge, Box::new(|m| edit(m, &reservation_path(), "fingerprint", fields::string("cd".repeat(32)))), vec![D]),
        ("charge fingerprint version", charge, Box::new(|m| edit(m, &reservation_path(), "fingerprintVersion", fields::int(4))), vec![D]),
        ("charge scope", charge, Box::new(|m| edit(m, &reservation_path(), "scopeActorSeatId", fields::string("seat-B"))), vec![D]),
        ("charge schema 3 -> 2", charge, Box::new(|m| edit(m, &reservation_path(), "reservationSchemaVersion", fields::int(2))), vec![D]),
        ("plan schema 3 -> 2", plan, Box::new(|m| edit(m, &reservation_path(), "reservationSchemaVersion", fields::int(2))), vec![D]),
        ("charge amount, version-1 reservation (not covered)", charge, Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "1.00") }), vec![]),
        ("plan, version 3, version-1 reservation (not covered)", plan, Box::new(|m| { edit(m, &reservation_path(), "fingerprintVersion", fields::int(3)); strip_digest(m, 1); edit_amount(m, 1, 0, "-1.00") }), vec![]),
        ("historical link, row edited", linked, Box::new(|m| edit(m, "ledgerTransactions/legacy-0", "amount", fields::string("-1.00"))), vec![D]),
        ("historical link, migration id edited everywhere", linked, Box::new(|m| { edit(m, &reservation_path(), "migrationId", fields::string("mig-other")); edit(m, "ledgerTransactions/legacy-0", "migrationId", fields::string("mig-other")) }), vec![D]),
        ("historical link by an earlier release, row edited (not covered)", linked, Box::new(|m| { strip_digest(m, 1); edit(m, "ledgerTransactions/legacy-0", "amount", fields::string("-1.00")) }), vec![]),
        ("reversal actor", reversal, Box::new(|m| edit(m, &row(0), "actorSeatId", fields::string("officer-2"))), vec![D, F]),
        ("reversal actor, digest recomputed", reversal, Box::new(|m| { edit(m, &row(0), "actorSeatId", fields::string("officer-2")); reseal(m, 1) }), vec![F]),
        ("reversal mechanism, digest recomputed", reversal, Box::new(|m| { edit(m, &row(0), "mechanism", fields::string("FEE")); reseal(m, 1) }), vec![F]),
        ("reversal mechanism outside the set, digest recomputed", reversal, Box::new(|m| { edit(m, &row(0), "mechanism", fields::string("CARD")); reseal(m, 1) }), vec![F, X]),
        ("charge mechanism outside the set, digest recomputed", charge, Box::new(|m| { edit(m, &row(0), "mechanism", fields::string("wallet")); reseal(m, 1) }), vec![X]),
        ("charge with compensation cents, digest recomputed", charge, Box::new(|m| { edit(m, &row(0), "compensationAmountCents", fields::int(5)); reseal(m, 1) }), vec![X]),
        ("charge with a subtype, digest recomputed", charge, Box::new(|m| { edit(m, &row(0), "compensationSubtype", fields::string("GOODWILL")); reseal(m, 1) }), vec![X]),
        ("charge with a locator, version-1 reservation (not covered)", charge, Box::new(|m| { strip_digest(m, 1); edit(m, &row(0), "correctionIntentLocator", fields::string("c-1")) }), vec![]),
        ("reversal subtype, digest recomputed", reversal, Box::new(|m| { edit(m, &row(0), "compensationSubtype", fields::string("GOODWILL")); reseal(m, 1) }), vec![F]),
    ];
    for (case, setup, tamper, expected) in cases {
        let mut memory = Store::default();
        setup(&mut memory);
        tamper(&mut memory);
        assert_eq!(contradictions(&stored_of(&memory, 1)), expected, "{case}");
    }
}

#[test]
fn only_canonical_rebuildable_families_under_a_serializer_are_rebuilt() {
    let mut memory = Store::default();
    accepted_store(&mut memory);
    let charge = stored_of(&memory, 1).reservation;
    assert!(!fingerprint_is_rebuilt(&charge));
    let mut memory = Store::default();
    accepted_effect_plan(&mut memory);
    let plan = stored_of(&memory, 1).reservation;
    assert!(fingerprint_is_rebuilt(&plan));
    for version in [1, 2, 3, 6] {
        let old = ReservationDocument {
            fingerprint_version: version,
            ..plan.clone()
        };
        assert!(!fingerprint_is_rebuilt(&old), "version {version}");
    }
    let historical = ReservationDocument {
        migration_id: Some("mig-1".into()),
        ..plan
    };
    assert!(!fingerprint_is_rebuilt(&historical));
}

/// Sets effect field `field` (0–12, in `EffectPlanItem` order) of `item` to `text`
/// (compensation cents: its length).
fn set_item_field(item: &mut crate::ledger::fingerprint::EffectPlanItem, field: usize, text: &str) {
    let value = Some(text.to_owned());
    match field {
        0 => item.seat_id = value,
        1 => item.target_seat_id = value,
        2 => item.actor_seat_id = value,
        3 => item.mechanism = value,
        4 => item.amount = crate::ledger::fingerprint::Amount::parse(&format!("{}.01", text.len())),
        5 => item.account_type = value,
        6 => item.r#type = value,
        7 => item.original_transaction_id = value,
        8 => item.policy_id = value,
        9 => item.compensation_origin_locator = value,
        10 => item.compensation_amount_cents = text.len() as u64 + 7,
        11 => item.correction_intent_locator = value,
        _ => item.compensation_subtype = value,
    }
}

proptest::proptest! {
    /// Any change of any effect field of any row of a sealed charge is a digest
    /// contradiction (the rows are compared as parsed, after the structural checks).
    #[test]
    fn every_single_effect_field_edit_of_a_sealed_charge_is_found(
        field in 0usize..13,
        text in "[a-z]{1,12}",
    ) {
        let mut memory = Store::default();
        accepted_store(&mut memory);
        let mut stored = stored_of(&memory, 1);
        let before = stored.effects[0].item.clone();
        set_item_field(&mut stored.effects[0].item, field, &text);
        proptest::prop_assume!(stored.effects[0].item != before);
        // A lower-case mechanism, or compensation on a charge, also breaks the
        // fields the seed fixes.
        let fixed = if matches!(field, 3 | 9..=12) { vec![D, X] } else { vec![D] };
        proptest::prop_assert_eq!(contradictions(&stored), fixed);
    }

    /// Likewise for every reservation field the digest covers.
    #[test]
    fn every_covered_reservation_field_edit_is_found(field in 0usize..5, n in 1u32..1000) {
        let mut memory = Store::default();
        accepted_store(&mut memory);
        let mut stored = stored_of(&memory, 1);
        let r = &mut stored.reservation;
        let other = Digest::parse(&format!("{n:064x}")).expect("digest");
        match field {
            0 => r.family = CommandFamily::RentPayment,
            1 => r.fingerprint = other,
            2 => r.fingerprint_version += n,
            3 => r.accepted_at = crate::time::Timestamp::from_micros(r.accepted_at.micros() + i64::from(n)).expect("time"),
            _ => r.scope = crate::ledger::LedgerScope::new("seat-A", &format!("seat-{n}")).expect("scope"),
        }
        proptest::prop_assert_eq!(contradictions(&stored), vec![D]);
    }
}

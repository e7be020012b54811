use super::*;
use crate::document::value::Value;
use crate::ledger::fixtures::{now, rid};

fn amount(text: &str) -> Option<Amount> {
    Some(Amount::parse(text).expect("amount"))
}

fn canonical() -> LedgerEffect {
    let rid = rid(1);
    LedgerEffect {
        effect_id: effect_id(&rid, 3),
        lineage: Lineage::CanonicalLinked,
        reservation_id: Some(rid),
        effect_index: Some(3),
        migration_id: None,
        transfer_leg: None,
        item: EffectPlanItem {
            seat_id: Some("seat-A".into()),
            actor_seat_id: Some("seat-B".into()),
            mechanism: Some("WALLET".into()),
            amount: amount("-12.50"),
            r#type: Some("DEBIT".into()),
            compensation_amount_cents: 250,
            compensation_subtype: Some("GOODWILL".into()),
            ..EffectPlanItem::default()
        },
        accepted_at: now(),
    }
}

fn historical() -> LedgerEffect {
    LedgerEffect {
        lineage: Lineage::HistoricalLinked,
        migration_id: Some("mig-1".into()),
        ..canonical()
    }
}

fn unlinked() -> LedgerEffect {
    LedgerEffect {
        effect_id: "legacy-tx-42".into(),
        lineage: Lineage::HistoricalUnlinked,
        reservation_id: None,
        effect_index: None,
        ..canonical()
    }
}

fn leg(leg: TransferLeg, text: &str) -> LedgerEffect {
    LedgerEffect {
        transfer_leg: Some(leg),
        item: EffectPlanItem {
            amount: amount(text),
            ..EffectPlanItem::default()
        },
        ..canonical()
    }
}

fn parse(effect: &LedgerEffect, map: &FieldMap) -> Result<LedgerEffect, JournalError> {
    LedgerEffect::parse(&effect.effect_id, map)
}

fn assert_corrupt(result: Result<LedgerEffect, JournalError>, case: &str) {
    match result {
        Err(JournalError::JournalCorrupt { reason, .. }) => {
            assert_eq!(reason, "malformed ledger effect", "{case}");
        }
        other => panic!("{case}: expected journal_corrupt, got {other:?}"),
    }
}

#[test]
fn every_lineage_and_leg_round_trips() {
    for effect in [
        canonical(),
        historical(),
        unlinked(),
        leg(TransferLeg::Debit, "-0.01"),
        leg(TransferLeg::Credit, "0.01"),
    ] {
        let map = effect.encode();
        assert_eq!(map.len(), 21);
        assert_eq!(parse(&effect, &map), Ok(effect.clone()));
    }
}

#[test]
fn linked_ids_encode_reservation_and_four_digit_index() {
    let rid = rid(1);
    assert_eq!(effect_id(&rid, 7), format!("{rid}_0007"));
    assert!(is_linked_effect_id(&effect_id(&rid, 255)));
    assert!(!is_linked_effect_id("legacy-tx-42"));
    assert!(!is_linked_effect_id(&format!("{rid}_007")));
    assert!(!is_linked_effect_id(&format!(
        "{}_0007",
        rid.as_str().to_uppercase()
    )));
}

#[test]
fn output_is_camel_case_with_explicit_nulls() {
    let json = serde_json::to_value(canonical()).expect("json");
    assert_eq!(
        json,
        serde_json::json!({
            "effectId": canonical().effect_id, "effectIndex": 3,
            "lineage": "canonical_linked", "transferLeg": null,
            "seatId": "seat-A", "targetSeatId": null, "actorSeatId": "seat-B",
            "mechanism": "WALLET", "amount": "-12.50", "accountType": null,
            "type": "DEBIT", "originalTransactionId": null, "policyId": null,
            "compensationOriginLocator": null, "compensationAmountCents": 250,
            "correctionIntentLocator": null, "compensationSubtype": "GOODWILL",
        })
    );
}

fn value(v: ValueType) -> Value {
    Value {
        value_type: Some(v),
    }
}

fn wrong_type_values() -> Vec<Value> {
    vec![
        value(ValueType::DoubleValue(1.0)),
        value(ValueType::IntegerValue(1)),
        value(ValueType::StringValue("x".into())),
        value(ValueType::BooleanValue(true)),
        value(ValueType::TimestampValue(now().to_value_time())),
        value(ValueType::BytesValue(vec![1])),
        value(ValueType::NullValue(0)),
        value(ValueType::ArrayValue(Default::default())),
        value(ValueType::MapValue(Default::default())),
        Value { value_type: None },
    ]
}

fn same_kind(a: &Value, b: &Value) -> bool {
    match (&a.value_type, &b.value_type) {
        (Some(x), Some(y)) => std::mem::discriminant(x) == std::mem::discriminant(y),
        (None, None) => true,
        _ => false,
    }
}

/// The item fields where a string and a null are both well typed.
const NULLABLE_TEXT: [&str; 12] = [
    "seatId",
    "targetSeatId",
    "actorSeatId",
    "mechanism",
    "amount",
    "accountType",
    "type",
    "originalTransactionId",
    "policyId",
    "compensationOriginLocator",
    "correctionIntentLocator",
    "compensationSubtype",
];

fn well_typed(name: &str, v: &Value) -> bool {
    NULLABLE_TEXT.contains(&name)
        && matches!(
            v.value_type,
            Some(ValueType::StringValue(_) | ValueType::NullValue(_))
        )
}

/// Missing, extra and wrongly typed fields are corrupt, for every lineage.
#[test]
fn structural_malformation_matrix() {
    let mut cases = 0;
    for effect in [canonical(), historical(), unlinked()] {
        let base = effect.encode();
        for name in base.keys() {
            let mut missing = base.clone();
            missing.remove(name);
            let mut wrong = vec![missing];
            for v in wrong_type_values() {
                if !same_kind(&v, &base[name]) && !well_typed(name, &v) {
                    let mut changed = base.clone();
                    changed.insert(name.clone(), v);
                    wrong.push(changed);
                }
            }
            for doc in wrong {
                cases += 1;
                assert_corrupt(parse(&effect, &doc), name);
            }
        }
        let mut extra = base.clone();
        extra.insert("note".into(), fields::string("x"));
        assert_corrupt(parse(&effect, &extra), "extra field");
    }
    assert!(cases > 300, "matrix too small: {cases}");
}

/// Values of the right type that break an exact value or a relation.
#[test]
fn semantic_malformation_matrix() {
    let rid = rid(1);
    let sub_micro = value(ValueType::TimestampValue(
        crate::document::value::ValueTime {
            seconds: 1_800_000_000,
            nanos: 123_456_789,
        },
    ));
    let long = "x".repeat(MAX_TEXT_BYTES + 1);
    #[rustfmt::skip]
    let cases: Vec<(LedgerEffect, &str, Value)> = vec![
        (canonical(), "effectSchemaVersion", fields::int(2)),
        (canonical(), "effectId", fields::string("other")),
        (canonical(), "lineage", fields::string("canonical")),
        (canonical(), "lineage", fields::string("historical_linked")),
        (canonical(), "lineage", fields::string("historical_unlinked")),
        (canonical(), "reservationId", fields::null()),
        (canonical(), "reservationId", fields::string("f".repeat(64))),
        (canonical(), "reservationId", fields::string(rid.as_str().to_uppercase())),
        (canonical(), "effectIndex", fields::null()),
        (canonical(), "effectIndex", fields::int(4)),
        (canonical(), "effectIndex", fields::int(-1)),
        (canonical(), "effectIndex", fields::int(256)),
        (canonical(), "migrationId", fields::string("mig-1")),
        (historical(), "migrationId", fields::null()),
        (historical(), "migrationId", fields::string("")),
        (historical(), "migrationId", fields::string("mig 1")),
        (historical(), "lineage", fields::string("canonical_linked")),
        (unlinked(), "reservationId", fields::string(rid.as_str())),
        (unlinked(), "effectIndex", fields::int(0)),
        (unlinked(), "migrationId", fields::string("mig-1")),
        (unlinked(), "transferLeg", fields::string("debit")),
        (unlinked(), "lineage", fields::string("canonical_linked")),
        (canonical(), "transferLeg", fields::string("credit")),
        (canonical(), "transferLeg", fields::string("both")),
        (leg(TransferLeg::Credit, "1.00"), "amount", fields::string("0.00")),
        (leg(TransferLeg::Credit, "1.00"), "amount", fields::null()),
        (leg(TransferLeg::Debit, "-1.00"), "amount", fields::string("1.00")),
        (canonical(), "amount", fields::string("12.5")),
        (canonical(), "amount", fields::string("1e3")),
        (canonical(), "amount", fields::string("-0.00")),
        (canonical(), "amount", fields::string("12.505")),
        (canonical(), "amount", fields::string("")),
        (canonical(), "seatId", fields::string("")),
        (canonical(), "seatId", fields::string(long.clone())),
        (canonical(), "compensationSubtype", fields::string(long)),
        (canonical(), "compensationAmountCents", fields::int(-1)),
        (canonical(), "compensationAmountCents", fields::int(1 << 53)),
        (canonical(), "acceptedAt", sub_micro),
    ];
    for (effect, name, v) in cases {
        let mut doc = effect.encode();
        doc.insert(name.into(), v);
        assert_corrupt(parse(&effect, &doc), name);
    }
    // An unlinked row can never occupy a reservation's slot.
    let squatter = LedgerEffect {
        effect_id: effect_id(&rid, 0),
        ..unlinked()
    };
    assert_corrupt(parse(&squatter, &squatter.encode()), "unlinked in a slot");
    // The id it was read under must be the stored one.
    assert_corrupt(
        LedgerEffect::parse(&effect_id(&rid, 4), &canonical().encode()),
        "read under another id",
    );
}

#[test]
fn an_imported_row_keeps_its_own_id_only_when_historically_linked() {
    let linked_import = LedgerEffect {
        effect_id: "legacy-tx-42".into(),
        ..historical()
    };
    assert_eq!(
        parse(&linked_import, &linked_import.encode()),
        Ok(linked_import.clone())
    );
    let canonical_import = LedgerEffect {
        effect_id: "legacy-tx-42".into(),
        ..canonical()
    };
    assert_corrupt(
        parse(&canonical_import, &canonical_import.encode()),
        "a canonical effect at an imported id",
    );
    // An id of the derived shape must be the effect's own slot.
    let elsewhere = LedgerEffect {
        effect_id: effect_id(&rid(2), 3),
        ..historical()
    };
    assert_corrupt(
        parse(&elsewhere, &elsewhere.encode()),
        "a historical effect in another reservation's slot",
    );
}

use super::*;
use crate::ledger::fixtures::{key, now, rid, scope};

fn document(family: CommandFamily, count: usize) -> ReservationDocument {
    let rid = rid(1);
    ReservationDocument {
        key: key(1),
        reservation_id: rid.clone(),
        family,
        fingerprint: Digest::parse(&"ab".repeat(32)).expect("digest"),
        fingerprint_version: 5,
        accepted_at: now(),
        effect_ids: (0..count).map(|i| effect::effect_id(&rid, i)).collect(),
        scope: scope(),
        migration_id: None,
        schema: ReservationSchema::V1,
        integrity_digest: None,
    }
}

fn base() -> ReservationDocument {
    document(CommandFamily::StorePurchase, 3)
}

/// `base` as accept stored it before derived amounts were excluded: schema version 2
/// with an integrity digest.
fn sealed() -> ReservationDocument {
    ReservationDocument {
        schema: ReservationSchema::V2,
        integrity_digest: Some(Digest::parse(&"cd".repeat(32)).expect("digest")),
        ..base()
    }
}

/// `base` as accept stores it: schema version 3 with an integrity digest.
fn current() -> ReservationDocument {
    ReservationDocument {
        schema: ReservationSchema::V3,
        ..sealed()
    }
}

fn parse(map: &FieldMap) -> Result<ReservationDocument, JournalError> {
    ReservationDocument::parse(rid(1).as_str(), map)
}

fn assert_corrupt(result: Result<ReservationDocument, JournalError>, case: &str) {
    match result {
        Err(JournalError::JournalCorrupt { reason, .. }) => {
            assert_eq!(reason, "malformed ledger reservation", "{case}");
        }
        other => panic!("{case}: expected journal_corrupt, got {other:?}"),
    }
}

fn array(values: Vec<Value>) -> Value {
    Value {
        value_type: Some(ValueType::ArrayValue(ArrayValue { values })),
    }
}

#[test]
fn round_trips_canonical_historical_and_transfer() {
    let historical = ReservationDocument {
        migration_id: Some("mig-2026-10".into()),
        fingerprint_version: 3,
        ..base()
    };
    for doc in [
        base(),
        historical,
        document(CommandFamily::InternalTransfer, 2),
        document(CommandFamily::EffectPlan, MAX_EFFECTS),
    ] {
        let map = doc.encode();
        assert_eq!(map.len(), 13);
        assert_eq!(map["reservationSchemaVersion"], fields::int(1));
        assert_eq!(parse(&map), Ok(doc));
    }
    let linked = ReservationDocument {
        migration_id: Some("mig-2026-10".into()),
        ..current()
    };
    for (doc, schema) in [(sealed(), 2), (current(), 3), (linked, 3)] {
        let map = doc.encode();
        assert_eq!(map.len(), 14);
        assert_eq!(map["reservationSchemaVersion"], fields::int(schema));
        assert_eq!(map["integrityDigest"], fields::string("cd".repeat(32)));
        assert_eq!(parse(&map), Ok(doc));
    }
}

#[test]
fn the_schema_version_names_the_rule_of_the_fingerprint_items() {
    assert_eq!(ReservationSchema::V1.item_rule(), ItemRule::AsBooked);
    assert_eq!(ReservationSchema::V2.item_rule(), ItemRule::AsBooked);
    assert_eq!(
        ReservationSchema::V3.item_rule(),
        ItemRule::DerivedAmountsNull
    );
    assert_eq!(ReservationSchema::CURRENT, ReservationSchema::V3);
}

#[test]
fn each_schema_version_has_its_exact_field_set() {
    let digest = || fields::string("cd".repeat(32));
    let mut v1_with_digest = base().encode();
    v1_with_digest.insert("integrityDigest".into(), digest());
    let mut v2_without = sealed().encode();
    v2_without.remove("integrityDigest");
    let mut v3_without = current().encode();
    v3_without.remove("integrityDigest");
    let mut v4 = sealed().encode();
    v4.insert("reservationSchemaVersion".into(), fields::int(4));
    let mut v0 = base().encode();
    v0.insert("reservationSchemaVersion".into(), fields::int(0));
    let mut historical_v2 = sealed().encode();
    historical_v2.insert("migrationId".into(), fields::string("mig-1"));

    #[rustfmt::skip]
    let cases: Vec<(&str, FieldMap)> = vec![
        ("version 1 with a digest", v1_with_digest),
        ("version 2 without its digest", v2_without),
        ("version 3 without its digest", v3_without),
        ("version 4", v4),
        ("version 0", v0),
        ("version 2 linked by a migration", historical_v2),
        ("digest upper case", { let mut m = sealed().encode(); m.insert("integrityDigest".into(), fields::string("CD".repeat(32))); m }),
        ("digest short", { let mut m = sealed().encode(); m.insert("integrityDigest".into(), fields::string("cd")); m }),
        ("digest null", { let mut m = sealed().encode(); m.insert("integrityDigest".into(), fields::null()); m }),
    ];
    for (case, map) in cases {
        assert_corrupt(parse(&map), case);
    }
}

#[test]
fn versions_without_a_serializer_are_well_formed_not_corrupt() {
    for version in [1, 2, 3, 4, 5, 6, 9999] {
        let doc = ReservationDocument {
            fingerprint_version: version,
            ..base()
        };
        assert_eq!(
            parse(&doc.encode()).map(|d| d.fingerprint_version),
            Ok(version)
        );
    }
}

#[test]
fn scope_parts_are_validated() {
    assert!(LedgerScope::new("seat", "actor").is_ok());
    for (seat, actor) in [("", "a"), ("s", ""), ("s\n", "a"), ("s", "a\u{7f}")] {
        assert_eq!(
            LedgerScope::new(seat, actor),
            Err(JournalError::invalid("scope"))
        );
    }
    let long = "s".repeat(MAX_LEDGER_PART_BYTES + 1);
    assert!(LedgerScope::new(&long, "a").is_err());
}

fn wrong_type_values() -> Vec<Value> {
    let v = |t| Value {
        value_type: Some(t),
    };
    vec![
        v(ValueType::DoubleValue(1.0)),
        v(ValueType::IntegerValue(1)),
        v(ValueType::StringValue("x".into())),
        v(ValueType::BooleanValue(true)),
        v(ValueType::NullValue(0)),
        v(ValueType::TimestampValue(now().to_value_time())),
        v(ValueType::BytesValue(vec![1])),
        v(ValueType::MapValue(Default::default())),
        array(vec![fields::int(1)]),
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

#[test]
fn structural_malformation_matrix() {
    let historical = ReservationDocument {
        migration_id: Some("mig-1".into()),
        ..base()
    };
    let mut cases = 0;
    for doc in [base(), historical, sealed()] {
        let map = doc.encode();
        for name in map.keys() {
            let mut missing = map.clone();
            missing.remove(name);
            let mut wrong = vec![missing];
            for v in wrong_type_values() {
                let nullable = name == "migrationId"
                    && matches!(
                        v.value_type,
                        Some(ValueType::NullValue(_) | ValueType::StringValue(_))
                    );
                if !same_kind(&v, &map[name]) && !nullable {
                    let mut changed = map.clone();
                    changed.insert(name.clone(), v);
                    wrong.push(changed);
                }
            }
            for bad in wrong {
                cases += 1;
                assert_corrupt(parse(&bad), name);
            }
        }
        let mut extra = map.clone();
        extra.insert("note".into(), fields::string("x"));
        assert_corrupt(parse(&extra), "extra field");
    }
    assert!(cases > 200, "matrix too small: {cases}");
}

#[test]
fn semantic_malformation_matrix() {
    let other_rid = rid(2);
    let rid = rid(1);
    let id = |i| fields::string(effect::effect_id(&rid, i));
    let sub_micro = Value {
        value_type: Some(ValueType::TimestampValue(
            crate::document::value::ValueTime {
                seconds: 1_800_000_000,
                nanos: 1,
            },
        )),
    };
    let too_many = (0..=MAX_EFFECTS).map(id).collect();
    #[rustfmt::skip]
    let cases: Vec<(&str, Value)> = vec![
        ("reservationSchemaVersion", fields::int(2)),
        ("reservationId", fields::string(other_rid.as_str())),
        ("reservationId", fields::string(rid.as_str().to_uppercase())),
        ("classId", fields::string("class-8")),
        ("classId", fields::string("")),
        ("featCode", fields::string("FEAT\u{0}")),
        ("idempotencyKey", fields::string("idem-2")),
        ("commandFamily", fields::string("refund")),
        ("commandFamily", fields::string("internal_transfer")),
        ("fingerprint", fields::string("AB".repeat(32))),
        ("fingerprint", fields::string("ab")),
        ("fingerprintVersion", fields::int(0)),
        ("fingerprintVersion", fields::int(10_000)),
        ("acceptedAt", sub_micro),
        ("effectIds", array(vec![])),
        ("effectIds", array(vec![id(0), id(2), id(1)])),
        ("effectIds", array(vec![id(1), id(2), id(3)])),
        ("effectIds", array(vec![id(0), id(1), fields::int(2)])),
        ("effectIds", array(vec![id(0), id(1), fields::string(effect::effect_id(&other_rid, 2))])),
        ("effectIds", array(too_many)),
        ("scopeSeatId", fields::string("")),
        ("scopeActorSeatId", fields::string("a\u{1b}")),
        ("migrationId", fields::string("")),
        ("migrationId", fields::string("mig/1")),
    ];
    for (name, v) in cases {
        let mut map = base().encode();
        map.insert(name.into(), v);
        assert_corrupt(parse(&map), name);
    }
    // A transfer has exactly two effects.
    let mut transfer = document(CommandFamily::InternalTransfer, 2).encode();
    transfer.insert("effectIds".into(), array(vec![id(0), id(1), id(2)]));
    assert_corrupt(parse(&transfer), "three transfer effects");
    // Read under another id.
    assert_corrupt(
        ReservationDocument::parse(other_rid.as_str(), &base().encode()),
        "other document id",
    );
}

#[test]
fn only_a_historical_reservation_may_list_imported_rows_by_their_own_ids() {
    let imported = ReservationDocument {
        migration_id: Some("mig-2026-10".into()),
        effect_ids: vec!["legacy-0".into(), "legacy-1".into(), "legacy-2".into()],
        ..base()
    };
    assert_eq!(parse(&imported.encode()), Ok(imported.clone()));
    assert!(links_imported_rows(&rid(1), &imported.effect_ids));
    assert!(!links_imported_rows(&rid(1), &base().effect_ids));
    let canonical = ReservationDocument {
        migration_id: None,
        ..imported.clone()
    };
    assert_corrupt(parse(&canonical.encode()), "canonical with imported ids");
    let repeated = ReservationDocument {
        effect_ids: vec!["legacy-0".into(), "legacy-0".into(), "legacy-2".into()],
        ..imported.clone()
    };
    assert_corrupt(parse(&repeated.encode()), "an imported row listed twice");
    let mixed = ReservationDocument {
        effect_ids: vec![
            effect::effect_id(&rid(1), 0),
            "legacy-1".into(),
            "legacy-2".into(),
        ],
        ..imported
    };
    assert_corrupt(parse(&mixed.encode()), "derived and imported ids mixed");
}

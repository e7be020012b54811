use super::*;
use crate::identity::MAX_SAFE_INTEGER;
use proptest::prelude::*;
use serde_json::json;

const POLICY: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

fn vectors() -> Value {
    let text = include_str!("../../../../testdata/ledger_vectors.json");
    serde_json::from_str(text).expect("vector file parses")
}

fn field_of(result: Result<impl Sized, JournalError>) -> &'static str {
    match result {
        Err(JournalError::InvalidInput { field }) => field,
        Err(other) => panic!("expected invalid_input, got {}", other.code()),
        Ok(_) => panic!("expected invalid_input, got Ok"),
    }
}

fn store_input(version: u32) -> Value {
    json!({
        "family": "store_purchase",
        "fingerprintVersion": version,
        "effects": [{"seat_id": "seat-A", "mechanism": "WALLET", "amount": "12.5"}],
        "intent": {"policyUuid": POLICY, "quantity": 2},
    })
}

fn with_effect(key: &str, value: Value) -> Value {
    let mut input = store_input(5);
    input["effects"][0][key] = value;
    input
}

#[test]
fn golden_vectors_match_the_independent_python_implementation() {
    let vectors = vectors();
    let cases = vectors["cases"].as_array().expect("cases array");
    assert!(cases.len() >= 12, "too few vectors");
    for case in cases {
        let name = case["name"].as_str().unwrap_or("?");
        let expected = &case["expected"];
        let input =
            FingerprintInput::from_json(&case["input"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let version = u32::try_from(expected["fingerprintVersion"].as_u64().expect("version"))
            .expect("version fits");
        assert_eq!(input.version(), version, "{name}");
        let fingerprint = input
            .fingerprint(input.version())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fingerprint.version, version, "{name}");
        assert_eq!(fingerprint.canonical, expected["canonical"], "{name}");
        assert_eq!(
            fingerprint.digest.as_str(),
            expected["fingerprint"],
            "{name}"
        );
    }
}

#[test]
fn booked_plan_vectors_match_the_independent_derived_amount_rule() {
    let vectors = vectors();
    let accepted = vectors["accepted"].as_array().expect("accepted array");
    // Every family under versions 4 and 5.
    for family in CommandFamily::ALL {
        for version in [4, 5] {
            assert!(
                accepted
                    .iter()
                    .any(|c| c["input"]["family"] == family.as_str()
                        && c["input"]["fingerprintVersion"] == version),
                "{family:?} v{version}"
            );
        }
    }
    for case in accepted {
        let name = case["name"].as_str().unwrap_or("?");
        let expected = &case["expected"];
        let booked =
            FingerprintInput::from_json(&case["input"]).unwrap_or_else(|e| panic!("{name}: {e}"));
        let fingerprint = booked
            .excluding_derived_amounts()
            .fingerprint(booked.version())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(fingerprint.canonical, expected["canonical"], "{name}");
        assert_eq!(
            fingerprint.digest.as_str(),
            expected["fingerprint"],
            "{name}"
        );
    }
}

#[test]
fn rejection_vectors_match_the_independent_python_implementation() {
    let vectors = vectors();
    let rejections = vectors["rejections"].as_array().expect("rejections array");
    assert!(rejections.len() >= 20, "too few rejection vectors");
    for case in rejections {
        let name = case["name"].as_str().unwrap_or("?");
        let expected = &case["expected"];
        let error = match FingerprintInput::from_json(&case["input"]) {
            Ok(_) => panic!("{name}: accepted"),
            Err(error) => error,
        };
        assert_eq!(error.code(), expected["error"], "{name}");
        if let JournalError::InvalidInput { field } = error {
            assert_eq!(field, expected["field"], "{name}");
        }
    }
}

#[test]
fn current_version_is_five_and_only_four_and_five_have_serializers() {
    assert_eq!(CURRENT_FINGERPRINT_VERSION, 5);
    let input = FingerprintInput::from_json(&store_input(5)).expect("valid");
    for version in [0, 1, 2, 3, 6, 7, u32::MAX] {
        assert_eq!(
            input.fingerprint(version),
            Err(JournalError::UnsupportedFingerprintVersion),
            "{version}"
        );
        assert_eq!(
            check_version(version),
            Err(JournalError::UnsupportedFingerprintVersion)
        );
    }
    assert!(input.fingerprint(4).is_ok());
    assert!(input.fingerprint(5).is_ok());
}

#[test]
fn stored_v4_replays_under_v4_whatever_the_input_declares() {
    let declared_v5 = FingerprintInput::from_json(&store_input(5)).expect("valid");
    let declared_v4 = FingerprintInput::from_json(&store_input(4)).expect("valid");
    assert_eq!(
        declared_v5.fingerprint(4).expect("v4"),
        declared_v4.fingerprint(4).expect("v4")
    );
    assert_ne!(
        declared_v5.fingerprint(4).expect("v4").digest,
        declared_v5.fingerprint(5).expect("v5").digest
    );
}

#[test]
fn effects_have_exactly_twelve_keys_under_v4_and_thirteen_under_v5() {
    let input = FingerprintInput::from_json(&store_input(5)).expect("valid");
    for (version, count) in [(4, 12), (5, 13)] {
        let canonical: Value =
            serde_json::from_str(&input.canonical(version).expect("canonical")).expect("json");
        let effect = canonical["effects"][0].as_object().expect("effect object");
        assert_eq!(effect.len(), count);
        for key in V4_EFFECT_KEYS {
            assert!(effect.contains_key(key), "{key}");
        }
        assert_eq!(effect.contains_key(COMPENSATION_SUBTYPE_KEY), version == 5);
        assert_eq!(canonical.as_object().map(Map::len), Some(2));
    }
}

#[test]
fn v4_does_not_cover_compensation_subtype_and_v5_does() {
    let plain = FingerprintInput::from_json(&with_effect("compensation_subtype", Value::Null))
        .expect("valid");
    let with_subtype =
        FingerprintInput::from_json(&with_effect("compensation_subtype", json!("DUPLICATE")))
            .expect("valid");
    assert_eq!(
        plain.fingerprint(4).expect("v4"),
        with_subtype.fingerprint(4).expect("v4")
    );
    assert_ne!(
        plain.fingerprint(5).expect("v5").digest,
        with_subtype.fingerprint(5).expect("v5").digest
    );
}

#[test]
fn internal_transfer_bytes_are_identical_under_v4_and_v5() {
    let input = FingerprintInput::from_json(&json!({
        "family": "internal_transfer",
        "fingerprintVersion": 5,
        "transfer": {"amount": "7", "account_direction": "out"},
    }))
    .expect("valid");
    let v4 = input.fingerprint(4).expect("v4");
    let v5 = input.fingerprint(5).expect("v5");
    assert_eq!((v4.digest, v4.canonical), (v5.digest, v5.canonical.clone()));
    assert!(
        v5.canonical
            .starts_with(r#"{"account_direction":"out","actor_seat_id":null,"amount":"7.00""#)
    );
    assert!(input.effects().is_empty());
    assert!(input.intent().is_none());
    assert_eq!(input.family(), CommandFamily::InternalTransfer);
}

#[test]
fn typed_constructors_agree_with_from_json() {
    let from_json = FingerprintInput::from_json(&store_input(5)).expect("valid");
    let typed = FingerprintInput::effect_plan(
        CommandFamily::StorePurchase,
        5,
        vec![EffectPlanItem {
            seat_id: Some("seat-A".into()),
            mechanism: Some("WALLET".into()),
            amount: Amount::parse("12.50"),
            ..EffectPlanItem::default()
        }],
        Some(Intent::StorePurchase {
            policy_uuid: POLICY.into(),
            quantity: 2,
        }),
    )
    .expect("valid");
    assert_eq!(from_json, typed);
    assert_eq!(typed.effects().len(), 1);
    assert_eq!(
        typed.intent().map(Intent::family),
        Some(CommandFamily::StorePurchase)
    );
}

#[test]
fn typed_constructors_validate_like_from_json() {
    let effect = || vec![EffectPlanItem::default()];
    let fee = Some(Intent::OverdraftFee {
        force_authority: true,
    });
    let plan = FingerprintInput::effect_plan;
    assert_eq!(
        plan(CommandFamily::InternalTransfer, 5, effect(), None),
        Err(JournalError::invalid("family"))
    );
    assert_eq!(
        plan(CommandFamily::Reversal, 3, effect(), None),
        Err(JournalError::UnsupportedFingerprintVersion)
    );
    assert_eq!(
        field_of(plan(CommandFamily::Reversal, 5, vec![], None)),
        "effects"
    );
    let empty_text = vec![EffectPlanItem {
        seat_id: Some(String::new()),
        ..EffectPlanItem::default()
    }];
    assert_eq!(
        field_of(plan(CommandFamily::Reversal, 5, empty_text, None)),
        "effects"
    );
    let big_cents = vec![EffectPlanItem {
        compensation_amount_cents: MAX_SAFE_INTEGER + 1,
        ..EffectPlanItem::default()
    }];
    assert_eq!(
        field_of(plan(CommandFamily::Reversal, 5, big_cents, None)),
        "effects"
    );
    assert_eq!(
        field_of(plan(CommandFamily::Reversal, 5, effect(), fee.clone())),
        "intent"
    );
    assert_eq!(
        field_of(plan(CommandFamily::StorePurchase, 5, effect(), fee)),
        "intent"
    );
    assert_eq!(
        field_of(plan(CommandFamily::OverdraftFee, 5, effect(), None)),
        "intent"
    );
    let negative_rent = Some(Intent::RentPayment {
        obligation_correlation: "r".into(),
        requested_payment_amount: Amount::parse("-1"),
    });
    assert_eq!(
        field_of(plan(CommandFamily::RentPayment, 5, effect(), negative_rent)),
        "intent"
    );
    let transfer = TransferPlan {
        amount: Amount::parse("-1"),
        ..TransferPlan::default()
    };
    assert_eq!(
        field_of(FingerprintInput::internal_transfer(5, transfer)),
        "transfer"
    );
    assert_eq!(
        FingerprintInput::internal_transfer(2, TransferPlan::default()),
        Err(JournalError::UnsupportedFingerprintVersion)
    );
}

#[test]
fn amount_normalization_pads_to_two_decimals() {
    for (text, normalized) in [
        ("12.5", "12.50"),
        ("3", "3.00"),
        ("0", "0.00"),
        ("0.05", "0.05"),
        ("-4.1", "-4.10"),
        ("-0.01", "-0.01"),
        ("9999999999999.99", "9999999999999.99"),
    ] {
        assert_eq!(
            Amount::parse(text).as_ref().map(Amount::as_str),
            Some(normalized),
            "{text}"
        );
    }
    assert!(Amount::parse("-4.1").is_some_and(|a| a.is_negative()));
    assert!(Amount::parse("4.1").is_some_and(|a| !a.is_negative()));
}

#[test]
fn amount_rejects_everything_not_exactly_representable() {
    for text in [
        "1.005",
        "1.000",
        "+1",
        "01",
        "00.5",
        "1e2",
        "1E2",
        "",
        " 1",
        "1 ",
        "1.",
        ".5",
        "-",
        "-0",
        "-0.0",
        "-0.00",
        "--1",
        "1.2.3",
        "0x10",
        "NaN",
        "Infinity",
        "10000000000000",
        "\u{ff11}",
        "1,5",
        "1_000",
    ] {
        assert!(Amount::parse(text).is_none(), "{text:?}");
    }
}

#[test]
fn rejects_three_decimal_amounts_instead_of_rounding() {
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "amount",
            json!("1.005")
        ))),
        "effects"
    );
}

#[test]
fn rejects_json_number_amounts() {
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "amount",
            json!(12.5)
        ))),
        "effects"
    );
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "amount",
            json!(12)
        ))),
        "effects"
    );
}

#[test]
fn null_amount_stays_null_and_absent_cents_are_zero() {
    let input = FingerprintInput::from_json(&with_effect("amount", Value::Null)).expect("valid");
    let canonical = input.canonical(5).expect("canonical");
    assert!(canonical.contains(r#""amount":null"#));
    assert!(canonical.contains(r#""compensation_amount_cents":0"#));
    assert_eq!(input.effects()[0].compensation_amount_cents, 0);
    let explicit_null =
        FingerprintInput::from_json(&with_effect("compensation_amount_cents", Value::Null))
            .expect("valid");
    assert_eq!(explicit_null.effects()[0].compensation_amount_cents, 0);
}

#[test]
fn rejects_unknown_keys_naming_only_the_container() {
    let mut top = store_input(5);
    top["secret-key-text"] = json!(1);
    assert_eq!(field_of(FingerprintInput::from_json(&top)), "input");
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "seatId",
            json!("x")
        ))),
        "effects"
    );
    let mut intent = store_input(5);
    intent["intent"]["sku"] = json!("tee");
    assert_eq!(field_of(FingerprintInput::from_json(&intent)), "intent");
    let transfer = json!({
        "family": "internal_transfer",
        "fingerprintVersion": 5,
        "transfer": {"seat_id": "x"},
    });
    assert_eq!(field_of(FingerprintInput::from_json(&transfer)), "transfer");
}

#[test]
fn rejects_intent_of_the_wrong_shape() {
    let mut wrong = store_input(5);
    wrong["intent"] = json!({"forceAuthority": true});
    assert_eq!(field_of(FingerprintInput::from_json(&wrong)), "intent");
    wrong["intent"] = json!(["STORE_PURCHASE", POLICY, 2]);
    assert_eq!(field_of(FingerprintInput::from_json(&wrong)), "intent");
    wrong["intent"] = Value::Null;
    assert_eq!(field_of(FingerprintInput::from_json(&wrong)), "intent");
    wrong["family"] = json!("reversal");
    assert!(FingerprintInput::from_json(&wrong).is_ok());
    wrong["intent"] = json!({});
    assert_eq!(field_of(FingerprintInput::from_json(&wrong)), "intent");
}

#[test]
fn rejects_v3_and_v6_as_unsupported() {
    for version in [
        json!(1),
        json!(2),
        json!(3),
        json!(0),
        json!(6),
        json!(-1),
        json!(u64::MAX),
    ] {
        let mut input = store_input(5);
        input["fingerprintVersion"] = version.clone();
        assert_eq!(
            FingerprintInput::from_json(&input),
            Err(JournalError::UnsupportedFingerprintVersion),
            "{version}"
        );
    }
    for version in [json!("5"), json!(5.0), Value::Null, json!(true)] {
        let mut input = store_input(5);
        input["fingerprintVersion"] = version;
        assert_eq!(
            field_of(FingerprintInput::from_json(&input)),
            "fingerprintVersion"
        );
    }
}

#[test]
fn rejects_negative_or_oversized_cents() {
    for cents in [
        json!(-1),
        json!(MAX_SAFE_INTEGER + 1),
        json!(1.5),
        json!("0"),
        json!(false),
    ] {
        assert_eq!(
            field_of(FingerprintInput::from_json(&with_effect(
                "compensation_amount_cents",
                cents
            ))),
            "effects"
        );
    }
    let max = FingerprintInput::from_json(&with_effect(
        "compensation_amount_cents",
        json!(MAX_SAFE_INTEGER),
    ))
    .expect("valid");
    assert_eq!(max.effects()[0].compensation_amount_cents, MAX_SAFE_INTEGER);
}

#[test]
fn rejects_empty_and_oversized_text() {
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "seat_id",
            json!("")
        ))),
        "effects"
    );
    let long = "x".repeat(MAX_TEXT_BYTES + 1);
    assert_eq!(
        field_of(FingerprintInput::from_json(&with_effect(
            "seat_id",
            json!(long)
        ))),
        "effects"
    );
    let longest = "é".repeat(MAX_TEXT_BYTES / 2);
    assert!(FingerprintInput::from_json(&with_effect("seat_id", json!(longest))).is_ok());
}

#[test]
fn rejects_empty_and_oversized_effect_lists() {
    let mut input = store_input(5);
    input["effects"] = json!([]);
    assert_eq!(field_of(FingerprintInput::from_json(&input)), "effects");
    input["effects"] = Value::Array(vec![json!({}); MAX_EFFECTS + 1]);
    assert_eq!(field_of(FingerprintInput::from_json(&input)), "effects");
    input["effects"] = Value::Array(vec![json!({}); MAX_EFFECTS]);
    assert!(FingerprintInput::from_json(&input).is_ok());
}

#[test]
fn rejects_non_object_input_and_unknown_family() {
    assert_eq!(field_of(FingerprintInput::from_json(&json!([]))), "input");
    let mut input = store_input(5);
    input["family"] = json!("STORE_PURCHASE");
    assert_eq!(field_of(FingerprintInput::from_json(&input)), "family");
}

#[test]
fn family_names_round_trip() {
    for family in CommandFamily::ALL {
        assert_eq!(CommandFamily::parse(family.as_str()), Ok(family));
        assert_eq!(
            family.is_effect_plan(),
            family != CommandFamily::InternalTransfer
        );
    }
    assert_eq!(
        CommandFamily::parse("transfer"),
        Err(JournalError::invalid("family"))
    );
}

#[test]
fn errors_never_echo_the_input() {
    let secret = "sekrit-value-123";
    let mut input = store_input(5);
    input["effects"][0]["amount"] = json!(secret);
    input[secret] = json!(secret);
    let error = FingerprintInput::from_json(&input).expect_err("invalid");
    assert!(!format!("{error} {error:?}").contains(secret));
}

proptest! {
    #[test]
    fn amount_parse_normalizes_every_cent_value(cents in 0u64..1_000_000_000_000_000, negative: bool, style in 0u8..3) {
        let whole = cents / 100;
        let fraction = cents % 100;
        let text = match style {
            0 => format!("{whole}.{fraction:02}"),
            1 if fraction % 10 == 0 => format!("{whole}.{}", fraction / 10),
            _ if fraction == 0 => format!("{whole}"),
            _ => format!("{whole}.{fraction:02}"),
        };
        let negative = negative && cents != 0;
        let text = if negative { format!("-{text}") } else { text };
        let sign = if negative { "-" } else { "" };
        let expected = format!("{sign}{whole}.{fraction:02}");
        prop_assert_eq!(Amount::parse(&text).map(|a| a.as_str().to_owned()), Some(expected));
    }

    #[test]
    fn effect_order_is_part_of_the_fingerprint(a in "[a-z]{1,8}", b in "[a-z]{1,8}") {
        prop_assume!(a != b);
        let make = |first: &str, second: &str| {
            FingerprintInput::from_json(&json!({
                "family": "effect_plan",
                "fingerprintVersion": 5,
                "effects": [{"seat_id": first}, {"seat_id": second}],
            }))
            .and_then(|input| input.fingerprint(5))
            .map(|f| f.digest)
        };
        prop_assert_ne!(make(&a, &b), make(&b, &a));
    }
}

use super::*;
use crate::ledger::fingerprint::{Amount, FingerprintInput};
use serde_json::json;

fn rent(requested: Option<&str>) -> Intent {
    Intent::RentPayment {
        obligation_correlation: "rent-2026-10".into(),
        requested_payment_amount: requested.and_then(Amount::parse),
    }
}

#[test]
fn the_derived_amounts_table() {
    let store = Intent::StorePurchase {
        policy_uuid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
        quantity: 2,
    };
    let insurance = Intent::InsurancePremium {
        entitlement_id: "ent-3".into(),
        selected_obligation_correlation: None,
    };
    let fee = Intent::OverdraftFee {
        force_authority: false,
    };
    let cases: [(CommandFamily, Option<&Intent>, bool); 8] = [
        (CommandFamily::StorePurchase, Some(&store), false),
        (
            CommandFamily::RentPayment,
            Some(&rent(Some("12.50"))),
            false,
        ),
        (CommandFamily::RentPayment, Some(&rent(None)), true),
        (CommandFamily::InsurancePremium, Some(&insurance), false),
        (CommandFamily::OverdraftFee, Some(&fee), true),
        (CommandFamily::Reversal, None, false),
        (CommandFamily::EffectPlan, None, false),
        (CommandFamily::InternalTransfer, None, false),
    ];
    for (family, intent, derived) in cases {
        assert_eq!(
            amounts_are_derived(family, intent),
            derived,
            "{family:?} {intent:?}"
        );
    }
}

#[test]
fn a_derived_amount_is_null_in_the_item_and_only_under_the_schema_three_rule() {
    let booked = EffectPlanItem {
        seat_id: Some("seat-A".into()),
        mechanism: Some("FEE".into()),
        amount: Amount::parse("-35"),
        ..EffectPlanItem::default()
    };
    let fee = Intent::OverdraftFee {
        force_authority: true,
    };
    let family = CommandFamily::OverdraftFee;
    assert_eq!(
        fingerprint_item(ItemRule::AsBooked, family, Some(&fee), &booked),
        booked
    );
    let item = fingerprint_item(ItemRule::DerivedAmountsNull, family, Some(&fee), &booked);
    assert_eq!(
        item,
        EffectPlanItem {
            amount: None,
            ..booked.clone()
        }
    );
    let store = fingerprint_item(
        ItemRule::DerivedAmountsNull,
        CommandFamily::EffectPlan,
        None,
        &booked,
    );
    assert_eq!(store, booked, "an effect plan's amounts are fingerprinted");
}

#[test]
fn a_plan_excluding_its_derived_amounts_hashes_the_seed_null_and_keeps_the_rest() {
    let fee = |amount: &str| {
        FingerprintInput::from_json(&json!({
            "family": "overdraft_fee", "fingerprintVersion": 5,
            "effects": [{"seat_id": "seat-A", "mechanism": "FEE", "amount": amount,
                         "account_type": "checking", "type": "FEE"}],
            "intent": {"forceAuthority": false},
        }))
        .expect("plan")
    };
    let excluded = fee("-35").excluding_derived_amounts();
    assert_eq!(excluded.effects()[0].amount, None);
    assert_eq!(excluded.intent(), fee("-35").intent());
    let canonical = excluded.canonical(5).expect("canonical");
    assert!(canonical.contains(r#""amount":null"#), "{canonical}");
    // Two fees computed from different balances are one command.
    assert_eq!(
        fee("-35").excluding_derived_amounts().fingerprint(5),
        fee("-12.5").excluding_derived_amounts().fingerprint(5)
    );
    // Under version 4 too.
    assert_eq!(
        fee("-35").excluding_derived_amounts().fingerprint(4),
        fee("-12.5").excluding_derived_amounts().fingerprint(4)
    );
    // A family that fingerprints its amounts is unchanged, so its vectors hold.
    let store = FingerprintInput::from_json(&json!({
        "family": "store_purchase", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "mechanism": "WALLET", "amount": "-12.50"}],
        "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 2},
    }))
    .expect("plan");
    assert_eq!(store.excluding_derived_amounts(), store);
}

mod accepted {
    use crate::error::JournalError;
    use crate::ledger::accept::Accept;
    use crate::ledger::effect::{self, LedgerEffect};
    use crate::ledger::fingerprint::{FingerprintInput, Intent};
    use crate::ledger::fixtures::{as_schema_2, fee, key, now, rent, rid, scope, stored_of};
    use crate::ledger::integrity;
    use crate::ledger::outcome::{LedgerOutcome, LedgerReplay, Outcome};
    use crate::ledger::replay::Replay;
    use crate::ledger::reservation::{ReservationDocument, ReservationSchema};
    use crate::ledger::stored::{self, contradictions};
    use crate::testing::Store;
    use crate::transaction::Write;
    use serde_json::json;

    fn accept(memory: &mut Store, plan: &FingerprintInput) -> Result<LedgerOutcome, JournalError> {
        memory.answer(&Accept::new(&key(1), plan, &scope(), now()).expect("op"))
    }

    fn replay(memory: &mut Store, intent: &Intent) -> Result<LedgerReplay, JournalError> {
        memory.answer(&Replay::charge(&key(1), &scope(), intent).expect("op"))
    }

    fn amounts(effects: &[LedgerEffect]) -> Vec<Option<&str>> {
        effects
            .iter()
            .map(|e| e.item.amount.as_ref().map(|a| a.as_str()))
            .collect()
    }

    #[test]
    fn a_derived_fee_books_its_amount_fingerprints_null_and_replays_after_the_balance_moved() {
        let mut memory = Store::default();
        let first = fee("-35", false);
        let accepted = accept(&mut memory, &first).expect("accepted");
        let row = LedgerEffect::parse(
            &effect::effect_id(&rid(1), 0),
            &memory[&effect::path(&effect::effect_id(&rid(1), 0))],
        )
        .expect("row");
        assert_eq!(row.item.amount.as_ref().map(|a| a.as_str()), Some("-35.00"));
        assert_eq!(amounts(&accepted.effects), [Some("-35.00"), Some("35.00")]);
        let stored = stored_of(&memory, 1);
        let nulls = first
            .excluding_derived_amounts()
            .fingerprint(5)
            .expect("fp");
        assert_eq!(stored.reservation.fingerprint, nulls.digest);
        assert_ne!(
            stored.reservation.fingerprint,
            first.fingerprint(5).expect("fp").digest
        );
        assert!(nulls.canonical.contains(r#""amount":null"#));
        assert!(contradictions(&stored).is_empty());
        // An exact retry priced after the balance moved: the same command, the
        // original booked amounts, nothing written.
        let before = memory.clone();
        let retry = accept(&mut memory, &fee("-12.5", false)).expect("replayed");
        assert_eq!(retry.outcome, Outcome::Replayed);
        assert_eq!(amounts(&retry.effects), [Some("-35.00"), Some("35.00")]);
        let intent = first.intent().cloned().expect("tuple");
        match replay(&mut memory, &intent) {
            Ok(LedgerReplay::Replayed(outcome)) => assert_eq!(outcome.effects, accepted.effects),
            other => panic!("expected a replay, got {other:?}"),
        }
        // The business tuple and every other field stay covered.
        assert_eq!(
            accept(&mut memory, &fee("-35", true)),
            Err(JournalError::ReplayMismatch)
        );
        let forced = Intent::OverdraftFee {
            force_authority: true,
        };
        assert_eq!(
            replay(&mut memory, &forced),
            Err(JournalError::ReplayMismatch)
        );
        assert_eq!(memory, before);
    }

    #[test]
    fn a_full_rent_payment_is_derived_and_a_requested_one_is_not() {
        let mut memory = Store::default();
        accept(&mut memory, &rent("-800", None)).expect("accepted");
        let retry = accept(&mut memory, &rent("0", None)).expect("replayed");
        assert_eq!(retry.outcome, Outcome::Replayed);
        assert_eq!(amounts(&retry.effects), [Some("-800.00")]);
        assert_eq!(
            accept(&mut memory, &rent("-800", Some("800"))),
            Err(JournalError::ReplayMismatch),
            "a requested amount is another business tuple"
        );
        let mut memory = Store::default();
        accept(&mut memory, &rent("-12.50", Some("12.50"))).expect("accepted");
        assert_eq!(
            accept(&mut memory, &rent("-12.00", Some("12.50"))),
            Err(JournalError::ReplayMismatch),
            "a requested payment's amount is fingerprinted"
        );
    }

    #[test]
    fn a_new_effect_breaking_the_fixed_fields_is_refused_unwritten() {
        let store = |effect: serde_json::Value| {
            FingerprintInput::from_json(&json!({
                "family": "store_purchase", "fingerprintVersion": 5,
                "effects": [effect],
                "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 1},
            }))
            .expect("plan")
        };
        let refused = [
            json!({"seat_id": "seat-A", "mechanism": "wallet", "amount": "-1"}),
            json!({"seat_id": "seat-A", "mechanism": "CARD", "amount": "-1"}),
            json!({"seat_id": "seat-A", "amount": "-1", "compensation_amount_cents": 100}),
            json!({"seat_id": "seat-A", "amount": "-1", "compensation_origin_locator": "o"}),
            json!({"seat_id": "seat-A", "amount": "-1", "correction_intent_locator": "c"}),
            json!({"seat_id": "seat-A", "amount": "-1", "compensation_subtype": "GOODWILL"}),
        ];
        let mut memory = Store::default();
        for effect in refused {
            assert_eq!(
                accept(&mut memory, &store(effect.clone())),
                Err(JournalError::invalid("effects")),
                "{effect}"
            );
        }
        assert!(memory.is_empty(), "nothing written");
        let fine = json!({"seat_id": "seat-A", "mechanism": "WALLET", "amount": "-1"});
        assert!(accept(&mut memory, &store(fine)).is_ok());
    }

    #[test]
    fn a_command_an_earlier_release_accepted_with_free_text_still_replays() {
        let plan = FingerprintInput::from_json(&json!({
            "family": "effect_plan", "fingerprintVersion": 5,
            "effects": [{"seat_id": "seat-A", "mechanism": "CARD", "amount": "-1",
                         "compensation_subtype": "GOODWILL"}],
        }))
        .expect("plan");
        let reservation = ReservationDocument {
            key: key(1),
            reservation_id: rid(1),
            family: plan.family(),
            fingerprint: plan.fingerprint(5).expect("fp").digest,
            fingerprint_version: 5,
            accepted_at: now(),
            effect_ids: Vec::new(),
            scope: scope(),
            migration_id: None,
            schema: ReservationSchema::V2,
            integrity_digest: None,
        };
        let items = plan.effects().iter().map(|e| (e.clone(), None)).collect();
        let mut built = stored::build(reservation, items).expect("built");
        built.reservation.schema = ReservationSchema::V2;
        built.reservation.integrity_digest =
            integrity::integrity_digest(&built.reservation, &built.effects);
        let mut memory = Store::default();
        for write in built.creates() {
            if let Write::Create { path, fields } = write {
                memory.insert(path, fields);
            }
        }
        assert!(contradictions(&stored_of(&memory, 1)).is_empty());
        let before = memory.clone();
        let replayed = accept(&mut memory, &plan).expect("replayed");
        assert_eq!(replayed.outcome, Outcome::Replayed);
        assert_eq!(memory, before);
    }

    #[test]
    fn a_schema_2_reservation_keeps_its_fingerprint_of_booked_amounts() {
        let mut memory = Store::default();
        let first = fee("-35", false);
        accept(&mut memory, &first).expect("accepted");
        as_schema_2(&mut memory, 1, &first);
        let stored = stored_of(&memory, 1);
        assert_eq!(
            stored.reservation.fingerprint,
            first.fingerprint(5).expect("fp").digest
        );
        assert!(contradictions(&stored).is_empty(), "still intact");
        let before = memory.clone();
        let exact = accept(&mut memory, &first).expect("replayed");
        assert_eq!(exact.outcome, Outcome::Replayed);
        assert_eq!(
            accept(&mut memory, &fee("-12.5", false)),
            Err(JournalError::ReplayMismatch),
            "its fingerprint covered the amount: it is never reinterpreted"
        );
        let intent = first.intent().cloned().expect("tuple");
        assert!(matches!(
            replay(&mut memory, &intent),
            Ok(LedgerReplay::Replayed(_))
        ));
        assert_eq!(memory, before);
    }
}

#[test]
fn the_mechanism_is_a_closed_set_of_canonical_values() {
    for mechanism in Mechanism::ALL {
        assert_eq!(Mechanism::parse(mechanism.as_str()), Some(mechanism));
    }
    for text in ["wallet", "Wallet", " WALLET", "WALLET ", "CARD", ""] {
        assert_eq!(Mechanism::parse(text), None, "{text:?}");
    }
}

#[test]
fn only_a_reversals_compensating_effect_may_carry_compensation() {
    let plain = EffectPlanItem {
        mechanism: Some("WALLET".into()),
        ..EffectPlanItem::default()
    };
    let with = |f: fn(&mut EffectPlanItem)| {
        let mut item = plain.clone();
        f(&mut item);
        item
    };
    let cents = with(|i| i.compensation_amount_cents = 1);
    let origin = with(|i| i.compensation_origin_locator = Some("o".into()));
    let intent = with(|i| i.correction_intent_locator = Some("c".into()));
    let subtype = with(|i| i.compensation_subtype = Some("GOODWILL".into()));
    let odd = with(|i| i.mechanism = Some("wallet".into()));
    let recovery = EffectPlanItem {
        compensation_amount_cents: 1250,
        compensation_origin_locator: Some("o".into()),
        correction_intent_locator: Some("c".into()),
        compensation_subtype: Some("GOODWILL".into()),
        ..plain.clone()
    };
    for family in CommandFamily::ALL {
        assert!(fixed_fields_hold(family, &plain), "{family:?}");
        assert!(
            fixed_fields_hold(family, &EffectPlanItem::default()),
            "{family:?}: no mechanism"
        );
        for item in [&origin, &intent, &subtype, &odd] {
            assert!(!fixed_fields_hold(family, item), "{family:?} {item:?}");
        }
        // Cents alone make a reversal's effect a compensating (recovery) one.
        assert_eq!(
            fixed_fields_hold(family, &cents),
            family == CommandFamily::Reversal,
            "{family:?}"
        );
        assert_eq!(
            fixed_fields_hold(family, &recovery),
            family == CommandFamily::Reversal,
            "{family:?}"
        );
    }
    // A reversal's non-compensating effect is a non-recovery effect too.
    for item in [&origin, &intent, &subtype] {
        assert!(!fixed_fields_hold(CommandFamily::Reversal, item));
    }
}

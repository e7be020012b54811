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
    use crate::ledger::outcome::{LedgerOutcome, LedgerReplay, Outcome};
    use crate::ledger::replay::Replay;
    use crate::ledger::stored::contradictions;
    use crate::testing::Store;

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

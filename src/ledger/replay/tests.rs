use super::*;
use crate::document::fields;
use crate::ledger::accept::Accept;
use crate::ledger::effect;
use crate::ledger::fixtures::{
    Memory, POLICY, historical, key, now, plan, reversal_json, rid, scope, store, transfer,
};
use crate::ledger::migration::Link;
use crate::ledger::outcome::LedgerOutcome;
use serde_json::json;

fn store_intent(quantity: u64) -> Intent {
    Intent::StorePurchase {
        policy_uuid: POLICY.into(),
        quantity,
    }
}

fn charge(n: u32, intent: &Intent) -> Replay {
    Replay::charge(&key(n), &scope(), intent).expect("valid replay")
}

fn reversal(n: u32, authority: &ReversalAuthority) -> Replay {
    Replay::reversal(&key(n), &scope(), authority).expect("valid replay")
}

fn authority(actor: &str, mechanism: &str, subtype: Option<&str>) -> ReversalAuthority {
    ReversalAuthority {
        actor_seat_id: Some(actor.into()),
        mechanism: Some(mechanism.into()),
        compensation_subtype: subtype.map(Into::into),
    }
}

fn accept(memory: &mut Memory, n: u32, plan: &FingerprintInput) -> LedgerOutcome {
    memory
        .run(&Accept::new(&key(n), plan, &scope(), now()).expect("op"))
        .expect("accepted")
}

fn replayed(result: Result<LedgerReplay, JournalError>) -> LedgerOutcome {
    match result {
        Ok(LedgerReplay::Replayed(outcome)) => outcome,
        other => panic!("expected a replay, got {other:?}"),
    }
}

#[test]
fn without_a_reservation_the_caller_is_sent_to_pricing() {
    let mut memory = Memory::default();
    let result = memory.run(&charge(1, &store_intent(2)));
    assert_eq!(
        result,
        Ok(LedgerReplay::NotReserved {
            reservation_id: rid(1)
        })
    );
    assert_eq!(
        serde_json::to_value(result.expect("ok")).expect("json"),
        json!({"outcome": "not_reserved", "reservationId": rid(1).as_str()})
    );
    assert!(memory.docs.is_empty());
}

#[test]
fn an_effect_in_slot_zero_without_a_reservation_is_corrupt_not_a_reservation() {
    let mut memory = Memory::default();
    memory.docs.insert(
        effect::path(&effect::effect_id(&rid(1), 0)),
        fields::map([("lineage", fields::string("historical_unlinked"))]),
    );
    for op in [
        charge(1, &store_intent(2)),
        reversal(1, &ReversalAuthority::default()),
    ] {
        assert!(matches!(
            memory.run(&op),
            Err(JournalError::JournalCorrupt { .. })
        ));
    }
}

#[test]
fn an_exact_charge_replay_returns_the_original_effects_whatever_prices_say_now() {
    let mut memory = Memory::default();
    let original = accept(&mut memory, 1, &store(5, "12.5"));
    let before = memory.clone();
    // No pricing input exists in the replay: the stored 12.50 comes back even though
    // a fresh quote (13.00) would no longer match the reservation.
    let outcome = replayed(memory.run(&charge(1, &store_intent(2))));
    assert_eq!(outcome.outcome, Outcome::Replayed);
    assert_eq!(outcome.effects, original.effects);
    assert_eq!(
        outcome.effects[0].item.amount.as_ref().map(|a| a.as_str()),
        Some("12.50")
    );
    assert_eq!(memory, before);
    let fresh = Accept::new(&key(1), &store(5, "13.00"), &scope(), now()).expect("op");
    assert_eq!(memory.run(&fresh), Err(JournalError::ReplayMismatch));
}

#[test]
fn a_changed_business_tuple_fails_closed() {
    let mut memory = Memory::default();
    accept(&mut memory, 1, &store(5, "12.5"));
    let other_policy = Intent::StorePurchase {
        policy_uuid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c".into(),
        quantity: 2,
    };
    for intent in [store_intent(3), other_policy] {
        assert_eq!(
            memory.run(&charge(1, &intent)),
            Err(JournalError::ReplayMismatch)
        );
    }
    // Another family's tuple under the same key is another command.
    let fee = Intent::OverdraftFee {
        force_authority: true,
    };
    assert_eq!(
        memory.run(&charge(1, &fee)),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn the_tuple_of_each_charge_family_is_bound() {
    let cases = [
        (
            json!({"family": "rent_payment", "intent": {"obligationCorrelation": "ob-1",
                                                        "requestedPaymentAmount": "12.5"}}),
            Intent::RentPayment {
                obligation_correlation: "ob-1".into(),
                requested_payment_amount: crate::ledger::fingerprint::Amount::parse("12.50"),
            },
            Intent::RentPayment {
                obligation_correlation: "ob-1".into(),
                requested_payment_amount: None,
            },
        ),
        (
            json!({"family": "insurance_premium", "intent": {"entitlementId": "ent-1"}}),
            Intent::InsurancePremium {
                entitlement_id: "ent-1".into(),
                selected_obligation_correlation: None,
            },
            Intent::InsurancePremium {
                entitlement_id: "ent-1".into(),
                selected_obligation_correlation: Some("ob-9".into()),
            },
        ),
        (
            json!({"family": "overdraft_fee", "intent": {"forceAuthority": false}}),
            Intent::OverdraftFee {
                force_authority: false,
            },
            Intent::OverdraftFee {
                force_authority: true,
            },
        ),
    ];
    for (n, (head, same, changed)) in (10..).zip(cases) {
        let mut value = head;
        value["fingerprintVersion"] = json!(5);
        value["effects"] = json!([{"seat_id": "seat-A", "amount": "-12.50"}]);
        let mut memory = Memory::default();
        accept(&mut memory, n, &plan(value));
        assert_eq!(
            replayed(memory.run(&charge(n, &same))).outcome,
            Outcome::Replayed
        );
        assert_eq!(
            memory.run(&charge(n, &changed)),
            Err(JournalError::ReplayMismatch)
        );
    }
}

#[test]
fn scope_is_checked_independently_of_the_namespace() {
    let mut memory = Memory::default();
    accept(&mut memory, 1, &store(5, "12.5"));
    for (seat, actor) in [("seat-B", "seat-A"), ("seat-A", "officer-9")] {
        let other = LedgerScope::new(seat, actor).expect("scope");
        let op = Replay::charge(&key(1), &other, &store_intent(2)).expect("op");
        assert_eq!(memory.run(&op), Err(JournalError::ScopeMismatch));
    }
}

#[test]
fn stored_versions_select_the_serializer_or_fail_closed() {
    let mut memory = Memory::default();
    let v4 = Link::new(&key(1), &scope(), &historical(&store(4, "12.5"), 4), now()).expect("link");
    memory.run(&v4).expect("linked");
    let outcome = replayed(memory.run(&charge(1, &store_intent(2))));
    assert_eq!(outcome.fingerprint_version, 4);
    assert_eq!(
        memory.run(&charge(1, &store_intent(5))),
        Err(JournalError::ReplayMismatch)
    );
    let v3 = Link::new(&key(2), &scope(), &historical(&store(5, "12.5"), 3), now()).expect("link");
    memory.run(&v3).expect("linked");
    let before = memory.clone();
    assert_eq!(
        memory.run(&charge(2, &store_intent(2))),
        Err(JournalError::UnsupportedFingerprintVersion)
    );
    assert_eq!(memory, before);
}

/// Key 1: a store purchase; key 2: its reversal under `version`, by officer-1 with
/// mechanism WALLET and subtype `subtype`.
fn reversed(version: u32, subtype: Option<&str>) -> Memory {
    let mut memory = Memory::default();
    let original = accept(&mut memory, 1, &store(5, "12.5"));
    let json = reversal_json(version, &original.effects[0].effect_id, subtype);
    if version == 5 {
        accept(&mut memory, 2, &plan(json));
    } else {
        let link =
            Link::new(&key(2), &scope(), &historical(&plan(json), version), now()).expect("link");
        memory.run(&link).expect("linked");
    }
    memory
}

#[test]
fn a_reversal_replay_compares_actor_mechanism_and_subtype() {
    let mut memory = reversed(5, Some("GOODWILL"));
    let exact = replayed(memory.run(&reversal(
        2,
        &authority("officer-1", "WALLET", Some("GOODWILL")),
    )));
    assert_eq!(exact.command_family, CommandFamily::Reversal);
    for changed in [
        authority("officer-2", "WALLET", Some("GOODWILL")),
        authority("officer-1", "CARD", Some("GOODWILL")),
        authority("officer-1", "WALLET", Some("SERVICE_FAILURE")),
        authority("officer-1", "WALLET", None),
    ] {
        assert_eq!(
            memory.run(&reversal(2, &changed)),
            Err(JournalError::ReplayMismatch),
            "{changed:?}"
        );
    }
    // A charge replay of a reversal, or a reversal replay of a charge, is another
    // command.
    assert_eq!(
        memory.run(&charge(2, &store_intent(2))),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(
        memory.run(&reversal(1, &authority("seat-A", "WALLET", None))),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn a_version_four_reversal_keeps_its_own_coverage_and_fabricates_no_subtype() {
    let mut memory = reversed(4, None);
    // Version 4 does not cover the subtype: any supplied subtype replays, and the
    // stored (null) subtype is what comes back.
    for subtype in [None, Some("GOODWILL")] {
        let outcome =
            replayed(memory.run(&reversal(2, &authority("officer-1", "WALLET", subtype))));
        assert_eq!(outcome.fingerprint_version, 4);
        assert_eq!(outcome.effects[0].item.compensation_subtype, None);
    }
    assert_eq!(
        memory.run(&reversal(2, &authority("officer-2", "WALLET", None))),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn a_transfer_is_not_a_charge_or_reversal() {
    let mut memory = Memory::default();
    accept(&mut memory, 1, &transfer("3"));
    assert_eq!(
        memory.run(&charge(1, &store_intent(2))),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(
        memory.run(&reversal(1, &ReversalAuthority::default())),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn one_read_covers_small_commands_and_larger_ones_follow_up() {
    let mut memory = Memory::default();
    accept(&mut memory, 1, &store(5, "1"));
    let op = charge(1, &store_intent(2));
    assert!(matches!(
        op.decide(&memory.snapshot(&op.paths())),
        Decision::Observe(_)
    ));
    let four = plan(json!({
        "family": "store_purchase", "fingerprintVersion": 5,
        "effects": [{"seat_id": "a"}, {"seat_id": "b"}, {"seat_id": "c"}, {"seat_id": "d"}],
        "intent": {"policyUuid": POLICY, "quantity": 2},
    }));
    accept(&mut memory, 2, &four);
    let op = charge(2, &store_intent(2));
    let slot = |i| effect::path(&effect::effect_id(&rid(2), i));
    assert_eq!(
        op.decide(&memory.snapshot(&op.paths())),
        Decision::Read(vec![slot(3), slot(4)])
    );
    assert_eq!(replayed(memory.run(&op)).effects.len(), 4);
}

#[test]
fn invalid_replay_inputs_are_rejected_before_reading() {
    let bad_intent = Intent::StorePurchase {
        policy_uuid: "not-a-uuid".into(),
        quantity: 2,
    };
    assert_eq!(
        Replay::charge(&key(1), &scope(), &bad_intent).map(|_| ()),
        Err(JournalError::invalid("intent"))
    );
    let zero = store_intent(0);
    assert!(Replay::charge(&key(1), &scope(), &zero).is_err());
    let empty_actor = ReversalAuthority {
        actor_seat_id: Some(String::new()),
        ..ReversalAuthority::default()
    };
    assert_eq!(
        Replay::reversal(&key(1), &scope(), &empty_actor).map(|_| ()),
        Err(JournalError::invalid("reversal"))
    );
}

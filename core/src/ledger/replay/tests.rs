use super::*;
use crate::document::fields;
use crate::ledger::accept::Accept;
use crate::ledger::effect;
use crate::ledger::fixtures::{
    POLICY, historical, import_and_link, key, now, plan, reversal_json, rid, scope, store, transfer,
};
use crate::ledger::outcome::LedgerOutcome;
use crate::ledger::reservation::{self, ReservationDocument, ReservationSchema};
use crate::ledger::stored;
use crate::testing::Store;
use crate::transaction::Write;
use proptest::prelude::*;
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

fn accept(memory: &mut Store, n: u32, plan: &FingerprintInput) -> LedgerOutcome {
    memory
        .answer(&Accept::new(&key(n), plan, &scope(), now()).expect("op"))
        .expect("accepted")
}

/// Stores `plan` as a canonical reservation under key `n` fingerprinted with `version`,
/// as an earlier release that accepted under that version left it: reservation schema
/// version 1, without an integrity digest.
fn install(memory: &mut Store, n: u32, plan: &FingerprintInput, version: u32) -> LedgerOutcome {
    let reservation = ReservationDocument {
        key: key(n),
        reservation_id: rid(n),
        family: plan.family(),
        fingerprint: plan.fingerprint(version).expect("fingerprint").digest,
        fingerprint_version: version,
        accepted_at: now(),
        effect_ids: Vec::new(),
        scope: scope(),
        migration_id: None,
        schema: ReservationSchema::V1,
        integrity_digest: None,
    };
    let items = plan.effects().iter().map(|e| (e.clone(), None)).collect();
    let mut built = stored::build(reservation, items).expect("built");
    built.reservation.schema = ReservationSchema::V1;
    built.reservation.integrity_digest = None;
    for write in built.creates() {
        if let Write::Create { path, fields } = write {
            memory.insert(path, fields);
        }
    }
    built.outcome(Outcome::Accepted)
}

fn replayed(result: Result<LedgerReplay, JournalError>) -> LedgerOutcome {
    match result {
        Ok(LedgerReplay::Replayed(outcome)) => outcome,
        other => panic!("expected a replay, got {other:?}"),
    }
}

#[test]
fn without_a_reservation_the_caller_is_sent_to_pricing() {
    let mut memory = Store::default();
    let result = memory.answer(&charge(1, &store_intent(2)));
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
    assert!(memory.is_empty());
}

#[test]
fn an_effect_in_slot_zero_without_a_reservation_is_corrupt_not_a_reservation() {
    let mut memory = Store::default();
    memory.insert(
        effect::path(&effect::effect_id(&rid(1), 0)),
        fields::map([("lineage", fields::string("historical_unlinked"))]),
    );
    for op in [
        charge(1, &store_intent(2)),
        reversal(1, &ReversalAuthority::default()),
    ] {
        assert!(matches!(
            memory.answer(&op),
            Err(JournalError::JournalCorrupt { .. })
        ));
    }
}

#[test]
fn an_exact_charge_replay_returns_the_original_effects_whatever_prices_say_now() {
    let mut memory = Store::default();
    let original = accept(&mut memory, 1, &store(5, "12.5"));
    let before = memory.clone();
    // No pricing input exists in the replay: the stored 12.50 comes back even though
    // a fresh quote (13.00) would no longer match the reservation.
    let outcome = replayed(memory.answer(&charge(1, &store_intent(2))));
    assert_eq!(outcome.outcome, Outcome::Replayed);
    assert_eq!(outcome.effects, original.effects);
    assert_eq!(
        outcome.effects[0].item.amount.as_ref().map(|a| a.as_str()),
        Some("12.50")
    );
    assert_eq!(memory, before);
    let fresh = Accept::new(&key(1), &store(5, "13.00"), &scope(), now()).expect("op");
    assert_eq!(memory.answer(&fresh), Err(JournalError::ReplayMismatch));
}

#[test]
fn a_changed_business_tuple_fails_closed() {
    let mut memory = Store::default();
    accept(&mut memory, 1, &store(5, "12.5"));
    let other_policy = Intent::StorePurchase {
        policy_uuid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c".into(),
        quantity: 2,
    };
    for intent in [store_intent(3), other_policy] {
        assert_eq!(
            memory.answer(&charge(1, &intent)),
            Err(JournalError::ReplayMismatch)
        );
    }
    // Another family's tuple under the same key is another command.
    let fee = Intent::OverdraftFee {
        force_authority: true,
    };
    assert_eq!(
        memory.answer(&charge(1, &fee)),
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
        let mut memory = Store::default();
        accept(&mut memory, n, &plan(value));
        assert_eq!(
            replayed(memory.answer(&charge(n, &same))).outcome,
            Outcome::Replayed
        );
        assert_eq!(
            memory.answer(&charge(n, &changed)),
            Err(JournalError::ReplayMismatch)
        );
    }
}

#[test]
fn scope_is_checked_independently_of_the_namespace() {
    let mut memory = Store::default();
    accept(&mut memory, 1, &store(5, "12.5"));
    for (seat, actor) in [("seat-B", "seat-A"), ("seat-A", "officer-9")] {
        let other = LedgerScope::new(seat, actor).expect("scope");
        let op = Replay::charge(&key(1), &other, &store_intent(2)).expect("op");
        assert_eq!(memory.answer(&op), Err(JournalError::ScopeMismatch));
    }
}

#[test]
fn stored_versions_select_the_serializer_or_fail_closed() {
    let mut memory = Store::default();
    import_and_link(&mut memory, 1, &historical(&store(4, "12.5"), 4));
    let outcome = replayed(memory.answer(&charge(1, &store_intent(2))));
    assert_eq!(outcome.fingerprint_version, 4);
    assert_eq!(
        memory.answer(&charge(1, &store_intent(5))),
        Err(JournalError::ReplayMismatch)
    );
    import_and_link(
        &mut memory,
        2,
        &crate::ledger::fixtures::historical_tagged(&store(5, "12.5"), 3, "v3"),
    );
    let before = memory.clone();
    assert_eq!(
        memory.answer(&charge(2, &store_intent(2))),
        Err(JournalError::UnsupportedFingerprintVersion)
    );
    assert_eq!(memory, before);
}

/// Key 1: a store purchase; key 2: its reversal under `version`, by officer-1 with
/// mechanism WALLET and subtype `subtype`.
fn reversed(version: u32, subtype: Option<&str>) -> Store {
    let mut memory = Store::default();
    let original = accept(&mut memory, 1, &store(5, "12.5"));
    let json = reversal_json(version, &original.effects[0].effect_id, subtype);
    if version == 5 {
        accept(&mut memory, 2, &plan(json));
    } else {
        install(&mut memory, 2, &plan(json), version);
    }
    memory
}

#[test]
fn a_reversal_replay_compares_actor_mechanism_and_subtype() {
    let mut memory = reversed(5, Some("GOODWILL"));
    let exact = replayed(memory.answer(&reversal(
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
            memory.answer(&reversal(2, &changed)),
            Err(JournalError::ReplayMismatch),
            "{changed:?}"
        );
    }
    // A charge replay of a reversal, or a reversal replay of a charge, is another
    // command.
    assert_eq!(
        memory.answer(&charge(2, &store_intent(2))),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(
        memory.answer(&reversal(1, &authority("seat-A", "WALLET", None))),
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
            replayed(memory.answer(&reversal(2, &authority("officer-1", "WALLET", subtype))));
        assert_eq!(outcome.fingerprint_version, 4);
        assert_eq!(outcome.effects[0].item.compensation_subtype, None);
    }
    assert_eq!(
        memory.answer(&reversal(2, &authority("officer-2", "WALLET", None))),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn a_transfer_is_not_a_charge_or_reversal() {
    let mut memory = Store::default();
    accept(&mut memory, 1, &transfer("3"));
    assert_eq!(
        memory.answer(&charge(1, &store_intent(2))),
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(
        memory.answer(&reversal(1, &ReversalAuthority::default())),
        Err(JournalError::ReplayMismatch)
    );
}

#[test]
fn one_read_covers_small_commands_and_larger_ones_follow_up() {
    let mut memory = Store::default();
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
    assert_eq!(replayed(memory.answer(&op)).effects.len(), 4);
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

/// The reversal of the defect report: a compensating effect (DUPLICATE_CHARGE, cents
/// above zero) and a non-compensating one (subtype null), one actor and mechanism.
fn two_effect_reversal(original: &str) -> FingerprintInput {
    plan(json!({
        "family": "reversal", "fingerprintVersion": 5,
        "effects": [
            {"seat_id": "seat-A", "actor_seat_id": "officer-9", "mechanism": "REVERSAL",
             "amount": "12.50", "type": "REVERSAL", "original_transaction_id": original,
             "compensation_amount_cents": 1250, "compensation_subtype": "DUPLICATE_CHARGE"},
            {"seat_id": "seat-A", "actor_seat_id": "officer-9", "mechanism": "REVERSAL",
             "amount": "-1.00", "type": "FEE_REVERSAL", "original_transaction_id": original},
        ],
    }))
}

#[test]
fn a_mixed_two_effect_reversal_replays_exactly_and_mismatches_on_any_change() {
    let mut memory = Store::default();
    // An original large enough for both effects (reversals never return more).
    let original = accept(&mut memory, 1, &store(5, "13.50"));
    let accepted = accept(
        &mut memory,
        2,
        &two_effect_reversal(&original.effects[0].effect_id),
    );
    let before = memory.clone();
    let exact = replayed(memory.answer(&reversal(
        2,
        &authority("officer-9", "REVERSAL", Some("DUPLICATE_CHARGE")),
    )));
    assert_eq!(exact.effects, accepted.effects);
    assert_eq!(
        exact.effects[1].item.compensation_subtype, None,
        "the subtype is never copied onto the non-compensating effect"
    );
    for changed in [
        authority("officer-9", "REVERSAL", Some("GOODWILL")),
        authority("officer-9", "REVERSAL", None),
        authority("officer-1", "REVERSAL", Some("DUPLICATE_CHARGE")),
        authority("officer-9", "WALLET", Some("DUPLICATE_CHARGE")),
    ] {
        assert_eq!(
            memory.answer(&reversal(2, &changed)),
            Err(JournalError::ReplayMismatch),
            "{changed:?}"
        );
    }
    assert_eq!(memory, before);
}

#[test]
fn a_version_five_reversal_without_compensation_has_no_reason_to_supply() {
    let mut memory = reversed(5, None);
    replayed(memory.answer(&reversal(2, &authority("officer-1", "WALLET", None))));
    assert_eq!(
        memory.answer(&reversal(
            2,
            &authority("officer-1", "WALLET", Some("GOODWILL"))
        )),
        Err(JournalError::ReplayMismatch)
    );
}

const ACTORS: [&str; 2] = ["officer-1", "officer-9"];
const MECHANISMS: [&str; 2] = ["REVERSAL", "WALLET"];
const SUBTYPES: [&str; 2] = ["DUPLICATE_CHARGE", "GOODWILL"];

/// One generated effect: compensating or not, and its amount in cents.
fn effect_strategy() -> impl Strategy<Value = (bool, u32, u8)> {
    (any::<bool>(), 1..100_000u32, 0..3u8)
}

/// `value` with its text replaced by another of `choices` (or by the other one).
fn other(choices: [&str; 2], value: &str) -> String {
    choices
        .into_iter()
        .find(|c| *c != value)
        .unwrap_or("OTHER")
        .to_owned()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Accept (v5) or an earlier release's accept (v4), then: the exact authority
    /// replays the stored effects; every single-field change of a covered value is a
    /// replay mismatch; under v4 (which does not cover the subtype) a changed subtype
    /// replays and returns the stored subtypes unchanged.
    #[test]
    fn every_accepted_reversal_replays_exactly_and_mismatches_on_any_covered_change(
        effects in prop::collection::vec(effect_strategy(), 1..=8),
        version in 4..=5u32,
        actor in 0..2usize,
        mechanism in 0..2usize,
        subtype in prop::option::of(0..2usize),
    ) {
        let actor = ACTORS[actor];
        let mechanism = MECHANISMS[mechanism];
        let subtype = subtype.map(|i| SUBTYPES[i]);
        let mut memory = Store::default();
        // Large enough for eight effects of up to 999.99 each.
        let original = accept(&mut memory, 1, &store(5, "8000"));
        let original_id = original.effects[0].effect_id.clone();
        let items: Vec<serde_json::Value> = effects
            .iter()
            .map(|(compensating, cents, seat)| {
                let amount = format!("{}.{:02}", cents / 100, cents % 100);
                json!({
                    "seat_id": format!("seat-{seat}"), "actor_seat_id": actor,
                    "mechanism": mechanism, "amount": amount, "type": "REVERSAL",
                    "original_transaction_id": original_id,
                    "compensation_amount_cents": if *compensating { *cents } else { 0 },
                    "compensation_subtype": if *compensating { subtype } else { None },
                })
            })
            .collect();
        let command = plan(json!({
            "family": "reversal", "fingerprintVersion": version, "effects": items,
        }));
        let stored = if version == 5 {
            accept(&mut memory, 2, &command)
        } else {
            install(&mut memory, 2, &command, 4)
        };
        let any_compensating = effects.iter().any(|(c, _, _)| *c);
        let exact_subtype = if any_compensating { subtype } else { None };
        let exact = authority(actor, mechanism, exact_subtype);
        let before = memory.clone();
        let replay = replayed(memory.answer(&reversal(2, &exact)));
        prop_assert_eq!(&replay.effects, &stored.effects);

        let changed_actor = ReversalAuthority {
            actor_seat_id: Some(other(ACTORS, actor)),
            ..exact.clone()
        };
        let no_actor = ReversalAuthority { actor_seat_id: None, ..exact.clone() };
        let changed_mechanism = ReversalAuthority {
            mechanism: Some(other(MECHANISMS, mechanism)),
            ..exact.clone()
        };
        let no_mechanism = ReversalAuthority { mechanism: None, ..exact.clone() };
        for changed in [changed_actor, no_actor, changed_mechanism, no_mechanism] {
            prop_assert_eq!(
                memory.answer(&reversal(2, &changed)),
                Err(JournalError::ReplayMismatch)
            );
        }
        let mut subtypes = vec![Some(other(SUBTYPES, exact_subtype.unwrap_or("")))];
        if exact_subtype.is_some() {
            subtypes.push(None);
        }
        for changed_subtype in subtypes {
            let changed = ReversalAuthority {
                compensation_subtype: changed_subtype,
                ..exact.clone()
            };
            let result = memory.answer(&reversal(2, &changed));
            if version == 5 {
                prop_assert_eq!(result, Err(JournalError::ReplayMismatch));
            } else {
                let replay = replayed(result);
                prop_assert_eq!(&replay.effects, &stored.effects, "nothing fabricated");
            }
        }
        prop_assert_eq!(&memory, &before);
    }
}

#[test]
fn rows_that_contradict_their_reservation_are_corrupt_on_replay_never_a_mismatch() {
    use crate::ledger::fixtures::{
        Tamper, accepted_reversal, accepted_store, edit, edit_amount, reseal, strip_digest,
    };
    let path = |i| effect::path(&effect::effect_id(&rid(1), i));
    let exact_authority = authority("officer-1", "WALLET", Some("DUPLICATE_CHARGE"));
    #[rustfmt::skip]
    let charges: Vec<(&str, Tamper)> = vec![
        ("charge amount", Box::new(|m| edit_amount(m, 1, 0, "1.00"))),
        ("charge digest field", Box::new(|m| edit(m, &reservation::path(&rid(1)), "integrityDigest", fields::string("ab".repeat(32))))),
        ("charge scope, digest kept", Box::new(|m| edit(m, &reservation::path(&rid(1)), "scopeSeatId", fields::string("seat-B")))),
    ];
    for (case, tamper) in charges {
        let mut memory = Store::default();
        accepted_store(&mut memory);
        tamper(&mut memory);
        let before = memory.clone();
        let result = memory.answer(&charge(1, &store_intent(2)));
        assert!(
            matches!(result, Err(JournalError::JournalCorrupt { .. })),
            "{case}: {result:?}"
        );
        assert_eq!(memory, before, "{case}: nothing written");
    }
    #[rustfmt::skip]
    let reversals: Vec<(&str, Tamper)> = vec![
        // The supplied authority would be copied over these, so without the integrity
        // check the exact retry would replay the tampered rows.
        ("reversal actor, digest recomputed", Box::new(move |m| { edit(m, &path(0), "actorSeatId", fields::string("officer-2")); reseal(m, 1) })),
        ("reversal subtype, digest recomputed", Box::new(move |m| { edit(m, &path(0), "compensationSubtype", fields::string("GOODWILL")); reseal(m, 1) })),
        ("reversal amount", Box::new(|m| edit_amount(m, 1, 0, "99.00"))),
        ("reversal amount, version-1 reservation", Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "99.00") })),
    ];
    for (case, tamper) in reversals {
        let mut memory = Store::default();
        accepted_reversal(&mut memory);
        assert!(
            matches!(
                memory.answer(&reversal(1, &exact_authority)),
                Ok(LedgerReplay::Replayed(_))
            ),
            "{case}: the untampered control replays"
        );
        tamper(&mut memory);
        let before = memory.clone();
        let result = memory.answer(&reversal(1, &exact_authority));
        assert!(
            matches!(result, Err(JournalError::JournalCorrupt { .. })),
            "{case}: {result:?}"
        );
        assert_eq!(memory, before, "{case}: nothing written");
    }
}

#[test]
fn a_version_1_charge_reservation_replays() {
    let mut memory = Store::default();
    crate::ledger::fixtures::accepted_store(&mut memory);
    crate::ledger::fixtures::strip_digest(&mut memory, 1);
    let before = memory.clone();
    let outcome = replayed(memory.answer(&charge(1, &store_intent(2))));
    assert_eq!(outcome.outcome, Outcome::Replayed);
    assert_eq!(memory, before);
}

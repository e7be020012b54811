use super::*;
use crate::document::fields;
use crate::ledger::effect::{self, Lineage};
use crate::ledger::fixtures::{
    Setup, Tamper, accepted_effect_plan, accepted_reversal, accepted_store, accepted_transfer,
    edit, edit_amount, historical, import_and_link, key, now, plan, reseal, reversal_json, rid,
    scope, store, store_json, stored_of, strip_digest, transfer,
};
use crate::ledger::integrity;
use crate::ledger::reservation;
use crate::testing::Store;
use crate::transaction::Write;
use serde_json::json;

fn accept(n: u32, plan: &FingerprintInput) -> Accept {
    Accept::new(&key(n), plan, &scope(), now()).expect("valid accept")
}

fn reservation_path(n: u32) -> String {
    reservation::path(&rid(n))
}

fn slot(n: u32, i: usize) -> String {
    effect::path(&effect::effect_id(&rid(n), i))
}

fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, JournalError>, case: &str) {
    assert!(
        matches!(result, Err(JournalError::JournalCorrupt { .. })),
        "{case}: expected journal_corrupt, got {result:?}"
    );
}

/// A store with key 1 accepted for a store purchase of 12.50.
fn accepted() -> (Store, LedgerOutcome) {
    let mut memory = Store::default();
    let outcome = memory
        .answer(&accept(1, &store(5, "12.5")))
        .expect("accepted");
    (memory, outcome)
}

#[test]
fn first_accept_creates_the_reservation_and_every_effect_in_one_mutation() {
    let plan = plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "s", "amount": "-1"}, {"seat_id": "t", "amount": "1"},
                    {"seat_id": "u", "amount": null}],
    }));
    let op = accept(1, &plan);
    assert_eq!(
        op.paths(),
        vec![
            reservation_path(1),
            slot(1, 0),
            slot(1, 1),
            slot(1, 2),
            slot(1, 3)
        ]
    );
    let Decision::Mutate(writes, outcome) = op.decide(&Store::default().snapshot(&op.paths()))
    else {
        panic!("expected a mutation");
    };
    assert_eq!(writes.len(), 4);
    let paths: Vec<&str> = writes
        .iter()
        .map(|w| match w {
            Write::Create { path, .. } => path.as_str(),
            Write::Replace { .. } | Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {
                panic!("accept only creates")
            }
        })
        .collect();
    assert_eq!(
        paths,
        [reservation_path(1), slot(1, 0), slot(1, 1), slot(1, 2)]
    );
    assert_eq!(outcome.outcome, Outcome::Accepted);
    assert_eq!(outcome.fingerprint_version, CURRENT_FINGERPRINT_VERSION);
    assert_eq!(outcome.fingerprint, plan.fingerprint(5).expect("fp").digest);
    assert_eq!(outcome.accepted_at, now());
    assert_eq!(outcome.migration_id, None);
    let ids: Vec<String> = (0..3).map(|i| effect::effect_id(&rid(1), i)).collect();
    assert_eq!(outcome.effect_ids(), ids);
    for (i, e) in outcome.effects.iter().enumerate() {
        assert_eq!(e.lineage, Lineage::CanonicalLinked);
        assert_eq!(e.reservation_id.as_ref(), Some(&rid(1)));
        assert_eq!(e.effect_index, Some(i));
        assert_eq!(e.item, plan.effects()[i]);
    }
}

#[test]
fn stored_documents_are_exactly_what_was_decided() {
    let (memory, outcome) = accepted();
    assert_eq!(memory.count(reservation::COLLECTION), 1);
    assert_eq!(memory.count(effect::COLLECTION), 1);
    let stored = &memory[&reservation_path(1)];
    assert_eq!(stored["classId"], fields::string("class-7"));
    assert_eq!(stored["idempotencyKey"], fields::string("idem-1"));
    assert_eq!(stored["commandFamily"], fields::string("store_purchase"));
    assert_eq!(stored["fingerprintVersion"], fields::int(5));
    assert_eq!(stored["scopeSeatId"], fields::string("seat-A"));
    assert_eq!(stored["migrationId"], fields::null());
    assert_eq!(stored["reservationSchemaVersion"], fields::int(3));
    assert_eq!(stored.len(), 14);
    let parsed = stored_of(&memory, 1);
    let digest = integrity::integrity_digest(&parsed.reservation, &parsed.effects).expect("d");
    assert_eq!(stored["integrityDigest"], fields::string(digest.as_str()));
    let row = &memory[&slot(1, 0)];
    assert_eq!(row["amount"], fields::string("12.50"));
    assert_eq!(row["compensationSubtype"], fields::null());
    assert_eq!(
        serde_json::to_value(&outcome).expect("json")["effectIds"],
        json!([effect::effect_id(&rid(1), 0)])
    );
}

#[test]
fn output_serializes_camel_case() {
    let (_, outcome) = accepted();
    let json = serde_json::to_value(&outcome).expect("json");
    let keys: Vec<&str> = json
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = [
        "outcome",
        "reservationId",
        "commandFamily",
        "fingerprint",
        "fingerprintVersion",
        "acceptedAt",
        "migrationId",
        "effectIds",
        "effects",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);
    assert_eq!(json["outcome"], "accepted");
    assert_eq!(json["fingerprintVersion"], 5);
    assert_eq!(
        json["acceptedAt"],
        json!({"seconds": 1_800_000_000, "nanoseconds": 123_456_000})
    );
    assert_eq!(json["effects"][0]["amount"], "12.50");
}

#[test]
fn an_exact_retry_replays_the_stored_effects_without_writing() {
    let (mut memory, first) = accepted();
    let before = memory.clone();
    // A later captured time changes nothing.
    let later = Timestamp::from_micros(now().micros() + 7_000_000).expect("time");
    let op = Accept::new(&key(1), &store(5, "12.50"), &scope(), later).expect("op");
    let Decision::Observe(replayed) = op.decide(&memory.snapshot(&op.paths())) else {
        panic!("expected an observation");
    };
    assert_eq!(replayed.outcome, Outcome::Replayed);
    assert_eq!(
        LedgerOutcome {
            outcome: Outcome::Accepted,
            ..replayed.clone()
        },
        first
    );
    assert_eq!(memory.answer(&op), Ok(replayed));
    assert_eq!(memory, before);
}

#[test]
fn a_different_plan_or_family_is_a_replay_mismatch_without_writing() {
    let (mut memory, _) = accepted();
    let before = memory.clone();
    let changed = [
        store(5, "13.00"),
        plan(store_json(5, "12.50", 3)),
        plan(json!({"family": "effect_plan", "fingerprintVersion": 5,
                    "effects": store_json(5, "12.50", 2)["effects"].clone()})),
        transfer("12.50"),
    ];
    for plan in changed {
        assert_eq!(
            memory.answer(&accept(1, &plan)),
            Err(JournalError::ReplayMismatch),
            "{plan:?}"
        );
    }
    assert_eq!(memory, before);
}

#[test]
fn another_scope_is_a_scope_mismatch() {
    let (mut memory, _) = accepted();
    for (seat, actor) in [("seat-B", "seat-A"), ("seat-A", "seat-B")] {
        let scope = LedgerScope::new(seat, actor).expect("scope");
        let op = Accept::new(&key(1), &store(5, "12.5"), &scope, now()).expect("op");
        assert_eq!(memory.answer(&op), Err(JournalError::ScopeMismatch));
    }
}

#[test]
fn a_new_reservation_requires_the_current_version_and_a_retry_the_stored_one() {
    let mut memory = Store::default();
    assert_eq!(
        memory.answer(&accept(1, &store(4, "12.5"))),
        Err(JournalError::invalid("fingerprintVersion"))
    );
    assert!(memory.is_empty());
    // A version-4 reservation (linked by the migration) replays under version 4 when
    // the retry declares version 4; declaring another version is a different command
    // (docs/ledger.md, "Accepting a command"), and nothing is written.
    import_and_link(&mut memory, 1, &historical(&store(4, "12.5"), 4));
    let outcome = memory
        .answer(&accept(1, &store(4, "12.50")))
        .expect("replayed");
    assert_eq!(outcome.outcome, Outcome::Replayed);
    assert_eq!(outcome.fingerprint_version, 4);
    assert_eq!(outcome.effects[0].lineage, Lineage::HistoricalLinked);
    let before = memory.clone();
    for plan in [store(5, "12.50"), store(4, "12.60")] {
        assert_eq!(
            memory.answer(&accept(1, &plan)),
            Err(JournalError::ReplayMismatch),
            "{plan:?}"
        );
    }
    assert_eq!(memory, before);
}

#[test]
fn a_declared_version_other_than_the_stored_one_is_a_replay_mismatch_without_writing() {
    let cases: Vec<(&str, Setup, serde_json::Value)> = vec![
        ("store purchase", accepted_store, store_json(4, "12.50", 2)),
        (
            "effect plan",
            accepted_effect_plan,
            with_version(&debit_json(), 4),
        ),
        (
            "transfer",
            accepted_transfer,
            with_version(&transfer_json("10.00"), 4),
        ),
        ("reversal", accepted_reversal, json!(null)),
    ];
    for (case, setup, declared) in cases {
        let mut memory = Store::default();
        let exact = setup(&mut memory);
        let declared = if declared.is_null() {
            plan(reversal_json(
                4,
                &effect::effect_id(&rid(2), 0),
                Some("DUPLICATE_CHARGE"),
            ))
        } else {
            plan(declared)
        };
        assert_eq!(declared.version(), 4, "{case}");
        let before = memory.clone();
        assert_eq!(
            memory.answer(&accept(1, &declared)),
            Err(JournalError::ReplayMismatch),
            "{case}"
        );
        assert_eq!(memory, before, "{case}: nothing written");
        // The exact retry, declaring the stored version, still replays.
        let replayed = memory.answer(&accept(1, &exact)).expect("replayed");
        assert_eq!(replayed.outcome, Outcome::Replayed, "{case}");
        assert_eq!(memory, before, "{case}: nothing written");
    }
}

#[test]
fn rows_that_contradict_their_reservation_are_corrupt_on_an_exact_retry() {
    let reservation = reservation_path(1);
    #[rustfmt::skip]
    let cases: Vec<(&str, Setup, Tamper)> = vec![
        ("plan amount -10.00 -> -1000000.00", accepted_effect_plan, Box::new(|m| edit_amount(m, 1, 0, "-1000000.00"))),
        ("plan amount, digest recomputed", accepted_effect_plan, Box::new(|m| { edit_amount(m, 1, 0, "-1000000.00"); reseal(m, 1) })),
        ("plan amount, version-1 reservation", accepted_effect_plan, Box::new(|m| { strip_digest(m, 1); edit_amount(m, 1, 0, "-1000000.00") })),
        ("transfer legs +-9999.00", accepted_transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00") })),
        ("transfer legs, digest recomputed", accepted_transfer, Box::new(|m| { edit_amount(m, 1, 0, "-9999.00"); edit_amount(m, 1, 1, "9999.00"); reseal(m, 1) })),
        ("charge amount", accepted_store, Box::new(|m| edit_amount(m, 1, 0, "1.00"))),
        ("charge digest field", accepted_store, Box::new(move |m| edit(m, &reservation, "integrityDigest", fields::string("ab".repeat(32))))),
        ("charge fingerprint version", accepted_store, Box::new(|m| edit(m, &reservation_path(1), "fingerprintVersion", fields::int(4)))),
        ("charge scope", accepted_store, Box::new(|m| edit(m, &reservation_path(1), "scopeSeatId", fields::string("seat-B")))),
        ("reversal actor, digest recomputed", accepted_reversal, Box::new(|m| { edit(m, &slot(1, 0), "actorSeatId", fields::string("officer-2")); reseal(m, 1) })),
    ];
    for (case, setup, tamper) in cases {
        let mut memory = Store::default();
        let exact = setup(&mut memory);
        tamper(&mut memory);
        let before = memory.clone();
        assert_corrupt(memory.answer(&accept(1, &exact)), case);
        assert_eq!(memory, before, "{case}: nothing written");
    }
}

#[test]
fn a_version_1_reservation_without_a_digest_stays_readable_and_replayable() {
    for setup in [
        accepted_store,
        accepted_effect_plan,
        accepted_transfer,
        accepted_reversal,
    ] {
        let mut memory = Store::default();
        let exact = setup(&mut memory);
        strip_digest(&mut memory, 1);
        assert_eq!(memory[&reservation_path(1)].len(), 13);
        assert_eq!(
            memory[&reservation_path(1)]["reservationSchemaVersion"],
            fields::int(1)
        );
        let before = memory.clone();
        let replayed = memory.answer(&accept(1, &exact)).expect("replayed");
        assert_eq!(replayed.outcome, Outcome::Replayed);
        assert_eq!(memory, before);
    }
}

#[test]
fn versions_without_a_serializer_fail_closed() {
    for version in [1, 2, 3] {
        let mut memory = Store::default();
        import_and_link(&mut memory, 1, &historical(&store(5, "12.5"), version));
        let before = memory.clone();
        assert_eq!(
            memory.answer(&accept(1, &store(5, "12.5"))),
            Err(JournalError::UnsupportedFingerprintVersion)
        );
        assert_eq!(memory, before);
    }
    // A version from a newer crate is unsupported too, not corrupt.
    let (mut memory, _) = accepted();
    let path = reservation_path(1);
    let mut doc = memory[&path].clone();
    doc.insert("fingerprintVersion".into(), fields::int(6));
    memory.insert(path, doc);
    // Edited without its digest, the reservation contradicts itself ...
    assert_corrupt(memory.answer(&accept(1, &store(5, "12.5"))), "unsealed");
    // ... written so by a newer crate (which stores the digest too), it is unsupported.
    reseal(&mut memory, 1);
    assert_eq!(
        memory.answer(&accept(1, &store(5, "12.5"))),
        Err(JournalError::UnsupportedFingerprintVersion)
    );
}

#[test]
fn an_effect_in_a_slot_without_its_reservation_fails_the_whole_accept() {
    let plan = transfer("5");
    for occupied in 0..=2 {
        let mut memory = Store::default();
        memory.insert(slot(1, occupied), fields::map([("x", fields::int(1))]));
        let before = memory.clone();
        assert_corrupt(
            memory.answer(&accept(1, &plan)),
            &format!("slot {occupied}"),
        );
        assert_eq!(memory, before, "nothing written");
    }
    // Even a well-formed effect copied from another command is not evidence.
    let (donor, _) = accepted();
    let mut memory = Store::default();
    memory.insert(slot(1, 0), donor[&slot(1, 0)].clone());
    assert_corrupt(memory.answer(&accept(1, &store(5, "12.5"))), "orphan copy");
    assert_eq!(memory.count(reservation::COLLECTION), 0);
}

#[test]
fn a_reservation_whose_effects_are_incomplete_or_unlinked_is_corrupt() {
    let (memory, _) = accepted();
    let op = accept(1, &store(5, "12.5"));
    type Mutation = Box<dyn Fn(&mut Store)>;
    let mutations: Vec<(&str, Mutation)> = vec![
        (
            "effect missing",
            Box::new(|m: &mut Store| {
                m.remove(&slot(1, 0));
            }),
        ),
        (
            "effect beyond the reservation",
            Box::new(|m: &mut Store| {
                let extra = m[&slot(1, 0)].clone();
                m.insert(slot(1, 1), extra);
            }),
        ),
        (
            "effect of another time",
            Box::new(|m: &mut Store| {
                let later = Timestamp::from_micros(now().micros() + 1).expect("time");
                if let Some(doc) = m.get_mut(&slot(1, 0)) {
                    doc.insert("acceptedAt".into(), fields::timestamp(later));
                }
            }),
        ),
        (
            "historical effect under a canonical reservation",
            Box::new(|m: &mut Store| {
                if let Some(doc) = m.get_mut(&slot(1, 0)) {
                    doc.insert("lineage".into(), fields::string("historical_linked"));
                    doc.insert("migrationId".into(), fields::string("mig-1"));
                }
            }),
        ),
        (
            "malformed reservation",
            Box::new(|m: &mut Store| {
                if let Some(doc) = m.get_mut(&reservation_path(1)) {
                    doc.remove("scopeSeatId");
                }
            }),
        ),
        (
            "effects no longer produce the stored fingerprint",
            Box::new(|m: &mut Store| {
                if let Some(doc) = m.get_mut(&slot(1, 0)) {
                    doc.insert("amount".into(), fields::string("1.00"));
                }
            }),
        ),
    ];
    for (case, mutate) in mutations {
        let mut broken = memory.clone();
        mutate(&mut broken);
        let before = broken.clone();
        assert_corrupt(broken.answer(&op), case);
        assert_eq!(broken, before, "{case}: nothing written");
    }
}

#[test]
fn a_stored_reservation_larger_than_the_plan_is_read_in_full_before_comparing() {
    let three = plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "s"}, {"seat_id": "t"}, {"seat_id": "u"}],
    }));
    let mut memory = Store::default();
    memory.answer(&accept(1, &three)).expect("accepted");
    let one = plan(json!({
        "family": "effect_plan", "fingerprintVersion": 5, "effects": [{"seat_id": "s"}],
    }));
    let op = accept(1, &one);
    assert_eq!(
        op.decide(&memory.snapshot(&op.paths())),
        Decision::Read(vec![slot(1, 2), slot(1, 3)])
    );
    assert_eq!(memory.answer(&op), Err(JournalError::ReplayMismatch));
}

#[test]
fn a_transfer_is_one_reservation_with_a_debit_and_a_credit() {
    let mut memory = Store::default();
    let outcome = memory
        .answer(&accept(1, &transfer("40.5")))
        .expect("accepted");
    assert_eq!(memory.count(reservation::COLLECTION), 1);
    assert_eq!(memory.count(effect::COLLECTION), 2);
    let legs: Vec<_> = outcome
        .effects
        .iter()
        .map(|e| {
            (
                e.transfer_leg,
                e.item.amount.as_ref().map(|a| a.as_str().to_owned()),
                e.item.account_type.clone(),
                e.item.seat_id.clone(),
            )
        })
        .collect();
    let direction = Some("checking_to_savings".to_owned());
    let seat = Some("seat-A".to_owned());
    assert_eq!(
        legs,
        [
            (
                Some(TransferLeg::Debit),
                Some("-40.50".to_owned()),
                direction.clone(),
                seat.clone()
            ),
            (
                Some(TransferLeg::Credit),
                Some("40.50".to_owned()),
                direction,
                seat
            ),
        ]
    );
    assert_eq!(
        outcome.fingerprint,
        transfer("40.50").fingerprint(5).expect("fp").digest
    );
    let replay = memory
        .answer(&accept(1, &transfer("40.50")))
        .expect("replay");
    assert_eq!(replay.outcome, Outcome::Replayed);
    assert_eq!(
        memory.answer(&accept(1, &transfer("40.51"))),
        Err(JournalError::ReplayMismatch)
    );
    for amount in ["0", "0.00"] {
        assert_eq!(
            Accept::new(&key(2), &transfer(amount), &scope(), now()).map(|_| ()),
            Err(JournalError::invalid("transfer"))
        );
    }
    let no_amount = plan(
        json!({"family": "internal_transfer", "fingerprintVersion": 5,
                                "transfer": {"target_seat_id": "seat-A"}}),
    );
    assert!(Accept::new(&key(2), &no_amount, &scope(), now()).is_err());
}

#[test]
fn transfer_legs_that_disagree_are_corrupt() {
    let mut memory = Store::default();
    memory
        .answer(&accept(1, &transfer("40.5")))
        .expect("accepted");
    let mut broken = memory.clone();
    if let Some(doc) = broken.get_mut(&slot(1, 0)) {
        doc.insert("amount".into(), fields::string("-40.00"));
    }
    assert_corrupt(
        broken.answer(&accept(1, &transfer("40.5"))),
        "legs disagree",
    );
    let mut swapped = memory.clone();
    if let Some(doc) = swapped.get_mut(&slot(1, 0)) {
        doc.insert("transferLeg".into(), fields::string("credit"));
        doc.insert("amount".into(), fields::string("40.50"));
    }
    assert_corrupt(swapped.answer(&accept(1, &transfer("40.5"))), "two credits");
}

#[test]
fn a_reversal_is_a_new_reservation_linking_an_existing_original() {
    let (mut memory, original) = accepted();
    let original_id = original.effects[0].effect_id.clone();
    let original_docs = memory.clone();
    let reversal = plan(reversal_json(5, &original_id, Some("GOODWILL")));
    let op = accept(2, &reversal);
    assert!(op.paths().contains(&effect::path(&original_id)));
    let outcome = memory.answer(&op).expect("accepted");
    assert_eq!(outcome.command_family, CommandFamily::Reversal);
    assert_eq!(
        outcome.effects[0].item.original_transaction_id.as_deref(),
        Some(original_id.as_str())
    );
    assert_eq!(memory.count(reservation::COLLECTION), 2);
    for (path, doc) in original_docs.iter() {
        assert_eq!(&memory[path], doc, "the original is unchanged");
    }
    // The original's key is still occupied by the original command.
    assert_eq!(
        memory
            .answer(&accept(1, &store(5, "12.5")))
            .map(|o| o.outcome),
        Ok(Outcome::Replayed)
    );
}

#[test]
fn a_reversal_must_name_an_existing_well_formed_original() {
    let mut memory = Store::default();
    let missing = plan(reversal_json(5, "no-such-transaction", None));
    assert_eq!(
        memory.answer(&accept(2, &missing)),
        Err(JournalError::invalid("effects"))
    );
    assert!(memory.is_empty());
    for bad in [json!(null), json!("a/b"), json!("x".repeat(257))] {
        let mut value = reversal_json(5, "x", None);
        value["effects"][0]["original_transaction_id"] = bad;
        assert_eq!(
            Accept::new(&key(2), &plan(value), &scope(), now()).map(|_| ()),
            Err(JournalError::invalid("effects"))
        );
    }
    memory.insert(
        effect::path("legacy-1"),
        fields::map([("x", fields::int(1))]),
    );
    assert_corrupt(
        memory.answer(&accept(2, &plan(reversal_json(5, "legacy-1", None)))),
        "malformed original",
    );
}

#[test]
fn a_lost_race_re_reads_and_replays() {
    let op = accept(1, &store(5, "12.5"));
    let mut memory = Store::default();
    let lost = memory.attempt(&op);
    let Decision::Mutate(..) = &lost.decision else {
        panic!("expected a mutation");
    };
    // Another caller commits first; this attempt's creates fail their preconditions,
    // and the retry decides on the new state.
    memory.answer(&op).expect("winner");
    assert!(!memory.commit(&lost));
    assert_eq!(memory.answer(&op).map(|o| o.outcome), Ok(Outcome::Replayed));
}

#[test]
fn only_reversals_their_retry_can_state_exactly_are_accepted() {
    let (mut memory, original) = accepted();
    let original_id = original.effects[0].effect_id.clone();
    let effect = |actor: &str, mechanism: &str, cents: u64, subtype: Option<&str>| {
        json!({
            "seat_id": "seat-A", "actor_seat_id": actor, "mechanism": mechanism,
            "amount": "1.00", "original_transaction_id": original_id,
            "compensation_amount_cents": cents, "compensation_subtype": subtype,
        })
    };
    let reversal = |effects: Vec<serde_json::Value>| {
        plan(json!({"family": "reversal", "fingerprintVersion": 5, "effects": effects}))
    };
    let refused = [
        // Two actors.
        vec![
            effect("o-1", "REVERSAL", 0, None),
            effect("o-2", "REVERSAL", 0, None),
        ],
        // Two mechanisms.
        vec![
            effect("o-1", "REVERSAL", 0, None),
            effect("o-1", "WALLET", 0, None),
        ],
        // Two compensation reasons.
        vec![
            effect("o-1", "REVERSAL", 5, Some("A")),
            effect("o-1", "REVERSAL", 5, Some("B")),
        ],
        vec![
            effect("o-1", "REVERSAL", 5, Some("A")),
            effect("o-1", "REVERSAL", 5, None),
        ],
        // A reason on a non-compensating effect.
        vec![
            effect("o-1", "REVERSAL", 5, Some("A")),
            effect("o-1", "REVERSAL", 0, Some("A")),
        ],
    ];
    for effects in refused {
        assert_eq!(
            Accept::new(&key(2), &reversal(effects), &scope(), now()).map(|_| ()),
            Err(JournalError::invalid("effects"))
        );
    }
    let mixed = reversal(vec![
        effect("o-1", "REVERSAL", 5, Some("A")),
        effect("o-1", "REVERSAL", 0, None),
        effect("o-1", "REVERSAL", 7, Some("A")),
    ]);
    let outcome = memory.answer(&accept(2, &mixed)).expect("accepted");
    assert_eq!(outcome.effects.len(), 3);
}

fn debit_json() -> serde_json::Value {
    json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
                     "amount": "-10.00", "account_type": "checking", "type": "DEBIT"}],
    })
}

fn transfer_json(amount: &str) -> serde_json::Value {
    json!({
        "family": "internal_transfer", "fingerprintVersion": 5,
        "transfer": {
            "account_direction": "checking_to_savings", "target_seat_id": "seat-A",
            "actor_seat_id": "seat-A", "amount": amount, "type": "INTERNAL_TRANSFER",
        },
    })
}

fn with_version(value: &serde_json::Value, version: u32) -> serde_json::Value {
    let mut value = value.clone();
    value["fingerprintVersion"] = json!(version);
    value
}

#[test]
fn the_test_plans_are_the_fixtures_plans() {
    assert_eq!(plan(debit_json()), crate::ledger::fixtures::debit_plan());
    assert_eq!(plan(transfer_json("10.00")), transfer("10.00"));
}

#[test]
fn a_new_reservation_is_one_blind_commit_and_a_reversal_always_reads() {
    let mut memory = Store::default();
    let ran = memory.run(&accept(2, &store(5, "12.5")));
    assert!(
        ran.blind && ran.reads() == 0,
        "a new reservation reads nothing"
    );
    assert!(matches!(ran.result, Ok(ref o) if o.outcome == Outcome::Accepted));
    // Its replay is refused blind (the reservation exists) and reads.
    let replay = memory.run(&accept(2, &store(5, "12.5")));
    assert!(!replay.blind && replay.reads() == 1);
    assert!(matches!(replay.result, Ok(ref o) if o.outcome == Outcome::Replayed));
    // A reversal's decision needs its original rows present: no blind plan at all.
    let original = effect::effect_id(&rid(2), 0);
    let reversal = accept(3, &plan(reversal_json(5, &original, None)));
    assert!(!reversal.blind_create());
    let ran = memory.run(&reversal);
    assert!(!ran.blind && ran.reads() == 1);
}

mod charge_flow {
    use super::*;
    use crate::ledger::fingerprint::Intent;
    use crate::ledger::fixtures::{POLICY, fee};

    fn store_intent(quantity: u64) -> Intent {
        Intent::StorePurchase {
            policy_uuid: POLICY.into(),
            quantity,
        }
    }

    fn charge(n: u32, plan: &FingerprintInput, intent: &Intent) -> Accept {
        Accept::charge(&key(n), plan, &scope(), intent, now()).expect("valid charge")
    }

    #[test]
    fn a_worker_pricing_after_another_accepted_gets_the_original_effects() {
        let mut memory = Store::default();
        let first = memory
            .answer(&charge(1, &store(5, "12.5"), &store_intent(2)))
            .expect("accepted");
        assert_eq!(first.outcome, Outcome::Accepted);
        let before = memory.clone();
        // The second worker priced 13.00 before the first committed.
        let second = memory
            .answer(&charge(1, &store(5, "13.00"), &store_intent(2)))
            .expect("replayed by the tuple");
        assert_eq!(second.outcome, Outcome::Replayed);
        assert_eq!(second.effects, first.effects);
        // A bare accept of that pricing still fails closed (seed 003 §6.3).
        assert_eq!(
            memory.answer(&accept(1, &store(5, "13.00"))),
            Err(JournalError::ReplayMismatch)
        );
        // Another tuple, or another scope, fails closed in the flow too.
        let three = plan(store_json(5, "13.00", 3));
        assert_eq!(
            memory.answer(&charge(1, &three, &store_intent(3))),
            Err(JournalError::ReplayMismatch)
        );
        let other = crate::ledger::reservation::LedgerScope::new("seat-B", "seat-B").expect("s");
        let op = Accept::charge(&key(1), &store(5, "12.5"), &other, &store_intent(2), now())
            .expect("op");
        assert_eq!(memory.answer(&op), Err(JournalError::ScopeMismatch));
        assert_eq!(memory, before, "nothing written");
    }

    #[test]
    fn the_flow_creates_exactly_what_accept_creates() {
        let mut flow = Store::default();
        let mut bare = Store::default();
        let by_flow = flow
            .answer(&charge(
                1,
                &fee("-35", false),
                &Intent::OverdraftFee {
                    force_authority: false,
                },
            ))
            .expect("accepted");
        let by_accept = bare
            .answer(&accept(1, &fee("-35", false)))
            .expect("accepted");
        assert_eq!(by_flow, by_accept);
        assert_eq!(flow, bare);
    }

    #[test]
    fn an_existing_version_4_reservation_replays_by_the_tuple_under_version_4() {
        let mut memory = Store::default();
        import_and_link(&mut memory, 1, &historical(&store(4, "12.5"), 4));
        let before = memory.clone();
        let replayed = memory
            .answer(&charge(1, &store(5, "13.00"), &store_intent(2)))
            .expect("replayed");
        assert_eq!(replayed.outcome, Outcome::Replayed);
        assert_eq!(replayed.fingerprint_version, 4);
        assert_eq!(memory, before);
    }

    #[test]
    fn the_plan_must_carry_the_tuple_replayed() {
        for (plan, intent) in [
            (store(5, "12.5"), store_intent(3)),
            (fee("-1", true), store_intent(2)),
            (crate::ledger::fixtures::debit_plan(), store_intent(2)),
        ] {
            assert_eq!(
                Accept::charge(&key(1), &plan, &scope(), &intent, now()).map(|_| ()),
                Err(JournalError::invalid("intent"))
            );
        }
    }
}

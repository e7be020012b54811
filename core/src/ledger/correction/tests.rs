use super::*;
use crate::ledger::accept::Accept;
use crate::ledger::fingerprint::FingerprintInput;
use crate::ledger::fixtures::{accept_into, key, now, plan, rid, scope, store};
use crate::ledger::outcome::Outcome;
use crate::testing::Store;
use serde_json::json;

/// A reversal by officer-1 of `original` in effects of `amounts`.
fn reversal(original: &str, amounts: &[&str]) -> FingerprintInput {
    let effects: Vec<serde_json::Value> = amounts
        .iter()
        .map(|amount| {
            json!({"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "REVERSAL",
                   "amount": amount, "type": "REVERSAL", "original_transaction_id": original})
        })
        .collect();
    plan(json!({"family": "reversal", "fingerprintVersion": 5, "effects": effects}))
}

fn accept(memory: &mut Store, n: u32, plan: &FingerprintInput) -> Result<Outcome, JournalError> {
    memory
        .answer(&Accept::new(&key(n), plan, &scope(), now()).expect("op"))
        .map(|o| o.outcome)
}

/// Key 1 accepted a store purchase of 12.50; its one effect's id.
fn charged(memory: &mut Store) -> String {
    accept_into(memory, 1, &store(5, "-12.5"));
    effect::effect_id(&rid(1), 0)
}

fn bound(memory: &Store, original: &str) -> Option<CorrectionBound> {
    memory
        .get(&path(original))
        .map(|fields| CorrectionBound::parse(original, fields).expect("bound"))
}

#[test]
fn the_bound_round_trips_and_parses_strictly() {
    let doc = CorrectionBound {
        original_effect_id: "legacy-1".into(),
        reversed_cents: 1250,
        reversal_effects: 2,
    };
    let map = doc.encode().expect("encoded");
    assert_eq!(map["reversedAmount"], fields::string("12.50"));
    assert_eq!(CorrectionBound::parse("legacy-1", &map), Ok(doc));
    assert_eq!(
        path("legacy-1"),
        "ledgerTransactions/legacy-1/corrections/current"
    );
    let bad: Vec<(&str, &str, crate::document::value::Value)> = vec![
        ("schema", "correctionSchemaVersion", fields::int(2)),
        (
            "other original",
            "originalEffectId",
            fields::string("legacy-2"),
        ),
        ("negative", "reversedAmount", fields::string("-1.00")),
        ("not canonical", "reversedAmount", fields::string("12.5")),
        ("a number", "reversedAmount", fields::int(1250)),
        ("no effect counted", "reversalEffectCount", fields::int(0)),
        ("count as text", "reversalEffectCount", fields::string("2")),
    ];
    for (case, field, value) in bad {
        let mut changed = map.clone();
        changed.insert(field.into(), value);
        assert!(
            matches!(
                CorrectionBound::parse("legacy-1", &changed),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{case}"
        );
    }
    let mut extra = map.clone();
    extra.insert("note".into(), fields::string("x"));
    assert!(CorrectionBound::parse("legacy-1", &extra).is_err());
}

#[test]
fn partial_reversals_run_up_to_the_remaining_amount_and_never_past_it() {
    let mut memory = Store::default();
    let original = charged(&mut memory);
    let partial = reversal(&original, &["5.00"]);
    assert_eq!(accept(&mut memory, 2, &partial), Ok(Outcome::Accepted));
    assert_eq!(
        bound(&memory, &original),
        Some(CorrectionBound {
            original_effect_id: original.clone(),
            reversed_cents: 500,
            reversal_effects: 1
        })
    );
    // A full reversal now returns more than remains: refused, nothing written.
    let before = memory.clone();
    let full = reversal(&original, &["12.50"]);
    assert_eq!(
        accept(&mut memory, 3, &full),
        Err(JournalError::ReversalExceedsOriginal)
    );
    assert_eq!(memory, before);
    // The remainder, in two effects of one reversal, lands.
    let rest = reversal(&original, &["7.00", "0.50"]);
    assert_eq!(accept(&mut memory, 4, &rest), Ok(Outcome::Accepted));
    assert_eq!(
        bound(&memory, &original).map(|b| (b.reversed_cents, b.reversal_effects)),
        Some((1250, 3))
    );
    let before = memory.clone();
    assert_eq!(
        accept(&mut memory, 5, &reversal(&original, &["0.01"])),
        Err(JournalError::ReversalExceedsOriginal)
    );
    // Exact retries of each accepted reversal replay, the bound exhausted or not.
    assert_eq!(accept(&mut memory, 2, &partial), Ok(Outcome::Replayed));
    assert_eq!(accept(&mut memory, 4, &rest), Ok(Outcome::Replayed));
    // A refused reversal's retry is refused again.
    assert_eq!(
        accept(&mut memory, 3, &full),
        Err(JournalError::ReversalExceedsOriginal)
    );
    assert_eq!(memory, before);
}

#[test]
fn one_full_reversal_exhausts_the_original_and_the_original_row_is_never_written() {
    let mut memory = Store::default();
    let original = charged(&mut memory);
    let row = memory[&effect::path(&original)].clone();
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["12.50"])),
        Ok(Outcome::Accepted)
    );
    assert_eq!(memory[&effect::path(&original)], row);
    assert_eq!(
        accept(&mut memory, 3, &reversal(&original, &["12.50"])),
        Err(JournalError::ReversalExceedsOriginal)
    );
    // A reversal larger than the original is refused from the start.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["12.51"])),
        Err(JournalError::ReversalExceedsOriginal)
    );
    assert_eq!(memory.get(&path(&original)), None);
}

#[test]
fn a_reversal_of_two_originals_counts_each_and_is_refused_whole() {
    let mut memory = Store::default();
    let first = charged(&mut memory);
    accept_into(&mut memory, 2, &store(5, "3.00"));
    let second = effect::effect_id(&rid(2), 0);
    let both = plan(
        json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "12.50",
             "original_transaction_id": first},
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "3.01",
             "original_transaction_id": second},
        ]}),
    );
    let before = memory.clone();
    assert_eq!(
        accept(&mut memory, 3, &both),
        Err(JournalError::ReversalExceedsOriginal)
    );
    assert_eq!(memory, before, "neither bound moved");
    let fits = plan(
        json!({"family": "reversal", "fingerprintVersion": 5, "effects": [
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "12.50",
             "original_transaction_id": first},
            {"actor_seat_id": "officer-1", "mechanism": "REVERSAL", "amount": "-3.00",
             "original_transaction_id": second},
        ]}),
    );
    assert_eq!(accept(&mut memory, 3, &fits), Ok(Outcome::Accepted));
    assert_eq!(bound(&memory, &first).map(|b| b.reversed_cents), Some(1250));
    assert_eq!(bound(&memory, &second).map(|b| b.reversed_cents), Some(300));
}

#[test]
fn a_malformed_bound_fails_closed() {
    let mut memory = Store::default();
    let original = charged(&mut memory);
    memory.insert(
        path(&original),
        fields::map([("reversedAmount", fields::string("0.00"))]),
    );
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 2, &reversal(&original, &["1.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before);
}

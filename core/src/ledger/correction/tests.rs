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

#[test]
fn a_bound_that_contradicts_its_original_is_corrupt() {
    // A total above what the original booked: never written so, so corrupt rather than
    // an exhausted original.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["5.00"])),
        Ok(Outcome::Accepted)
    );
    crate::ledger::fixtures::edit(
        &mut memory,
        &path(&original),
        "reversedAmount",
        fields::string("12.51"),
    );
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 3, &reversal(&original, &["0.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before, "nothing written");
    // The original's row reversed, then deleted by hand: its bound remains.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["5.00"])),
        Ok(Outcome::Accepted)
    );
    memory.remove(&effect::path(&original));
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 3, &reversal(&original, &["5.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before, "nothing written");
}

#[test]
fn an_original_edited_or_orphaned_by_hand_fails_closed_and_an_imported_one_is_trusted() {
    use crate::ledger::fixtures::{edit_amount, historical, import, import_and_link};
    use crate::ledger::reservation;
    // The charge's booked amount raised by hand: its reservation's digest no longer
    // holds, so no reversal is counted against the edited amount.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    edit_amount(&mut memory, 1, 0, "-1000.00");
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 2, &reversal(&original, &["1000.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before, "nothing written");
    // The original's reservation deleted: its row claims a reservation that is gone.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    memory.remove(&reservation::path(&rid(1)));
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 2, &reversal(&original, &["12.50"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before, "nothing written");
    // A linked historical original edited after its link: corrupt too.
    let command = historical(&store(5, "-8.00"), 5);
    let mut memory = Store::default();
    import_and_link(&mut memory, 1, &command);
    let mut edited = memory.clone();
    crate::ledger::fixtures::edit(
        &mut edited,
        &effect::path("legacy-0"),
        "amount",
        fields::string("-80.00"),
    );
    let before = edited.clone();
    assert!(matches!(
        accept(&mut edited, 2, &reversal("legacy-0", &["80.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(edited, before, "nothing written");
    // Intact, the linked original is reversed up to what it booked.
    assert_eq!(
        accept(&mut memory, 2, &reversal("legacy-0", &["8.00"])),
        Ok(Outcome::Accepted)
    );
    // An imported row no migration linked has no reservation to check it against: its
    // recorded amount bounds its reversals.
    let mut memory = Store::default();
    import(&mut memory, &historical(&store(5, "-3.00"), 5));
    assert_eq!(
        accept(&mut memory, 2, &reversal("legacy-0", &["3.00"])),
        Ok(Outcome::Accepted)
    );
}

/// The correction log entries of `original`, by position, as stored.
fn entries(memory: &Store, original: &str) -> Vec<(u64, String, u64, u64)> {
    (1..)
        .map_while(|position| {
            memory.get(&entry::path(original, position)).map(|fields| {
                let e = entry::CorrectionEntry::parse(original, &position.to_string(), fields)
                    .expect("entry");
                (
                    e.position,
                    e.reversal_effect_id,
                    e.reversed_cents,
                    e.reversal_effects,
                )
            })
        })
        .collect()
}

#[test]
fn each_counted_reversal_effect_leaves_one_immutable_entry_in_the_originals_log() {
    let mut memory = Store::default();
    let original = charged(&mut memory);
    let first = reversal(&original, &["5.00"]);
    assert_eq!(accept(&mut memory, 2, &first), Ok(Outcome::Accepted));
    let two = reversal(&original, &["1.00", "2.00"]);
    assert_eq!(accept(&mut memory, 3, &two), Ok(Outcome::Accepted));
    let id = |n: u32, i: usize| effect::effect_id(&rid(n), i);
    assert_eq!(
        entries(&memory, &original),
        vec![
            (1, id(2, 0), 500, 1),
            (2, id(3, 0), 800, 3),
            (3, id(3, 1), 800, 3)
        ]
    );
    assert_eq!(
        entry::path(&original, 2),
        format!("ledgerTransactions/{original}/corrections/2")
    );
    // Exact retries replay and write nothing; the entries are never replaced.
    let before = memory.clone();
    assert_eq!(accept(&mut memory, 2, &first), Ok(Outcome::Replayed));
    assert_eq!(accept(&mut memory, 3, &two), Ok(Outcome::Replayed));
    assert_eq!(memory, before);
}

#[test]
fn a_bound_deleted_or_rolled_back_by_hand_under_its_log_fails_closed() {
    type Tamper = Box<dyn Fn(&mut Store, &str)>;
    let cases: Vec<(&str, Tamper)> = vec![
        (
            "bound deleted",
            Box::new(|m, o| {
                m.remove(&path(o));
            }),
        ),
        (
            "total lowered",
            Box::new(|m, o| {
                crate::ledger::fixtures::edit(m, &path(o), "reversedAmount", fields::string("5.00"))
            }),
        ),
        (
            "rolled back to the first entry",
            Box::new(|m, o| {
                let first = CorrectionBound {
                    original_effect_id: o.to_owned(),
                    reversed_cents: 500,
                    reversal_effects: 1,
                };
                m.insert(path(o), first.encode().expect("bound"));
            }),
        ),
    ];
    for (case, tamper) in cases {
        let mut memory = Store::default();
        let original = charged(&mut memory);
        for (n, amount) in [(2, "5.00"), (3, "7.50")] {
            assert_eq!(
                accept(&mut memory, n, &reversal(&original, &[amount])),
                Ok(Outcome::Accepted)
            );
        }
        tamper(&mut memory, &original);
        let before = memory.clone();
        assert!(
            matches!(
                accept(&mut memory, 4, &reversal(&original, &["7.50"])),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{case}"
        );
        assert_eq!(memory, before, "{case}: nothing written");
    }
    // An entry past the bound's count (a bound planted below a longer log) too.
    let mut memory = Store::default();
    let original = charged(&mut memory);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["5.00"])),
        Ok(Outcome::Accepted)
    );
    let entry_one = memory[&entry::path(&original, 1)].clone();
    memory.insert(entry::path(&original, 2), entry_one.clone());
    assert!(matches!(
        accept(&mut memory, 3, &reversal(&original, &["1.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    // Or further along, where a reversal of two effects would create its second.
    memory.remove(&entry::path(&original, 2));
    memory.insert(entry::path(&original, 3), entry_one);
    let before = memory.clone();
    assert!(matches!(
        accept(&mut memory, 3, &reversal(&original, &["1.00", "1.00"])),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(memory, before, "nothing written");
}

#[test]
fn a_reversal_of_a_reversal_is_bounded_by_it_and_never_reopens_the_original() {
    let mut memory = Store::default();
    let original = charged(&mut memory);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["12.50"])),
        Ok(Outcome::Accepted)
    );
    // Reversing the reversal counts against the reversal's own amount, whatever the
    // sign; the original stays exhausted.
    let refund = effect::effect_id(&rid(2), 0);
    assert_eq!(
        accept(&mut memory, 3, &reversal(&refund, &["-12.50"])),
        Ok(Outcome::Accepted)
    );
    assert_eq!(
        bound(&memory, &refund).map(|b| b.reversed_cents),
        Some(1250)
    );
    assert_eq!(
        bound(&memory, &original).map(|b| b.reversed_cents),
        Some(1250)
    );
    for (n, target) in [(4, &refund), (5, &original)] {
        assert_eq!(
            accept(&mut memory, n, &reversal(target, &["0.01"])),
            Err(JournalError::ReversalExceedsOriginal)
        );
    }
    // A zero amount returns nothing and is counted as such.
    assert_eq!(
        accept(&mut memory, 6, &reversal(&original, &["0.00"])),
        Ok(Outcome::Accepted)
    );
    assert_eq!(
        bound(&memory, &original).map(|b| (b.reversed_cents, b.reversal_effects)),
        Some((1250, 2))
    );
}

#[test]
fn an_original_accepted_before_bounds_existed_is_bounded_from_its_first_reversal_now() {
    use crate::ledger::fixtures::as_schema_2;
    let mut memory = Store::default();
    let charge = store(5, "-12.5");
    accept_into(&mut memory, 1, &charge);
    as_schema_2(&mut memory, 1, &charge);
    let original = effect::effect_id(&rid(1), 0);
    assert_eq!(
        accept(&mut memory, 2, &reversal(&original, &["12.50"])),
        Ok(Outcome::Accepted)
    );
    assert_eq!(
        accept(&mut memory, 3, &reversal(&original, &["0.01"])),
        Err(JournalError::ReversalExceedsOriginal)
    );
}

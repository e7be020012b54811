//! What a bookkeeper relies on, against the emulator (docs/ledger.md): rows that keep
//! the amounts they booked while derived amounts stay out of the fingerprint, the
//! fields the seed fixes refused when broken, reversals that never return more than
//! the original booked, racing or not, and a charge flow whose racing exact retries
//! all get the original effects.

use super::ledger::string;
use super::support::{self, delete, get, list, race};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::ledger::{FingerprintInput, Intent, LedgerKey, LedgerScope, Outcome};
use command_journal::verify::{FindingCode, verify};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Barrier;

fn key(tag: &str, n: u32) -> LedgerKey {
    LedgerKey::new("class-7", "FEAT-FEE", &format!("{tag}-{n}")).expect("key")
}

fn scope() -> LedgerScope {
    LedgerScope::new("seat-A", "seat-A").expect("scope")
}

/// An overdraft fee of `amount`, computed from the balance: the seat's debit and the
/// class's fee account's credit.
fn fee(amount: &str, forced: bool) -> FingerprintInput {
    FingerprintInput::from_json(&json!({
        "family": "overdraft_fee", "fingerprintVersion": 5,
        "effects": [
            {"seat_id": "seat-A", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
             "mechanism": "FEE", "amount": format!("-{amount}"), "account_type": "checking",
             "type": "FEE"},
            {"seat_id": "class-7", "target_seat_id": "seat-A", "actor_seat_id": "seat-A",
             "mechanism": "FEE", "amount": amount, "account_type": "fees", "type": "FEE"},
        ],
        "intent": {"forceAuthority": forced},
    }))
    .expect("plan")
}

/// Every document of both ledger collections and every correction bound, by name.
async fn everything(journal: &Journal) -> HashMap<String, Document> {
    let connection = journal.connection();
    let mut all = list(connection, "", "ledgerReservations").await;
    let rows = list(connection, "", "ledgerTransactions").await;
    for row in &rows {
        let id = row.name.rsplit('/').next().unwrap_or_default();
        all.extend(
            list(
                connection,
                &format!("ledgerTransactions/{id}"),
                "corrections",
            )
            .await,
        );
    }
    all.extend(rows);
    all.into_iter().map(|d| (d.name.clone(), d)).collect()
}

#[tokio::test]
async fn a_derived_fee_books_its_amount_and_an_exact_retry_after_the_balance_moved_replays() {
    let journal = support::fresh_journal().await;
    let key = key("fee", 0);
    let first = fee("35.00", false);
    let accepted = journal
        .accept_ledger_command(&key, &first, &scope())
        .await
        .expect("accepted");
    assert_eq!(accepted.outcome, Outcome::Accepted);
    // The rows book the fee; the fingerprint holds the seed's null.
    let rid = key.reservation_id();
    let row = get(
        journal.connection(),
        &format!("ledgerTransactions/{rid}_0000"),
    )
    .await
    .expect("row");
    assert_eq!(row.fields["amount"], string("-35.00"));
    let nulls = first
        .excluding_derived_amounts()
        .fingerprint(5)
        .expect("fp");
    assert!(nulls.canonical.contains(r#""amount":null"#));
    assert_eq!(accepted.fingerprint, nulls.digest);
    let reservation = get(journal.connection(), &format!("ledgerReservations/{rid}"))
        .await
        .expect("reservation");
    assert_eq!(
        reservation.fields["fingerprint"],
        string(nulls.digest.as_str())
    );
    let before = everything(&journal).await;
    // The balance moved: the retry computes another fee, and replays the first.
    let retry = journal
        .accept_ledger_command(&key, &fee("12.40", false), &scope())
        .await
        .expect("replayed");
    assert_eq!(retry.outcome, Outcome::Replayed);
    assert_eq!(retry.effects, accepted.effects);
    assert_eq!(
        retry.effects[0].item.amount.as_ref().map(|a| a.as_str()),
        Some("-35.00")
    );
    // A changed business tuple is another command.
    assert_eq!(
        journal
            .accept_ledger_command(&key, &fee("35.00", true), &scope())
            .await,
        Err(JournalError::ReplayMismatch)
    );
    assert_eq!(everything(&journal).await, before, "nothing written");
}

#[tokio::test]
async fn an_effect_breaking_the_fixed_fields_is_refused_and_nothing_is_written() {
    let journal = support::fresh_journal().await;
    let charge = |effect: serde_json::Value| {
        FingerprintInput::from_json(&json!({
            "family": "store_purchase", "fingerprintVersion": 5, "effects": [effect],
            "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 1},
        }))
        .expect("plan")
    };
    for (n, effect) in [
        json!({"seat_id": "seat-A", "mechanism": "wallet", "amount": "-1.00"}),
        json!({"seat_id": "seat-A", "mechanism": "WALLET", "amount": "-1.00",
               "compensation_amount_cents": 100}),
        json!({"seat_id": "seat-A", "mechanism": "WALLET", "amount": "-1.00",
               "correction_intent_locator": "corrections/c-1"}),
        json!({"seat_id": "seat-A", "mechanism": "WALLET", "amount": "-1.00",
               "compensation_subtype": "GOODWILL"}),
    ]
    .into_iter()
    .enumerate()
    {
        let key = key("fixed", u32::try_from(n).expect("n"));
        assert_eq!(
            journal
                .accept_ledger_command(&key, &charge(effect), &scope())
                .await,
            Err(JournalError::InvalidInput { field: "effects" })
        );
    }
    assert!(everything(&journal).await.is_empty(), "nothing written");
}

/// A store purchase of 12.50 under `key`; the id of its one effect.
async fn charged(journal: &Journal, key: &LedgerKey) -> String {
    let plan = FingerprintInput::from_json(&json!({
        "family": "store_purchase", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
                     "amount": "-12.50", "account_type": "checking", "type": "PURCHASE"}],
        "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": 1},
    }))
    .expect("plan");
    let outcome = journal
        .accept_ledger_command(key, &plan, &scope())
        .await
        .expect("charged");
    outcome.effects[0].effect_id.clone()
}

/// A reversal of `amount` of effect `original`.
fn reversal(original: &str, amount: &str) -> FingerprintInput {
    FingerprintInput::from_json(&json!({
        "family": "reversal", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "officer-1", "mechanism": "REVERSAL",
                     "amount": amount, "account_type": "checking", "type": "REVERSAL",
                     "original_transaction_id": original}],
    }))
    .expect("plan")
}

/// The correction bound of `original`: `(reversedAmount, reversalEffectCount)`.
async fn bound(journal: &Journal, original: &str) -> Option<(String, i64)> {
    let doc = get(
        journal.connection(),
        &format!("ledgerTransactions/{original}/corrections/current"),
    )
    .await?;
    let text = match &doc.fields["reversedAmount"].value_type {
        Some(gcloud_sdk::google::firestore::v1::value::ValueType::StringValue(t)) => t.clone(),
        other => panic!("reversedAmount {other:?}"),
    };
    assert_eq!(doc.fields["originalEffectId"], string(original));
    let count = match &doc.fields["reversalEffectCount"].value_type {
        Some(gcloud_sdk::google::firestore::v1::value::ValueType::IntegerValue(n)) => *n,
        other => panic!("reversalEffectCount {other:?}"),
    };
    Some((text, count))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_full_reversals_racing_under_different_keys_land_exactly_once() {
    let journal = support::fresh_journal().await;
    for round in 0..3 {
        let original = charged(&journal, &key("charge", round)).await;
        let results = race(2, |i| {
            let journal = journal.clone();
            let key = key(&format!("reversal-{round}"), u32::try_from(i).expect("i"));
            let plan = reversal(&original, "12.50");
            async move {
                journal
                    .accept_ledger_command(&key, &plan, &scope())
                    .await
                    .map(|o| (i, o))
            }
        })
        .await;
        let mut landed = Vec::new();
        let mut refused = 0;
        for result in results {
            match result {
                Ok((i, outcome)) => {
                    assert_eq!(outcome.outcome, Outcome::Accepted, "round {round}");
                    landed.push(i);
                }
                Err(JournalError::ReversalExceedsOriginal) => refused += 1,
                Err(error) => panic!("round {round}: unexpected {}", error.code()),
            }
        }
        assert_eq!((landed.len(), refused), (1, 1), "round {round}");
        assert_eq!(
            bound(&journal, &original).await,
            Some(("12.50".to_owned(), 1)),
            "round {round}"
        );
        // Exactly the winner's reservation and row exist; the loser wrote nothing.
        let winner = key(
            &format!("reversal-{round}"),
            u32::try_from(landed[0]).expect("i"),
        );
        let loser = key(
            &format!("reversal-{round}"),
            u32::try_from(1 - landed[0]).expect("i"),
        );
        let all = everything(&journal).await;
        let holds = |key: &LedgerKey| {
            all.keys()
                .filter(|name| name.contains(key.reservation_id().as_str()))
                .count()
        };
        assert_eq!((holds(&winner), holds(&loser)), (2, 0), "round {round}");
    }
    let all = everything(&journal).await;
    assert_eq!(
        all.len(),
        3 * (2 + 2 + 1 + 1),
        "each round: a charge, one reversal, the charge's bound and one log entry"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_partial_reversals_racing_under_four_keys_return_at_most_what_was_booked() {
    const RACERS: u64 = 4;
    let journal = support::fresh_journal().await;
    for round in 0..2 {
        let original = charged(&journal, &key("partial-charge", round)).await;
        // 5.00 each of 12.50: two fit, a third would return 15.00.
        let results = race(RACERS, |i| {
            let journal = journal.clone();
            let key = key(&format!("partial-{round}"), u32::try_from(i).expect("i"));
            let plan = reversal(&original, "5.00");
            async move { journal.accept_ledger_command(&key, &plan, &scope()).await }
        })
        .await;
        let mut landed = Vec::new();
        for result in results {
            match result {
                Ok(outcome) => {
                    assert_eq!(outcome.outcome, Outcome::Accepted, "round {round}");
                    landed.push(outcome.effects[0].effect_id.clone());
                }
                Err(JournalError::ReversalExceedsOriginal) => {}
                Err(error) => panic!("round {round}: unexpected {}", error.code()),
            }
        }
        assert_eq!(landed.len(), 2, "round {round}");
        assert_eq!(
            bound(&journal, &original).await,
            Some(("10.00".to_owned(), 2)),
            "round {round}"
        );
        // The log: one entry per landed effect, positions 1 and 2, and no third.
        let mut logged = Vec::new();
        for position in 1..=3 {
            let path = format!("ledgerTransactions/{original}/corrections/{position}");
            if let Some(entry) = get(journal.connection(), &path).await {
                match &entry.fields["reversalEffectId"].value_type {
                    Some(gcloud_sdk::google::firestore::v1::value::ValueType::StringValue(id)) => {
                        logged.push(id.clone())
                    }
                    other => panic!("reversalEffectId {other:?}"),
                }
            }
        }
        landed.sort();
        logged.sort();
        assert_eq!(logged, landed, "round {round}");
    }
    let report = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}

#[tokio::test]
async fn a_partial_then_a_full_reversal_is_refused_the_rest_lands_and_each_replays() {
    let journal = support::fresh_journal().await;
    let original = charged(&journal, &key("charge", 0)).await;
    let partial = reversal(&original, "5.00");
    let first = journal
        .accept_ledger_command(&key("partial", 0), &partial, &scope())
        .await
        .expect("partial");
    assert_eq!(first.outcome, Outcome::Accepted);
    assert_eq!(bound(&journal, &original).await, Some(("5.00".into(), 1)));
    let before = everything(&journal).await;
    let full = reversal(&original, "12.50");
    assert_eq!(
        journal
            .accept_ledger_command(&key("full", 0), &full, &scope())
            .await,
        Err(JournalError::ReversalExceedsOriginal)
    );
    assert_eq!(everything(&journal).await, before, "nothing written");
    let rest = reversal(&original, "7.50");
    let second = journal
        .accept_ledger_command(&key("rest", 0), &rest, &scope())
        .await
        .expect("rest");
    assert_eq!(second.outcome, Outcome::Accepted);
    assert_eq!(bound(&journal, &original).await, Some(("12.50".into(), 2)));
    let before = everything(&journal).await;
    // A replay of each, the original exhausted: the stored effects, nothing written.
    for (key, plan, accepted) in [
        (key("partial", 0), &partial, &first),
        (key("rest", 0), &rest, &second),
    ] {
        let again = journal
            .accept_ledger_command(&key, plan, &scope())
            .await
            .expect("replayed");
        assert_eq!(again.outcome, Outcome::Replayed);
        assert_eq!(again.effects, accepted.effects);
    }
    assert_eq!(
        journal
            .accept_ledger_command(&key("full", 0), &full, &scope())
            .await,
        Err(JournalError::ReversalExceedsOriginal),
        "the refused reversal's retry is refused again"
    );
    assert_eq!(everything(&journal).await, before);
    let report = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.findings);
}

#[tokio::test]
async fn verify_finds_an_over_reversal_planted_by_hand() {
    let journal = support::fresh_journal().await;
    let original = charged(&journal, &key("charge", 0)).await;
    journal
        .accept_ledger_command(&key("reversal", 0), &reversal(&original, "12.50"), &scope())
        .await
        .expect("reversed");
    // By hand: the bound deleted. Its log remains, so the next reversal is refused.
    let bound_path = format!("ledgerTransactions/{original}/corrections/current");
    delete(journal.connection(), &bound_path).await;
    let before = everything(&journal).await;
    assert!(matches!(
        journal
            .accept_ledger_command(&key("reversal", 1), &reversal(&original, "12.50"), &scope())
            .await,
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(everything(&journal).await, before, "nothing written");
    // The log deleted too: every record of the first reversal's count is gone, so the
    // next full reversal is counted against nothing.
    let entry_path = format!("ledgerTransactions/{original}/corrections/1");
    delete(journal.connection(), &entry_path).await;
    journal
        .accept_ledger_command(&key("reversal", 1), &reversal(&original, "12.50"), &scope())
        .await
        .expect("counted against nothing");
    let report = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    let found: Vec<(FindingCode, &str)> = report
        .findings
        .iter()
        .map(|f| (f.code, f.path.as_str()))
        .collect();
    let row = format!("ledgerTransactions/{original}");
    assert_eq!(
        found,
        [
            (FindingCode::OverReversal, row.as_str()),
            (FindingCode::CorrectionBoundMismatch, bound_path.as_str()),
        ]
    );
}

#[tokio::test]
async fn a_reversal_counts_against_what_the_original_accepted_never_an_edited_row() {
    use command_journal::Timestamp;
    use command_journal::ledger::HistoricalCommand;
    let journal = support::fresh_journal().await;
    let original = charged(&journal, &key("edited", 0)).await;
    // By hand: the booked amount raised, the reservation's digest left as it was.
    let row_path = format!("ledgerTransactions/{original}");
    let mut row = get(journal.connection(), &row_path).await.expect("row");
    row.fields.insert("amount".into(), string("-1000.00"));
    super::support::put(journal.connection(), &row_path, row.fields).await;
    let before = everything(&journal).await;
    assert!(matches!(
        journal
            .accept_ledger_command(&key("edited", 1), &reversal(&original, "1000.00"), &scope())
            .await,
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(everything(&journal).await, before, "nothing written");
    // A row a migration linked under its own id: its reservation and rows are read
    // after the row, and the reversal lands within what it booked.
    let legacy = FingerprintInput::from_json(&json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "seat-A", "amount": "-8.00",
                     "account_type": "checking", "type": "DEBIT"}],
    }))
    .expect("plan");
    let command = HistoricalCommand {
        family: legacy.family(),
        fingerprint: legacy.fingerprint(5).expect("fp").digest,
        fingerprint_version: 5,
        accepted_at: Timestamp::from_micros(1_600_000_000_000_000).expect("time"),
        migration_id: "mig-2026-10".into(),
        effect_ids: vec!["legacy-reversed-0".into()],
        effects: legacy.effects().to_vec(),
    };
    super::ledger::import(journal.connection(), &command).await;
    journal
        .link_historical_effects(&key("linked", 0), &scope(), &command)
        .await
        .expect("linked");
    let reversed = journal
        .accept_ledger_command(
            &key("linked", 1),
            &reversal("legacy-reversed-0", "8.00"),
            &scope(),
        )
        .await
        .expect("reversed");
    assert_eq!(reversed.outcome, Outcome::Accepted);
    assert_eq!(
        bound(&journal, "legacy-reversed-0").await,
        Some(("8.00".to_owned(), 1))
    );
}

#[tokio::test]
async fn verify_counts_a_reversal_a_migration_linked_against_its_original_across_ranges() {
    use command_journal::Timestamp;
    use command_journal::ledger::HistoricalCommand;
    use command_journal::verify::{ScanRanges, verify_in_ranges};
    let journal = support::fresh_journal().await;
    let historical = |plan: &FingerprintInput, id: &str| HistoricalCommand {
        family: plan.family(),
        fingerprint: plan.fingerprint(5).expect("fp").digest,
        fingerprint_version: 5,
        accepted_at: Timestamp::from_micros(1_600_000_000_000_000).expect("time"),
        migration_id: "mig-2026-10".into(),
        effect_ids: vec![id.into()],
        effects: plan.effects().to_vec(),
    };
    let charge = FingerprintInput::from_json(&json!({
        "family": "effect_plan", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "seat-A", "amount": "-12.50",
                     "account_type": "checking", "type": "DEBIT"}],
    }))
    .expect("plan");
    let original = "legacy-charge-0";
    super::ledger::import(journal.connection(), &historical(&charge, original)).await;
    // Before the journal, all of it was refunded; a migration linked that refund.
    let refund = historical(&reversal(original, "12.50"), "legacy-refund-0");
    super::ledger::import(journal.connection(), &refund).await;
    journal
        .link_historical_effects(&key("refund", 0), &scope(), &refund)
        .await
        .expect("linked");
    // The accept cannot see the linked refund: no bound counted it.
    journal
        .accept_ledger_command(&key("refund", 1), &reversal(original, "12.50"), &scope())
        .await
        .expect("counted against a new bound");
    for ranges in [1, 16] {
        let report = verify_in_ranges(
            journal.connection(),
            ScanRanges::new(ranges).expect("ranges"),
            &mut |_| {},
        )
        .await
        .expect("verify");
        let found: Vec<(FindingCode, String)> = report
            .findings
            .iter()
            .map(|f| (f.code, f.path.clone()))
            .collect();
        assert_eq!(
            found,
            [(
                FindingCode::OverReversal,
                format!("ledgerTransactions/{original}")
            )],
            "{ranges} ranges"
        );
    }
}

const POLICY: &str = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b";

fn store_intent(quantity: u64) -> Intent {
    Intent::StorePurchase {
        policy_uuid: POLICY.into(),
        quantity,
    }
}

/// A store purchase of one at `price`, as a worker priced it.
fn priced(price: &str) -> FingerprintInput {
    FingerprintInput::from_json(&json!({
        "family": "store_purchase", "fingerprintVersion": 5,
        "effects": [{"seat_id": "seat-A", "actor_seat_id": "seat-A", "mechanism": "WALLET",
                     "amount": format!("-{price}"), "account_type": "checking",
                     "type": "PURCHASE"}],
        "intent": {"policyUuid": POLICY, "quantity": 1},
    }))
    .expect("plan")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_workers_racing_one_charge_with_different_pricing_both_get_the_original_effects() {
    let journal = support::fresh_journal().await;
    let prices = ["12.50", "13.00"];
    for round in 0..3 {
        let key = key("flow", round);
        // Both workers replay (nothing is reserved) and price before either accepts.
        let priced_both = Arc::new(Barrier::new(2));
        let results = race(2, |i| {
            let (journal, key, barrier) = (journal.clone(), key.clone(), priced_both.clone());
            let price = prices[usize::try_from(i).expect("i")];
            async move {
                journal
                    .charge_ledger_command(&key, &scope(), &store_intent(1), || async move {
                        barrier.wait().await;
                        Ok::<_, JournalError>(priced(price))
                    })
                    .await
                    .map(|outcome| (i, outcome))
            }
        })
        .await;
        let outcomes: Vec<(u64, _)> = results
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("round {round}: {}", e.code())))
            .collect();
        let accepted: Vec<u64> = outcomes
            .iter()
            .filter(|(_, o)| o.outcome == Outcome::Accepted)
            .map(|(i, _)| *i)
            .collect();
        let replayed = outcomes
            .iter()
            .filter(|(_, o)| o.outcome == Outcome::Replayed)
            .count();
        assert_eq!((accepted.len(), replayed), (1, 1), "round {round}");
        let winner = usize::try_from(accepted[0]).expect("i");
        let effects = &outcomes[0].1.effects;
        assert_eq!(
            effects, &outcomes[1].1.effects,
            "round {round}: the original effects"
        );
        let booked = format!("-{}", prices[winner]);
        assert_eq!(
            effects[0].item.amount.as_ref().map(|a| a.as_str()),
            Some(booked.as_str())
        );
        let rid = key.reservation_id().to_string();
        let all = everything(&journal).await;
        assert_eq!(
            all.keys().filter(|name| name.contains(&rid)).count(),
            2,
            "round {round}: one reservation, one row"
        );
        // A bare accept with the other pricing still fails closed (§6.3).
        let loser = priced(prices[1 - winner]);
        assert_eq!(
            journal.accept_ledger_command(&key, &loser, &scope()).await,
            Err(JournalError::ReplayMismatch),
            "round {round}"
        );
        // A later retry replays before pricing; a changed tuple fails closed, unpriced.
        for (quantity, expected) in [
            (1, Ok(Outcome::Replayed)),
            (2, Err(JournalError::ReplayMismatch)),
        ] {
            let answer = journal
                .charge_ledger_command(&key, &scope(), &store_intent(quantity), || async {
                    panic!("round {round}: priced although reserved")
                })
                .await
                .map(|o| o.outcome);
            assert_eq!(answer, expected, "round {round}: quantity {quantity}");
        }
        assert_eq!(
            everything(&journal).await,
            all,
            "round {round}: nothing written"
        );
    }
}

#[tokio::test]
async fn a_migrated_reservation_is_sealed_and_an_edit_of_its_rows_is_found() {
    use command_journal::Timestamp;
    use command_journal::ledger::HistoricalCommand;
    use command_journal::verify::{ScanRanges, verify_in_ranges};
    let journal = support::fresh_journal().await;
    let legacy = priced("9.00").excluding_derived_amounts();
    let command = HistoricalCommand {
        family: legacy.family(),
        fingerprint: legacy.fingerprint(5).expect("fp").digest,
        fingerprint_version: 5,
        accepted_at: Timestamp::from_micros(1_600_000_000_000_000).expect("time"),
        migration_id: "mig-2026-10".into(),
        effect_ids: vec!["legacy-sealed-0".into()],
        effects: legacy.effects().to_vec(),
    };
    super::ledger::import(journal.connection(), &command).await;
    let key = key("migrated", 0);
    let linked = journal
        .link_historical_effects(&key, &scope(), &command)
        .await
        .expect("linked");
    assert_eq!(linked.outcome, Outcome::Linked);
    let rid = key.reservation_id();
    let reservation = get(journal.connection(), &format!("ledgerReservations/{rid}"))
        .await
        .expect("reservation");
    assert_eq!(
        reservation.fields["reservationSchemaVersion"],
        super::ledger::int(3)
    );
    assert_eq!(reservation.fields["migrationId"], string("mig-2026-10"));
    assert!(reservation.fields.contains_key("integrityDigest"));
    let report = verify(journal.connection(), &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "{:?}", report.findings);
    // By hand: the linked row's amount changed, its link kept.
    let row_path = "ledgerTransactions/legacy-sealed-0";
    let mut row = get(journal.connection(), row_path).await.expect("row");
    row.fields.insert("amount".into(), string("-1.00"));
    super::support::put(journal.connection(), row_path, row.fields).await;
    for ranges in [1, 16] {
        let report = verify_in_ranges(
            journal.connection(),
            ScanRanges::new(ranges).expect("ranges"),
            &mut |_| {},
        )
        .await
        .expect("verify");
        let found: Vec<(FindingCode, String)> = report
            .findings
            .iter()
            .map(|f| (f.code, f.path.clone()))
            .collect();
        assert_eq!(
            found,
            [(
                FindingCode::EffectIntegrityMismatch,
                format!("ledgerReservations/{rid}")
            )],
            "{ranges} ranges"
        );
    }
    assert!(matches!(
        journal
            .link_historical_effects(&key, &scope(), &command)
            .await,
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert!(matches!(
        journal
            .replay_reserved_charge(&key, &scope(), &store_intent(1))
            .await,
        Err(JournalError::JournalCorrupt { .. })
    ));
}

#[tokio::test]
async fn the_charge_flow_fails_closed_on_a_failed_pricing_and_on_a_key_holding_another_command() {
    #[derive(Debug, PartialEq)]
    enum Priced {
        Journal(JournalError),
        NoPrice,
    }
    impl From<JournalError> for Priced {
        fn from(error: JournalError) -> Self {
            Self::Journal(error)
        }
    }
    let journal = support::fresh_journal().await;
    // The pricing fails: its error, nothing written; the retry prices again.
    let key = key("priced", 0);
    assert_eq!(
        journal
            .charge_ledger_command(&key, &scope(), &store_intent(1), || async {
                Err::<FingerprintInput, _>(Priced::NoPrice)
            })
            .await,
        Err(Priced::NoPrice)
    );
    assert!(everything(&journal).await.is_empty(), "nothing written");
    let accepted = journal
        .charge_ledger_command(&key, &scope(), &store_intent(1), || async {
            Ok::<_, Priced>(priced("12.50"))
        })
        .await
        .expect("accepted");
    assert_eq!(accepted.outcome, Outcome::Accepted);
    // The key holds a fee, a reversal, or the charge under another scope: the flow
    // fails closed before pricing and never answers those effects.
    let fee_key = self::key("priced", 1);
    journal
        .accept_ledger_command(&fee_key, &fee("35.00", false), &scope())
        .await
        .expect("fee");
    let refund_key = self::key("priced", 2);
    journal
        .accept_ledger_command(
            &refund_key,
            &reversal(&accepted.effects[0].effect_id, "12.50"),
            &scope(),
        )
        .await
        .expect("reversal");
    let before = everything(&journal).await;
    let other_scope = LedgerScope::new("seat-B", "seat-B").expect("scope");
    for (case, key, scope, expected) in [
        ("a fee", &fee_key, scope(), JournalError::ReplayMismatch),
        (
            "a reversal",
            &refund_key,
            scope(),
            JournalError::ReplayMismatch,
        ),
        (
            "another scope",
            &key,
            other_scope,
            JournalError::ScopeMismatch,
        ),
    ] {
        let answer = journal
            .charge_ledger_command(key, &scope, &store_intent(1), || async {
                panic!("{case}: priced although the key is reserved")
            })
            .await;
        assert_eq!(
            answer.map(|o| o.outcome),
            Err(Priced::Journal(expected)),
            "{case}"
        );
    }
    assert_eq!(everything(&journal).await, before, "nothing written");
}

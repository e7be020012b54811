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
        3 * (2 + 2 + 1),
        "each round: a charge, one reversal and the charge's bound"
    );
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
    // By hand: the bound deleted, so the next full reversal is counted against nothing.
    let bound_path = format!("ledgerTransactions/{original}/corrections/current");
    delete(journal.connection(), &bound_path).await;
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

//! What a bookkeeper relies on, against the emulator (docs/ledger.md): rows that keep
//! the amounts they booked while derived amounts stay out of the fingerprint, and the
//! fields the seed fixes refused when broken.

use super::ledger::string;
use super::support::{self, get, list};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::ledger::{FingerprintInput, LedgerKey, LedgerScope, Outcome};
use gcloud_sdk::google::firestore::v1::Document;
use serde_json::json;
use std::collections::HashMap;

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

/// Every document of both ledger collections, by name.
async fn everything(journal: &Journal) -> HashMap<String, Document> {
    let connection = journal.connection();
    let mut all = list(connection, "", "ledgerReservations").await;
    all.extend(list(connection, "", "ledgerTransactions").await);
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

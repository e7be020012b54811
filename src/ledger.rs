//! Ledger idempotency reservations on Firestore: one reservation per ledger key, and
//! the effect rows it created, accepted or replayed atomically. The types are the
//! core's (`command_journal_core::ledger`); [`Journal`](crate::Journal)'s
//! `accept_ledger_command`, `charge_ledger_command`, `replay_reserved_charge`,
//! `replay_reserved_reversal` and `link_historical_effects` run its decisions.
//! docs/ledger.md describes the serializers, booked rows and fingerprint items, the
//! bound on corrections, the charge flow, internal transfers, lineage and linking.
//!
//! The charge flow: a retry of an accepted charge answers its original effects
//! whatever it would cost now, and `price` runs only for a command never accepted.
//!
//! ```no_run
//! use command_journal::ledger::{FingerprintInput, Intent, LedgerKey, LedgerOutcome, LedgerScope};
//! use command_journal::{Journal, JournalError};
//!
//! async fn buy(journal: &Journal, price: &str) -> Result<LedgerOutcome, JournalError> {
//!     let key = LedgerKey::new("class-7", "FEAT-STORE", "purchase-41")?;
//!     let scope = LedgerScope::new("seat-A", "seat-A")?;
//!     let intent = Intent::StorePurchase {
//!         policy_uuid: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
//!         quantity: 1,
//!     };
//!     journal
//!         .charge_ledger_command(&key, &scope, &intent, || async {
//!             // Read the current price and balances here, then book the effects.
//!             FingerprintInput::from_json(&serde_json::json!({
//!                 "family": "store_purchase", "fingerprintVersion": 5,
//!                 "effects": [{"seat_id": "seat-A", "actor_seat_id": "seat-A",
//!                              "mechanism": "WALLET", "amount": format!("-{price}"),
//!                              "account_type": "checking", "type": "PURCHASE"}],
//!                 "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b",
//!                            "quantity": 1},
//!             }))
//!         })
//!         .await
//! }
//! ```

pub use command_journal_core::ledger::{
    Amount, COMPENSATION_SUBTYPE_KEY, CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem,
    Fingerprint, FingerprintInput, HistoricalCommand, Intent, LedgerEffect, LedgerKey,
    LedgerOutcome, LedgerReplay, LedgerScope, Lineage, MAX_EFFECTS, MAX_TEXT_BYTES, Mechanism,
    Outcome, ReversalAuthority, TRANSFER_KEYS, TransferLeg, TransferPlan, V4_EFFECT_KEYS,
};

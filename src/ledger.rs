//! Ledger idempotency reservations on Firestore: one reservation per ledger key, and
//! the effect rows it created, accepted or replayed atomically. The types are the
//! core's (`command_journal_core::ledger`); [`Journal`](crate::Journal)'s
//! `accept_ledger_command`, `replay_reserved_charge`, `replay_reserved_reversal` and
//! `link_historical_effects` run its decisions. docs/ledger.md describes the
//! serializers, internal transfers, lineage and linking.

pub use command_journal_core::ledger::{
    Amount, COMPENSATION_SUBTYPE_KEY, CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem,
    Fingerprint, FingerprintInput, HistoricalCommand, Intent, LedgerEffect, LedgerKey,
    LedgerOutcome, LedgerReplay, LedgerScope, Lineage, MAX_EFFECTS, MAX_TEXT_BYTES, Mechanism,
    Outcome, ReversalAuthority, TRANSFER_KEYS, TransferLeg, TransferPlan, V4_EFFECT_KEYS,
};

//! Ledger idempotency reservations on Firestore: one reservation per ledger key, and
//! the effect rows it created, accepted or replayed atomically. `docs/ledger.md` describes
//! the serializers, internal transfers, lineage and linking; `docs/documents.md` the
//! documents.
//!
//! Its types are public here; the modules behind them are private to the core, and
//! [`tools::ledger`](crate::tools::ledger) re-exports what the shell runs of them:
//!
//! - `fingerprint`: the pure, versioned replay-fingerprint serializers;
//! - `reservation` and `effect`: the strict codecs of `ledgerReservations/{id}`
//!   and `ledgerTransactions/{id}`;
//! - `booking`: how a booked effect row becomes the item a fingerprint hashes (the
//!   families' derived amounts) and the fields the seed fixes;
//! - `correction`: the bound on what the reversals of one effect return, the
//!   document that effect owns (`ledgerTransactions/{id}/corrections/current`);
//! - `integrity`: the integrity digest new reservations store and the fingerprint
//!   rebuilt from stored rows, checked by every operation and by `verify`;
//! - `accept`, `replay`, `migration`: prepared operations with pure `decide`s, run by
//!   the journal's one transaction runner through the library's `Journal`:
//!   `accept_ledger_command`, `replay_reserved_charge`, `replay_reserved_reversal`
//!   and `link_historical_effects`;
//! - `outcome`: what those operations answer.

pub(crate) mod accept;
pub(crate) mod booking;
pub(crate) mod correction;
pub(crate) mod effect;
pub(crate) mod fingerprint;
pub(crate) mod integrity;
pub(crate) mod migration;
pub(crate) mod outcome;
pub(crate) mod replay;
pub(crate) mod reservation;
pub(crate) mod stored;

#[cfg(any(test, feature = "testing"))]
pub(crate) mod fixtures;

pub use crate::identity::LedgerKey;
pub use booking::Mechanism;
pub use effect::{LedgerEffect, Lineage, TransferLeg};
pub use fingerprint::{
    Amount, COMPENSATION_SUBTYPE_KEY, CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem,
    Fingerprint, FingerprintInput, Intent, MAX_EFFECTS, MAX_TEXT_BYTES, TRANSFER_KEYS,
    TransferPlan, V4_EFFECT_KEYS,
};
pub use migration::HistoricalCommand;
pub use outcome::{LedgerOutcome, LedgerReplay, Outcome};
pub use replay::ReversalAuthority;
pub use reservation::LedgerScope;

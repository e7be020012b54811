//! The public ledger operations of [`Journal`].

use super::accept::Accept;
use super::fingerprint::{FingerprintInput, Intent};
use super::migration::{HistoricalCommand, Link};
use super::outcome::{LedgerOutcome, LedgerReplay};
use super::replay::{Replay, ReversalAuthority};
use super::reservation::LedgerScope;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::journal::Journal;

impl Journal {
    /// Accepts a ledger command under its reservation identity `key`, in one
    /// transaction (seed 003 §V–VI).
    ///
    /// `accepted`: the reservation (fingerprint version 5) and every effect were
    /// created atomically — an internal transfer as a debit and a credit, a reversal
    /// as effects linking existing original transactions. `replayed`: the reservation
    /// existed in `scope` and `plan` re-serialized under its **stored** version gives
    /// the stored fingerprint; its stored effects are returned and nothing is written.
    /// Otherwise nothing is written and the answer is `scope_mismatch`,
    /// `unsupported_fingerprint_version` (stored versions 1–3), `replay_mismatch`
    /// (another family or fingerprint — never a generic duplicate), `journal_corrupt`
    /// (including an effect already occupying one of the command's effect ids while
    /// its reservation is absent) or `invalid_input`.
    pub async fn accept_ledger_command(
        &self,
        key: &LedgerKey,
        plan: &FingerprintInput,
        scope: &LedgerScope,
    ) -> Result<LedgerOutcome, JournalError> {
        let op = Accept::new(key, plan, scope, self.now()?)?;
        self.run(&op).await
    }

    /// Replays a charge before pricing: resolves the reservation and its complete
    /// ordered effect vector, rebuilds the command from the stored effects with the
    /// supplied business tuple `intent` and compares its fingerprint under the stored
    /// version, and checks `scope`. Returns the original effects even if current
    /// prices would differ, or `not_reserved` when no reservation exists (then price
    /// and [`accept_ledger_command`](Self::accept_ledger_command)). Writes nothing.
    pub async fn replay_reserved_charge(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        intent: &Intent,
    ) -> Result<LedgerReplay, JournalError> {
        let op = Replay::charge(key, scope, intent)?;
        self.run(&op).await
    }

    /// Replays a reversal before pricing: as
    /// [`replay_reserved_charge`](Self::replay_reserved_charge), comparing the
    /// supplied actor, mechanism and compensation subtype (put in place of the stored
    /// ones in every effect) under the stored version. Writes nothing.
    pub async fn replay_reserved_reversal(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        authority: &ReversalAuthority,
    ) -> Result<LedgerReplay, JournalError> {
        let op = Replay::reversal(key, scope, authority)?;
        self.run(&op).await
    }

    /// The explicit migration call: creates a `historical_linked` reservation and its
    /// effects exactly as `command` states them (fingerprint and version stored as
    /// given, never recomputed), atomically. `linked` when created, `already_linked`
    /// when exactly this was linked before (no write), `scope_mismatch` or
    /// `replay_mismatch` when the key holds anything else, `journal_corrupt` for an
    /// orphan effect in the command's slots.
    pub async fn link_historical_effects(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        command: &HistoricalCommand,
    ) -> Result<LedgerOutcome, JournalError> {
        let op = Link::new(key, scope, command, self.now()?)?;
        self.run(&op).await
    }
}

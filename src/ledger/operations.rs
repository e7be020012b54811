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
    /// transaction.
    ///
    /// `accepted`: the reservation (fingerprint version 5, reservation schema version
    /// 2 with its integrity digest) and every effect were created atomically — an
    /// internal transfer as a debit and a credit, a reversal as effects linking
    /// existing original transactions. `replayed`: the reservation existed in `scope`,
    /// `plan` declares its stored version, and `plan` re-serialized under that
    /// **stored** version gives the stored fingerprint; its stored effects are returned
    /// and nothing is written. Otherwise nothing is written and the answer is
    /// `scope_mismatch`, `unsupported_fingerprint_version` (stored versions 1–3),
    /// `replay_mismatch` (another family, declared version or fingerprint — never a
    /// generic duplicate), `journal_corrupt` (including an effect already occupying
    /// one of the command's effect ids while its reservation is absent, and stored rows
    /// that contradict their reservation's integrity digest or rebuilt fingerprint,
    /// `docs/ledger.md`) or `invalid_input`.
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
    /// and [`accept_ledger_command`](Self::accept_ledger_command)). Stored rows that
    /// contradict their reservation are `journal_corrupt`. Writes nothing.
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
    /// supplied authority effect by effect under the stored version — the actor and
    /// mechanism with every effect, the compensation subtype with the compensating
    /// effects only (never copied onto the others) — see [`ReversalAuthority`].
    /// Writes nothing.
    pub async fn replay_reserved_reversal(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        authority: &ReversalAuthority,
    ) -> Result<LedgerReplay, JournalError> {
        let op = Replay::reversal(key, scope, authority)?;
        self.run(&op).await
    }

    /// The explicit migration call: links the existing `historical_unlinked` rows
    /// `command` names (by document id) to a new `historical_linked` reservation,
    /// after checking that each row holds exactly the proven monetary content. One
    /// commit creates the reservation (fingerprint and version stored as given, never
    /// recomputed) and relabels each row's link fields, guarded by preconditions; no
    /// monetary field is written and no row is created, so each effect stays exactly
    /// one row.
    ///
    /// `linked` when done, `already_linked` when exactly this link was made before
    /// (no write). Nothing is written and the answer is `invalid_input` on `effectIds`
    /// for a named row that is missing, canonical or already linked, `invalid_input`
    /// on `effects` for a row whose content differs, `obsolete_multi_effect_fingerprint`
    /// for a version 1 or 2 command with more than one effect (other than an internal
    /// transfer), `scope_mismatch` or `replay_mismatch` when the key holds anything
    /// else, `journal_corrupt` for a malformed row or an orphan effect in the key's
    /// first derived slot.
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

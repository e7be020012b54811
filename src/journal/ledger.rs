//! The ledger's operations on a [`Journal`]: accepting a ledger command, replaying a
//! reserved charge or reversal, pricing a charge under its reservation, and linking
//! historical effects, each one transition of the core run through the one driver.

use super::Journal;
use crate::identity::LedgerKey;
use crate::ledger::{
    FingerprintInput, HistoricalCommand, Intent, LedgerOutcome, LedgerReplay, LedgerScope,
    ReversalAuthority,
};
use command_journal_core::error::JournalError;
use command_journal_core::tools::ledger::{accept::Accept, migration::Link, replay::Replay};

impl Journal {
    /// Accepts a ledger command under its reservation identity `key`, in one
    /// transaction; `plan`'s effects are the **booked** ones (each row keeps its amount,
    /// the fingerprint nulls the family's derived amounts:
    /// [`FingerprintInput::excluding_derived_amounts`]).
    ///
    /// `accepted`: the reservation (fingerprint version 5, schema version 3, integrity
    /// digest) and every effect created atomically, a reversal counted in its
    /// originals' correction bounds. `replayed`: the reservation held the same command
    /// in `scope` under its stored version and schema; its stored effects are returned.
    /// Otherwise nothing is written and the answer is docs/ledger.md's:
    /// `scope_mismatch`, `unsupported_fingerprint_version`, `replay_mismatch` (never a
    /// generic duplicate), `reversal_exceeds_original`, `journal_corrupt` or
    /// `invalid_input`. A caller pricing a charge runs
    /// [`charge_ledger_command`](Self::charge_ledger_command) instead.
    pub async fn accept_ledger_command(
        &self,
        key: &LedgerKey,
        plan: &FingerprintInput,
        scope: &LedgerScope,
    ) -> Result<LedgerOutcome, JournalError> {
        let op = Accept::new(key, plan, scope, self.engine.now()?)?;
        self.engine.run(op).await
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
        self.engine.run(Replay::charge(key, scope, intent)?).await
    }

    /// The seed's charge flow for one caller (docs/flows/ledger-charge.md):
    /// replays by the business tuple `intent` first, before any pricing; only without
    /// a reservation calls `price` and accepts its plan, and if another worker accepted
    /// the command meanwhile (its reservation is found, or wins the commit) replays by
    /// the tuple again. An exact retry therefore answers the original effects whatever
    /// its pricing, and another tuple or scope still fails closed (`replay_mismatch`,
    /// `scope_mismatch`). `price`'s plan must carry `intent` (`invalid_input` on
    /// `intent` otherwise); `price`'s own errors are returned as they are.
    pub async fn charge_ledger_command<F, Fut, E>(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        intent: &Intent,
        price: F,
    ) -> Result<LedgerOutcome, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<FingerprintInput, E>>,
        E: From<JournalError>,
    {
        if let LedgerReplay::Replayed(original) =
            self.replay_reserved_charge(key, scope, intent).await?
        {
            return Ok(original);
        }
        let plan = price().await?;
        let op = Accept::charge(key, &plan, scope, intent, self.engine.now()?)?;
        Ok(self.engine.run(op).await?)
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
        self.engine
            .run(Replay::reversal(key, scope, authority)?)
            .await
    }

    /// The explicit migration call: links the existing `historical_unlinked` rows
    /// `command` names to a new `historical_linked` reservation once each holds exactly
    /// the proven monetary content, in one commit guarded by preconditions (the
    /// fingerprint stored as given, the reservation sealed by its integrity digest
    /// over the relabelled rows; no monetary field written, no row created).
    /// `linked`, or `already_linked` when exactly this link was made before (no
    /// write); otherwise nothing is written and the answer is docs/ledger.md's
    /// (`invalid_input` on `effectIds` or `effects`, `obsolete_multi_effect_fingerprint`,
    /// `scope_mismatch`, `replay_mismatch`, `journal_corrupt`).
    pub async fn link_historical_effects(
        &self,
        key: &LedgerKey,
        scope: &LedgerScope,
        command: &HistoricalCommand,
    ) -> Result<LedgerOutcome, JournalError> {
        let op = Link::new(key, scope, command, self.engine.now()?)?;
        self.engine.run(op).await
    }
}

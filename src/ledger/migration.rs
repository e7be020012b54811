//! The explicit migration call that links historical effects to a reservation
//! (seed 003 §VII, `HISTORICAL_LINKED`).
//!
//! The migration supplies what it lawfully proved: the reservation identity, scope,
//! command family, the accepted fingerprint and its version, the acceptance time and
//! the ordered effects. They are stored exactly as given — the fingerprint is never
//! recomputed, and versions 1–3 (which have no serializer here) may be stored; using
//! such a reservation later fails closed with `unsupported_fingerprint_version`. The
//! reservation carries the `migrationId`, every effect has lineage
//! `historical_linked` and the same `migrationId`, and all are created in one commit.
//!
//! ```text
//! reservation absent, no effect in its slots   -> create (linked)
//! reservation absent, an effect in its slots   -> journal_corrupt
//! reservation present, malformed or incomplete -> journal_corrupt
//! reservation present, other scope             -> scope_mismatch
//! reservation present, exactly this command    -> already_linked, no write
//! reservation present, anything else           -> replay_mismatch (a canonical
//!                                                 reservation is never relabelled)
//! ```
//!
//! Input rules (`invalid_input`): `fingerprintVersion` 1 to
//! [`CURRENT_FINGERPRINT_VERSION`]; `migrationId` 1–128 bytes of `[A-Za-z0-9_-]`;
//! `acceptedAt` not after the trusted now; `effects` 1–256 valid effects (an
//! `internal_transfer` exactly the debit and credit legs its transfer derives).
//! Unlike an accepted reversal, a historical reversal's original transaction is not
//! required to exist. This crate never creates `historical_unlinked` rows; its codec
//! reads them (imported by other means) and never treats them as a reservation.

use super::effect::{TransferLeg, is_migration_id, item_is_valid};
use super::fingerprint::{CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem, MAX_EFFECTS};
use super::outcome::{LedgerOutcome, Outcome};
use super::reservation::{self, LedgerScope, ReservationDocument};
use super::stored::{self, Stored};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition};

/// A historical command whose identity and fingerprint a migration proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoricalCommand {
    /// The command family the fingerprint was made for.
    pub family: CommandFamily,
    /// The accepted fingerprint, stored as given.
    pub fingerprint: Digest,
    /// The accepted fingerprint version (1 to the current version), stored as given.
    pub fingerprint_version: u32,
    /// When the command was originally accepted.
    pub accepted_at: Timestamp,
    /// The governing migration's id.
    pub migration_id: String,
    /// The historical effects, in their accepted creation order.
    pub effects: Vec<EffectPlanItem>,
}

/// A prepared link: the documents to create.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    target: Stored,
}

impl Link {
    /// Validates the historical command and builds its documents.
    pub fn new(
        key: &LedgerKey,
        scope: &LedgerScope,
        command: &HistoricalCommand,
        now: Timestamp,
    ) -> Result<Self, JournalError> {
        if !(1..=CURRENT_FINGERPRINT_VERSION).contains(&command.fingerprint_version) {
            return Err(JournalError::invalid("fingerprintVersion"));
        }
        if !is_migration_id(&command.migration_id) {
            return Err(JournalError::invalid("migrationId"));
        }
        if command.accepted_at > now {
            return Err(JournalError::invalid("acceptedAt"));
        }
        let count_ok = (1..=MAX_EFFECTS).contains(&command.effects.len());
        if !count_ok || !command.effects.iter().all(item_is_valid) {
            return Err(JournalError::invalid("effects"));
        }
        let transfer = command.family == CommandFamily::InternalTransfer;
        let items = command
            .effects
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let leg = match (transfer, i) {
                    (false, _) => None,
                    (true, 0) => Some(TransferLeg::Debit),
                    (true, _) => Some(TransferLeg::Credit),
                };
                (item.clone(), leg)
            })
            .collect();
        let reservation = ReservationDocument {
            key: key.clone(),
            reservation_id: key.reservation_id(),
            family: command.family,
            fingerprint: command.fingerprint.clone(),
            fingerprint_version: command.fingerprint_version,
            accepted_at: command.accepted_at,
            effect_ids: Vec::new(),
            scope: scope.clone(),
            migration_id: Some(command.migration_id.clone()),
        };
        let target =
            stored::build(reservation, items).map_err(|_| JournalError::invalid("effects"))?;
        Ok(Self { target })
    }

    fn reservation_id(&self) -> &Digest {
        &self.target.reservation.reservation_id
    }

    fn slots(&self) -> Vec<String> {
        stored::effect_slots(self.reservation_id(), self.target.effects.len())
    }
}

impl Transition for Link {
    type Output = LedgerOutcome;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::LedgerLink
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = vec![reservation::path(self.reservation_id())];
        paths.extend(self.slots());
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LedgerOutcome> {
        match stored::load(snapshot, self.reservation_id(), &self.slots()) {
            Err(step) => step.decision(),
            Ok(None) => {
                Decision::Mutate(self.target.creates(), self.target.outcome(Outcome::Linked))
            }
            Ok(Some(existing)) if existing.reservation.scope != self.target.reservation.scope => {
                Decision::Reject(JournalError::ScopeMismatch)
            }
            Ok(Some(existing)) if existing == self.target => {
                Decision::Observe(existing.outcome(Outcome::AlreadyLinked))
            }
            Ok(Some(_)) => Decision::Reject(JournalError::ReplayMismatch),
        }
    }
}

#[cfg(test)]
mod tests;

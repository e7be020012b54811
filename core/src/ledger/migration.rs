//! The explicit migration call that links historical effects to a reservation: a
//! pre-reservation effect whose command identity and fingerprint a governed migration
//! proved becomes `historical_linked`.
//!
//! A historical effect is a row that already sits in `ledgerTransactions` as
//! `historical_unlinked` (imported by other means, under its own legacy id). Linking
//! never writes a monetary row: the migration names the rows it proved, by document
//! id and in accepted creation order, together with what it proved about them — the
//! reservation identity, scope, command family, the accepted fingerprint and its
//! version, the acceptance time and the effects' monetary content. In one commit the
//! link then
//!
//! - creates the reservation (precondition: it does not exist), carrying the
//!   `migrationId` and listing the rows' own ids as its `effectIds`, under schema
//!   version 3 with the integrity digest over the rows as relabelled (so an edit of a
//!   linked row is found like an edit of a canonical one), and
//! - relabels each named row (precondition: its update time as read) from
//!   `historical_unlinked` to `historical_linked`, setting only `reservationId`,
//!   `effectIndex`, `migrationId` and, for an internal transfer, `transferLeg`; every
//!   monetary field and the row's recorded `acceptedAt` are written back unchanged.
//!
//! The fingerprint is stored as given, never recomputed; versions 1–3 (which have no
//! serializer here) may be stored, and using such a reservation later fails closed
//! with `unsupported_fingerprint_version`.
//!
//! ```text
//! reservation absent, an effect in its derived slot 0 -> journal_corrupt
//! reservation absent, a named row missing             -> invalid_input (effectIds)
//! reservation absent, a named row not unlinked        -> invalid_input (effectIds)
//!   (canonical, or already linked to a reservation)
//! reservation absent, a row's content differs         -> invalid_input (effects)
//! reservation absent, a named row malformed           -> journal_corrupt
//! reservation absent, every row unlinked and equal    -> link (linked)
//! reservation present, malformed or incomplete        -> journal_corrupt
//! reservation present, other scope                    -> scope_mismatch
//! reservation present, exactly this link              -> already_linked, no write
//! reservation present, anything else                  -> replay_mismatch (a canonical
//!                                                        reservation is never relabelled)
//! ```
//!
//! So a row is linked at most once: a second link of it under any other key, or by
//! any other migration, is refused, and the exact same link answers `already_linked`
//! without writing (which keeps a retry after an unknown commit outcome safe).
//! Effects that were never imported cannot be linked: creating them here could
//! duplicate an imported row that no transaction can see, so they must first be
//! imported as `historical_unlinked` rows.
//!
//! Input rules, checked before any read: `fingerprintVersion` 1 to
//! [`CURRENT_FINGERPRINT_VERSION`] (`invalid_input`); version 1 or 2 with more than
//! one effect in any family but `internal_transfer` is
//! [`ObsoleteMultiEffectFingerprint`](JournalError::ObsoleteMultiEffectFingerprint)
//! (those serializers covered principal material version 3 removed; the internal
//! transfer serializer never changed); `migrationId` 1–128 bytes of `[A-Za-z0-9_-]`;
//! `acceptedAt` not after the trusted now; `effects` 1–256 valid effects (an
//! `internal_transfer` exactly a debit and the credit it derives); `effectIds` as many
//! distinct legacy ids (1–256 bytes of `[A-Za-z0-9_-]`, never of the derived
//! `{reservationId}_{index:04}` shape) as effects.

use super::effect::{self, LedgerEffect, Lineage, TransferLeg, is_migration_id, item_is_valid};
use super::fingerprint::{CURRENT_FINGERPRINT_VERSION, CommandFamily, EffectPlanItem, MAX_EFFECTS};
use super::outcome::{LedgerOutcome, Outcome};
use super::reservation::{self, LedgerScope, ReservationDocument, ReservationSchema};
use super::stored::{self, Stored};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::LedgerKey;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition, Write};

/// A historical command whose identity and fingerprint a migration proved, and the
/// existing `historical_unlinked` rows that are its effects.
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
    /// The document ids of the existing `historical_unlinked` rows, in accepted
    /// creation order (one per effect).
    pub effect_ids: Vec<String>,
    /// The proven monetary content of those rows, in the same order; each row must
    /// hold exactly this.
    pub effects: Vec<EffectPlanItem>,
}

/// A prepared link: the reservation to create and the rows to relabel.
#[derive(Debug, Clone)]
pub struct Link {
    reservation: ReservationDocument,
    items: Vec<EffectPlanItem>,
}

fn distinct(ids: &[String]) -> bool {
    ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id))
}

impl Link {
    /// Validates the historical command; nothing is read yet.
    pub fn new(
        key: &LedgerKey,
        scope: &LedgerScope,
        command: &HistoricalCommand,
        now: Timestamp,
    ) -> Result<Self, JournalError> {
        let version = command.fingerprint_version;
        if !(1..=CURRENT_FINGERPRINT_VERSION).contains(&version) {
            return Err(JournalError::invalid("fingerprintVersion"));
        }
        if version <= 2
            && command.effects.len() > 1
            && command.family != CommandFamily::InternalTransfer
        {
            return Err(JournalError::ObsoleteMultiEffectFingerprint);
        }
        if !is_migration_id(&command.migration_id) {
            return Err(JournalError::invalid("migrationId"));
        }
        if command.accepted_at > now {
            return Err(JournalError::invalid("acceptedAt"));
        }
        let count_ok = match (command.family, command.effects.as_slice()) {
            (CommandFamily::InternalTransfer, [debit, credit]) => {
                stored::transfer_legs_agree(debit, credit)
            }
            (CommandFamily::InternalTransfer, _) => false,
            (_, effects) => (1..=MAX_EFFECTS).contains(&effects.len()),
        };
        if !count_ok || !command.effects.iter().all(item_is_valid) {
            return Err(JournalError::invalid("effects"));
        }
        let ids_ok = command.effect_ids.len() == command.effects.len()
            && command
                .effect_ids
                .iter()
                .all(|id| effect::is_legacy_effect_id(id))
            && distinct(&command.effect_ids);
        if !ids_ok {
            return Err(JournalError::invalid("effectIds"));
        }
        let reservation = ReservationDocument {
            key: key.clone(),
            reservation_id: key.reservation_id(),
            family: command.family,
            fingerprint: command.fingerprint.clone(),
            fingerprint_version: version,
            accepted_at: command.accepted_at,
            effect_ids: command.effect_ids.clone(),
            scope: scope.clone(),
            migration_id: Some(command.migration_id.clone()),
            // Sealed with its rows when the link commits (`stored::seal`).
            schema: ReservationSchema::CURRENT,
            integrity_digest: None,
        };
        Ok(Self {
            reservation,
            items: command.effects.clone(),
        })
    }

    fn reservation_id(&self) -> &Digest {
        &self.reservation.reservation_id
    }

    fn first_slot(&self) -> Vec<String> {
        stored::effect_slots(self.reservation_id(), 0)
    }

    /// The named rows as this link states them, or why they cannot be linked.
    fn linked_rows(&self, snapshot: &Snapshot) -> Result<Vec<LedgerEffect>, JournalError> {
        let transfer = self.reservation.family == CommandFamily::InternalTransfer;
        let mut rows = Vec::with_capacity(self.items.len());
        for (i, (id, item)) in self
            .reservation
            .effect_ids
            .iter()
            .zip(&self.items)
            .enumerate()
        {
            let fields = snapshot
                .get(&effect::path(id))
                .ok_or(JournalError::invalid("effectIds"))?;
            let row = LedgerEffect::parse(id, fields)?;
            if row.lineage != Lineage::HistoricalUnlinked {
                return Err(JournalError::invalid("effectIds"));
            }
            if row.item != *item {
                return Err(JournalError::invalid("effects"));
            }
            let transfer_leg = match (transfer, i) {
                (false, _) => None,
                (true, 0) => Some(TransferLeg::Debit),
                (true, _) => Some(TransferLeg::Credit),
            };
            rows.push(LedgerEffect {
                lineage: Lineage::HistoricalLinked,
                reservation_id: Some(self.reservation_id().clone()),
                effect_index: Some(i),
                migration_id: self.reservation.migration_id.clone(),
                transfer_leg,
                ..row
            });
        }
        stored::verify(&self.reservation, &rows).map_err(|_| JournalError::invalid("effects"))?;
        Ok(rows)
    }

    fn link(&self, snapshot: &Snapshot) -> Decision<LedgerOutcome> {
        let effects = match self.linked_rows(snapshot) {
            Ok(rows) => rows,
            Err(error) => return Decision::Reject(error),
        };
        let linked = match stored::seal(Stored {
            reservation: self.reservation.clone(),
            effects,
        }) {
            Ok(sealed) => sealed,
            Err(error) => return Decision::Reject(error),
        };
        let writes = std::iter::once(Write::Create {
            path: reservation::path(self.reservation_id()),
            fields: linked.reservation.encode(),
        })
        .chain(linked.effects.iter().map(|row| Write::Replace {
            path: effect::path(&row.effect_id),
            fields: row.encode(),
        }))
        .collect();
        Decision::Mutate(writes, linked.outcome(Outcome::Linked))
    }

    /// Whether `existing` (already checked against its own digest, if it has one) is
    /// exactly this link, whichever schema version the release that made it wrote.
    fn is_this_link(&self, existing: &Stored) -> bool {
        let as_written = ReservationDocument {
            schema: existing.reservation.schema,
            integrity_digest: existing.reservation.integrity_digest.clone(),
            ..self.reservation.clone()
        };
        existing.reservation == as_written
            && existing.effects.len() == self.items.len()
            && existing
                .effects
                .iter()
                .zip(&self.items)
                .all(|(row, item)| row.item == *item)
    }
}

impl Transition for Link {
    type Output = LedgerOutcome;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::LedgerLink
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = vec![reservation::path(self.reservation_id())];
        paths.extend(self.first_slot());
        paths.extend(
            self.reservation
                .effect_ids
                .iter()
                .map(|id| effect::path(id)),
        );
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LedgerOutcome> {
        match stored::load(snapshot, self.reservation_id(), &self.first_slot()) {
            Err(step) => step.decision(),
            Ok(None) => self.link(snapshot),
            Ok(Some(existing)) if existing.reservation.scope != self.reservation.scope => {
                Decision::Reject(JournalError::ScopeMismatch)
            }
            Ok(Some(existing)) if self.is_this_link(&existing) => {
                Decision::Observe(existing.outcome(Outcome::AlreadyLinked))
            }
            Ok(Some(_)) => Decision::Reject(JournalError::ReplayMismatch),
        }
    }
}

#[cfg(test)]
mod tests;

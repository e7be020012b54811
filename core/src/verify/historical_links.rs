//! Cross-document checks of historical ledger rows, which a name-ordered scan cannot
//! settle one reservation at a time: an imported row keeps its own id, so it sorts
//! apart from the reservation that links it.
//!
//! Two invariants:
//!
//! - **Links agree both ways.** A reservation that links imported rows lists their ids;
//!   each listed row must say `historical_linked` with that reservation, that index and
//!   that migration, and each imported row that says it is linked must be listed so.
//!   A listed row that does not exist is `reservation_missing_effects` at the row's
//!   path; any other disagreement (including a row listed by two reservations, which
//!   would make one effect part of two commands) is `broken_historical_link` at the
//!   row's path.
//! - **One row per monetary effect.** A historical row created by a migration (a
//!   `historical_linked` row at a reservation-derived id, the shape an earlier release
//!   wrote) whose monetary content (the thirteen effect fields) equals an imported row's
//!   represents that effect a second time: `duplicate_monetary_effect` at the created
//!   row's path.
//! - **Linked rows as sealed.** A reservation a link wrote under schema version 3
//!   carries the integrity digest over the imported rows as it relabelled them; the
//!   digest computed from the rows read must be the stored one:
//!   `effect_integrity_mismatch` at the reservation's path.
//!
//! Memory grows with the number of historical rows only (an id, a small claim, a
//! 32-byte content digest and, for a linked row, its row hash each) and with the
//! sealed historical reservations; canonical rows are never kept.

use super::report::{Finding, FindingCode};
use crate::digest::Digest;
use crate::ledger::effect::{self, LedgerEffect, Lineage};
use crate::ledger::fingerprint::{CommandFamily, FingerprintInput};
use crate::ledger::integrity;
use crate::ledger::reservation::{self, ReservationDocument};
use sha2::{Digest as _, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Where a link points: reservation, index and migration.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    reservation_id: Digest,
    index: usize,
    migration_id: Option<String>,
}

/// What the scan learnt about historical rows so far.
#[derive(Debug, Default)]
pub struct HistoricalLinks {
    /// Imported row id → the links reservations list for it (one, unless corrupt).
    listed: BTreeMap<String, Vec<Claim>>,
    /// Imported row id → the link the row states (`None`: unlinked).
    rows: BTreeMap<String, Option<Claim>>,
    /// Imported row ids that failed their codec (already reported).
    malformed: BTreeSet<String>,
    /// Content digest → the ids of the imported rows holding it.
    imported: HashMap<[u8; 32], Vec<String>>,
    /// Content digest → the paths of migration-created rows holding it.
    created: HashMap<[u8; 32], Vec<String>>,
    /// Imported linked row id → its row hash (`integrity::row_hash`).
    row_hashes: BTreeMap<String, String>,
    /// The schema-3 reservations that link imported rows, by id.
    sealed: BTreeMap<Digest, ReservationDocument>,
}

/// The digest of an effect's monetary content: its thirteen fields, canonically.
fn content(effect: &LedgerEffect) -> Option<[u8; 32]> {
    let input = FingerprintInput::effect_plan(
        CommandFamily::EffectPlan,
        5,
        vec![effect.item.clone()],
        None,
    )
    .ok()?;
    let canonical = input.canonical(5).ok()?;
    Some(Sha256::digest(canonical.as_bytes()).into())
}

impl HistoricalLinks {
    /// An imported row (an id not derived from a reservation) that parsed strictly.
    pub fn imported_row(&mut self, effect: &LedgerEffect) {
        let claim = match (effect.lineage, &effect.reservation_id, effect.effect_index) {
            (Lineage::HistoricalLinked, Some(rid), Some(index)) => Some(Claim {
                reservation_id: rid.clone(),
                index,
                migration_id: effect.migration_id.clone(),
            }),
            _ => None,
        };
        if claim.is_some()
            && let Some(hash) = integrity::row_hash(effect)
        {
            self.row_hashes.insert(effect.effect_id.clone(), hash);
        }
        self.rows.insert(effect.effect_id.clone(), claim);
        if let Some(digest) = content(effect) {
            self.imported
                .entry(digest)
                .or_default()
                .push(effect.effect_id.clone());
        }
    }

    /// An imported row that failed its codec.
    pub fn malformed_row(&mut self, id: &str) {
        self.malformed.insert(id.to_owned());
    }

    /// A row at a reservation-derived id that parsed strictly.
    pub fn derived_row(&mut self, path: &str, effect: &LedgerEffect) {
        if effect.lineage == Lineage::HistoricalLinked
            && let Some(digest) = content(effect)
        {
            self.created
                .entry(digest)
                .or_default()
                .push(path.to_owned());
        }
    }

    /// A reservation lists imported row `id` at `index`.
    pub fn listed(
        &mut self,
        reservation_id: &Digest,
        index: usize,
        migration_id: Option<&str>,
        id: &str,
    ) {
        self.listed.entry(id.to_owned()).or_default().push(Claim {
            reservation_id: reservation_id.clone(),
            index,
            migration_id: migration_id.map(str::to_owned),
        });
    }

    /// A reservation linking imported rows that carries an integrity digest: checked
    /// against the rows' hashes once every row was read.
    pub(crate) fn sealed(&mut self, reservation: &ReservationDocument) {
        if reservation.integrity_digest.is_some() {
            self.sealed
                .insert(reservation.reservation_id.clone(), reservation.clone());
        }
    }

    /// Every finding, once the whole collection was scanned.
    pub fn finish(&self) -> Vec<Finding> {
        let mut found = BTreeSet::new();
        for (rid, reservation) in &self.sealed {
            // A listed row missing or malformed is reported as such, not here.
            let hashes: Option<Vec<String>> = reservation
                .effect_ids
                .iter()
                .map(|id| self.row_hashes.get(id).cloned())
                .collect();
            if let Some(hashes) = hashes
                && reservation.integrity_digest.as_ref()
                    != Some(&integrity::sealed(reservation, &hashes))
            {
                found.insert((FindingCode::EffectIntegrityMismatch, reservation::path(rid)));
            }
        }
        let at = |id: &str| effect::path(id);
        for (id, claims) in &self.listed {
            match self.rows.get(id) {
                None if self.malformed.contains(id) => {}
                None => {
                    found.insert((FindingCode::ReservationMissingEffects, at(id)));
                }
                // Every listing must be the one link the row states (so a row listed
                // by two reservations is broken whatever it says).
                Some(stated) if claims.iter().any(|c| stated.as_ref() != Some(c)) => {
                    found.insert((FindingCode::BrokenHistoricalLink, at(id)));
                }
                Some(_) => {}
            }
        }
        for (id, stated) in &self.rows {
            if let Some(stated) = stated
                && !self.listed.get(id).is_some_and(|c| c.contains(stated))
            {
                found.insert((FindingCode::BrokenHistoricalLink, at(id)));
            }
        }
        for (digest, paths) in &self.created {
            if self.imported.get(digest).is_some_and(|ids| !ids.is_empty()) {
                for path in paths {
                    found.insert((FindingCode::DuplicateMonetaryEffect, path.clone()));
                }
            }
        }
        found
            .into_iter()
            .map(|(code, path)| Finding { code, path })
            .collect()
    }

    /// Every document a finding of [`finish`](Self::finish) was decided from (paths
    /// relative to the documents root): the row itself, the reservation it names, the
    /// reservations that list it, and for a duplicate the imported rows of the same
    /// content. Reading these again at one read time decides the finding again.
    pub fn involved(&self, findings: &[Finding]) -> BTreeSet<String> {
        let reservation = |claim: &Claim| reservation::path(&claim.reservation_id);
        let at: HashSet<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        let mut paths = BTreeSet::new();
        for (rid, sealed) in &self.sealed {
            if at.contains(reservation::path(rid).as_str()) {
                paths.insert(reservation::path(rid));
                paths.extend(sealed.effect_ids.iter().map(|id| effect::path(id)));
            }
        }
        for finding in findings {
            paths.insert(finding.path.clone());
            let Some(id) = finding
                .path
                .strip_prefix(effect::COLLECTION)
                .and_then(|rest| rest.strip_prefix('/'))
            else {
                continue;
            };
            if let Some(Some(stated)) = self.rows.get(id) {
                paths.insert(reservation(stated));
            }
            for claim in self.listed.get(id).into_iter().flatten() {
                paths.insert(reservation(claim));
            }
        }
        for (digest, created) in &self.created {
            if created.iter().any(|path| at.contains(path.as_str())) {
                for id in self.imported.get(digest).into_iter().flatten() {
                    paths.insert(effect::path(id));
                }
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests;

//! Cross-document checks of reversals against what they correct, which a name-ordered
//! scan settles only once it is complete: a reversal's reservation sorts apart from
//! the original effect it names and from that effect's correction bound
//! (`ledgerTransactions/{id}/corrections/current`, `docs/ledger.md`, "Corrections").
//!
//! Two invariants, per original effect:
//!
//! - **Never more than booked.** The magnitudes of the amounts of every reversal
//!   effect naming it (under any key, whatever the reservation's schema) sum to at
//!   most the magnitude of its own amount, and so does its bound's `reversedAmount`:
//!   otherwise `over_reversal` at the original row's path. Where the original has no
//!   bound (only reversals accepted before bounds existed name it), its amount is not
//!   known to the scan and this is not checked.
//! - **The bound counts every guarded reversal.** Each reversal effect of a canonical
//!   schema-3 reservation was counted in its original's bound in its own commit, so
//!   the bound exists, its `reversedAmount` is the sum of those effects' magnitudes and
//!   its `reversalEffectCount` their number, and its parent row exists: otherwise
//!   `correction_bound_mismatch` at the bound's path (a deleted bound, a reversal
//!   written around it, an edited total).
//!
//! Memory grows with the number of reversal effects and bounds only; no other row is
//! kept.

use super::report::{Finding, FindingCode};
use crate::digest::Digest;
use crate::ledger::correction::{self, CorrectionBound, magnitude};
use crate::ledger::effect::{self, LedgerEffect};
use crate::ledger::fingerprint::CommandFamily;
use crate::ledger::reservation::{self, ReservationDocument, ReservationSchema};
use std::collections::{BTreeMap, BTreeSet};

/// A correction bound as the scan read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Bound {
    /// `(reversed cents, reversal effects)`, or `None` when it failed its codec
    /// (already reported as malformed).
    counted: Option<(u64, u64)>,
    /// The magnitude its parent row booked, or `None` when that row does not exist
    /// (or failed its codec).
    original: Option<u64>,
}

/// A reversal effect naming an original.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    /// The reversal's reservation and the ids of its rows.
    reservation_id: Digest,
    rows: Vec<String>,
    /// The magnitude the effect returns, in cents.
    cents: u64,
    /// Whether its commit counted it in the bound (a canonical schema-3 reservation).
    guarded: bool,
}

/// What the scan learnt about reversals and correction bounds so far.
#[derive(Debug, Default)]
pub struct Corrections {
    /// Original effect id → its bound.
    bounds: BTreeMap<String, Bound>,
    /// Original effect id → the reversal effects naming it.
    claims: BTreeMap<String, Vec<Claim>>,
    /// The last row checked on its own (an imported row), with the magnitude it
    /// booked: the parent of an imported row's bound, which sorts right after it.
    last_standalone: Option<(String, Option<u64>)>,
}

impl Corrections {
    /// A row checked on its own (an imported row), `None` when it failed its codec.
    pub(crate) fn standalone_row(&mut self, id: &str, row: Option<&LedgerEffect>) {
        self.last_standalone = Some((id.to_owned(), row.map(|r| magnitude(&r.item))));
    }

    /// The bound of an imported row `original_id`, read right after that row (when it
    /// exists); `bound` is `None` when it failed its codec.
    pub(crate) fn standalone_bound(&mut self, original_id: &str, bound: Option<&CorrectionBound>) {
        let original = match &self.last_standalone {
            Some((id, booked)) if id == original_id => *booked,
            _ => None,
        };
        self.bound(original_id, bound, original);
    }

    /// The bound of `original_id`, whose parent row booked `original` (`None`: the
    /// row is missing or malformed).
    pub(crate) fn bound(
        &mut self,
        original_id: &str,
        bound: Option<&CorrectionBound>,
        original: Option<u64>,
    ) {
        self.bounds.insert(
            original_id.to_owned(),
            Bound {
                counted: bound.map(|b| (b.reversed_cents, b.reversal_effects)),
                original,
            },
        );
    }

    /// A reservation whose rows link to it structurally: a reversal's effects are
    /// claims on the originals they name.
    pub(crate) fn reservation(
        &mut self,
        reservation: &ReservationDocument,
        effects: &[LedgerEffect],
    ) {
        if reservation.family != CommandFamily::Reversal {
            return;
        }
        let guarded =
            reservation.schema == ReservationSchema::V3 && reservation.migration_id.is_none();
        for effect in effects {
            if let Some(original) = &effect.item.original_transaction_id {
                self.claims
                    .entry(original.clone())
                    .or_default()
                    .push(Claim {
                        reservation_id: reservation.reservation_id.clone(),
                        rows: reservation.effect_ids.clone(),
                        cents: magnitude(&effect.item),
                        guarded,
                    });
            }
        }
    }

    /// Every finding, once the whole collection was scanned, sorted.
    pub fn finish(&self) -> Vec<Finding> {
        let mut found = BTreeSet::new();
        let originals: BTreeSet<&String> = self.bounds.keys().chain(self.claims.keys()).collect();
        for id in originals {
            let claims = self.claims.get(id).map(Vec::as_slice).unwrap_or_default();
            let guarded: Vec<&Claim> = claims.iter().filter(|c| c.guarded).collect();
            let mismatch = (FindingCode::CorrectionBoundMismatch, correction::path(id));
            match self.bounds.get(id) {
                None => {
                    if !guarded.is_empty() {
                        found.insert(mismatch);
                    }
                }
                Some(Bound { counted: None, .. }) => {}
                Some(Bound { original: None, .. }) => {
                    found.insert(mismatch);
                }
                Some(Bound {
                    counted: Some((reversed, count)),
                    original: Some(booked),
                }) => {
                    let counted: u64 = guarded.iter().map(|c| c.cents).sum();
                    if counted != *reversed || guarded.len() as u64 != *count {
                        found.insert(mismatch);
                    }
                    let total: u64 = claims.iter().map(|c| c.cents).sum();
                    if total > *booked || reversed > booked {
                        found.insert((FindingCode::OverReversal, effect::path(id)));
                    }
                }
            }
        }
        found
            .into_iter()
            .map(|(code, path)| Finding { code, path })
            .collect()
    }

    /// Every document a finding of [`finish`](Self::finish) was decided from (paths
    /// relative to the documents root): the original row, its bound, and the
    /// reservation and rows of every reversal naming it. Reading these again at one
    /// read time decides the finding again.
    pub fn involved(&self, findings: &[Finding]) -> BTreeSet<String> {
        let mut paths = BTreeSet::new();
        for id in self.bounds.keys().chain(self.claims.keys()) {
            let at = [effect::path(id), correction::path(id)];
            if !findings.iter().any(|f| at.contains(&f.path)) {
                continue;
            }
            paths.extend(at);
            for claim in self.claims.get(id).into_iter().flatten() {
                paths.insert(reservation::path(&claim.reservation_id));
                paths.extend(claim.rows.iter().map(|row| effect::path(row)));
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests;

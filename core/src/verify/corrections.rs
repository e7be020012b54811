//! Cross-document checks of reversals against what they correct, which a name-ordered
//! scan settles only once it is complete: a reversal's reservation sorts apart from
//! the original effect it names and from that effect's correction bound
//! (`ledgerTransactions/{id}/corrections/current`, `docs/ledger.md`, "Corrections").
//!
//! Two invariants, per original effect:
//!
//! - **Never more than booked.** The magnitudes of the amounts of every reversal
//!   effect naming it (under any key, whatever the reservation's schema, including
//!   the imported rows of a reversal a migration linked, read apart from their
//!   reservation) sum to at most the magnitude of its own amount, and so does its
//!   bound's `reversedAmount`: otherwise `over_reversal` at the original row's path.
//!   Where the original has no bound (only reversals accepted before bounds existed,
//!   or linked by a migration, name it), its amount is not known to the scan and this
//!   is not checked.
//! - **The bound counts every guarded reversal.** Each reversal effect of a canonical
//!   schema-3 reservation was counted in its original's bound in its own commit, so
//!   the bound exists, its `reversedAmount` is the sum of those effects' magnitudes and
//!   its `reversalEffectCount` their number, and its parent row exists: otherwise
//!   `correction_bound_mismatch` at the bound's path (a deleted bound, a reversal
//!   written around it, an edited total).
//!
//! Memory grows with the number of reversal effects and bounds, and of imported
//! linked rows naming an original, only; no other row is kept.

use super::report::{Finding, FindingCode};
use crate::digest::Digest;
use crate::ledger::correction::entry::{self, CorrectionEntry};
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
    /// The effect's own row id.
    row: String,
    /// The magnitude the effect returns, in cents.
    cents: u64,
    /// Whether its commit counted it in the bound (a canonical schema-3 reservation).
    guarded: bool,
}

/// A log entry as the scan read it: the reversal effect it counts and the bound's
/// totals after its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Logged {
    row: String,
    reversed: u64,
    count: u64,
}

/// A correction log by position; `None` for an entry that failed its codec (already
/// reported as malformed).
type Log = BTreeMap<u64, Option<Logged>>;

/// An imported row a migration linked that names an original: a reversal effect if
/// the reservation it states is a reversal's that lists it so.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LinkedRow {
    /// The reservation, index and migration the row states.
    reservation_id: Digest,
    index: usize,
    migration_id: Option<String>,
    /// The effect it names and the magnitude it returns, in cents.
    original: String,
    cents: u64,
}

/// What the scan learnt about reversals and correction bounds so far.
#[derive(Debug, Default)]
pub struct Corrections {
    /// Original effect id → its bound.
    bounds: BTreeMap<String, Bound>,
    /// Original effect id → the reversal effects naming it.
    claims: BTreeMap<String, Vec<Claim>>,
    /// Original effect id → its log entries by position: the reversal effect counted
    /// and the bound's totals after its commit, or `None` when the entry failed its
    /// codec (already reported as malformed).
    entries: BTreeMap<String, Log>,
    /// Imported linked row id → the original it names (read apart from its reservation).
    linked_rows: BTreeMap<String, LinkedRow>,
    /// The reversal reservations a migration linked under the imported rows' own ids.
    linked_reversals: Vec<ReservationDocument>,
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
                        row: effect.effect_id.clone(),
                        cents: magnitude(&effect.item),
                        guarded,
                    });
            }
        }
    }

    /// Entry `position` of the log of `original_id`; `entry` is `None` when it failed
    /// its codec.
    pub(crate) fn entry(
        &mut self,
        original_id: &str,
        position: u64,
        entry: Option<&CorrectionEntry>,
    ) {
        self.entries
            .entry(original_id.to_owned())
            .or_default()
            .insert(
                position,
                entry.map(|e| Logged {
                    row: e.reversal_effect_id.clone(),
                    reversed: e.reversed_cents,
                    count: e.reversal_effects,
                }),
            );
    }

    /// Whether the log of `id` is the one its bound's commits wrote: with a parsed
    /// bound counting `n` effects, exactly the entries 1 to `n`, naming each of the
    /// guarded reversal effects `guarded` once, every entry holding the totals after
    /// its commit (the entries of one reversal, a run of its rows, hold the total of
    /// the effects counted up to the run's end and the run's last position), the last
    /// therefore the bound's; with no bound, no entry. A malformed entry or bound
    /// (already reported) is not judged.
    fn log_holds(&self, id: &str, counted: Option<Option<(u64, u64)>>, guarded: &[&Claim]) -> bool {
        let empty = BTreeMap::new();
        let entries = self.entries.get(id).unwrap_or(&empty);
        if entries.values().any(Option::is_none) {
            return true;
        }
        let (reversed, n) = match counted {
            None => return entries.is_empty(),
            Some(None) => return true,
            Some(Some(counted)) => counted,
        };
        let mut cents: BTreeMap<&str, u64> =
            guarded.iter().map(|c| (c.row.as_str(), c.cents)).collect();
        if cents.len() != guarded.len() || !entries.keys().copied().eq(1..=n) {
            return false;
        }
        let logged: Vec<(u64, &Logged)> = entries
            .iter()
            .filter_map(|(p, e)| e.as_ref().map(|e| (*p, e)))
            .collect();
        let reservation_of = |row: &str| row.rsplit_once('_').map(|(rid, _)| rid.to_owned());
        let mut total = 0u64;
        let mut runs = logged.chunk_by(|a, b| reservation_of(&a.1.row) == reservation_of(&b.1.row));
        let held = runs.all(|run| {
            for (_, e) in run {
                match cents.remove(e.row.as_str()) {
                    Some(c) => total = total.saturating_add(c),
                    None => return false,
                }
            }
            let end = run.last().map_or(0, |(p, _)| *p);
            run.iter()
                .all(|(_, e)| (e.reversed, e.count) == (total, end))
        });
        held && cents.is_empty() && (total, n) == (reversed, n)
    }

    /// An imported row a migration linked (read on its own, apart from its
    /// reservation): kept if it names an original.
    pub(crate) fn linked_row(&mut self, row: &LedgerEffect) {
        if let (Some(reservation_id), Some(index), Some(original)) = (
            &row.reservation_id,
            row.effect_index,
            &row.item.original_transaction_id,
        ) {
            self.linked_rows.insert(
                row.effect_id.clone(),
                LinkedRow {
                    reservation_id: reservation_id.clone(),
                    index,
                    migration_id: row.migration_id.clone(),
                    original: original.clone(),
                    cents: magnitude(&row.item),
                },
            );
        }
    }

    /// A reservation a migration linked under the imported rows' own ids: a reversal's
    /// rows are claims on the originals they name, once read ([`Self::linked_row`]).
    pub(crate) fn linked_reservation(&mut self, reservation: &ReservationDocument) {
        if reservation.family == CommandFamily::Reversal {
            self.linked_reversals.push(reservation.clone());
        }
    }

    /// Every claim: the reversal effects of reservations read with their rows, and
    /// those of linked reversals whose imported rows state exactly the link their
    /// reservation lists (a row that does not is `broken_historical_link`, and no claim).
    fn all_claims(&self) -> BTreeMap<String, Vec<Claim>> {
        let mut claims = self.claims.clone();
        for reservation in &self.linked_reversals {
            for (index, id) in reservation.effect_ids.iter().enumerate() {
                let Some(row) = self.linked_rows.get(id) else {
                    continue;
                };
                let listed = row.reservation_id == reservation.reservation_id
                    && row.index == index
                    && row.migration_id == reservation.migration_id;
                if listed {
                    claims.entry(row.original.clone()).or_default().push(Claim {
                        reservation_id: reservation.reservation_id.clone(),
                        rows: reservation.effect_ids.clone(),
                        row: id.clone(),
                        cents: row.cents,
                        guarded: false,
                    });
                }
            }
        }
        claims
    }

    /// Every finding, once the whole collection was scanned, sorted.
    pub fn finish(&self) -> Vec<Finding> {
        let mut found = BTreeSet::new();
        let all_claims = self.all_claims();
        let originals: BTreeSet<&String> = self
            .bounds
            .keys()
            .chain(all_claims.keys())
            .chain(self.entries.keys())
            .collect();
        for id in originals {
            let claims = all_claims.get(id).map(Vec::as_slice).unwrap_or_default();
            let guarded: Vec<&Claim> = claims.iter().filter(|c| c.guarded).collect();
            let mismatch = (FindingCode::CorrectionBoundMismatch, correction::path(id));
            let bound = self.bounds.get(id);
            if !self.log_holds(id, bound.map(|b| b.counted), &guarded) {
                found.insert(mismatch.clone());
            }
            match bound {
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
    /// relative to the documents root): the original row, its bound and log, and the
    /// reservation and rows of every reversal naming it. Reading these again at one
    /// read time decides the finding again.
    pub fn involved(&self, findings: &[Finding]) -> BTreeSet<String> {
        let mut paths = BTreeSet::new();
        let all_claims = self.all_claims();
        for id in self
            .bounds
            .keys()
            .chain(all_claims.keys())
            .chain(self.entries.keys())
        {
            let at = [effect::path(id), correction::path(id)];
            if !findings.iter().any(|f| at.contains(&f.path)) {
                continue;
            }
            paths.extend(at);
            // The log as the bound counts it, as the guarded claims would have it and
            // as read: decided again from all three.
            let claimed = all_claims.get(id).map_or(0, |claims| {
                claims.iter().filter(|c| c.guarded).count() as u64
            });
            let counted = match self.bounds.get(id) {
                Some(Bound {
                    counted: Some((_, n)),
                    ..
                }) => *n,
                _ => 0,
            };
            let seen = self
                .entries
                .get(id)
                .and_then(|entries| entries.keys().next_back().copied())
                .unwrap_or(0);
            for position in 1..=counted.max(seen).max(claimed) {
                paths.insert(entry::path(id, position));
            }
            for claim in all_claims.get(id).into_iter().flatten() {
                paths.insert(reservation::path(&claim.reservation_id));
                paths.extend(claim.rows.iter().map(|row| effect::path(row)));
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests;

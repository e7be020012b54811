//! `ledgerTransactions/{effectId}/corrections/current`: how much of one booked effect
//! reversals have returned so far — the document the original effect owns, through
//! which every reversal's commit is bounded by what it corrects, without the
//! immutable original row ever being written (`docs/ledger.md`, "Corrections").
//!
//! Stored fields (camelCase, all always present):
//!
//! | field | type |
//! |---|---|
//! | `correctionSchemaVersion` | integer 1 |
//! | `originalEffectId` | string, equal to the parent effect row's id |
//! | `reversedAmount` | canonical two-decimal amount above zero or zero: the sum of the magnitudes of the amounts of every reversal effect counted against the original |
//! | `reversalEffectCount` | integer 1 to 2^53-1: how many reversal effects were counted |
//!
//! The contract: partial reversals up to the remaining amount. A reversal effect
//! returns the magnitude of its `amount` (null counts as zero) of the effect its
//! `original_transaction_id` names; the reversals of one original together never
//! return more than the magnitude of the amount it booked. A new reversal's commit
//! reads this document and the original, and writes the document with the new total
//! (created with `exists: false`, or replaced under the update time read), so two
//! reversals racing under different keys serialize on it: the second re-reads and is
//! refused [`ReversalExceedsOriginal`](JournalError::ReversalExceedsOriginal) once the
//! first took what remained. A replay of an accepted reversal answers from its
//! reservation before this document is consulted, so it never counts twice.
//!
//! The same commit appends one immutable entry per effect counted to the original's
//! correction log ([`entry`]), which a later reversal reads to prove that the bound
//! it counts from is the one the log ends at (never deleted, lowered or rolled back
//! by hand).

use super::effect::{self, LedgerEffect};
use super::fingerprint::{Amount, EffectPlanItem};
use super::reservation;
use super::stored;
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use crate::transaction::{Halt, Snapshot, Write};

pub(crate) mod entry;

/// The subcollection of an effect row holding its correction bound.
pub const COLLECTION: &str = "corrections";
/// The one document of that subcollection.
pub const DOCUMENT: &str = "current";
const KIND: &str = "malformed ledger correction bound";
/// The exact field set of the document.
pub const FIELDS: [&str; 4] = [
    "correctionSchemaVersion",
    "originalEffectId",
    "reversedAmount",
    "reversalEffectCount",
];

/// The path of the correction bound of effect `original_effect_id`.
pub fn path(original_effect_id: &str) -> String {
    format!(
        "{}/{COLLECTION}/{DOCUMENT}",
        effect::path(original_effect_id)
    )
}

/// A parsed correction bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorrectionBound {
    /// The id of the effect whose reversals it counts (its parent row).
    pub original_effect_id: String,
    /// The magnitude returned so far, in cents.
    pub reversed_cents: u64,
    /// How many reversal effects were counted.
    pub reversal_effects: u64,
}

impl CorrectionBound {
    /// Parses strictly; `original_effect_id` is the parent row's id it was read under.
    pub(crate) fn parse(original_effect_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("correctionSchemaVersion", 1..=1)?;
        f.string_eq("originalEffectId", original_effect_id)?;
        let reversed = f.parsed("reversedAmount", |s| {
            Amount::parse(s)
                .filter(|a| a.as_str() == s && !a.is_negative())
                .ok_or(())
        })?;
        let max = i64::try_from(MAX_SAFE_INTEGER).unwrap_or(i64::MAX);
        let count = f.int_in("reversalEffectCount", 1..=max)?;
        Ok(Self {
            original_effect_id: original_effect_id.to_owned(),
            reversed_cents: reversed.magnitude_cents(),
            reversal_effects: u64::try_from(count)
                .map_err(|_| JournalError::corrupt_at(KIND, "reversalEffectCount"))?,
        })
    }

    /// The exact stored field map; `None` if the total has no canonical amount.
    pub(crate) fn encode(&self) -> Option<FieldMap> {
        let reversed = Amount::from_cents(self.reversed_cents)?;
        let count = i64::try_from(self.reversal_effects).ok()?;
        Some(fields::map([
            ("correctionSchemaVersion", fields::int(1)),
            (
                "originalEffectId",
                fields::string(self.original_effect_id.as_str()),
            ),
            ("reversedAmount", fields::string(reversed.as_str())),
            ("reversalEffectCount", fields::int(count)),
        ]))
    }
}

/// The magnitude, in cents, an effect's amount returns or books (null: zero).
pub(crate) fn magnitude(item: &EffectPlanItem) -> u64 {
    item.amount.as_ref().map_or(0, Amount::magnitude_cents)
}

/// How many of the effects `items` name original `id`.
pub(crate) fn naming_count(items: &[EffectPlanItem], id: &str) -> usize {
    items
        .iter()
        .filter(|item| item.original_transaction_id.as_deref() == Some(id))
        .count()
}

/// What a reversal whose effects `items` name the original effect `id` reads of it
/// with its own documents: the row, its bound and the log entries its first two
/// reversals read (`log_paths` of a bound counting none or one), and for an id derived
/// from a reservation (`{reservationId}_{index:04}`) that reservation and the slot
/// after the row, so that the original's command and its first reversals are checked
/// ([`count_reversal`]) without a follow-up read when the row is its command's last
/// effect (anything else is read after).
pub(crate) fn original_paths(id: &str, items: &[EffectPlanItem]) -> Vec<String> {
    let mut paths = vec![effect::path(id), path(id)];
    paths.extend(log_paths(id, 1, naming_count(items, id)));
    let derived = id.split_once('_').and_then(|(rid, index)| {
        let rid = Digest::parse(rid)?;
        let index: usize = index.parse().ok()?;
        (effect::effect_id(&rid, index) == id).then_some((rid, index))
    });
    if let Some((rid, index)) = derived {
        paths.push(reservation::path(&rid));
        paths.push(effect::path(&effect::effect_id(&rid, index + 1)));
    }
    paths
}

/// Whether the original row `row` is the one its command accepted: a row linked to a
/// reservation is read with that reservation and every row it lists, whose structural
/// links, integrity digest and rebuilt fingerprint must hold (`stored::load`) and
/// which must list the row, so that no reversal is counted against an amount edited
/// after acceptance (`journal_corrupt`). A row no migration linked has no reservation
/// to check it against: its recorded amount stands.
fn check_original(snapshot: &Snapshot, row: &LedgerEffect) -> Result<(), Halt> {
    let Some(rid) = &row.reservation_id else {
        return Ok(());
    };
    let reservation_path = reservation::path(rid);
    if !snapshot.was_read(&reservation_path) {
        return Err(Halt::Read(vec![reservation_path]));
    }
    match stored::load(snapshot, rid, &[])? {
        Some(command) if command.effects.contains(row) => Ok(()),
        Some(_) => Err(Halt::Reject(JournalError::corrupt(
            "ledger effects do not link to their reservation",
        ))),
        None => Err(Halt::Reject(JournalError::corrupt(
            "ledger effect without its reservation",
        ))),
    }
}

/// An original effect as a new reversal read it: the row (checked against its
/// reservation) and its bound.
struct Read {
    row: LedgerEffect,
    bound: Option<CorrectionBound>,
}

/// The entries a new reversal counting `adding` effects reads of the log of `id`
/// whose bound counts `count` effects: the entry at that count (none when zero) and
/// the `adding` positions after it, which it creates (the first must not exist).
fn log_paths(id: &str, count: u64, adding: usize) -> Vec<String> {
    let first = count.max(1);
    let last = count.saturating_add(adding.max(1) as u64);
    (first..=last)
        .map(|position| entry::path(id, position))
        .collect()
}

/// Whether the bound `bound` of `id` (none: nothing counted) is the one its log
/// ends at: the entry at its count holds its totals and none of the `adding` entries
/// after it, which the new reversal creates, exists. A bound deleted, lowered or
/// rolled back by hand under entries that remain is not.
fn log_agrees(
    snapshot: &Snapshot,
    id: &str,
    bound: Option<&CorrectionBound>,
    adding: usize,
) -> Result<(), Halt> {
    let (reversed, count) = bound.map_or((0, 0), |b| (b.reversed_cents, b.reversal_effects));
    let disagrees = || {
        Halt::Reject(JournalError::corrupt(
            "ledger correction bound disagrees with its log",
        ))
    };
    let next = count.saturating_add(1);
    let beyond = count.saturating_add(adding.max(1) as u64);
    if (next..=beyond).any(|position| snapshot.get(&entry::path(id, position)).is_some()) {
        return Err(disagrees());
    }
    if count > 0 {
        let fields = snapshot
            .get(&entry::path(id, count))
            .ok_or_else(disagrees)?;
        let last = entry::CorrectionEntry::parse(id, &count.to_string(), fields)?;
        if (last.reversed_cents, last.reversal_effects) != (reversed, count) {
            return Err(disagrees());
        }
    }
    Ok(())
}

/// Reads original `id`, named by `adding` effects of the new reversal, from
/// `snapshot`; `Halt::Read` for what is still to read.
fn read_original(snapshot: &Snapshot, id: &str, adding: usize) -> Result<Read, Halt> {
    let Some(fields) = snapshot.get(&effect::path(id)) else {
        // A bound below a row that is gone: the row was reversed, then deleted.
        return Err(Halt::Reject(match snapshot.get(&path(id)) {
            Some(_) => JournalError::corrupt("ledger correction bound without its effect"),
            None => JournalError::invalid("effects"),
        }));
    };
    let row = LedgerEffect::parse(id, fields)?;
    let bound = snapshot
        .get(&path(id))
        .map(|fields| CorrectionBound::parse(id, fields))
        .transpose()?;
    let count = bound.as_ref().map_or(0, |b| b.reversal_effects);
    let mut more: Vec<String> = log_paths(id, count, adding)
        .into_iter()
        .filter(|p| !snapshot.was_read(p))
        .collect();
    match check_original(snapshot, &row) {
        Ok(()) => {}
        Err(Halt::Read(paths)) => more.extend(paths),
        Err(reject) => return Err(reject),
    }
    if more.is_empty() {
        Ok(Read { row, bound })
    } else {
        Err(Halt::Read(more))
    }
}

/// The writes that count the effects `items` of a new reversal (reservation
/// `reversal`) against the originals they name (`originals`, deduplicated, in
/// order), read in `snapshot` with their bounds and logs: each bound created or
/// replaced with the new totals, and one log entry created per effect counted.
///
/// An original that does not exist is `invalid_input` on `effects` (`journal_corrupt`
/// when its bound exists: the row was reversed, then deleted); a malformed one, one
/// that is not what its reservation accepted ([`check_original`], read as a follow-up
/// when needed), a malformed bound or entry, a bound whose total exceeds what its
/// original booked (no commit writes one) or a bound its log does not end at
/// (`log_agrees`) `journal_corrupt`; a total that would exceed what an original
/// booked [`ReversalExceedsOriginal`](JournalError::ReversalExceedsOriginal). The
/// original rows and their reservations are only read.
pub(crate) fn count_reversal(
    snapshot: &Snapshot,
    reversal: &Digest,
    originals: &[String],
    items: &[EffectPlanItem],
) -> Result<Vec<Write>, Halt> {
    let mut read = Vec::with_capacity(originals.len());
    let mut more = Vec::new();
    for id in originals {
        match read_original(snapshot, id, naming_count(items, id)) {
            Ok(original) => read.push(original),
            Err(Halt::Read(paths)) => more.extend(paths),
            Err(reject) => return Err(reject),
        }
    }
    if !more.is_empty() {
        more.sort();
        more.dedup();
        return Err(Halt::Read(more));
    }
    let cannot_store = || Halt::Reject(JournalError::invalid("effects"));
    let mut writes = Vec::with_capacity(originals.len() * 2);
    for (id, Read { row, bound }) in originals.iter().zip(read) {
        let naming: Vec<(usize, &EffectPlanItem)> = items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.original_transaction_id.as_deref() == Some(id.as_str()))
            .collect();
        let requested: u64 = naming.iter().map(|(_, item)| magnitude(item)).sum();
        let booked = magnitude(&row.item);
        let (reversed, count) = bound
            .as_ref()
            .map_or((0, 0), |b| (b.reversed_cents, b.reversal_effects));
        if reversed > booked {
            // No commit ever counts past what the original booked.
            return Err(Halt::Reject(JournalError::corrupt(
                "ledger correction bound exceeds its effect",
            )));
        }
        log_agrees(snapshot, id, bound.as_ref(), naming.len())?;
        let total = reversed.saturating_add(requested);
        if total > booked {
            return Err(Halt::Reject(JournalError::ReversalExceedsOriginal));
        }
        let next = CorrectionBound {
            original_effect_id: id.clone(),
            reversed_cents: total,
            reversal_effects: count.saturating_add(naming.len() as u64),
        };
        let fields = next.encode().ok_or_else(cannot_store)?;
        let bound_path = path(id);
        writes.push(match bound {
            None => Write::Create {
                path: bound_path,
                fields,
            },
            Some(_) => Write::Replace {
                path: bound_path,
                fields,
            },
        });
        for (position, (index, _)) in (count.saturating_add(1)..).zip(&naming) {
            let logged = entry::CorrectionEntry {
                original_effect_id: id.clone(),
                position,
                reversal_effect_id: effect::effect_id(reversal, *index),
                reversed_cents: next.reversed_cents,
                reversal_effects: next.reversal_effects,
            };
            writes.push(Write::Create {
                path: entry::path(id, position),
                fields: logged.encode().ok_or_else(cannot_store)?,
            });
        }
    }
    Ok(writes)
}

#[cfg(test)]
mod tests;

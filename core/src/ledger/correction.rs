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

use super::effect::{self, LedgerEffect};
use super::fingerprint::{Amount, EffectPlanItem};
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use crate::transaction::{Snapshot, Write};

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

/// The writes that count a new reversal's effects `items` against the originals they
/// name (`originals`, deduplicated, in order), read in `snapshot` with their bounds.
///
/// An original that does not exist is `invalid_input` on `effects`; a malformed one
/// or a malformed bound `journal_corrupt`; a total that would exceed what an original
/// booked [`ReversalExceedsOriginal`](JournalError::ReversalExceedsOriginal). The
/// original rows are only read.
pub(crate) fn count_reversal(
    snapshot: &Snapshot,
    originals: &[String],
    items: &[EffectPlanItem],
) -> Result<Vec<Write>, JournalError> {
    let mut writes = Vec::with_capacity(originals.len());
    for id in originals {
        let fields = snapshot
            .get(&effect::path(id))
            .ok_or(JournalError::invalid("effects"))?;
        let original = LedgerEffect::parse(id, fields)?;
        let naming: Vec<&EffectPlanItem> = items
            .iter()
            .filter(|item| item.original_transaction_id.as_deref() == Some(id.as_str()))
            .collect();
        let requested: u64 = naming.iter().map(|item| magnitude(item)).sum();
        let bound_path = path(id);
        let current = snapshot
            .get(&bound_path)
            .map(|fields| CorrectionBound::parse(id, fields))
            .transpose()?;
        let (reversed, count) = current
            .as_ref()
            .map_or((0, 0), |b| (b.reversed_cents, b.reversal_effects));
        let total = reversed.saturating_add(requested);
        if total > magnitude(&original.item) {
            return Err(JournalError::ReversalExceedsOriginal);
        }
        let next = CorrectionBound {
            original_effect_id: id.clone(),
            reversed_cents: total,
            reversal_effects: count.saturating_add(naming.len() as u64),
        };
        let fields = next.encode().ok_or(JournalError::invalid("effects"))?;
        writes.push(match current {
            None => Write::Create {
                path: bound_path,
                fields,
            },
            Some(_) => Write::Replace {
                path: bound_path,
                fields,
            },
        });
    }
    Ok(writes)
}

#[cfg(test)]
mod tests;

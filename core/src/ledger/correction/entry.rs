//! `ledgerTransactions/{effectId}/corrections/{position}`: the correction log of one
//! booked effect. Every reversal effect counted against the effect leaves one
//! immutable entry, at positions 1, 2, … in the order counted, created (`exists:
//! false`) in the same commit as the bound (`corrections/current`) it agrees with.
//!
//! The bound alone cannot show that it was deleted or rolled back by hand: a new
//! reversal would count from zero, or from the lowered total. The log shows it: a new
//! reversal reads the entry at the bound's count, which must hold the bound's totals,
//! and the entry after it, which must not exist (the first entry, when there is no
//! bound). A bound deleted, lowered or rolled back under entries that remain is
//! therefore `journal_corrupt` and nothing is written; only an edit that also removes
//! every entry it contradicts goes unseen by the accept, and `verify` finds that one
//! (`docs/ledger.md`, "Corrections bounded by what they correct").
//!
//! Stored fields (camelCase, all always present):
//!
//! | field | type |
//! |---|---|
//! | `correctionSchemaVersion` | integer 1 |
//! | `originalEffectId` | string, equal to the parent effect row's id |
//! | `position` | integer 1 to 2^53-1, equal to the document id (decimal, no leading zero) |
//! | `reversalEffectId` | the id of the reversal effect counted at this position |
//! | `reversedAmount` | the bound's `reversedAmount` after the commit that wrote the entry |
//! | `reversalEffectCount` | the bound's `reversalEffectCount` after that commit (at least `position`) |

use super::COLLECTION;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::identity::MAX_SAFE_INTEGER;
use crate::ledger::effect;
use crate::ledger::fingerprint::Amount;

const KIND: &str = "malformed ledger correction entry";
/// The exact field set of an entry.
pub const FIELDS: [&str; 6] = [
    "correctionSchemaVersion",
    "originalEffectId",
    "position",
    "reversalEffectId",
    "reversedAmount",
    "reversalEffectCount",
];

/// The path of entry `position` of the correction log of effect `original_effect_id`.
pub fn path(original_effect_id: &str, position: u64) -> String {
    format!(
        "{}/{COLLECTION}/{position}",
        effect::path(original_effect_id)
    )
}

/// The position a document id names: a decimal from 1 to 2^53-1 without a leading
/// zero; `None` for any other id (`current` included).
pub(crate) fn position_of(document_id: &str) -> Option<u64> {
    let canonical = !document_id.is_empty()
        && !document_id.starts_with('0')
        && document_id.bytes().all(|b| b.is_ascii_digit());
    document_id
        .parse::<u64>()
        .ok()
        .filter(|p| canonical && (1..=MAX_SAFE_INTEGER).contains(p))
}

/// A parsed correction log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorrectionEntry {
    /// The effect whose log it belongs to (its parent row).
    pub original_effect_id: String,
    /// Its position in the log (its document id).
    pub position: u64,
    /// The reversal effect counted at this position.
    pub reversal_effect_id: String,
    /// The bound's total after the commit that wrote it, in cents.
    pub reversed_cents: u64,
    /// The bound's count after that commit.
    pub reversal_effects: u64,
}

impl CorrectionEntry {
    /// Parses strictly; `original_effect_id` and `document_id` are the parent row's
    /// id and the id it was read under.
    pub(crate) fn parse(
        original_effect_id: &str,
        document_id: &str,
        map: &FieldMap,
    ) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("correctionSchemaVersion", 1..=1)?;
        f.string_eq("originalEffectId", original_effect_id)?;
        let max = i64::try_from(MAX_SAFE_INTEGER).unwrap_or(i64::MAX);
        let position = f.int_in("position", 1..=max)?;
        let position = u64::try_from(position)
            .ok()
            .filter(|p| position_of(document_id) == Some(*p))
            .ok_or_else(|| f.corrupt("position"))?;
        let reversal_effect_id = f.parsed("reversalEffectId", |s| {
            if effect::is_linked_effect_id(s) {
                Ok(s.to_owned())
            } else {
                Err(())
            }
        })?;
        let reversed = f.parsed("reversedAmount", |s| {
            Amount::parse(s)
                .filter(|a| a.as_str() == s && !a.is_negative())
                .ok_or(())
        })?;
        let count = u64::try_from(f.int_in("reversalEffectCount", 1..=max)?)
            .ok()
            .filter(|count| *count >= position)
            .ok_or_else(|| f.corrupt("reversalEffectCount"))?;
        Ok(Self {
            original_effect_id: original_effect_id.to_owned(),
            position,
            reversal_effect_id,
            reversed_cents: reversed.magnitude_cents(),
            reversal_effects: count,
        })
    }

    /// The exact stored field map; `None` if a number or the total cannot be stored.
    pub(crate) fn encode(&self) -> Option<FieldMap> {
        let reversed = Amount::from_cents(self.reversed_cents)?;
        Some(fields::map([
            ("correctionSchemaVersion", fields::int(1)),
            (
                "originalEffectId",
                fields::string(self.original_effect_id.as_str()),
            ),
            ("position", fields::int(i64::try_from(self.position).ok()?)),
            (
                "reversalEffectId",
                fields::string(self.reversal_effect_id.as_str()),
            ),
            ("reversedAmount", fields::string(reversed.as_str())),
            (
                "reversalEffectCount",
                fields::int(i64::try_from(self.reversal_effects).ok()?),
            ),
        ]))
    }
}

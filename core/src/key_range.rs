//! Key ranges: the command key-hash space cut into `count` contiguous ranges, so that
//! `count` recovery tasks (a Cloud Run job's `CLOUD_RUN_TASK_INDEX` of
//! `CLOUD_RUN_TASK_COUNT`) each list and settle one range and none twice.
//!
//! A key hash is 64 lowercase hex digits; a range is cut at its first 16 digits read
//! as a 64-bit number `p`: range `i` of `n` holds the hashes with
//! `⌊i · 2⁶⁴ / n⌋ ≤ p < ⌊(i + 1) · 2⁶⁴ / n⌋` (the last one up to `2⁶⁴`). The cuts
//! strictly increase for every `n` up to [`MAX_KEY_RANGES`] (each range spans at least
//! `⌊2⁶⁴ / n⌋ ≥ 2⁵⁰` prefixes), the first starts at 0 and the last ends at `2⁶⁴`, so
//! the ranges partition the space exactly whether or not `n` divides a power of 16.
//! The cuts are written as 16 hex digits: a hash compares with a cut as text exactly
//! as its prefix compares with it as a number, so a listing bounds its query by name
//! (`checkoutRequests/{cut}`) and keeps exactly the range's commands.

use crate::digest::Digest;
use crate::error::JournalError;
use serde::Serialize;
use std::fmt;

/// The most ranges the space can be cut into: Cloud Run runs at most 10,000 tasks in
/// one job execution.
pub const MAX_KEY_RANGES: u32 = 10_000;

/// One range of the key-hash space: the `index`-th of `count` (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct KeyRange {
    index: u32,
    count: u32,
}

impl Default for KeyRange {
    fn default() -> Self {
        Self::ALL
    }
}

impl KeyRange {
    /// The whole space: one task owns every command.
    pub const ALL: Self = Self { index: 0, count: 1 };

    /// Range `index` of `count`; `invalid_input` on `keyRangeCount` unless
    /// `1 ≤ count ≤` [`MAX_KEY_RANGES`], then on `keyRangeIndex` unless
    /// `index < count`.
    pub fn new(index: u64, count: u64) -> Result<Self, JournalError> {
        let count = u32::try_from(count)
            .ok()
            .filter(|n| (1..=MAX_KEY_RANGES).contains(n))
            .ok_or(JournalError::invalid("keyRangeCount"))?;
        let index = u32::try_from(index)
            .ok()
            .filter(|i| *i < count)
            .ok_or(JournalError::invalid("keyRangeIndex"))?;
        Ok(Self { index, count })
    }

    /// Its position among the ranges, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many ranges the space is cut into.
    pub fn count(self) -> u32 {
        self.count
    }

    /// The cut before range `i` of `count` (`0 < i < count`), as 16 hex digits.
    fn cut(count: u32, i: u32) -> String {
        let at = (u128::from(i) << 64) / u128::from(count);
        format!("{:016x}", u64::try_from(at).unwrap_or(u64::MAX))
    }

    /// The first 16 hex digits a hash of the range may start with; `None` for the
    /// first range, which starts before every name.
    pub fn start(self) -> Option<String> {
        (self.index > 0).then(|| Self::cut(self.count, self.index))
    }

    /// The 16 hex digits the range ends before; `None` for the last range, which
    /// ends after every name.
    pub fn end(self) -> Option<String> {
        (self.index + 1 < self.count).then(|| Self::cut(self.count, self.index + 1))
    }

    /// Whether the command `hash` belongs to this range.
    pub fn contains(self, hash: &Digest) -> bool {
        let prefix = &hash.as_str()[..16];
        self.start().is_none_or(|start| prefix >= start.as_str())
            && self.end().is_none_or(|end| prefix < end.as_str())
    }

    /// The range's document id: `{index}-of-{count}` (`0-of-1` for the whole space).
    pub fn id(self) -> String {
        format!("{}-of-{}", self.index, self.count)
    }

    /// The range whose [`id`](Self::id) is exactly `id` (canonical decimals, no
    /// leading zero), or `None`.
    pub(crate) fn from_id(id: &str) -> Option<Self> {
        let (index, count) = id.split_once("-of-")?;
        let range = Self::new(decimal(index)?, decimal(count)?).ok()?;
        (range.id() == id).then_some(range)
    }
}

/// A canonical decimal: digits only, no leading zero but for `0` itself.
fn decimal(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// `INDEX/COUNT`, as `command-journal pending --key-range` takes it.
impl fmt::Display for KeyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// `INDEX/COUNT` in decimal (`0/2`): `invalid_input` on `keyRange` for any other
/// shape, then on `keyRangeCount` or `keyRangeIndex` as [`KeyRange::new`].
impl std::str::FromStr for KeyRange {
    type Err = JournalError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let shape = JournalError::invalid("keyRange");
        let (index, count) = text.split_once('/').ok_or(shape)?;
        let number = |part: &str| {
            (!part.is_empty() && part.len() <= 9 && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse::<u64>().ok())
                .flatten()
                .ok_or(shape)
        };
        Self::new(number(index)?, number(count)?)
    }
}

#[cfg(test)]
mod tests;

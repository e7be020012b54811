//! The lease's fence as a type: what an acquisition hands out and what complete, fail
//! and the send layer require back.

use crate::document::MAX_REVISION;
use crate::error::JournalError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// The fence of one lease holding: 1 for the first acquisition, one more for each
/// takeover after expiry. Only the current holder's fence can finish the command or
/// send; a stale one is `stale_fence`. Serializes as the bare integer.
///
/// ```
/// use command_journal_core::FenceEpoch;
/// let fence = FenceEpoch::new(2)?;
/// assert_eq!(fence.get(), 2);
/// assert!(FenceEpoch::new(0).is_err());
/// # Ok::<(), command_journal_core::error::JournalError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FenceEpoch(i64);

impl FenceEpoch {
    /// The fence of the first acquisition.
    pub const FIRST: Self = Self(1);

    /// A fence from its number (for instance one a caller stored or read from input):
    /// 1 to 9,999,999,999, else `invalid_input` on `expectedFenceEpoch`.
    pub fn new(value: i64) -> Result<Self, JournalError> {
        if (1..=MAX_REVISION).contains(&value) {
            Ok(Self(value))
        } else {
            Err(JournalError::invalid("expectedFenceEpoch"))
        }
    }

    /// A fence from its number, unchecked: for a number known to be in range (a test's
    /// or a bench's), or a fuzzer's arbitrary one; built only with the `testing`
    /// feature. The strict document parsers and every input use [`new`](Self::new).
    #[cfg(any(test, feature = "testing"))]
    pub fn stored(value: i64) -> Self {
        Self(value)
    }

    /// The fence's number.
    pub fn get(self) -> i64 {
        self.0
    }

    /// The fence of the takeover after this one; `None` past 9,999,999,999.
    pub fn next(self) -> Option<Self> {
        Self::new(self.0 + 1).ok()
    }
}

impl fmt::Display for FenceEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for FenceEpoch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

impl<'de> Deserialize<'de> for FenceEpoch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = i64::deserialize(deserializer)?;
        Self::new(value).map_err(|_| serde::de::Error::custom("fence epoch out of range"))
    }
}

/// A fence compares with its number, so `fence == 2` reads as it means.
impl PartialEq<i64> for FenceEpoch {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

/// A fence orders with its number, so `fence >= 2` reads as it means.
impl PartialOrd<i64> for FenceEpoch {
    fn partial_cmp(&self, other: &i64) -> Option<Ordering> {
        self.0.partial_cmp(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fences_in_range_are_accepted() {
        assert_eq!(FenceEpoch::new(1).map(FenceEpoch::get), Ok(1));
        assert_eq!(
            FenceEpoch::new(MAX_REVISION).map(FenceEpoch::get),
            Ok(MAX_REVISION)
        );
        for bad in [0, -1, MAX_REVISION + 1, i64::MIN, i64::MAX] {
            assert_eq!(
                FenceEpoch::new(bad),
                Err(JournalError::invalid("expectedFenceEpoch"))
            );
        }
    }

    #[test]
    fn serializes_as_the_bare_integer_and_parses_only_in_range() {
        let fence = FenceEpoch::new(7).unwrap();
        assert_eq!(serde_json::to_string(&fence).unwrap(), "7");
        assert_eq!(serde_json::from_str::<FenceEpoch>("7").unwrap(), fence);
        assert!(serde_json::from_str::<FenceEpoch>("0").is_err());
        assert!(fence == 7 && fence > 6 && fence.to_string() == "7");
        assert!(FenceEpoch::FIRST < fence);
    }

    #[test]
    fn the_next_fence_stops_at_the_maximum() {
        assert_eq!(FenceEpoch::FIRST.next(), FenceEpoch::new(2).ok());
        assert_eq!(FenceEpoch::stored(MAX_REVISION).next(), None);
    }
}

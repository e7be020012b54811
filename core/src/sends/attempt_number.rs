//! The attempt number as a type: what a permit hands out and what
//! `record_send_outcome` and `reconcile_send` require back.

use crate::error::JournalError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// Largest attempt number (four decimal digits).
pub(crate) const MAX_ATTEMPT: i64 = 9_999;

/// The number of one provider attempt of a command: 1 for the first, one more for
/// each attempt opened after the previous one was proven absent, at most
/// 9,999. Serializes as the bare integer.
///
/// ```
/// use command_journal_core::sends::AttemptNumber;
/// let attempt = AttemptNumber::new(2)?;
/// assert_eq!(attempt.get(), 2);
/// assert!(attempt > AttemptNumber::FIRST && attempt == 2);
/// assert!(AttemptNumber::new(0).is_err());
/// # Ok::<(), command_journal_core::error::JournalError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttemptNumber(i64);

impl AttemptNumber {
    /// Attempt 1, whose key is the command's provider idempotency key.
    pub const FIRST: Self = Self(1);

    /// An attempt from its number (for instance one a caller read from input or a
    /// permit): 1 to 9,999, else `invalid_input` on `attempt`.
    pub fn new(value: i64) -> Result<Self, JournalError> {
        if (1..=MAX_ATTEMPT).contains(&value) {
            Ok(Self(value))
        } else {
            Err(JournalError::invalid("attempt"))
        }
    }

    /// The attempt's number.
    pub fn get(self) -> i64 {
        self.0
    }

    /// The attempt after this one; `None` after 9,999.
    pub fn next(self) -> Option<Self> {
        Self::new(self.0 + 1).ok()
    }
}

impl fmt::Display for AttemptNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for AttemptNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

impl<'de> Deserialize<'de> for AttemptNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = i64::deserialize(deserializer)?;
        Self::new(value).map_err(|_| serde::de::Error::custom("attempt number out of range"))
    }
}

/// An attempt compares with its number, so `attempt == 1` reads as it means.
impl PartialEq<i64> for AttemptNumber {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

/// An attempt orders with its number, so `attempt >= 2` reads as it means.
impl PartialOrd<i64> for AttemptNumber {
    fn partial_cmp(&self, other: &i64) -> Option<Ordering> {
        self.0.partial_cmp(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_attempts_in_range_are_accepted() {
        assert_eq!(AttemptNumber::new(1), Ok(AttemptNumber::FIRST));
        assert_eq!(
            AttemptNumber::new(MAX_ATTEMPT).map(AttemptNumber::get),
            Ok(MAX_ATTEMPT)
        );
        for bad in [0, -1, MAX_ATTEMPT + 1, i64::MIN, i64::MAX] {
            assert_eq!(
                AttemptNumber::new(bad),
                Err(JournalError::invalid("attempt")),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_next_attempt_stops_at_the_maximum() {
        assert_eq!(AttemptNumber::FIRST.next(), AttemptNumber::new(2).ok());
        let last = AttemptNumber::new(MAX_ATTEMPT).expect("the maximum");
        assert_eq!(last.next(), None);
    }

    #[test]
    fn serializes_as_the_bare_integer_and_parses_only_in_range() {
        let attempt = AttemptNumber::new(7).expect("in range");
        assert_eq!(serde_json::to_string(&attempt).expect("json"), "7");
        assert_eq!(
            serde_json::from_str::<AttemptNumber>("7").expect("in range"),
            attempt
        );
        for bad in ["0", "-1", "10000"] {
            assert!(serde_json::from_str::<AttemptNumber>(bad).is_err(), "{bad}");
        }
        assert!(attempt == 7 && attempt > 6 && attempt.to_string() == "7");
        assert!(AttemptNumber::FIRST < attempt);
    }
}

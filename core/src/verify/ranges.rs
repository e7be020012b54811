//! Consistent ranges of a verify scan: the journal's name space cut at hash prefixes,
//! so that each range can be read at its own read time.
//!
//! Every document of one command sorts under its command key hash in both command
//! scans (`checkoutRequests/{hash}` and everything below it,
//! `auditEvents/commerce_command_{hash}_…`), and every ledger effect derived from a
//! reservation sorts under that reservation id (`ledgerTransactions/{id}_{index}`).
//! Cutting each collection at the same four-hex-digit prefixes therefore never splits a
//! command or a reservation. The first range starts at a collection's first possible
//! name and the last ends after its last, so the ranges cover every document name
//! below it, journal or not (a stray id is reported by whichever range it sorts into).

use crate::error::JournalError;

/// How many consistent ranges the library's `verify_in_ranges` reads, each
/// at its own server read time. One range (the default) is one read time for the
/// whole journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanRanges(u16);

/// The cuts are four hex digits: 65,536 possible prefixes.
const PREFIXES: u32 = 1 << 16;

/// One range: the hash prefixes it starts at (inclusive) and ends before; `None` is
/// unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    /// The first hash prefix of the range (inclusive); `None` from the start.
    pub start: Option<String>,
    /// The hash prefix the range ends before; `None` to the end.
    pub end: Option<String>,
}

impl ScanRanges {
    /// The whole journal at one read time.
    pub const ONE: Self = Self(1);

    /// The most ranges a scan can be split into.
    pub const MAX: u16 = 4096;

    /// `count` ranges of (nearly) equal hash space; `invalid_input` (`ranges`) unless
    /// `1 ≤ count ≤` [`MAX`](Self::MAX).
    pub fn new(count: u32) -> Result<Self, JournalError> {
        match u16::try_from(count) {
            Ok(n) if (1..=Self::MAX).contains(&n) => Ok(Self(n)),
            _ => Err(JournalError::invalid("ranges")),
        }
    }

    /// The number of ranges.
    pub fn count(self) -> u16 {
        self.0
    }
}

/// The ranges of `ranges` in name order: adjacent, without gaps, the first and last
/// unbounded.
pub fn bounds(ranges: ScanRanges) -> Vec<Bounds> {
    let n = u32::from(ranges.0);
    let cut = |i: u32| (0 < i && i < n).then(|| format!("{:04x}", i * PREFIXES / n));
    (0..n)
        .map(|i| Bounds {
            start: cut(i),
            end: cut(i + 1),
        })
        .collect()
}

/// A decimal count, as `verify --ranges` takes it; `invalid_input` (`ranges`) for
/// anything but an integer from 1 to [`MAX`](ScanRanges::MAX).
impl std::str::FromStr for ScanRanges {
    type Err = JournalError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(JournalError::invalid("ranges"));
        }
        text.parse::<u32>()
            .map_err(|_| JournalError::invalid("ranges"))
            .and_then(Self::new)
    }
}

impl Default for ScanRanges {
    fn default() -> Self {
        Self::ONE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_to_max_ranges_are_accepted() {
        for bad in [0, 4097, 65_536, u32::MAX] {
            assert!(matches!(
                ScanRanges::new(bad),
                Err(JournalError::InvalidInput { field: "ranges" })
            ));
        }
        assert_eq!(ScanRanges::new(1).map(ScanRanges::count).ok(), Some(1));
        assert_eq!(
            ScanRanges::new(4096).map(ScanRanges::count).ok(),
            Some(4096)
        );
        assert_eq!(ScanRanges::default(), ScanRanges::ONE);
    }

    #[test]
    fn only_decimal_counts_parse() {
        for good in ["1", "16", "0016", "4096"] {
            assert!(good.parse::<ScanRanges>().is_ok(), "{good}");
        }
        for bad in [
            "",
            "0",
            "4097",
            "-1",
            "+1",
            " 1",
            "1.0",
            "abc",
            "99999999999",
        ] {
            assert!(
                matches!(
                    bad.parse::<ScanRanges>(),
                    Err(JournalError::InvalidInput { field: "ranges" })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn one_range_is_unbounded() {
        assert_eq!(
            bounds(ScanRanges::ONE),
            vec![Bounds {
                start: None,
                end: None
            }]
        );
    }

    #[test]
    fn ranges_are_adjacent_increasing_and_cover_every_name() {
        for n in [2, 3, 7, 16, 100, 255, 256, 1000, 4095, 4096] {
            let bounds = ScanRanges::new(n).map(bounds).unwrap_or_default();
            assert_eq!(bounds.len(), n as usize);
            assert_eq!(bounds[0].start, None);
            assert_eq!(bounds[n as usize - 1].end, None);
            for pair in bounds.windows(2) {
                assert_eq!(pair[0].end, pair[1].start, "{n} ranges");
                let cut = pair[0].end.as_deref().unwrap_or_default();
                assert_eq!(cut.len(), 4);
                assert!(
                    cut.bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                );
            }
            for range in &bounds {
                if let (Some(start), Some(end)) = (&range.start, &range.end) {
                    assert!(start < end, "{n} ranges: {start} < {end}");
                }
            }
        }
    }

    #[test]
    fn sixteen_ranges_cut_at_the_first_hex_digit() {
        let cuts: Vec<String> = ScanRanges::new(16)
            .map(bounds)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|b| b.start)
            .collect();
        let expected: Vec<String> = "123456789abcdef"
            .chars()
            .map(|c| format!("{c}000"))
            .collect();
        assert_eq!(cuts, expected);
    }

    /// Every hash falls in exactly one range, and all names of one command in the same.
    #[test]
    fn every_hash_prefix_falls_in_exactly_one_range() {
        let bounds = ScanRanges::new(7).map(bounds).unwrap_or_default();
        for prefix in (0..PREFIXES).step_by(97).chain([0, PREFIXES - 1]) {
            let hash = format!("{prefix:04x}{}", "0".repeat(60));
            let inside = |b: &Bounds| {
                b.start.as_deref().is_none_or(|s| hash.as_str() >= s)
                    && b.end.as_deref().is_none_or(|e| hash.as_str() < e)
            };
            assert_eq!(bounds.iter().filter(|b| inside(b)).count(), 1, "{hash}");
        }
    }
}

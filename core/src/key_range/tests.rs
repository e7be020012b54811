//! The ranges partition the key-hash space exactly, for counts that divide a power of
//! 16 and for those that do not: every hash is in exactly one range, the one its
//! prefix falls in, and text bounds agree with the numeric ones; the inputs are
//! validated field by field.

use super::*;
use proptest::prelude::*;

fn hash(prefix: u64, tail: &str) -> Digest {
    Digest::parse(&format!("{prefix:016x}{tail}")).expect("a hash")
}

/// The ranges of `count` holding `h`.
fn holders(count: u32, h: &Digest) -> Vec<u32> {
    (0..count)
        .filter(|i| {
            KeyRange::new(u64::from(*i), u64::from(count))
                .expect("range")
                .contains(h)
        })
        .collect()
}

/// The counts tried: powers of 16 and 2, and counts dividing no power of 16.
const COUNTS: [u32; 14] = [1, 2, 3, 4, 5, 7, 10, 15, 16, 17, 255, 1000, 9999, 10_000];

#[test]
fn the_cuts_increase_strictly_from_zero_to_the_end_of_the_space() {
    for count in COUNTS {
        let ranges: Vec<KeyRange> = (0..count)
            .map(|i| KeyRange::new(u64::from(i), u64::from(count)).expect("range"))
            .collect();
        assert_eq!(ranges[0].start(), None, "{count}");
        assert_eq!(ranges[count as usize - 1].end(), None, "{count}");
        for pair in ranges.windows(2) {
            // Adjacent, without gap or overlap.
            assert_eq!(pair[0].end(), pair[1].start(), "{count}");
        }
        let cuts: Vec<String> = ranges.iter().filter_map(|r| r.end()).collect();
        assert_eq!(cuts.len(), count as usize - 1);
        assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{count}");
        assert!(
            cuts.iter()
                .all(|c| c.len() == 16 && c != "0000000000000000")
        );
    }
}

#[test]
fn every_hash_at_and_around_each_cut_is_in_exactly_one_range() {
    let tails = ["0".repeat(48), "f".repeat(48)];
    for count in [1, 2, 3, 7, 10, 17, 1000] {
        let mut probes = vec![0, u64::MAX];
        for i in 1..count {
            let cut = u64::from_str_radix(&KeyRange::cut(count, i), 16).expect("hex");
            probes.extend([cut - 1, cut, cut + 1]);
        }
        for prefix in probes {
            for tail in &tails {
                let h = hash(prefix, tail);
                let held = holders(count, &h);
                assert_eq!(held.len(), 1, "{count} {h}");
                // The one whose numeric bounds hold the prefix.
                let i = held[0];
                let low = (u128::from(i) << 64) / u128::from(count);
                let high = (u128::from(i + 1) << 64) / u128::from(count);
                assert!(low <= u128::from(prefix) && u128::from(prefix) < high);
            }
        }
    }
}

#[test]
fn three_ranges_cut_where_a_third_of_the_space_falls() {
    let cut = |i| KeyRange::new(i, 3).expect("range").start();
    assert_eq!(cut(1).as_deref(), Some("5555555555555555"));
    assert_eq!(cut(2).as_deref(), Some("aaaaaaaaaaaaaaaa"));
    let h = hash(0x5555_5555_5555_5554, &"f".repeat(48));
    assert_eq!(holders(3, &h), [0]);
    assert_eq!(
        holders(3, &hash(0x5555_5555_5555_5555, &"0".repeat(48))),
        [1]
    );
}

proptest! {
    #[test]
    fn any_hash_is_in_exactly_one_range_and_text_bounds_agree(
        prefix in any::<u64>(),
        tail in "[0-9a-f]{48}",
        count in 1u32..=MAX_KEY_RANGES,
    ) {
        let h = hash(prefix, &tail);
        // The range the prefix falls in is this one or the next (at a cut that is
        // not a whole number of prefixes).
        let near = u32::try_from((u128::from(prefix) * u128::from(count)) >> 64).expect("index");
        let range = |i: u32| KeyRange::new(u64::from(i), u64::from(count)).expect("range");
        let held: Vec<u32> = [near.checked_sub(1), Some(near), Some(near + 1)]
            .into_iter()
            .flatten()
            .filter(|i| *i < count && range(*i).contains(&h))
            .collect();
        prop_assert_eq!(held.len(), 1);
        let held = range(held[0]);
        // By name, as the listing's query bounds it.
        prop_assert!(held.start().is_none_or(|s| h.as_str() >= s.as_str()));
        prop_assert!(held.end().is_none_or(|e| h.as_str() < e.as_str()));
    }
}

#[test]
fn counts_and_indexes_out_of_range_are_refused_by_field() {
    let field = |index, count| match KeyRange::new(index, count) {
        Err(JournalError::InvalidInput { field }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(0, 0), "keyRangeCount");
    assert_eq!(field(0, 10_001), "keyRangeCount");
    assert_eq!(field(0, u64::MAX), "keyRangeCount");
    assert_eq!(field(2, 2), "keyRangeIndex");
    assert_eq!(field(u64::MAX, 4), "keyRangeIndex");
    assert_eq!(KeyRange::new(0, 1).ok(), Some(KeyRange::ALL));
    assert_eq!(KeyRange::default(), KeyRange::ALL);
    assert!(KeyRange::new(9_999, 10_000).is_ok());
}

#[test]
fn ids_and_text_round_trip_and_only_canonical_forms_parse() {
    let range = KeyRange::new(3, 16).expect("range");
    assert_eq!(range.id(), "3-of-16");
    assert_eq!(KeyRange::from_id("3-of-16"), Some(range));
    for bad in [
        "03-of-16", "3-of-016", "16-of-16", "3-of-0", "-of-1", "a-of-2", "0of1",
    ] {
        assert_eq!(KeyRange::from_id(bad), None, "{bad}");
    }
    assert_eq!(range.to_string(), "3/16");
    assert_eq!("3/16".parse::<KeyRange>().ok(), Some(range));
    let parsed = |text: &str| text.parse::<KeyRange>().map_err(|e| e.to_string());
    for bad in [
        "",
        "3",
        "3/",
        "/16",
        "a/2",
        "1/2/3",
        " 1/2",
        "-1/2",
        "1/9999999999",
    ] {
        assert!(
            matches!(
                bad.parse::<KeyRange>(),
                Err(JournalError::InvalidInput { field: "keyRange" })
            ),
            "{bad}: {:?}",
            parsed(bad)
        );
    }
    assert!(matches!(
        "2/2".parse::<KeyRange>(),
        Err(JournalError::InvalidInput {
            field: "keyRangeIndex"
        })
    ));
    assert!(matches!(
        "0/0".parse::<KeyRange>(),
        Err(JournalError::InvalidInput {
            field: "keyRangeCount"
        })
    ));
}

/// For every count the space may be cut into: the first range starts at the first
/// hash, the last ends at `ffff…`, and around every cut checked (all of them for the
/// smallest and largest counts, the first, middle and last for the others) the hash
/// whose 16-digit prefix equals the cut opens the range, the one just below closes
/// the range before it, and the cut is the exact numeric one.
#[test]
fn every_count_from_one_to_the_most_partitions_the_space_at_prefix_granularity() {
    let (zero, top) = (hash(0, &"0".repeat(48)), hash(u64::MAX, &"f".repeat(48)));
    for count in 1..=MAX_KEY_RANGES {
        let range = |i: u32| KeyRange::new(u64::from(i), u64::from(count)).expect("range");
        let first = range(0);
        let last = range(count - 1);
        assert_eq!(first.start(), None, "{count}");
        assert_eq!(last.end(), None, "{count}");
        assert!(first.contains(&zero) && last.contains(&top), "{count}");
        assert_eq!(first.contains(&top), count == 1, "{count}");
        assert_eq!(last.contains(&zero), count == 1, "{count}");
        let every = count <= 300 || count > MAX_KEY_RANGES - 10;
        let cuts: Vec<u32> = match every {
            true => (1..count).collect(),
            false => vec![1, count / 2, count - 1],
        };
        for i in cuts {
            let start = range(i).start().expect("a cut");
            assert_eq!(range(i - 1).end().as_deref(), Some(start.as_str()));
            let at = u64::from_str_radix(&start, 16).expect("hex");
            let exact = (u128::from(i) << 64) / u128::from(count);
            assert_eq!(u128::from(at), exact, "{count} {i}");
            for tail in ["0".repeat(48), "f".repeat(48)] {
                let (on, below) = (hash(at, &tail), hash(at - 1, &tail));
                assert!(range(i).contains(&on) && !range(i - 1).contains(&on));
                assert!(range(i - 1).contains(&below) && !range(i).contains(&below));
                // As the listing's names bound it: the cut sorts before the hash on it.
                assert!(start.as_str() < on.as_str() && below.as_str() < start.as_str());
            }
        }
    }
}

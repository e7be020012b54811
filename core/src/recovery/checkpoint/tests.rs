//! The checkpoint over the in-memory store: recorded where a run stopped, read back
//! strictly, a forged or misplaced one refused; two runs racing on one range's
//! checkpoint leave the one further along; a run that started from an explicit
//! position moves it there.

use super::*;
use crate::document::value::{Value, ValueType};
use crate::testing::Store;

fn h(n: u8) -> Digest {
    Digest::parse(&format!("{n:02x}").repeat(32)).expect("hash")
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn record(read: Option<u8>, from: Option<u8>, stopped: u8) -> CheckpointRecord {
    CheckpointRecord::new(
        KeyRange::ALL,
        read.map(h),
        from.map(h),
        h(stopped),
        at(1_900_000_000),
    )
}

fn read(store: &mut Store, range: KeyRange) -> Result<Option<Checkpoint>, JournalError> {
    store.answer(&CheckpointRead::new(range))
}

#[test]
fn a_run_records_where_it_stopped_and_the_next_reads_it_back() {
    let mut store = Store::new();
    assert_eq!(read(&mut store, KeyRange::ALL), Ok(None));
    assert_eq!(store.answer(&record(None, None, 7)), Ok(Recorded::Recorded));
    let stored = read(&mut store, KeyRange::ALL)
        .expect("read")
        .expect("a checkpoint");
    assert_eq!(stored.after, h(7));
    assert_eq!(stored.range, KeyRange::ALL);
    assert_eq!(stored.recorded_at, at(1_900_000_000));
    assert!(store.get("recoveryCheckpoints/0-of-1").is_some());
    // The next run read 7, wrapped around and stopped at 3.
    assert_eq!(
        store.answer(&record(Some(7), Some(7), 3)),
        Ok(Recorded::Recorded)
    );
    assert_eq!(
        read(&mut store, KeyRange::ALL)
            .expect("read")
            .map(|c| c.after),
        Some(h(3))
    );
    // Stopping where it already stands writes nothing.
    let before = store.update_time("recoveryCheckpoints/0-of-1");
    assert_eq!(
        store.answer(&record(Some(3), Some(3), 3)),
        Ok(Recorded::Unchanged)
    );
    assert_eq!(store.update_time("recoveryCheckpoints/0-of-1"), before);
    // No raw value: the key hash, the range and the time only.
    let stored = store.get("recoveryCheckpoints/0-of-1").expect("stored");
    let mut names: Vec<&str> = stored.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "after",
            "checkpointSchemaVersion",
            "keyRangeCount",
            "keyRangeIndex",
            "recordedAt"
        ]
    );
}

#[test]
fn an_explicit_start_moves_the_checkpoint_to_where_that_run_stopped() {
    let mut store = Store::new();
    store.answer(&record(None, None, 200)).expect("recorded");
    // The run read 200 but was told to start after 10; it stopped at 20, behind 200.
    assert_eq!(
        store.answer(&record(Some(200), Some(10), 20)),
        Ok(Recorded::Recorded)
    );
    assert_eq!(
        read(&mut store, KeyRange::ALL)
            .expect("read")
            .map(|c| c.after),
        Some(h(20))
    );
}

#[test]
fn two_runs_racing_on_one_checkpoint_leave_the_one_further_along() {
    for (slow, fast, kept) in [(5u8, 9u8, 9u8), (9, 5, 9)] {
        let mut store = Store::new();
        store.answer(&record(None, None, 2)).expect("recorded");
        // Both read 2 and started after it; their commits land in order, the second
        // loses its precondition, reads again and decides again.
        let answers = store.race(&[
            record(Some(2), Some(2), slow),
            record(Some(2), Some(2), fast),
        ]);
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        assert_eq!(
            read(&mut store, KeyRange::ALL)
                .expect("read")
                .map(|c| c.after),
            Some(h(kept))
        );
    }
    // Across the wrap: from 200, 3 (after wrapping) is further than 250.
    let mut store = Store::new();
    store.answer(&record(None, None, 200)).expect("recorded");
    let answers = store.race(&[
        record(Some(200), Some(200), 3),
        record(Some(200), Some(200), 250),
    ]);
    assert_eq!(answers, [Ok(Recorded::Recorded), Ok(Recorded::Kept)]);
    assert_eq!(
        read(&mut store, KeyRange::ALL)
            .expect("read")
            .map(|c| c.after),
        Some(h(3))
    );
    // Two first runs both creating it: one creates, the other decides against it.
    let mut store = Store::new();
    let answers = store.race(&[record(None, None, 4), record(None, None, 6)]);
    assert_eq!(answers, [Ok(Recorded::Recorded), Ok(Recorded::Recorded)]);
    assert_eq!(
        read(&mut store, KeyRange::ALL)
            .expect("read")
            .map(|c| c.after),
        Some(h(6))
    );
}

#[test]
fn a_checkpoint_is_per_range_and_a_position_outside_the_range_is_refused() {
    let mut store = Store::new();
    let first = KeyRange::new(0, 2).expect("range");
    let second = KeyRange::new(1, 2).expect("range");
    // A hash of each half of the space.
    let hash_in = |range: KeyRange| {
        let digit = if range == first { "1" } else { "9" };
        let h = Digest::parse(&digit.repeat(64)).expect("hash");
        assert!(range.contains(&h));
        h
    };
    for range in [first, second] {
        let op = CheckpointRecord::new(range, None, None, hash_in(range), at(1));
        assert_eq!(store.answer(&op), Ok(Recorded::Recorded));
    }
    assert!(store.get("recoveryCheckpoints/0-of-2").is_some());
    assert!(store.get("recoveryCheckpoints/1-of-2").is_some());
    assert_eq!(
        read(&mut store, KeyRange::ALL),
        Ok(None),
        "another partition's own"
    );
    let outside = CheckpointRecord::new(first, None, None, hash_in(second), at(1));
    assert!(matches!(
        store.answer(&outside),
        Err(JournalError::Internal { .. })
    ));
}

fn text(s: &str) -> Value {
    Value {
        value_type: Some(ValueType::StringValue(s.to_owned())),
    }
}

#[test]
fn a_forged_or_misplaced_checkpoint_fails_closed_and_nothing_is_written() {
    let valid = || {
        Checkpoint {
            range: KeyRange::new(1, 2).expect("range"),
            after: Digest::parse(&"9".repeat(64)).expect("hash"),
            recorded_at: at(5),
        }
        .encode()
    };
    let cases: Vec<(&str, FieldMap)> = vec![
        // Another range's id than the one stored.
        ("0-of-2", valid()),
        ("1-of-3", valid()),
        ("01-of-2", valid()),
        ("1-of-2", {
            let mut m = valid();
            m.insert("note".into(), text("x"));
            m
        }),
        ("1-of-2", {
            let mut m = valid();
            m.insert("after".into(), text(&"1".repeat(64)));
            m
        }),
        ("1-of-2", {
            let mut m = valid();
            m.insert("after".into(), text("CANARYnot-a-hash"));
            m
        }),
        ("1-of-2", {
            let mut m = valid();
            m.insert("keyRangeCount".into(), text("2"));
            m
        }),
        ("1-of-2", {
            let mut m = valid();
            m.insert("checkpointSchemaVersion".into(), fields::int(2));
            m
        }),
        ("1-of-2", {
            let mut m = valid();
            m.remove("recordedAt");
            m
        }),
    ];
    assert!(Checkpoint::parse("1-of-2", &valid()).is_ok());
    for (id, map) in cases {
        assert!(
            matches!(
                Checkpoint::parse(id, &map),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{id} {map:?}"
        );
    }
    // Stored at the range's path, a forged one stops the read and the record alike.
    let mut store = Store::new();
    let mut forged = valid();
    forged.insert("after".into(), text(&"1".repeat(64)));
    store.insert("recoveryCheckpoints/1-of-2", forged.clone());
    let range = KeyRange::new(1, 2).expect("range");
    assert!(matches!(
        read(&mut store, range),
        Err(JournalError::JournalCorrupt { .. })
    ));
    let op = CheckpointRecord::new(
        range,
        None,
        None,
        Digest::parse(&"9".repeat(64)).expect("hash"),
        at(6),
    );
    assert!(matches!(
        store.answer(&op),
        Err(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(
        store.get("recoveryCheckpoints/1-of-2"),
        Some(&forged),
        "nothing written"
    );
}

/// Every other way a stored checkpoint can be wrong (a range or position of another
/// task count, a field of another type, a schema past or before 1, a position one
/// prefix outside its range) is `journal_corrupt`, and so is the read and the record
/// of a run of that range: the run fails before any lookup and writes nothing. The
/// prefix just inside each edge is accepted.
#[test]
fn any_other_wrong_checkpoint_fails_the_read_and_the_record_alike() {
    let range = KeyRange::new(1, 2).expect("range");
    let edge = |digits: &str| Digest::parse(&format!("{digits}{}", "0".repeat(48)));
    let valid = |after: &str| {
        Checkpoint {
            range,
            after: edge(after).expect("hash"),
            recorded_at: at(5),
        }
        .encode()
    };
    let with = |name: &str, value: Value| {
        let mut m = valid("8000000000000000");
        m.insert(name.into(), value);
        m
    };
    let double = |d: f64| Value {
        value_type: Some(ValueType::DoubleValue(d)),
    };
    assert!(Checkpoint::parse("1-of-2", &valid("8000000000000000")).is_ok());
    assert!(Checkpoint::parse("1-of-2", &valid("ffffffffffffffff")).is_ok());
    let cases: Vec<(&str, FieldMap)> = vec![
        // The stored index or count another range's.
        ("1-of-2", with("keyRangeIndex", fields::int(0))),
        ("1-of-2", with("keyRangeCount", fields::int(3))),
        ("1-of-2", with("keyRangeIndex", fields::int(-1))),
        ("1-of-2", with("keyRangeCount", fields::int(i64::MAX))),
        // Ids of no range.
        ("2-of-2", valid("8000000000000000")),
        ("1-of-10001", valid("8000000000000000")),
        ("1-of-2 ", valid("8000000000000000")),
        // Fields of another type.
        ("1-of-2", with("keyRangeIndex", double(1.0))),
        ("1-of-2", with("keyRangeIndex", text("1"))),
        ("1-of-2", with("checkpointSchemaVersion", text("1"))),
        ("1-of-2", with("after", fields::int(9))),
        ("1-of-2", with("recordedAt", text("2030-01-01T00:00:00Z"))),
        // A schema before or past the one this code reads.
        ("1-of-2", with("checkpointSchemaVersion", fields::int(0))),
        ("1-of-2", with("checkpointSchemaVersion", fields::int(2))),
        // A position one prefix before the range, or not a hash.
        (
            "1-of-2",
            with(
                "after",
                text(&format!("7fffffffffffffff{}", "f".repeat(48))),
            ),
        ),
        ("1-of-2", with("after", text(&"A".repeat(64)))),
        ("1-of-2", with("after", text(&"9".repeat(63)))),
        ("1-of-2", with("after", text(""))),
    ];
    for (id, map) in cases {
        assert!(
            matches!(
                Checkpoint::parse(id, &map),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{id} {map:?}"
        );
        if id != "1-of-2" {
            continue;
        }
        let mut store = Store::new();
        store.insert("recoveryCheckpoints/1-of-2", map.clone());
        assert!(
            matches!(
                read(&mut store, range),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{map:?}"
        );
        let stopped = edge("9000000000000000").expect("hash");
        let op = CheckpointRecord::new(range, None, None, stopped, at(6));
        assert!(
            matches!(store.answer(&op), Err(JournalError::JournalCorrupt { .. })),
            "{map:?}"
        );
        assert_eq!(store.get("recoveryCheckpoints/1-of-2"), Some(&map));
    }
}

/// The circle of `bytes` (key-hash order) that starts after `from`.
fn circle(bytes: &std::collections::BTreeSet<u8>, from: Option<u8>) -> Vec<u8> {
    let all: Vec<(u8, Digest)> = bytes.iter().map(|b| (*b, h(*b))).collect();
    crate::recovery::schedule::circular(all, from.map(h).as_ref(), |(_, d)| d)
        .into_iter()
        .map(|(b, _)| b)
        .collect()
}

fn stored_at(store: &mut Store) -> Option<Digest> {
    read(store, KeyRange::ALL).expect("read").map(|c| c.after)
}

proptest::proptest! {
    /// Two runs that read the same checkpoint, each handling a prefix of its circle,
    /// leave, in either commit order, exactly the last command of the longer prefix:
    /// never behind either run, never past a command neither handled, across the
    /// wrap too. The one exception is a whole lap that ends on the checkpoint itself.
    #[test]
    fn two_runs_from_one_checkpoint_leave_the_end_of_what_they_covered(
        bytes in proptest::collection::btree_set(proptest::prelude::any::<u8>(), 1..24),
        start in proptest::option::of(proptest::prelude::any::<u8>()),
        a in 1usize..24,
        b in 1usize..24,
    ) {
        let order = circle(&bytes, start);
        let (a, b) = (a.min(order.len()), b.min(order.len()));
        let ops = [record(start, start, order[a - 1]), record(start, start, order[b - 1])];
        for reversed in [false, true] {
            let mut store = Store::new();
            if let Some(s) = start {
                store.answer(&record(None, None, s)).expect("recorded");
            }
            let mut ops = ops.to_vec();
            if reversed {
                ops.reverse();
            }
            let answers = store.race(&ops);
            proptest::prop_assert!(answers.iter().all(Result::is_ok), "{:?}", answers);
            let kept = stored_at(&mut store);
            if a.max(b) == order.len() && start == order.last().copied() {
                // A whole lap back at the checkpoint records nothing (`Unchanged`),
                // so the other run's position may stay: one it handled, just after
                // that lap's end, and both covered the whole circle.
                let either = [Some(h(order[a - 1])), Some(h(order[b - 1]))];
                proptest::prop_assert!(either.contains(&kept), "{:?}", kept);
            } else {
                proptest::prop_assert_eq!(kept, Some(h(order[a.max(b) - 1])));
            }
        }
    }

    /// A slow run `A` that read `c0` records after `B` (from `c0`) and then `C` (from
    /// where `B` stopped) did: what it keeps is `A`'s or `C`'s position, and along the
    /// circle from `c0` no command up to it was left unhandled by all three unless they
    /// had together handled every one.
    #[test]
    fn a_slow_run_behind_two_others_never_moves_past_a_command_none_handled(
        bytes in proptest::collection::btree_set(proptest::prelude::any::<u8>(), 1..24),
        start in proptest::option::of(proptest::prelude::any::<u8>()),
        la in 1usize..24,
        lb in 1usize..24,
        lc in 1usize..24,
    ) {
        let from_c0 = circle(&bytes, start);
        let n = from_c0.len();
        let (la, lb, lc) = (la.min(n), lb.min(n), lc.min(n));
        let mut store = Store::new();
        if let Some(s) = start {
            store.answer(&record(None, None, s)).expect("recorded");
        }
        let b = from_c0[lb - 1];
        store.answer(&record(start, start, b)).expect("b");
        let from_b = circle(&bytes, Some(b));
        let c = from_b[lc - 1];
        store.answer(&record(Some(b), Some(b), c)).expect("c");
        let a = from_c0[la - 1];
        store.answer(&record(start, start, a)).expect("a");
        let kept = stored_at(&mut store).expect("a checkpoint");
        proptest::prop_assert!(kept == h(a) || kept == h(c), "{kept:?}");
        let mut handled: std::collections::BTreeSet<u8> = from_c0[..la.max(lb)].iter().copied().collect();
        handled.extend(&from_b[..lc]);
        let at = from_c0.iter().position(|x| h(*x) == kept).expect("listed");
        proptest::prop_assert!(
            handled.len() == n || from_c0[..=at].iter().all(|x| handled.contains(x)),
            "{from_c0:?} a {a} b {b} c {c} kept {kept:?}"
        );
    }
}

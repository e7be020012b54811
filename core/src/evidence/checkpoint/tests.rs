//! The evidence checkpoint over the in-memory store: created, read back strictly,
//! advanced forward only (a point at or before it writes nothing; two runs racing
//! leave the later point); a malformed document refused with nothing written; the
//! window clamped to the provider's retention; a run's tally holding the checkpoint
//! back at the oldest item not taken.

use super::*;
use crate::document::value::{Value, ValueType};
use crate::testing::Store;

const NOW: i64 = 1_900_000_000;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_micros(seconds * 1_000_000).expect("time")
}

fn feed() -> Feed {
    Feed::new("stripe:acct_CANARYfeed01:test").expect("a feed")
}

fn path() -> String {
    format!("{COLLECTION}/{}", feed().id())
}

fn advance(to: i64, now: i64) -> EvidenceCheckpointAdvance {
    EvidenceCheckpointAdvance::new(feed(), to, at(now))
}

fn read(store: &mut Store) -> Result<Option<EvidenceCheckpoint>, JournalError> {
    store.answer(&EvidenceCheckpointRead::new(feed()))
}

#[test]
fn a_feed_is_stored_by_its_digest_only_and_a_bad_name_is_refused() {
    let id = feed().id().clone();
    assert_eq!(
        id,
        frame_digest(DOMAIN, 1, &[b"stripe:acct_CANARYfeed01:test".as_slice()])
    );
    assert_ne!(
        id,
        Feed::new("stripe:acct_other:test")
            .expect("feed")
            .id()
            .clone()
    );
    assert!(!format!("{:?}", feed()).contains("CANARY"));
    for bad in ["", "a b", "acct/x", "é", &"a".repeat(MAX_FEED_BYTES + 1)] {
        assert_eq!(
            Feed::new(bad),
            Err(JournalError::invalid("feed")),
            "{bad:?}"
        );
    }
    assert!(Feed::new(&"a".repeat(MAX_FEED_BYTES)).is_ok());
}

#[test]
fn a_checkpoint_is_created_read_back_and_advanced_forward_only() {
    let mut store = Store::new();
    assert_eq!(read(&mut store), Ok(None));
    assert_eq!(
        store.answer(&advance(NOW - 600, NOW)),
        Ok(Advance::Advanced)
    );
    assert_eq!(
        read(&mut store),
        Ok(Some(EvidenceCheckpoint {
            list_from: NOW - 600,
            recorded_at: at(NOW),
        }))
    );
    let stored = store.get(&path()).expect("stored").clone();
    let mut names: Vec<&str> = stored.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["checkpointSchemaVersion", "listFrom", "recordedAt"]);
    // Forward: replaced.
    assert_eq!(store.answer(&advance(NOW, NOW + 60)), Ok(Advance::Advanced));
    assert_eq!(
        read(&mut store).map(|c| c.map(|c| c.list_from)),
        Ok(Some(NOW))
    );
    // The same point, or an earlier one: nothing written.
    let before = store.update_time(&path());
    for to in [NOW, NOW - 1, 0] {
        assert_eq!(
            store.answer(&advance(to, NOW + 120)),
            Ok(Advance::Kept),
            "{to}"
        );
    }
    assert_eq!(store.update_time(&path()), before);
    assert_eq!(
        read(&mut store).map(|c| c.map(|c| c.list_from)),
        Ok(Some(NOW))
    );
}

#[test]
fn a_point_after_the_journals_time_or_before_the_epoch_is_refused() {
    let mut store = Store::new();
    for to in [NOW + 1, -1] {
        assert_eq!(
            store.answer(&advance(to, NOW)),
            Err(JournalError::invalid("listFrom")),
            "{to}"
        );
    }
    assert!(store.get(&path()).is_none());
    assert_eq!(store.answer(&advance(NOW, NOW)), Ok(Advance::Advanced));
}

#[test]
fn two_runs_racing_leave_the_later_point_whatever_order_they_commit_in() {
    for (first, second) in [(NOW - 100, NOW - 50), (NOW - 50, NOW - 100)] {
        let mut store = Store::new();
        store.answer(&advance(NOW - 1_000, NOW)).expect("seeded");
        let answers = store.race(&[advance(first, NOW + 10), advance(second, NOW + 10)]);
        assert!(answers.iter().all(Result::is_ok), "{answers:?}");
        assert_eq!(
            read(&mut store).map(|c| c.map(|c| c.list_from)),
            Ok(Some(NOW - 50))
        );
    }
    // Two first runs both creating it: the later point stays.
    let mut store = Store::new();
    let answers = store.race(&[advance(NOW - 10, NOW), advance(NOW - 20, NOW)]);
    assert_eq!(answers, [Ok(Advance::Advanced), Ok(Advance::Kept)]);
    assert_eq!(
        read(&mut store).map(|c| c.map(|c| c.list_from)),
        Ok(Some(NOW - 10))
    );
}

#[test]
fn a_malformed_checkpoint_is_corrupt_for_the_read_and_the_advance_and_nothing_is_written() {
    let valid = EvidenceCheckpoint {
        list_from: NOW - 300,
        recorded_at: at(NOW),
    }
    .encode();
    let with = |name: &str, value: Value| {
        let mut map = valid.clone();
        map.insert(name.into(), value);
        map
    };
    let mut missing = valid.clone();
    missing.remove("recordedAt");
    let cases = [
        ("an extra field", with("feed", fields::string("stripe"))),
        ("a field missing", missing),
        ("version 2", with("checkpointSchemaVersion", fields::int(2))),
        ("listFrom as text", with("listFrom", fields::string("5"))),
        (
            "listFrom as a double",
            with(
                "listFrom",
                Value {
                    value_type: Some(ValueType::DoubleValue(5.0)),
                },
            ),
        ),
        ("listFrom negative", with("listFrom", fields::int(-1))),
        (
            "listFrom after recordedAt",
            with("listFrom", fields::int(NOW + 1)),
        ),
        (
            "recordedAt as an integer",
            with("recordedAt", fields::int(NOW)),
        ),
    ];
    for (case, map) in cases {
        let mut store = Store::new();
        store.insert(path(), map.clone());
        let before = store.update_time(&path());
        assert!(
            matches!(read(&mut store), Err(JournalError::JournalCorrupt { .. })),
            "{case}"
        );
        assert!(
            matches!(
                store.answer(&advance(NOW, NOW + 60)),
                Err(JournalError::JournalCorrupt { .. })
            ),
            "{case}"
        );
        assert_eq!(
            store.update_time(&path()),
            before,
            "{case}: nothing written"
        );
        assert_eq!(store.get(&path()), Some(&map), "{case}");
    }
    // The valid one beside them reads.
    let mut store = Store::new();
    store.insert(path(), valid);
    assert!(matches!(read(&mut store), Ok(Some(_))));
}

#[test]
fn the_window_starts_at_the_checkpoint_or_the_default_and_is_clamped_to_retention() {
    const DAY: i64 = 86_400;
    let checkpoint = |list_from| EvidenceCheckpoint {
        list_from,
        recorded_at: at(NOW),
    };
    // One-line cases: checkpoint, expected from, clamped.
    let cases = [
        (None, NOW - DAY, false),
        (Some(NOW - 3 * DAY), NOW - 3 * DAY, false),
        (Some(NOW - 30 * DAY), NOW - 30 * DAY, false),
        (Some(NOW - 30 * DAY - 1), NOW - 30 * DAY, true),
        (Some(0), NOW - 30 * DAY, true),
        (Some(NOW - 60), NOW - 60, false),
    ];
    for (stored, from, clamped) in cases {
        let stored = stored.map(checkpoint);
        assert_eq!(
            window(stored.as_ref(), NOW, DAY, 30 * DAY),
            Window { from, clamped },
            "{stored:?}"
        );
    }
    // A default longer than the retention is clamped too.
    assert_eq!(
        window(None, NOW, 31 * DAY, 30 * DAY),
        Window {
            from: NOW - 30 * DAY,
            clamped: true
        }
    );
}

#[test]
fn a_run_proves_the_newest_item_or_holds_back_at_the_oldest_not_taken() {
    // One-line cases: items (created, taken) in listing order, finished, resume point.
    type Case<'a> = (&'a [(i64, bool)], bool, Option<i64>);
    let cases: [Case<'_>; 7] = [
        (&[], true, None),
        (&[(500, true), (400, true), (300, true)], true, Some(400)),
        (&[(500, true), (400, false), (300, true)], true, Some(300)),
        (&[(500, false), (400, true), (300, false)], true, Some(200)),
        (&[(500, true), (400, true)], false, None),
        (&[(500, false)], false, None),
        (&[(50, true)], true, Some(0)),
    ];
    for (items, finished, resume) in cases {
        let mut progress = ListingProgress::default();
        for (created, taken) in items {
            progress.listed(*created, *taken);
        }
        if finished {
            progress.finished();
        }
        assert_eq!(progress.resume_from(100), resume, "{items:?} {finished}");
        assert_eq!(
            progress.held_back(),
            items.iter().any(|(_, taken)| !taken),
            "{items:?}"
        );
    }
}

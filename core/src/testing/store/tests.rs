//! The store refuses every break of the runner's rules.

use super::*;
use crate::document::fields;
use crate::error::JournalError;
use crate::transaction::{Decision, Transition};
use std::cell::Cell;

/// An operation whose `decide` is a closure over the snapshot.
struct Op<F> {
    paths: Vec<String>,
    decide: F,
}

impl<F: Fn(&Snapshot) -> Decision<u8>> Transition for Op<F> {
    type Output = u8;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<u8> {
        (self.decide)(snapshot)
    }
}

fn op<F: Fn(&Snapshot) -> Decision<u8>>(paths: &[&str], decide: F) -> Op<F> {
    Op {
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        decide,
    }
}

fn doc(n: i64) -> FieldMap {
    fields::map([("n", fields::int(n))])
}

fn create(path: &str, n: i64) -> Write {
    Write::Create {
        path: path.into(),
        fields: doc(n),
    }
}

fn replace(path: &str, n: i64) -> Write {
    Write::Replace {
        path: path.into(),
        fields: doc(n),
    }
}

#[test]
fn a_commit_is_atomic_and_loses_to_another_writer_on_either_precondition() {
    let mut store = Store::new();
    store.insert("a/1", doc(1));
    let both = op(&["a/1", "a/2"], |_| {
        Decision::Mutate(vec![replace("a/1", 10), create("a/2", 20)], 7)
    });
    // Another writer touches the replaced document after the read: nothing is written.
    let lost = store.attempt(&both);
    store.insert("a/1", doc(1));
    let before = store.clone();
    assert!(!store.commit(&lost));
    assert_eq!(store, before);
    // Another writer creates the created document after the read: nothing is written.
    let lost = store.attempt(&both);
    store.insert("a/2", doc(2));
    let before = store.clone();
    assert!(!store.commit(&lost));
    assert_eq!(store, before);
    // Uncontended, both writes land.
    store.remove("a/2");
    let ran = store.run(&both);
    assert_eq!(ran.result, Ok(7));
    assert_eq!(
        (store["a/1"].clone(), store["a/2"].clone()),
        (doc(10), doc(20))
    );
}

#[test]
fn a_commit_answers_each_write_s_update_time_and_an_unchanged_write_keeps_its_own() {
    let mut store = Store::new();
    store.insert("a/1", doc(1));
    store.insert("a/2", doc(2));
    let (_, kept) = store.written("a/1").expect("a/1");
    let both = op(&["a/1", "a/2", "a/3"], |_| {
        Decision::Mutate(
            vec![
                replace("a/1", 1),
                replace("a/2", 20),
                Write::AssertAbsent { path: "a/3".into() },
            ],
            7,
        )
    });
    let attempt = store.attempt(&both);
    let read = attempt.known().clone();
    let results = store.commit_guarded(&attempt.guarded()).expect("lands");
    let (_, changed) = store.written("a/2").expect("a/2");
    assert!(changed > kept);
    let stamp = |t: u64| Some((t, (i64::try_from(t).expect("small"), 0)));
    assert_eq!(results, vec![stamp(kept), stamp(changed), None]);
    // What the runner keeps known after the commit: the read, and the update times.
    let known = read.committed(&[replace("a/1", 1), replace("a/2", 20)], &results);
    let stamps = |path: &str| known.snapshot().stamps(path).map(|s| s.updated);
    assert_eq!(
        stamps("a/1"),
        Some((i64::try_from(kept).expect("small"), 0))
    );
    assert_eq!(
        stamps("a/2"),
        Some((i64::try_from(changed).expect("small"), 0))
    );
    // The same writes under the update times read no longer hold: nothing written.
    let before = store.clone();
    assert_eq!(store.commit_guarded(&attempt.guarded()), None);
    assert_eq!(store, before);
}

#[test]
fn an_unchanged_guard_answers_the_update_time_it_kept_as_firestore_does() {
    // Firestore answers a write that changes nothing with the document's previous
    // update time: the runner keeps the document known, and the call's next commit
    // can be planned from it. The store must answer the same, or every planned commit
    // after one carrying a proof goes untested.
    let mut store = Store::new();
    store.insert("a/1", doc(1));
    store.insert("a/2", doc(2));
    let (_, kept) = store.written("a/1").expect("a/1");
    let proving = op(&["a/1", "a/2"], |_| {
        Decision::Mutate(vec![replace("a/2", 20)], 7)
    });
    let attempt = store.attempt(&proving);
    let guarded = attempt.guarded();
    let proof: Vec<_> = guarded
        .iter()
        .filter(|w| matches!(w.write, Write::AssertUnchanged { .. }))
        .collect();
    assert!(proof.is_empty(), "a/1 is not a mutable journal document");
    let mut guarded = guarded;
    guarded.push(crate::attempt::GuardedWrite {
        write: Write::AssertUnchanged {
            path: "a/1".into(),
            fields: doc(1),
        },
        precondition: crate::attempt::Precondition::UpdatedAt(kept),
    });
    let results = store.commit_guarded(&guarded).expect("lands");
    let stamp = |t: u64| Some((t, (i64::try_from(t).expect("small"), 0)));
    assert_eq!(
        results[1],
        stamp(kept),
        "the guard's document kept its time"
    );
    assert_eq!(store.written("a/1").map(|(_, u)| u), Some(kept));
    assert_eq!(store["a/1"], doc(1));
}

#[test]
fn a_race_commits_the_first_and_reruns_the_losers() {
    let mut store = Store::new();
    let claim = |n: i64| {
        op(&["lock"], move |snapshot| match snapshot.get("lock") {
            None => Decision::Mutate(vec![create("lock", n)], 1),
            Some(_) => Decision::Observe(0),
        })
    };
    let ops = vec![claim(1), claim(2), claim(3)];
    assert_eq!(store.race(&ops), vec![Ok(1), Ok(0), Ok(0)]);
    assert_eq!(store["lock"], doc(1));
    assert_eq!(store.len(), 1);
}

#[test]
fn follow_up_reads_are_served_and_counted() {
    let mut store = Store::new();
    store.insert("b", doc(2));
    let reads = op(&["a"], |snapshot| {
        if !snapshot.was_read("b") {
            Decision::Read(vec!["b".into()])
        } else if !snapshot.was_read("c") {
            Decision::Read(vec!["c".into()])
        } else {
            Decision::Observe(u8::from(snapshot.get("b").is_some()))
        }
    });
    let ran = store.run(&reads);
    assert_eq!(ran.result, Ok(1));
    assert_eq!(
        ran.follow_ups,
        vec![vec!["b".to_owned()], vec!["c".to_owned()]]
    );
    assert_eq!(ran.reads(), 3);
    assert!(ran.writes.is_empty());
}

#[test]
#[should_panic(expected = "more than 2 follow-up reads")]
fn a_third_follow_up_read_is_refused() {
    let endless = op(&["a"], |snapshot| {
        let next = (0..).find(|i| !snapshot.was_read(&format!("f{i}")));
        Decision::Read(vec![format!("f{}", next.unwrap_or(0))])
    });
    Store::new().run(&endless);
}

#[test]
#[should_panic(expected = "a follow-up read must ask for something new")]
fn a_follow_up_of_a_path_already_read_is_refused() {
    Store::new().run(&op(&["a"], |_| Decision::Read(vec!["a".into()])));
}

#[test]
#[should_panic(expected = "decide must answer the same twice on one snapshot")]
fn a_decide_that_answers_differently_on_one_snapshot_is_refused() {
    let calls = Cell::new(0_u8);
    Store::new().run(&op(&["a"], |_| {
        calls.set(calls.get() + 1);
        Decision::Observe(calls.get())
    }));
}

#[test]
#[should_panic(expected = "created b without reading its absence")]
fn a_create_of_a_path_not_read_is_refused() {
    Store::new().run(&op(&["a"], |_| Decision::Mutate(vec![create("b", 1)], 0)));
}

#[test]
#[should_panic(expected = "created a without reading its absence")]
fn a_create_of_a_document_read_present_is_refused() {
    let mut store = Store::new();
    store.insert("a", doc(1));
    store.run(&op(&["a"], |_| Decision::Mutate(vec![create("a", 2)], 0)));
}

#[test]
#[should_panic(expected = "replaced a without reading it")]
fn a_replacement_of_a_document_read_absent_is_refused() {
    Store::new().run(&op(&["a"], |_| Decision::Mutate(vec![replace("a", 1)], 0)));
}

#[test]
#[should_panic(expected = "a written twice in one commit")]
fn a_path_written_twice_in_one_commit_is_refused() {
    let mut store = Store::new();
    store.insert("a", doc(1));
    store.run(&op(&["a"], |_| {
        Decision::Mutate(vec![replace("a", 2), replace("a", 3)], 0)
    }));
}

/// An operation that opts in to blind creation, creating `created` from the
/// all-absent state and observing otherwise; it also reads `guarded`.
struct Blind {
    created: Vec<&'static str>,
    guarded: Vec<&'static str>,
    n: i64,
}

impl Transition for Blind {
    type Output = u8;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        self.created
            .iter()
            .chain(&self.guarded)
            .map(|p| (*p).to_owned())
            .collect()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<u8> {
        if self.paths().iter().all(|p| snapshot.get(p).is_none()) {
            let writes = self.created.iter().map(|p| create(p, self.n)).collect();
            Decision::Mutate(writes, 1)
        } else {
            Decision::Observe(0)
        }
    }

    fn blind_create(&self) -> bool {
        true
    }
}

#[test]
fn a_blind_creation_commits_without_reading_only_where_everything_read_is_absent() {
    let blind = |n| Blind {
        created: vec!["a/1", "a/2"],
        guarded: vec!["a/3"],
        n,
    };
    let mut store = Store::new();
    let ran = store.run(&blind(1));
    assert!(ran.blind);
    assert_eq!((ran.result, ran.reads(), store.len()), (Ok(1), 0, 2));
    assert_eq!(
        store.written("a/1"),
        store.written("a/2"),
        "one commit time"
    );
    // A created path present: read and decide.
    let ran = store.run(&blind(2));
    assert!(!ran.blind);
    assert_eq!(
        (ran.result, ran.reads(), store["a/1"].clone()),
        (Ok(0), 1, doc(1))
    );
    // Only the guarded path present: nothing created, read and decide.
    let mut guarded = Store::new();
    guarded.insert("a/3", doc(3));
    let ran = guarded.run(&blind(1));
    assert!(!ran.blind);
    assert_eq!((ran.result, guarded.len()), (Ok(0), 1));
}

#[test]
fn a_race_of_blind_creations_commits_the_first_and_the_losers_read() {
    let mut store = Store::new();
    let ops: Vec<Blind> = (1..=24)
        .map(|n| Blind {
            created: vec!["b/1"],
            guarded: vec!["b/2"],
            n,
        })
        .collect();
    let results = store.race(&ops);
    assert_eq!(results.iter().filter(|r| **r == Ok(1)).count(), 1);
    assert_eq!(results.iter().filter(|r| **r == Ok(0)).count(), 23);
    assert_eq!((store.len(), store["b/1"].clone()), (1, doc(1)));
}

#[test]
fn an_attempt_held_back_commits_what_the_call_run_at_once_commits() {
    let mut store = Store::new();
    store.insert("a/1", doc(1));
    let both = op(&["a/1", "a/2"], |_| {
        Decision::Mutate(vec![replace("a/1", 10), create("a/2", 20)], 7)
    });
    let decided = store.attempt(&both);
    assert_eq!(store["a/1"], doc(1), "an attempt writes nothing");
    assert_eq!(store.len(), 1);
    let mut at_once = store.clone();
    let ran = at_once.run(&both);
    let Ok(output) = ran.result else {
        panic!("{:?}", ran.result)
    };
    assert_eq!(decided.decision, Decision::Mutate(ran.writes, output));
    assert!(store.commit(&decided));
    assert_eq!(store, at_once);
}

#[test]
fn an_attempt_knows_every_document_it_read_after_a_confirming_read() {
    // a/1 then a/2 (a follow-up), then `journal_corrupt`: the call machine confirms it
    // by reading both again, and the attempt knows each as the store answered it.
    let mut store = Store::new();
    store.insert("a/1", doc(1));
    let corrupt = op(&["a/1"], |snapshot| {
        if snapshot.was_read("a/2") {
            Decision::Reject(JournalError::corrupt("test"))
        } else {
            Decision::Read(vec!["a/2".into()])
        }
    });
    let decided = store.attempt(&corrupt);
    assert!(matches!(
        decided.decision,
        Decision::Reject(JournalError::JournalCorrupt { .. })
    ));
    assert_eq!(decided.follow_ups, vec![vec!["a/2".to_owned()]]);
    assert!(decided.guarded().is_empty());
    let known = decided.known().snapshot();
    assert_eq!(known.get("a/1"), Some(&doc(1)));
    assert!(known.was_read("a/2") && known.get("a/2").is_none());
    let (_, updated) = store.written("a/1").expect("a/1");
    let updated = i64::try_from(updated).expect("small");
    assert_eq!(known.stamps("a/1").map(|s| s.updated), Some((updated, 0)));
}

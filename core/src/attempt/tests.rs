//! The attempt machine step by step, as the runner drives it (not strict): each test
//! is a table of reads fed in and the steps answered.

use super::*;
use crate::document::fields;

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
        paths: strings(paths),
        decide,
    }
}

fn strings(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| (*p).to_owned()).collect()
}

fn doc(n: i64) -> FieldMap {
    fields::map([("n", fields::int(n))])
}

/// Documents found, each at version `n` with fields `n`.
fn found(docs: &[(&str, i64)]) -> HashMap<String, Found<i64>> {
    docs.iter()
        .map(|(path, n)| {
            let found = Found {
                fields: doc(*n),
                version: Some(*n),
                stamps: None,
            };
            ((*path).to_owned(), found)
        })
        .collect()
}

fn read(paths: &[&str], kind: ReadKind) -> Action<u8, i64> {
    Action::Read {
        paths: strings(paths),
        kind,
    }
}

fn corrupt(reason: &'static str) -> Action<u8, i64> {
    Action::Fail(JournalError::corrupt(reason))
}

/// Feeds `reads` in turn (each: the documents found, whether repeatable) after the
/// first step, and returns every step answered, the first included.
fn drive<T: Transition>(
    op: &T,
    reads: Vec<(HashMap<String, Found<i64>>, bool)>,
) -> Vec<Action<T::Output, i64>> {
    let mut attempt = Attempt::new(op, op.paths());
    let mut steps = vec![attempt.start()];
    for (found, repeatable) in reads {
        steps.push(attempt.read(op, found, repeatable));
    }
    steps
}

#[test]
fn an_observation_is_done_after_the_first_read() {
    let observe = op(&["a", "b"], |s| {
        Decision::Observe(u8::from(s.get("a").is_some()))
    });
    let steps = drive(&observe, vec![(found(&[("a", 1)]), true)]);
    assert_eq!(
        steps,
        vec![read(&["a", "b"], ReadKind::First), Action::Done(1)]
    );
}

#[test]
fn follow_up_reads_ask_only_for_what_is_new_and_are_bounded() {
    // Asks for b and a (already read), then c, then d: a third follow-up.
    let endless = op(&["a"], |s| {
        let next = ["b", "c", "d", "e"].into_iter().find(|p| !s.was_read(p));
        Decision::Read(vec!["a".into(), next.unwrap_or("e").into()])
    });
    let none = || (HashMap::new(), true);
    assert_eq!(
        drive(&endless, vec![none(), none(), none()]),
        vec![
            read(&["a"], ReadKind::First),
            read(&["b"], ReadKind::FollowUp),
            read(&["c"], ReadKind::FollowUp),
            corrupt("unbounded follow-up reads"),
        ]
    );
    // A follow-up of nothing new fails closed at once.
    let again = op(&["a"], |_| Decision::Read(vec!["a".into()]));
    assert_eq!(
        drive(&again, vec![none()]),
        vec![
            read(&["a"], ReadKind::First),
            corrupt("unbounded follow-up reads")
        ]
    );
}

#[test]
fn a_corrupt_read_is_confirmed_once_by_rereading_everything_when_repeatable() {
    let torn = |s: &Snapshot| match (s.get("a"), s.was_read("b")) {
        (_, false) => Decision::Read(vec!["b".into()]),
        (Some(a), true) if a == &doc(2) => Decision::Observe(2),
        _ => Decision::Reject(JournalError::corrupt("torn")),
    };
    let torn = op(&["a"], torn);
    let cases = [
        // Repeatable and healed by the re-read: the re-read's decision stands.
        (
            vec![
                (found(&[("a", 1)]), true),
                (found(&[]), true),
                (found(&[("a", 2)]), true),
            ],
            vec![
                read(&["a"], ReadKind::First),
                read(&["b"], ReadKind::FollowUp),
                read(&["a", "b"], ReadKind::Confirm),
                Action::Done(2),
            ],
        ),
        // Repeatable and still corrupt: it stands after one re-read.
        (
            vec![
                (found(&[("a", 1)]), true),
                (found(&[]), true),
                (found(&[("a", 1)]), true),
            ],
            vec![
                read(&["a"], ReadKind::First),
                read(&["b"], ReadKind::FollowUp),
                read(&["a", "b"], ReadKind::Confirm),
                corrupt("torn"),
            ],
        ),
        // Not repeatable: it stands at once.
        (
            vec![(found(&[("a", 1)]), false), (found(&[]), false)],
            vec![
                read(&["a"], ReadKind::First),
                read(&["b"], ReadKind::FollowUp),
                corrupt("torn"),
            ],
        ),
    ];
    for (reads, expected) in cases {
        assert_eq!(drive(&torn, reads), expected);
    }
    // Only journal_corrupt is confirmed.
    let refused = op(&["a"], |_| Decision::Reject(JournalError::invalid("x")));
    assert_eq!(
        drive(&refused, vec![(found(&[]), true)]),
        vec![
            read(&["a"], ReadKind::First),
            Action::Fail(JournalError::invalid("x"))
        ]
    );
}

#[test]
fn the_follow_up_bound_holds_across_a_confirmation() {
    // f0, f1, then corrupt until confirmed, then a third follow-up.
    let op = op(&["a"], |s| {
        match ["f0", "f1"].into_iter().find(|p| !s.was_read(p)) {
            Some(next) => Decision::Read(vec![next.into()]),
            None if s.get("a").is_none() => Decision::Reject(JournalError::corrupt("x")),
            None => Decision::Read(vec!["f2".into()]),
        }
    });
    let none = || (HashMap::new(), true);
    let steps = drive(
        &op,
        vec![none(), none(), none(), (found(&[("a", 1)]), true)],
    );
    assert_eq!(
        steps,
        vec![
            read(&["a"], ReadKind::First),
            read(&["f0"], ReadKind::FollowUp),
            read(&["f1"], ReadKind::FollowUp),
            read(&["a", "f0", "f1"], ReadKind::Confirm),
            corrupt("unbounded follow-up reads"),
        ]
    );
}

#[test]
fn every_write_is_guarded_by_the_state_read() {
    let writes = vec![
        Write::Create {
            path: "new".into(),
            fields: doc(1),
        },
        Write::Replace {
            path: "old".into(),
            fields: doc(8),
        },
        Write::AssertAbsent {
            path: "gone".into(),
        },
    ];
    let mutate = op(&["new", "old", "gone"], |_| {
        Decision::Mutate(writes.clone(), 3)
    });
    let steps = drive(&mutate, vec![(found(&[("old", 7)]), true)]);
    let guarded = |write: &Write, precondition| GuardedWrite {
        write: write.clone(),
        precondition,
    };
    assert_eq!(
        steps[1],
        Action::Commit {
            writes: vec![
                guarded(&writes[0], Precondition::Absent),
                guarded(&writes[1], Precondition::UpdatedAt(7)),
                guarded(&writes[2], Precondition::Absent),
            ],
            output: 3,
        }
    );
}

#[test]
fn a_replacement_without_a_version_read_fails_closed() {
    let replace = op(&["a"], |_| {
        let write = Write::Replace {
            path: "a".into(),
            fields: doc(2),
        };
        Decision::Mutate(vec![write], 0)
    });
    // Read absent, read present without an update time, never read.
    let unversioned = HashMap::from([(
        "a".to_owned(),
        Found {
            fields: doc(1),
            version: None,
            stamps: None,
        },
    )]);
    for found in [HashMap::new(), unversioned] {
        let steps = drive(&replace, vec![(found, true)]);
        assert_eq!(steps[1], corrupt("unguarded replacement"));
    }
    let elsewhere = op(&["a"], |_| {
        let write = Write::Replace {
            path: "b".into(),
            fields: doc(2),
        };
        Decision::Mutate(vec![write], 0)
    });
    let steps = drive(&elsewhere, vec![(found(&[("a", 1)]), true)]);
    assert_eq!(steps[1], corrupt("unguarded replacement"));
}

#[test]
#[should_panic(expected = "decide must answer the same twice on one snapshot")]
fn strict_mode_asks_decide_twice() {
    let calls = std::cell::Cell::new(0_u8);
    let op = op(&["a"], |_| {
        calls.set(calls.get() + 1);
        Decision::Observe(calls.get())
    });
    let mut attempt: Attempt<_, i64> = Attempt::strict(&op, op.paths());
    attempt.read(&op, HashMap::new(), true);
}

#[test]
#[should_panic(expected = "created a without reading its absence")]
fn strict_mode_panics_where_the_runner_would_retry_until_it_gives_up() {
    let op = op(&["a"], |_| {
        let write = Write::Create {
            path: "a".into(),
            fields: doc(2),
        };
        Decision::Mutate(vec![write], 0)
    });
    let mut attempt = Attempt::strict(&op, op.paths());
    attempt.read(&op, found(&[("a", 1)]), true);
}

#[test]
fn a_first_read_always_holds_the_operations_own_paths() {
    // A caller that reads more than the operation (a start reading what `begin_send`
    // will) but leaves one of its own paths out still reads it: nothing the decision
    // looks at is taken as absent without a read.
    let op = op(&["a", "b"], |_| Decision::Observe(1));
    let attempt: Attempt<_, i64> = Attempt::new(&op, strings(&["a", "z"]));
    assert_eq!(attempt.start(), read(&["a", "z", "b"], ReadKind::First));
    let attempt: Attempt<_, i64> = Attempt::new(&op, strings(&["b", "a"]));
    assert_eq!(attempt.start(), read(&["b", "a"], ReadKind::First));
}

#[test]
fn proving_absences_guards_every_path_decided_on_read_absent_and_not_written() {
    // Transaction mode's unlocked attempt: a first acquisition's shape (an immutable
    // root read present, the lifecycle and the next event created) with one more
    // event and a follow-up read absent. Only the caller's extra path `x` is no
    // decision input and goes unguarded.
    const LIFE: &str = "checkoutRequests/h/lifecycle/current";
    let create = |path: &str| Write::Create {
        path: path.into(),
        fields: doc(1),
    };
    let creates = op(&["root", LIFE, "e2", "e3"], move |snapshot| {
        if !snapshot.was_read("f") {
            return Decision::Read(vec!["f".into()]);
        }
        match snapshot.get(LIFE) {
            None => Decision::Mutate(vec![create(LIFE), create("e2")], 1),
            Some(_) => Decision::Mutate(vec![create("e2")], 2),
        }
    });
    let guarded = |write: Write, precondition| GuardedWrite {
        write,
        precondition,
    };
    let absent = |path: &str| Write::AssertAbsent { path: path.into() };
    let mut paths = creates.paths();
    paths.push("x".into());
    let mut attempt = Attempt::new(&creates, paths.clone()).proving_absences();
    assert_eq!(
        attempt.read(&creates, found(&[("root", 1)]), true),
        read(&["f"], ReadKind::FollowUp)
    );
    assert_eq!(
        attempt.read(&creates, HashMap::new(), true),
        Action::Commit {
            writes: vec![
                guarded(create(LIFE), Precondition::Absent),
                guarded(create("e2"), Precondition::Absent),
                guarded(absent("e3"), Precondition::Absent),
                guarded(absent("f"), Precondition::Absent),
            ],
            output: 1,
        }
    );
    // A mutable document read present is proven unchanged, under its update time:
    // a precondition only a transaction's lock can stand for.
    let mut attempt = Attempt::new(&creates, paths).proving_absences();
    attempt.read(&creates, found(&[("root", 1), (LIFE, 4)]), true);
    let Action::Commit { writes, output: 2 } = attempt.read(&creates, HashMap::new(), true) else {
        panic!("expected a commit");
    };
    assert!(writes.contains(&guarded(
        Write::AssertUnchanged {
            path: LIFE.into(),
            fields: doc(4)
        },
        Precondition::UpdatedAt(4)
    )));
    // Without the flag, the same read commits no absence guard.
    let mut attempt = Attempt::new(&creates, creates.paths());
    attempt.read(&creates, found(&[("root", 1)]), true);
    let Action::Commit { writes, .. } = attempt.read(&creates, HashMap::new(), true) else {
        panic!("expected a commit");
    };
    assert_eq!(writes.len(), 2);
}

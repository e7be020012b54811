//! Which all-absent decisions make a blind creation, one case per line.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::error::JournalError;

/// An operation that opts in (or not) and answers the all-absent snapshot with
/// `decision`, recording that it saw only absent documents.
struct Op {
    opts_in: bool,
    paths: Vec<String>,
    decision: Decision<u8>,
}

impl Transition for Op {
    type Output = u8;

    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<u8> {
        assert!(self.paths.iter().all(|p| snapshot.was_read(p)));
        assert!(self.paths.iter().all(|p| snapshot.get(p).is_none()));
        self.decision.clone()
    }

    fn blind_create(&self) -> bool {
        self.opts_in
    }
}

fn doc() -> FieldMap {
    fields::map([("n", fields::int(1))])
}

fn create(path: &str) -> Write {
    Write::Create {
        path: path.into(),
        fields: doc(),
    }
}

fn replace(path: &str) -> Write {
    Write::Replace {
        path: path.into(),
        fields: doc(),
    }
}

fn planned(opts_in: bool, paths: &[&str], decision: Decision<u8>) -> Option<(usize, Vec<String>)> {
    let op = Op {
        opts_in,
        paths: paths.iter().map(|p| (*p).to_owned()).collect(),
        decision,
    };
    plan(&op, &op.paths()).map(|p| {
        assert_eq!(p.output, 7);
        (p.creates.len(), p.guards)
    })
}

/// Name, opts in, paths read, the all-absent decision, the plan expected (creations,
/// guards).
type Case = (
    &'static str,
    bool,
    &'static [&'static str],
    Decision<u8>,
    Option<(usize, Vec<String>)>,
);

fn mutate(writes: Vec<Write>) -> Decision<u8> {
    Decision::Mutate(writes, 7)
}

#[test]
fn only_creations_of_paths_read_make_a_plan_and_every_other_path_is_guarded() {
    let guards = |g: &[&str]| g.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    let cases: Vec<Case> = vec![
        (
            "all created",
            true,
            &["a", "b"],
            mutate(vec![create("a"), create("b")]),
            Some((2, guards(&[]))),
        ),
        (
            "one guarded",
            true,
            &["a", "b", "c"],
            mutate(vec![create("b")]),
            Some((1, guards(&["a", "c"]))),
        ),
        (
            "duplicate path read",
            true,
            &["a", "a", "b"],
            mutate(vec![create("b")]),
            Some((1, guards(&["a"]))),
        ),
        (
            "not opted in",
            false,
            &["a"],
            mutate(vec![create("a")]),
            None,
        ),
        ("observe", true, &["a"], Decision::Observe(7), None),
        (
            "reject",
            true,
            &["a"],
            Decision::Reject(JournalError::CommandConflict),
            None,
        ),
        (
            "read more",
            true,
            &["a"],
            Decision::Read(vec!["b".into()]),
            None,
        ),
        (
            "a replacement",
            true,
            &["a"],
            mutate(vec![replace("a")]),
            None,
        ),
        (
            "a create not read",
            true,
            &["a"],
            mutate(vec![create("z")]),
            None,
        ),
        (
            "a path created twice",
            true,
            &["a"],
            mutate(vec![create("a"), create("a")]),
            None,
        ),
    ];
    for (name, opts_in, paths, decision, expected) in cases {
        assert_eq!(planned(opts_in, paths, decision), expected, "{name}");
    }
}

//! The checks of planned commits and skewed clocks: every commit of the send layer
//! lands only under the fence the lifecycle holds, and every commit that lands is what
//! a read at that moment would decide, whatever the holders' clocks. With the lease
//! proof of every commit reverted ([`Rule::LeaseProof`]), the checker finds the stale
//! holder's write, on the planned path and on the read path.

use super::system::{Action, Bounds, Mode};
use super::tests::{ONE_CHARGE, STALE_WRITE, Traced, UNLIKE_READ, check_at};
use crate::sends::reverted::Rule;

/// The rules reverted to run without the lease proof of every commit (a commit that
/// decided from the lifecycle proves it unchanged).
const WITHOUT_LEASE_PROOF: &[Rule] = &[Rule::LeaseProof];

/// Worker 0's clock is the global one; worker 1's runs 61 s ahead, past a lease that
/// worker 0 took at the same instant.
const SKEWS: [i64; 2] = [0, 61];

/// One instant, two clocks: the stale holder's sequence.
fn skewed() -> Bounds {
    Bounds {
        instants: vec![0],
        misconfigured: false,
        ..Bounds::from_env_with(Mode::PRODUCTION, &SKEWS)
    }
}

/// Where in `path` worker `w` did something whose note contains `text`.
fn position(path: &[Traced], w: usize, text: &str) -> Option<usize> {
    path.iter()
        .position(|t| t.action.worker() == Some(w) && t.note.contains(text))
}

/// A holder whose clock runs 61 s ahead takes the lease over while the first holder
/// waits on the provider; the first holder's ambiguous outcome, planned from its own
/// copy of the lifecycle, lands under fence 1 while the lifecycle is at fence 2.
#[test]
fn without_the_lease_proof_a_stale_holder_writes_under_a_superseded_fence() {
    let run = check_at(skewed(), WITHOUT_LEASE_PROOF, Some(STALE_WRITE));
    let path = run.path(STALE_WRITE);
    let planned = position(path, 0, "plans Record").expect("a planned outcome");
    let takeover = position(path, 1, "acquired fence 2").expect("a takeover");
    let landed = path.last().expect("a step");
    assert!(planned < takeover);
    assert_eq!(landed.action, Action::Commit(0));
    assert!(landed.note.contains("lands (lifecycle fence 2)"));
}

/// The same commit answers what a read at that moment would refuse.
#[test]
fn without_the_lease_proof_a_planned_outcome_answers_unlike_a_fresh_read() {
    let run = check_at(skewed(), WITHOUT_LEASE_PROOF, Some(UNLIKE_READ));
    let path = run.path(UNLIKE_READ);
    let landed = path.last().expect("a step");
    assert_eq!(landed.action, Action::Commit(0));
    assert!(position(path, 0, "plans Record").is_some());
}

/// With one clock and no plans, the read path has the same race, narrower: a decision
/// read just before the lease's end, committed after another holder's takeover.
#[test]
fn without_the_lease_proof_a_read_path_commit_lands_after_a_takeover() {
    let bounds = Bounds {
        instants: vec![0, 61],
        misconfigured: false,
        skews: Vec::new(),
        mode: Mode::Preconditions {
            plans: false,
            split_reads: true,
        },
        ..Bounds::from_env()
    };
    let run = check_at(bounds, WITHOUT_LEASE_PROOF, Some(STALE_WRITE));
    let path = run.path(STALE_WRITE);
    let landed = path.last().expect("a step");
    let Action::Commit(w) = landed.action else {
        panic!("a commit lands last");
    };
    let read = path
        .iter()
        .rposition(|t| t.action == Action::Step(w))
        .expect("the stale holder's read");
    assert!(path[read].note.contains("reads, decides"));
    assert_eq!(path[read].at, 0);
    assert_eq!(landed.at, 61);
}

/// Skewed clocks at one instant, every commit proving its lease: at most one charge,
/// no write under a superseded fence, every landed commit what a fresh read decides,
/// and the planned path is taken both ways (a plan lands, a plan is refused and the
/// call reads instead).
#[test]
fn with_skewed_clocks_no_commit_lands_under_a_superseded_fence() {
    let run = check_at(skewed(), &[], None);
    for property in [ONE_CHARGE, STALE_WRITE, UNLIKE_READ] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
    for example in [
        "a charge",
        "a planned commit lands",
        "a planned commit is refused",
        "the command succeeded",
    ] {
        assert!(run.found.contains_key(example), "never: {example}");
    }
}

/// The read path's narrower race, with the lease proof: a decision read just before
/// the lease's end never lands after another holder's takeover.
#[test]
fn with_the_lease_proof_no_read_path_commit_lands_after_a_takeover() {
    let bounds = Bounds {
        instants: vec![0, 61],
        misconfigured: false,
        skews: Vec::new(),
        mode: Mode::Preconditions {
            plans: false,
            split_reads: true,
        },
        ..Bounds::from_env()
    };
    let run = check_at(bounds, &[], None);
    for property in [ONE_CHARGE, STALE_WRITE, UNLIKE_READ] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
}

//! The checks: the protocol charges at most once in every reachable state, and with
//! each proven-safety rule reverted the checker finds the counterexample the rule
//! prevents (a second charge, or an answer dropped).
//!
//! Each run is a breadth-first search on one checker thread, at the bounds of
//! [`Bounds::from_env`] (or a test's own). Each test prints its bounds, the unique
//! states explored, the depth and the time, and its counterexample step by step
//! (`cargo test --lib model -- --nocapture`).

use super::system::{Action, Bounds, Mode, SendModel, State};
use super::world::{CUTOFF, PlanChoice, RETENTION, SETTLE};
use crate::sends::reverted::Rule;
use stateright::{Checker, Expectation, HasDiscoveries, Model};
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

pub(super) const ONE_CHARGE: &str = "at most one charge";
pub(super) const ANSWER_RECORDED: &str = "an answer under its lease is recorded";
pub(super) const REFUSED_THEN_CHARGED: &str = "a refused answer is never charged twice";
pub(super) const NOTHING_BROKEN: &str = "nothing fails closed";
pub(super) const STALE_WRITE: &str = "no write under a superseded fence";
pub(super) const UNLIKE_READ: &str = "every commit lands as a fresh read decides";

/// One step of a discovery's path.
pub(super) struct Traced {
    /// The instant at which the action was taken (seconds after `T0`).
    pub at: i64,
    pub action: Action,
    /// What it did.
    pub note: String,
}

/// What one run of the checker found.
pub(super) struct Run {
    pub unique_states: usize,
    pub depth: usize,
    pub elapsed: Duration,
    /// Property name to the path of its discovery.
    pub found: HashMap<&'static str, Vec<Traced>>,
}

impl Run {
    /// The path of `property`'s discovery, printed; panics when there is none.
    pub(super) fn path(&self, property: &str) -> &[Traced] {
        let path = self
            .found
            .get(property)
            .unwrap_or_else(|| panic!("the checker found no path for {property:?}"));
        println!("{property:?}: {} steps", path.len());
        for Traced { at, action, note } in path {
            println!("  t={at:>5} s  {:<28} {note}", format!("{action:?}"));
        }
        path
    }

    /// Whether `property` (an `always`) held in every state explored.
    pub(super) fn holds(&self, property: &str) -> bool {
        !self.found.contains_key(property)
    }
}

/// The steps of a path given as states, each with the action taken from it.
fn trace(instants: &[i64], path: Vec<(State, Option<Action>)>) -> Vec<Traced> {
    path.windows(2)
        .filter_map(|pair| {
            let [(before, action), (after, _)] = pair else {
                return None;
            };
            let action = action.clone()?;
            let note = after.note(&action);
            let at = instants[before.clock];
            Some(Traced { at, action, note })
        })
        .collect()
}

/// `path` up to its first state where `name` has its verdict: the checker keeps the
/// last path it saw, and a property broken once stays broken (or a thing seen once,
/// seen) in every state after.
fn shortest(
    model: &SendModel,
    name: &str,
    mut path: Vec<(State, Option<Action>)>,
) -> Vec<(State, Option<Action>)> {
    let properties = model.properties();
    let property = properties.iter().find(|p| p.name == name);
    let verdict = |state: &State| {
        property.is_some_and(|p| match p.expectation {
            Expectation::Always => !(p.condition)(model, state),
            Expectation::Sometimes => (p.condition)(model, state),
            Expectation::Eventually => false,
        })
    };
    if let Some(first) = path.iter().position(|(state, _)| verdict(state)) {
        path.truncate(first + 1);
        if let Some((_, action)) = path.last_mut() {
            *action = None;
        }
    }
    path
}

/// Checks the model at `bounds` with `reverted` rules, until every property has a
/// discovery or every state was explored, or only until `until` has one.
pub(super) fn check_at(bounds: Bounds, reverted: &[Rule], until: Option<&'static str>) -> Run {
    println!("bounds {bounds:?}, reverted {reverted:?}");
    let instants = bounds.instants.clone();
    let model = SendModel {
        bounds,
        reverted: reverted.to_vec(),
    };
    let mut builder = model.checker();
    if let Some(name) = until {
        builder = builder.finish_when(HasDiscoveries::AnyOf(BTreeSet::from([name])));
    }
    let started = Instant::now();
    let checker = builder.spawn_bfs().join();
    let elapsed = started.elapsed();
    let model = checker.model();
    let found = checker
        .discoveries()
        .into_iter()
        .map(|(name, path)| {
            let path = shortest(model, name, path.into_vec());
            (name, trace(&instants, path))
        })
        .collect();
    let run = Run {
        unique_states: checker.unique_state_count(),
        depth: checker.max_depth(),
        elapsed,
        found,
    };
    println!(
        "{} unique states, depth {}, {:.1?}",
        run.unique_states, run.depth, run.elapsed
    );
    run
}

/// [`check_at`] the bounds of the environment, in the atomic mode unless
/// `CJ_MODEL_MODE` names another: a rule of `decide` is the same in every mode, and
/// the atomic mode finds its counterexample in the fewest states.
fn check(reverted: &[Rule], until: Option<&'static str>) -> Run {
    check_at(Bounds::from_env_with(Mode::Atomic, &[]), reverted, until)
}

#[test]
fn the_send_protocol_charges_at_most_once_in_every_reachable_state() {
    let bounds = Bounds::from_env();
    let plans = matches!(bounds.mode, Mode::Preconditions { plans: true, .. });
    let run = check_at(bounds, &[], None);
    for property in [
        ONE_CHARGE,
        ANSWER_RECORDED,
        REFUSED_THEN_CHARGED,
        NOTHING_BROKEN,
        STALE_WRITE,
        UNLIKE_READ,
    ] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
    // Not vacuous: a charge happens, a provable absence opens attempt 2 and it is
    // charged, and the command succeeds.
    for example in [
        "a charge",
        "a second attempt",
        "a second attempt charged",
        "the command succeeded",
    ] {
        assert!(run.found.contains_key(example), "never: {example}");
    }
    if plans {
        for example in ["a planned commit lands", "a planned commit is refused"] {
            assert!(run.found.contains_key(example), "never: {example}");
        }
    }
}

#[test]
fn a_provable_absence_opens_a_second_attempt_charged_once() {
    let run = check_at(Bounds::from_env(), &[], Some("a second attempt charged"));
    let path = run.path("a second attempt charged");
    assert!(path.iter().any(|t| t.note.contains("reconcile: absent 1")));
}

#[test]
fn with_sender_settled_reverted_a_request_in_flight_is_charged_twice() {
    let run = check(&[Rule::SenderSettled], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    // Attempt 1 was reconciled absent while its request was still on the wire.
    let absent = path
        .iter()
        .position(|t| t.note.contains("reconcile: absent 1"));
    let charged = path
        .iter()
        .rposition(|t| matches!(t.action, Action::Process(_)));
    assert!(
        absent < charged,
        "the late request is processed after the absence"
    );
}

#[test]
fn with_evidence_after_cutoff_reverted_an_answer_under_its_lease_is_refused() {
    let run = check(&[Rule::EvidenceAfterCutoff], Some(ANSWER_RECORDED));
    let path = run.path(ANSWER_RECORDED);
    assert!(
        path.last()
            .is_some_and(|t| t.note.contains("send_cutoff_passed"))
    );
}

#[test]
fn with_evidence_after_cutoff_reverted_the_settle_window_still_prevents_a_second_charge() {
    // Defence in depth: the refused success is dropped and a lagging lookup hears
    // none, but no absence is accepted before the settle window has passed, by when
    // the lookup must see the charge.
    let run = check(&[Rule::EvidenceAfterCutoff], Some(ONE_CHARGE));
    assert!(
        run.holds(ONE_CHARGE),
        "{} steps",
        run.path(ONE_CHARGE).len()
    );
}

#[test]
fn with_evidence_after_cutoff_and_sender_settled_reverted_a_refused_answer_is_charged_twice() {
    // A driver with neither rule: the sender's refused success is dropped past the
    // cutoff, and a lagging lookup's "not found" opens attempt 2, which charges again.
    let rules = [Rule::EvidenceAfterCutoff, Rule::SenderSettled];
    let run = check(&rules, Some(REFUSED_THEN_CHARGED));
    let path = run.path(REFUSED_THEN_CHARGED);
    assert!(path.iter().any(|t| t.note.contains("lookup: not found")));
}

#[test]
fn with_plan_first_reverted_a_wrong_plan_looks_up_a_key_never_sent() {
    let run = check(&[Rule::PlanFirst], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    let misconfigured = |t: &Traced| matches!(t.action, Action::Call(_, PlanChoice::Other));
    assert!(path.iter().any(misconfigured));
}

#[test]
fn with_key_retained_reverted_a_forgotten_key_is_charged_twice() {
    let run = check(&[Rule::KeyRetained], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    assert!(path.iter().any(|t| t.at == RETENTION));
}

/// A lookup taken before the absence is provable, reconciled after it. The journal
/// checks `now >= lastSentAt + 60 s + settle` when it records the absence, but the
/// lookup's answer may be as old as the reconciling call's lease (up to 50 s, its
/// deadline): `execute` looks up as soon as the status says the attempt needs
/// reconciliation. At these instants (a re-send 2 s before the cutoff; a call at
/// `provable - 48 s` that looks up, and reconciles at `provable`) the checker found a
/// second charge, until `execute` recorded a "not found" only from a lookup that
/// started at or after `absenceProvableFrom` (`core/src/settle.rs`): see
/// `emulator-tests/RELIABILITY.md`.
#[test]
fn a_lookup_taken_before_the_absence_is_provable_is_never_reconciled_absent() {
    let provable = CUTOFF - 2 + 60 + SETTLE;
    let bounds = Bounds {
        instants: vec![0, CUTOFF - 2, CUTOFF, provable - 48, provable],
        ..Bounds::from_env_with(Mode::Atomic, &[])
    };
    let run = check_at(bounds, &[], Some(ONE_CHARGE));
    assert!(
        run.holds(ONE_CHARGE),
        "{} steps",
        run.path(ONE_CHARGE).len()
    );
}

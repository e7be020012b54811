//! Stripe's stored 5xx: a provider that stores an unknown answer for a key and replays
//! it to every later request with that key, and may roll a stored 5xx that charged
//! nothing forward later (its incident remediation). The journal keeps such an
//! attempt open but never re-sends it (`replayed_unknown`), `execute` looks the key up
//! at once, and the charge, once made and found, settles the command; no "not found"
//! proves its absence, so no second key is ever issued for it.

use super::system::{Bounds, Mode};
use super::tests::{
    ANSWER_RECORDED, NOTHING_BROKEN, ONE_CHARGE, REFUSED_THEN_CHARGED, Run, STALE_WRITE,
    UNLIKE_READ, check_at,
};
use crate::sends::reverted::Rule;

const SETTLED: [&str; 2] = [
    "a charge behind a stored 5xx settles",
    "a charge rolled forward after a stored 5xx settles",
];
/// What the rule forbids: a second key beside a stored 5xx that charged nothing yet.
const SECOND_KEY: &str = "attempt 2 charged after a stored 5xx without a charge";

/// Attempt 1 first sent at 0 s (the provider may store a 500, having charged or not);
/// a retry at 61 s, past the lease, re-sends the key and hears the replay; at 421 s
/// (`lastSentAt` 61 + 60 + the 300 s settle window) an ordinary attempt's absence
/// would be provable.
fn stored_errors(mode: Mode) -> Bounds {
    Bounds {
        instants: vec![0, 61, 421],
        misconfigured: false,
        stored_errors: true,
        ..Bounds::from_env_with(mode, &[])
    }
}

fn holds(run: &Run) {
    for property in [ONE_CHARGE, ANSWER_RECORDED, NOTHING_BROKEN] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
}

fn holds_and_settles_before_the_cutoff(mode: Mode) {
    let run = check_at(stored_errors(mode), &[], None);
    holds(&run);
    // Not vacuous: with every instant before the cutoff, a replayed unknown is
    // recorded, a charge made before the stored 500 settles the command (found by the
    // lookup), and so does one the provider rolls forward later; and never a second
    // key beside a stored 500 that has not charged.
    for example in ["a replayed unknown recorded"].into_iter().chain(SETTLED) {
        assert!(run.found.contains_key(example), "never: {example}");
    }
    assert!(!run.found.contains_key(SECOND_KEY), "reached: {SECOND_KEY}");
}

#[test]
fn a_replayed_unknown_is_looked_up_at_once_and_charged_at_most_once() {
    holds_and_settles_before_the_cutoff(Mode::Atomic);
}

#[test]
fn a_replayed_unknown_is_looked_up_at_once_in_the_production_mode() {
    holds_and_settles_before_the_cutoff(Mode::PRODUCTION);
}

/// With the rule reverted (the replay recorded as a plain unknown, the key re-sent
/// until the cutoff), still at most one charge, but no such attempt settles before
/// the cutoff: the rule is what settles it.
#[test]
fn with_replayed_looked_up_reverted_nothing_behind_a_stored_5xx_settles_before_the_cutoff() {
    let run = check_at(stored_errors(Mode::Atomic), &[Rule::ReplayedLookedUp], None);
    holds(&run);
    for example in SETTLED {
        assert!(!run.found.contains_key(example), "reached: {example}");
    }
}

/// With the absence of an indeterminate attempt proven under the usual window (the
/// rule reverted), the checker finds the double charge of Stripe's remediation: a
/// stored 500 that charged nothing, its "not found" at 421 s taken for an absence,
/// attempt 2 charged under a new key, and the first request rolled forward.
#[test]
fn with_indeterminate_never_absent_reverted_a_rolled_forward_500_charges_twice() {
    let run = check_at(
        stored_errors(Mode::Atomic),
        &[Rule::IndeterminateNeverAbsent],
        Some(ONE_CHARGE),
    );
    let path = run.path(ONE_CHARGE);
    let absent = path
        .iter()
        .position(|t| t.note.contains("reconcile: absent 1"));
    let rolled = path
        .iter()
        .position(|t| matches!(t.action, super::system::Action::RollForward(_)));
    assert!(absent.is_some(), "attempt 1 recorded absent");
    assert!(rolled.is_some(), "the stored 500 rolled forward");
}

/// The same provider with the two workers' clocks 61 s apart, in the production mode:
/// a worker whose clock runs ahead takes the lease over while the other still holds
/// it by its own clock, and hears the replay or records it from what it knows. Still
/// one charge, no write under a superseded fence, and every commit, planned or read,
/// lands only as a fresh read decides.
#[test]
fn a_replayed_unknown_under_skewed_clocks_writes_nothing_under_a_superseded_fence() {
    let bounds = Bounds {
        skews: vec![0, 61],
        ..stored_errors(Mode::PRODUCTION)
    };
    let run = check_at(bounds, &[], None);
    holds(&run);
    for property in [REFUSED_THEN_CHARGED, STALE_WRITE, UNLIKE_READ] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
    for example in [
        "a replayed unknown recorded",
        "a planned commit lands",
        "a planned commit is refused",
    ]
    .into_iter()
    .chain(SETTLED)
    {
        assert!(run.found.contains_key(example), "never: {example}");
    }
}

/// Attempt 1 first sent at 0 s, its stored 500 (having charged nothing) never heard
/// by its sender (a timeout: `ambiguous`); the next calls come only at the cutoff,
/// when the key is no longer re-sent and only a lookup can answer, and its "not found"
/// would prove an ordinary attempt absent. The plans' lookup is `final_state`
/// (Stripe's).
fn unanswered_past_the_cutoff(mode: Mode) -> Bounds {
    Bounds {
        instants: vec![0, super::world::CUTOFF],
        misconfigured: false,
        stored_errors: true,
        final_state: true,
        ..Bounds::from_env_with(mode, &[])
    }
}

/// Under a `final_state` plan no lookup proves the unanswered attempt absent: the
/// stored 500 rolled forward settles the command under its one key, and attempt 2 is
/// never charged beside it.
#[test]
fn an_unanswered_stored_500_past_its_cutoff_is_never_proven_absent_under_a_final_state_plan() {
    let run = check_at(unanswered_past_the_cutoff(Mode::Atomic), &[], None);
    holds(&run);
    assert!(
        run.found
            .contains_key("a charge rolled forward after a stored 5xx settles"),
        "never: the roll-forward settles"
    );
    assert!(!run.found.contains_key(SECOND_KEY), "reached: {SECOND_KEY}");
    assert!(
        !run.found.contains_key("a second attempt"),
        "reached: a second attempt"
    );
}

/// The same with the rule reverted (the usual absence window applied to the
/// unanswered attempt): the checker finds the double charge the adversary found in
/// the checkout service, attempt 1 recorded absent on a lookup past the cutoff,
/// attempt 2 charged, and the stored 500 rolled forward.
#[test]
fn with_unanswered_never_absent_reverted_a_lost_stored_500_charges_twice() {
    let run = check_at(
        unanswered_past_the_cutoff(Mode::Atomic),
        &[Rule::UnansweredNeverAbsent],
        Some(ONE_CHARGE),
    );
    let path = run.path(ONE_CHARGE);
    assert!(
        path.iter().any(|t| t.note.contains("reconcile: absent 1")),
        "attempt 1 recorded absent"
    );
    assert!(
        path.iter()
            .any(|t| matches!(t.action, super::system::Action::RollForward(_))),
        "the stored 500 rolled forward"
    );
}

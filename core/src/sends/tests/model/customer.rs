//! The customer in the loop: a provider whose every new key leaves an object that
//! waits for the customer (`objects`), who pays it late, fails its challenge, pays
//! while a second tab's call reads it, or never acts. The journal records the
//! attempt `awaiting_customer`, hands the action over, never re-sends it, never opens
//! a second key for it, and settles it from the object read by id: a charge, a
//! refusal, or, from the customer's window's end (`act_by`, the attempt's stored
//! cutoff), the object cancelled and `Closed`, a final failure with nothing charged.
//!
//! The bounds are small: two workers, three calls, the instants 0 (the send), 61 s
//! (a return after the first lease) and the cutoff (`act_by`: a return cancels); no
//! misconfigured worker (a wrong plan's keys are `PlanFirst`'s, checked without a
//! customer).

use super::system::{Action, Bounds, Mode};
use super::tests::{
    ANSWER_RECORDED, NOTHING_BROKEN, ONE_CHARGE, Run, STALE_WRITE, UNLIKE_READ, check_at,
};
use super::world::{CUTOFF, RETENTION};
use crate::sends::reverted::Rule;

const NEW_KEY: &str = "never a new key while an earlier object could still be paid";
const CLOSED: &str = "a closed object ends the command with nothing charged";

/// The customer's endings and answers every unreverted run must reach, and a second
/// key (once attempt 1's request was lost, and its absence proven): the new-key
/// property is not vacuous.
const EXAMPLES: [&str; 6] = [
    "a second attempt",
    "the customer is handed the action",
    "the customer is handed the action again",
    "a paid object settles the command",
    "a failed challenge ends declined",
    "an abandoned object ends closed",
];

fn customer(mode: Mode, instants: &[i64]) -> Bounds {
    Bounds {
        instants: instants.to_vec(),
        misconfigured: false,
        customer: true,
        ..Bounds::from_env_with(mode, &[])
    }
}

fn holds(run: &Run) {
    for property in [
        ONE_CHARGE,
        ANSWER_RECORDED,
        NOTHING_BROKEN,
        STALE_WRITE,
        UNLIKE_READ,
        NEW_KEY,
        CLOSED,
    ] {
        assert!(
            run.holds(property),
            "{property}: {} steps",
            run.path(property).len()
        );
    }
    for example in EXAMPLES {
        assert!(run.found.contains_key(example), "never: {example}");
    }
}

#[test]
fn a_customer_who_acts_late_twice_or_never_is_charged_at_most_once() {
    holds(&check_at(
        customer(Mode::Atomic, &[0, 61, CUTOFF]),
        &[],
        None,
    ));
}

#[test]
fn a_customer_who_acts_late_twice_or_never_is_charged_at_most_once_in_the_production_mode() {
    holds(&check_at(
        customer(Mode::PRODUCTION, &[0, 61, CUTOFF]),
        &[],
        None,
    ));
}

/// A read by id that re-sends the key past its retention (the rule reverted) makes a
/// second object under the forgotten key; cancelled at once (the window has passed),
/// it closes the command, while the first object is still open and the customer pays
/// it.
#[test]
fn with_replay_before_cutoff_reverted_a_forgotten_key_closes_a_command_its_customer_paid() {
    let bounds = customer(Mode::Atomic, &[0, RETENTION]);
    let run = check_at(bounds, &[Rule::ReplayBeforeCutoff], Some(CLOSED));
    let path = run.path(CLOSED);
    let replayed = path
        .iter()
        .position(|t| t.note.contains("retrieve (replayable, cancel): closed"));
    let paid = path
        .iter()
        .rposition(|t| matches!(t.action, Action::Pay(0)));
    assert!(replayed.is_some(), "the forgotten key re-sent and closed");
    assert!(replayed < paid, "the first object paid after the close");
}

/// With the absence of an attempt proven while its request is still on the wire (the
/// rule reverted), attempt 2's key is sent, the late request makes attempt 1's
/// object too, and the customer pays both: the oracle sees the two charges.
#[test]
fn with_sender_settled_reverted_the_customer_pays_two_objects() {
    let bounds = customer(Mode::Atomic, &[0, CUTOFF - 2, CUTOFF]);
    let run = check_at(bounds, &[Rule::SenderSettled], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    let paid = path
        .iter()
        .filter(|t| matches!(t.action, Action::Pay(_)))
        .count();
    assert_eq!(paid, 2, "two objects paid");
    assert!(path.iter().any(|t| t.note.contains("reconcile: absent 1")));
}

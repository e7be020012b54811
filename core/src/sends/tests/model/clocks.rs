//! What skewed clocks cost the absence rules of the send layer: the journal dates an
//! attempt's send, its settle window and its key retention on the clock of whoever
//! wrote them, and a holder whose clock disagrees by a lease length proves an absence
//! the provider's contract does not, and a second charge follows. (The rules are
//! `decide`'s, the same in every mode: checked in the atomic one.)

use super::system::{Bounds, Mode};
use super::tests::{ONE_CHARGE, Traced, check_at};
use super::world::RETENTION;

/// Where in `path` worker `w` did something whose note contains `text`.
fn position(path: &[Traced], w: usize, text: &str) -> Option<usize> {
    path.iter()
        .position(|t| t.action.worker() == Some(w) && t.note.contains(text))
}

/// A reconciler whose clock runs ahead of the sender's proves an absence that early:
/// the journal accepts a "not found" from `lastSentAt` + lease + settle window on the
/// reconciler's clock, while the provider may still process the request until that
/// instant on the sender's. Attempt 1 re-sent at 2,698 s by a holder on the global
/// clock (its request may be processed until 3,058 s); at 2,997 s a holder 61 s ahead
/// reads 3,058 s, finds no charge, records the absence and opens attempt 2.
#[test]
fn a_clock_ahead_of_the_senders_proves_an_absence_before_the_settle_window_ends() {
    let bounds = Bounds {
        instants: vec![0, 2_698, 2_997],
        misconfigured: false,
        ..Bounds::from_env_with(Mode::Atomic, &[0, 61])
    };
    let run = check_at(bounds, &[], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    let absent = position(path, 1, "reconcile: absent 1").expect("an absence");
    assert_eq!(path[absent].at, 2_997);
    assert!(matches!(path.last(), Some(t) if t.note == "charges 2"));
}

/// A sender whose clock runs ahead of the reconciler's keeps the key retained that
/// long in the journal's eyes: the journal takes the provider to keep a key
/// `keyRetentionSeconds` after the attempt's first send on the sender's clock, while
/// the provider counts them from when it saw the key. Attempt 1 sent at 0 s by a
/// holder 61 s ahead (the journal's 61 s); at 3,600 s the provider has forgotten the
/// key, and a holder on the global clock, at 3,600 s, before the journal's 3,661 s,
/// looks it up (none), records the absence and opens attempt 2.
#[test]
fn a_sender_clock_ahead_of_the_reconcilers_keeps_a_forgotten_key_retained() {
    let bounds = Bounds {
        instants: vec![0, RETENTION],
        misconfigured: false,
        ..Bounds::from_env_with(Mode::Atomic, &[61, 0])
    };
    let run = check_at(bounds, &[], Some(ONE_CHARGE));
    let path = run.path(ONE_CHARGE);
    let absent = position(path, 1, "reconcile: absent 1").expect("an absence");
    assert_eq!(path[absent].at, RETENTION);
    assert!(matches!(path.last(), Some(t) if t.note == "charges 2"));
}

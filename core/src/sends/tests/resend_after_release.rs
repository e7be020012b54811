//! A released lease is taken over at once, but the key of an attempt whose last
//! sender went unanswered is re-sent by another holder only from `lastSentAt + 60 s`:
//! until then that request may still be on its way to the provider.

use super::*;
use crate::lease::Release;

const SEC: i64 = 1_000_000;

#[test]
fn a_takeover_after_a_release_resends_the_key_only_once_the_senders_lease_would_have_ended() {
    let mut store = leased();
    let (answer, _) = apply(&mut store, &Op::Begin(0, 1, T0));
    assert_eq!(answer, "permit 1 false");
    let (answer, _) = apply(&mut store, &Op::Outcome(0, 1, 1, Ambiguous, T0 + 50 * SEC));
    assert_eq!(answer, "send_ambiguous 1");
    store
        .answer(&Release::new(call(0, T0 + 51 * SEC), FenceEpoch::stored(1)))
        .expect("released");
    // Taken over at once; the re-send refused up to the microsecond, nothing written.
    let (answer, _) = apply(&mut store, &Op::Acquire(1, T0 + 52 * SEC));
    assert_eq!(answer, "acquired 2");
    let before = store.documents();
    for now in [T0 + 52 * SEC, T0 + 60 * SEC - 1] {
        let refused = store.answer(&BeginSend::new(
            call(1, now),
            FenceEpoch::stored(2),
            plan(0),
        ));
        assert_eq!(
            refused,
            Err(JournalError::ResendNotYet {
                from: at(T0 + 60 * SEC)
            }),
            "at {now}"
        );
        assert_eq!(store.documents(), before, "nothing written at {now}");
    }
    // From that instant on, the same holder re-sends the same key.
    let (answer, writes) = apply(&mut store, &Op::Begin(1, 2, T0 + 60 * SEC));
    assert_eq!((answer.as_str(), writes), ("permit 1 true", 2));
}

#[test]
fn evidence_for_the_key_is_recorded_at_once_by_the_holder_after_a_release() {
    // What the release is for: the provider's answer for the key (an event, the
    // job's lookup) lands while the unanswered request may still be in flight.
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    apply(&mut store, &Op::Outcome(0, 1, 1, Ambiguous, T0 + 50 * SEC));
    store
        .answer(&Release::new(call(0, T0 + 51 * SEC), FenceEpoch::stored(1)))
        .expect("released");
    apply(&mut store, &Op::Acquire(1, T0 + 52 * SEC));
    let (answer, _) = apply(
        &mut store,
        &Op::Reconcile(1, 2, 1, succeeded(0), T0 + 53 * SEC),
    );
    assert_eq!(answer, "terminal_succeeded");
}

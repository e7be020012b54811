//! Races through the store: every op decides on the same state, then commits land in
//! order and each that lost a precondition runs again, as the runner retries it.

use super::*;
use crate::fence::FenceEpoch;
use crate::sends::AttemptNumber;
use crate::sends::record::Record;

const TK: i64 = T0 + 61 * SEC;

fn begin(holder: usize, fence: i64, now: i64) -> BeginSend {
    BeginSend::new(call(holder, now), FenceEpoch::stored(fence), plan(0))
}

#[test]
fn twenty_four_begins_by_the_holder_after_a_takeover_record_one_resend() {
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    apply(&mut store, &Op::Outcome(0, 1, 1, Ambiguous, T0 + 1));
    apply(&mut store, &Op::Acquire(1, TK));
    let ops: Vec<BeginSend> = (0..24).map(|i| begin(1, 2, TK + i)).collect();
    let results = store.race(&ops);
    let first = results[0].clone().expect("permit");
    assert!(results.iter().all(|r| r.as_ref() == Ok(&first)));
    let BeginSendOutput::Permitted(permit) = first else {
        panic!("a permit");
    };
    assert_eq!(
        (permit.attempt, permit.resend),
        (AttemptNumber::FIRST, true)
    );
    assert_eq!(permit.provider_idempotency_key, key(AttemptNumber::FIRST));
    assert_eq!(send_counts(&store), (2, 3));
}

#[test]
fn first_begins_race_to_one_binding() {
    let mut store = leased();
    let ops: Vec<BeginSend> = (0..24).map(|i| begin(0, 1, T0 + i)).collect();
    let results = store.race(&ops);
    assert!(results.iter().all(|r| r == &results[0]));
    assert_eq!(send_counts(&store), (2, 1));
}

#[test]
fn a_terminal_transition_that_read_no_plan_loses_to_the_first_send() {
    let mut store = leased();
    let complete = Guarded::new(
        Terminal::new(
            call(0, T0 + 1),
            FenceEpoch::stored(1),
            TerminalRequest::Succeed(commitment(0)),
        ),
        &hash(),
    );
    let first = begin(0, 1, T0 + 1);
    let completing = store.attempt(&complete);
    let sending = store.attempt(&first);
    assert!(store.commit(&sending), "the first send commits");
    assert!(
        !store.commit(&completing),
        "the completion asserted the plan absent: its commit must fail"
    );
    assert_eq!(
        store.answer(&complete),
        Err(JournalError::SendOutcomeRequired)
    );
    // And the other order: the completion first, then the send sees a terminal command.
    let mut store = leased();
    let completing = store.attempt(&complete);
    let sending = store.attempt(&first);
    assert!(store.commit(&completing));
    assert!(!store.commit(&sending));
    assert_eq!(
        store.answer(&first),
        Ok(BeginSendOutput::Terminal(TerminalOutput::Succeeded))
    );
    assert_eq!(send_counts(&store), (0, 0));
}

#[test]
fn outcome_races_end_with_exactly_one_mutation() {
    for order in [[0usize, 1], [1, 0]] {
        let mut store = leased();
        apply(&mut store, &Op::Begin(0, 1, T0));
        let ops = [
            Record::outcome(
                call(0, T0 + 1),
                FenceEpoch::stored(1),
                AttemptNumber::FIRST,
                succeeded(0),
                plan(0),
            ),
            Record::outcome(
                call(0, T0 + 1),
                FenceEpoch::stored(1),
                AttemptNumber::FIRST,
                Ambiguous,
                plan(0),
            ),
        ];
        let ordered = [ops[order[0]].clone(), ops[order[1]].clone()];
        let results = store.race(&ordered);
        // Success first: the ambiguous retry sees a closed attempt (conflict). Ambiguous
        // first: the success still lands on the open attempt.
        let succeeded_first = order[0] == 0;
        let expected_events = if succeeded_first { 2 } else { 3 };
        assert_eq!(send_counts(&store), (2, expected_events), "{order:?}");
        assert!(
            results
                .iter()
                .any(|r| r == &Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)))
        );
        if succeeded_first {
            assert_eq!(results[1], Err(JournalError::TerminalConflict));
        }
    }
}

#[test]
fn reconcile_versus_a_late_outcome() {
    let mut store = leased();
    apply(&mut store, &Op::Begin(0, 1, T0));
    apply(&mut store, &Op::Acquire(1, PROVABLE - SEC));
    // The reconciler (holder 1) records a provable absence; the first holder's late
    // success is refused: its lease is gone.
    let reconcile = Record::reconciliation(
        call(1, PROVABLE),
        FenceEpoch::stored(2),
        AttemptNumber::FIRST,
        Absent,
        plan(0),
    );
    let late = Record::outcome(
        call(0, PROVABLE),
        FenceEpoch::stored(1),
        AttemptNumber::FIRST,
        succeeded(0),
        plan(0),
    );
    let reconciling = store.attempt(&reconcile);
    let lating = store.attempt(&late);
    assert!(store.commit(&reconciling));
    assert!(store.commit(&lating), "a refusal commits nothing");
    assert_eq!(store.answer(&late), Err(JournalError::LeaseNotHeld));
    assert_eq!(
        store.answer(&reconcile),
        Ok(SendOutcomeOutput::Absent {
            attempt: AttemptNumber::FIRST
        })
    );
    assert_eq!(send_counts(&store), (2, 2));
}

/// Every permit decided just before its lease ends, whose commit arrives after
/// another holder took the lease over: the first send, a re-send and attempt n + 1.
/// Each is refused at its commit and writes nothing; without the lease proof the
/// re-send and attempt n + 1 (which write only the send record) would land under the
/// superseded fence.
#[test]
fn a_permit_decided_before_a_takeover_is_refused_at_its_commit() {
    use crate::sends::reverted::{Rule, with_reverted};
    let provable = TK + 360 * SEC;
    // (the history before, the holder and fence asking, when; whether the decision
    // writes only the send layer, so that the lease proof alone refuses it)
    type Case = (&'static str, Vec<Op>, (usize, i64, i64), bool);
    let cases: [Case; 3] = [
        ("first send", vec![], (0, 1, T0 + 59 * SEC), false),
        (
            "re-send",
            vec![
                Op::Begin(0, 1, T0),
                Op::Outcome(0, 1, 1, Ambiguous, T0 + 1),
                Op::Acquire(1, TK),
            ],
            (1, 2, TK + 59 * SEC),
            true,
        ),
        (
            "attempt 2",
            vec![
                Op::Begin(0, 1, T0),
                Op::Acquire(1, provable),
                Op::Reconcile(1, 2, 1, Absent, provable),
            ],
            (1, 2, provable + 59 * SEC),
            true,
        ),
    ];
    for (name, history, (holder, fence, now), proof_alone) in cases {
        for reverted in [false, true] {
            let mut store = leased();
            for op in &history {
                apply(&mut store, op);
            }
            let rules: &[Rule] = if reverted { &[Rule::LeaseProof] } else { &[] };
            let decided = with_reverted(rules, || store.attempt(&begin(holder, fence, now)));
            assert!(
                matches!(decided.decision, crate::transaction::Decision::Mutate(..)),
                "{name}: a permit"
            );
            // Another holder's takeover, at the lease's end, lands first.
            let (taken, _) = apply(&mut store, &Op::Acquire(2, now + SEC));
            assert!(taken.starts_with("acquired"), "{name}: {taken}");
            let before = store.clone();
            let landed = store.commit(&decided);
            if reverted {
                assert_eq!(landed, proof_alone, "{name}, the proof reverted");
            } else {
                assert!(!landed, "{name}: refused");
                assert_eq!(store, before, "{name}: nothing written");
            }
        }
    }
}

//! A commit whose answer was lost: the runner reads again and decides at the same
//! captured time. Every send mutation, asked again over the state it left, must
//! answer exactly what it answered when it landed and write nothing, whatever came
//! before it: so a retry can neither double a write nor tell the caller something
//! else (a second permit, a downgraded outcome).

use super::*;
use proptest::prelude::*;

/// One random step: (kind, holder, fence, attempt, finding, clock step).
fn step() -> impl Strategy<Value = (u8, usize, i64, i64, u8, u8)> {
    (0u8..7, 0usize..3, 1i64..4, 1i64..3, 0u8..5, 0u8..6)
}

fn finding(pick: u8, reconcile: bool) -> Closing {
    match (pick, reconcile) {
        (0, _) => succeeded(0),
        (1, _) => Declined,
        (2, false) => Ambiguous,
        (3, false) => ReplayedUnknown,
        (_, false) => Indeterminate,
        (_, true) => Absent,
    }
}

/// Runs `op`; when it wrote, runs it again over the state it left and checks the
/// retry answers the same and writes nothing. Whether it wrote.
fn landed_then_retried(store: &mut Store, op: &Op) -> Result<bool, TestCaseError> {
    let (answer, wrote) = apply(store, op);
    if wrote == 0 {
        return Ok(false);
    }
    let before = store.clone();
    let again = apply(store, op);
    prop_assert_eq!(&again, &(answer, 0), "{:?}", op);
    prop_assert_eq!(&*store, &before);
    Ok(true)
}

#[test]
fn each_kind_of_send_mutation_retried_answers_the_same() {
    let later = T0 + 61 * SEC + 360 * SEC;
    let runs = [
        // Opened, ambiguous, re-sent, replayed, reconciled succeeded.
        vec![
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Ambiguous, T0 + SEC),
            Op::Acquire(1, T0 + 61 * SEC),
            Op::Begin(1, 2, T0 + 61 * SEC),
            Op::Outcome(1, 2, 1, ReplayedUnknown, T0 + 62 * SEC),
            Op::Acquire(2, later),
            Op::Reconcile(2, 3, 1, succeeded(0), later),
        ],
        // Ambiguous, proven absent, attempt 2 opened and succeeded.
        vec![
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Ambiguous, T0 + SEC),
            Op::Acquire(1, PROVABLE),
            Op::Reconcile(1, 2, 1, Absent, PROVABLE),
            Op::Begin(1, 2, PROVABLE + 1),
            Op::Outcome(1, 2, 2, succeeded(0), PROVABLE + 2),
        ],
        // Indeterminate, reconciled declined.
        vec![
            Op::Begin(0, 1, T0),
            Op::Outcome(0, 1, 1, Indeterminate, T0 + SEC),
            Op::Acquire(1, later),
            Op::Reconcile(1, 2, 1, Declined, later),
        ],
    ];
    for run in runs {
        let mut store = leased();
        for op in run {
            match landed_then_retried(&mut store, &op) {
                Ok(wrote) => assert!(wrote, "{op:?} wrote nothing"),
                Err(failed) => panic!("{failed}"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_mutation_retried_after_it_landed_answers_the_same_and_writes_nothing(
        steps in proptest::collection::vec(step(), 1..32)
    ) {
        let mut store = leased();
        let mut now = T0;
        for (kind, holder, fence, attempt, pick, clock) in steps {
            now += match clock {
                0 => 0,
                1 => 1,
                2 => SEC,
                3 | 4 => 61 * SEC,
                _ => 400 * SEC,
            };
            let op = match kind {
                0 => Op::Acquire(holder, now),
                1 => Op::Begin(holder, fence, now),
                2 => Op::Outcome(holder, fence, attempt, finding(pick, false), now),
                3 => Op::Reconcile(holder, fence, attempt, finding(pick, true), now),
                4 => Op::Complete(holder, fence, now),
                5 => Op::Fail(holder, fence, now),
                _ => Op::Begin(holder, fence, now),
            };
            landed_then_retried(&mut store, &op)?;
        }
    }
}

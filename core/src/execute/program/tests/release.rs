//! An `execute` call that holds a lease and ends without a terminal outcome releases
//! it first, at its own fence, and answers the same whatever the release answered,
//! unless the journal is corrupt; a call that holds no lease, or ends terminal,
//! releases nothing.

use super::*;
use crate::transaction::Transition;

/// After `step`: a release asked is answered `released` at `now`, and the call's
/// answer after it is told as [`Asked::Left`] with the fence released.
pub(super) fn answered(
    program: &mut ExecuteProgram,
    step: Result<Asked, JournalError>,
    now: Now,
) -> Result<Asked, JournalError> {
    let Ok(Asked::Release(fence)) = step else {
        return step;
    };
    let released = Answered::Ran(Ok(ExecuteOutput::Released(ReleaseOutput::Released)));
    match program.next(released, now).map(asked) {
        Ok(Asked::Done(execution)) => Ok(Asked::Left(fence, execution)),
        other => panic!("a release answered {other:?}"),
    }
}

/// A call brought to `answers`' last step, which must ask the release of `fence()`.
fn releasing(answers: Vec<Heard>) -> ExecuteProgram {
    let mut program = program();
    program
        .next(Answered::Nothing, Now::unstepped(at(0)))
        .unwrap();
    let mut last = None;
    for answer in answers {
        last = Some(program.next(answer, Now::unstepped(at(21))).map(asked));
    }
    assert_eq!(last, Some(Ok(Asked::Release(fence()))));
    program
}

/// Each non-terminal way a call holding a lease ends, and its answer.
fn endings() -> Vec<(Vec<Heard>, Execution)> {
    vec![
        (
            vec![
                acquired(),
                permit(1, false),
                Answered::Sent(ProviderAnswer::CustomerMustAct(action())),
                recorded(Ok(SendOutcomeOutput::AwaitingCustomer { attempt: nth(1) })),
            ],
            Execution::CustomerMustAct(action()),
        ),
        (
            vec![
                acquired(),
                cutoff_passed(),
                status(1, AttemptState::Ambiguous, true),
                Answered::LookedUp(ProviderAnswer::Unknown),
            ],
            Execution::PendingReconciliation,
        ),
    ]
}

#[test]
fn every_non_terminal_ending_under_a_lease_releases_it_then_answers() {
    let outputs = [
        ReleaseOutput::Released,
        ReleaseOutput::AlreadyReleased,
        ReleaseOutput::Expired,
        ReleaseOutput::NotHeld,
        ReleaseOutput::Terminal,
    ];
    for (i, (_, execution)) in endings().into_iter().enumerate() {
        let answers = || endings().swap_remove(i).0;
        for output in outputs {
            let mut program = releasing(answers());
            let released = Answered::Ran(Ok(ExecuteOutput::Released(output)));
            assert_eq!(
                program.next(released, Now::unstepped(at(21))).map(asked),
                Ok(Asked::Done(execution.clone())),
                "{output:?}"
            );
        }
        // A release that fails (lost, contended, unavailable) changes no answer.
        for error in [
            JournalError::LeaseExpired,
            JournalError::StaleFence,
            JournalError::LeaseNotHeld,
            JournalError::ClockRegression,
            JournalError::unavailable(None, 10, false),
        ] {
            let mut program = releasing(answers());
            assert_eq!(
                program
                    .next(Answered::Ran(Err(error)), Now::unstepped(at(21)))
                    .map(asked),
                Ok(Asked::Done(execution.clone())),
                "{error:?}"
            );
        }
        // A corrupt journal is the call's error, as everywhere.
        let mut program = releasing(answers());
        let corrupt = JournalError::corrupt("a released lifecycle without its release record");
        assert_eq!(
            program
                .next(Answered::Ran(Err(corrupt)), Now::unstepped(at(21)))
                .map(asked),
            Err(corrupt)
        );
    }
}

#[test]
fn the_release_is_a_fresh_read_at_the_calls_time_and_kept_nowhere() {
    let mut program = program();
    program
        .next(Answered::Nothing, Now::unstepped(at(0)))
        .unwrap();
    program.next(acquired(), Now::unstepped(at(0))).unwrap();
    program
        .next(permit(1, false), Now::unstepped(at(0)))
        .unwrap();
    program
        .next(
            Answered::Sent(ProviderAnswer::CustomerMustAct(action())),
            Now::unstepped(at(20)),
        )
        .unwrap();
    let next = program
        .next(
            recorded(Ok(SendOutcomeOutput::AwaitingCustomer { attempt: nth(1) })),
            Now::unstepped(at(21)),
        )
        .unwrap();
    let Next::Run(run) = next else {
        panic!("{next:?}")
    };
    assert!(run.fresh && !run.keep && run.record);
    let ExecuteOp::Release(op) = &run.op else {
        panic!("{:?}", run.op)
    };
    assert_eq!(op.fence(), fence());
    assert_eq!(run.op.name(), OperationName::ReleaseLease);
}

#[test]
fn a_call_without_a_lease_or_with_a_terminal_answer_releases_nothing() {
    // Busy: no lease of this call's.
    assert_eq!(
        steps(vec![started_with(LeaseOutput::Busy)]),
        [Asked::Done(Execution::InProgress)]
    );
    // The lease lost under the permit: nothing to release.
    assert_eq!(
        steps(vec![acquired(), began(Err(JournalError::StaleFence))]).last(),
        Some(&Asked::Done(Execution::InProgress))
    );
    // Terminal: the lifecycle ended the lease.
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Declined),
            recorded(Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal))),
        ])
        .last(),
        Some(&Asked::Done(Execution::Declined))
    );
}

#[test]
fn a_call_whose_send_went_unanswered_releases_its_lease_and_a_resend_not_yet_is_retried() {
    // Its request may still be in flight: released all the same (an event or the
    // job may record the key's answer at once), since `begin_send` refuses any other
    // holder's re-send of the key until the lease it was sent under would have ended.
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::Unknown),
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
        ])
        .last(),
        Some(&Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(60)
            }
        ))
    );
    // The next caller takes the released lease over at once and is refused the
    // re-send: it answers retry-later for the time left to `resendFrom`, rounded up,
    // and releases again.
    let from = Timestamp::from_micros(at(42).micros() + 1).expect("in range");
    assert_eq!(
        steps(vec![
            acquired(),
            began(Err(JournalError::ResendNotYet { from }))
        ])
        .last(),
        Some(&Asked::Left(
            fence(),
            Execution::RetryLater {
                after: Duration::from_secs(43)
            }
        ))
    );
    // A stored 5xx replayed is an answer: nothing in flight, the lease given up.
    assert_eq!(
        steps(vec![
            acquired(),
            permit(1, false),
            Answered::Sent(ProviderAnswer::ReplayedUnknown),
            recorded(Ok(SendOutcomeOutput::Ambiguous { attempt: nth(1) })),
            status(1, AttemptState::ReplayedUnknown, true),
            Answered::LookedUp(ProviderAnswer::Unknown),
        ])
        .last(),
        Some(&Asked::Left(fence(), Execution::PendingReconciliation))
    );
}

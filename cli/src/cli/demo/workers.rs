//! The demo's workers on a seeded scheduler. The workers sent at one command in one
//! round race each other by taking their steps (one journal call each) one at a time,
//! in an order drawn from the seed: the same seed makes the same interleavings, hence
//! the same answers and the same table. Different commands share no document, so
//! their workers run concurrently without changing any answer.

use super::tally::{Tally, bump};
use crate::{CommandInput, FenceEpoch, Journal, JournalError, LeaseId};
use crate::{LeaseOutput, TerminalOutput, TerminalReferenceFingerprint};

/// What a worker does once it holds the lease.
#[derive(Clone, Copy)]
pub(super) enum Action {
    /// Records success.
    Complete,
    /// Records final failure.
    Fail,
    /// Crashes holding the lease (it comes back stale after expiry).
    Crash,
}

/// One worker's part, drawn from the seed before the round starts.
pub(super) struct Plan {
    /// Its lease id.
    pub(super) lease: LeaseId,
    /// Whether its acquisition's answer is lost (it asks again).
    pub(super) lost_acquire: bool,
    /// Whether its terminal answer is lost (it records it again).
    pub(super) lost_terminal: bool,
    /// What it does with the lease.
    pub(super) action: Action,
    /// The terminal reference it completes with.
    pub(super) reference: TerminalReferenceFingerprint,
}

/// A worker that crashed holding a lease: it comes back later and tries to finish.
pub(super) struct Crashed {
    /// Its lease id.
    pub(super) lease: LeaseId,
    /// The fence it held.
    pub(super) fence: FenceEpoch,
}

/// Where a worker is: its next journal call, or done.
enum Step {
    Acquire,
    RetryAcquire {
        first: LeaseOutput,
        fence: FenceEpoch,
    },
    Act {
        fence: FenceEpoch,
    },
    RetryTerminal {
        fence: FenceEpoch,
        outcome: Result<TerminalOutput, JournalError>,
    },
    Done,
}

/// Runs `plans` against `command`: each turn, `rng` picks one worker that is not done
/// and it makes its next call. Returns the workers that crashed holding the lease.
pub(super) async fn run(
    journal: &Journal,
    command: &CommandInput,
    plans: Vec<Plan>,
    mut rng: fastrand::Rng,
    tally: &Tally,
) -> Result<Vec<Crashed>, JournalError> {
    let mut workers: Vec<(Plan, Step)> = plans.into_iter().map(|p| (p, Step::Acquire)).collect();
    let mut crashed = Vec::new();
    loop {
        let ready: Vec<usize> = (0..workers.len())
            .filter(|i| !matches!(workers[*i].1, Step::Done))
            .collect();
        if ready.is_empty() {
            return Ok(crashed);
        }
        let (plan, step) = &mut workers[ready[rng.usize(..ready.len())]];
        let current = std::mem::replace(step, Step::Done);
        *step = turn(journal, command, plan, current, tally, &mut crashed).await?;
    }
}

/// One call of a worker at `step`; returns its next step.
async fn turn(
    journal: &Journal,
    command: &CommandInput,
    plan: &Plan,
    step: Step,
    tally: &Tally,
    crashed: &mut Vec<Crashed>,
) -> Result<Step, JournalError> {
    let terminal = |fence| async move {
        match plan.action {
            Action::Complete => {
                journal
                    .complete_command(command, &plan.lease, fence, &plan.reference)
                    .await
            }
            _ => journal.fail_command(command, &plan.lease, fence).await,
        }
    };
    Ok(match step {
        Step::Acquire => match journal.acquire_lease(command, &plan.lease).await? {
            LeaseOutput::Busy => {
                bump(&tally.busy);
                Step::Done
            }
            LeaseOutput::Succeeded | LeaseOutput::FailedFinal => {
                bump(&tally.terminal_observed);
                Step::Done
            }
            first @ LeaseOutput::Acquired { fence_epoch, .. } => {
                bump(&tally.acquisitions);
                if fence_epoch.get() > 1 {
                    bump(&tally.takeovers);
                }
                match plan.lost_acquire {
                    true => Step::RetryAcquire {
                        first,
                        fence: fence_epoch,
                    },
                    false => Step::Act { fence: fence_epoch },
                }
            }
        },
        // The response was lost: the retry must answer exactly the same.
        Step::RetryAcquire { first, fence } => {
            bump(&tally.lost_responses_retried);
            if journal.acquire_lease(command, &plan.lease).await? != first {
                bump(&tally.unexpected);
            }
            Step::Act { fence }
        }
        Step::Act { fence } => {
            if let Action::Crash = plan.action {
                bump(&tally.crashed_holders);
                crashed.push(Crashed {
                    lease: plan.lease.clone(),
                    fence,
                });
                return Ok(Step::Done);
            }
            let outcome = terminal(fence).await;
            match outcome {
                Ok(TerminalOutput::Succeeded) => bump(&tally.succeeded),
                Ok(TerminalOutput::FailedFinal) => bump(&tally.failed),
                Err(_) => bump(&tally.unexpected),
            }
            match plan.lost_terminal {
                true => Step::RetryTerminal { fence, outcome },
                false => Step::Done,
            }
        }
        Step::RetryTerminal { fence, outcome } => {
            bump(&tally.lost_responses_retried);
            if terminal(fence).await != outcome {
                bump(&tally.unexpected);
            }
            Step::Done
        }
        Step::Done => Step::Done,
    })
}

//! Recording what the provider did with an attempt, shared by `record_send_outcome`
//! and `reconcile_send`: an exact retry of a closed attempt, and the one commit that
//! records an outcome (joined with B2B's terminal transition when it ends the command).

use super::attempt::{self, AttemptState, OutcomeSource, RecordedOutcome, SendAttempt};
use super::attempt_number::AttemptNumber;
use super::event::SendEventType;
use super::load::SendState;
use super::mutation::{end_command, next_revision, record};
use super::output::SendOutcomeOutput;
use super::provider::Closing;
use crate::document::lifecycle::Lifecycle;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::{LeaseCall, TerminalOutput, TerminalRequest};
use crate::transaction::{Decision, Halt, Snapshot};

impl Closing {
    fn state(&self) -> AttemptState {
        match self {
            Self::Succeeded(_) => AttemptState::Succeeded,
            Self::Declined | Self::Closed => AttemptState::Declined,
            Self::Ambiguous => AttemptState::Ambiguous,
            Self::ReplayedUnknown => AttemptState::ReplayedUnknown,
            Self::Indeterminate => AttemptState::Indeterminate,
            Self::AwaitingCustomer => AttemptState::AwaitingCustomer,
            Self::Absent => AttemptState::Absent,
        }
    }

    fn event_type(&self, source: OutcomeSource) -> SendEventType {
        match (self, source) {
            (Self::Succeeded(_), OutcomeSource::ProviderAnswer) => SendEventType::Succeeded,
            (Self::Declined, OutcomeSource::ProviderAnswer) => SendEventType::Declined,
            (Self::Succeeded(_), OutcomeSource::Reconciliation) => {
                SendEventType::ReconciledSucceeded
            }
            (Self::Declined | Self::Closed, OutcomeSource::Reconciliation) => {
                SendEventType::ReconciledDeclined
            }
            (Self::Closed, OutcomeSource::ProviderAnswer) => SendEventType::Declined,
            (Self::Ambiguous, _) => SendEventType::Ambiguous,
            (Self::ReplayedUnknown, _) => SendEventType::ReplayedUnknown,
            (Self::Indeterminate, _) => SendEventType::Indeterminate,
            (Self::AwaitingCustomer, _) => SendEventType::AwaitingCustomer,
            (Self::Absent, _) => SendEventType::ReconciledAbsent,
        }
    }

    /// The answer once the finding is recorded.
    pub(crate) fn output(&self, attempt: AttemptNumber) -> SendOutcomeOutput {
        match self {
            Self::Succeeded(_) => SendOutcomeOutput::Terminal(TerminalOutput::Succeeded),
            Self::Declined | Self::Closed => {
                SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)
            }
            Self::Ambiguous | Self::ReplayedUnknown | Self::Indeterminate => {
                SendOutcomeOutput::Ambiguous { attempt }
            }
            Self::AwaitingCustomer => SendOutcomeOutput::AwaitingCustomer { attempt },
            Self::Absent => SendOutcomeOutput::Absent { attempt },
        }
    }
}

/// An attempt that is closed (the command terminal): the same finding observes,
/// anything else is `terminal_conflict`.
pub(crate) fn closed_retry(
    lifecycle: &Lifecycle,
    attempt: &SendAttempt,
    finding: &Closing,
) -> Result<Decision<SendOutcomeOutput>, Halt> {
    let same = match (attempt.state, finding) {
        (AttemptState::Succeeded, Closing::Succeeded(commitment)) => {
            lifecycle.terminal_commitment.as_ref() == Some(commitment)
        }
        (AttemptState::Declined, Closing::Declined | Closing::Closed) => true,
        _ => false,
    };
    if same {
        Ok(Decision::Observe(finding.output(attempt.attempt)))
    } else {
        Err(Halt::Reject(JournalError::TerminalConflict))
    }
}

/// Records `finding` on the open attempt in `state` in one commit: the send document,
/// its event and, for success or a final refusal, B2B's terminal transition.
/// `with_result`: a success whose envelope the same commit stores (`results/current`),
/// marked on the send document.
pub(crate) fn record_finding(
    call: &LeaseCall,
    fence: FenceEpoch,
    state: &SendState,
    finding: &Closing,
    source: OutcomeSource,
    snapshot: &Snapshot,
    with_result: bool,
) -> Result<Decision<SendOutcomeOutput>, Halt> {
    let before = &state.attempt;
    let after = SendAttempt {
        version: attempt::version_of(finding.state()),
        send_revision: next_revision(Some(before))?,
        state: finding.state(),
        outcome: Some(RecordedOutcome {
            at: call.now(),
            fence_epoch: fence,
            source,
        }),
        result_stored: with_result && matches!(finding, Closing::Succeeded(_)),
        ..before.clone()
    };
    let hash = call.hash();
    let mut writes = match finding {
        Closing::Succeeded(commitment) => {
            end_command(
                call,
                fence,
                TerminalRequest::Succeed(commitment.clone()),
                snapshot,
            )?
            .0
        }
        Closing::Declined | Closing::Closed => {
            end_command(call, fence, TerminalRequest::Fail, snapshot)?.0
        }
        Closing::Ambiguous
        | Closing::ReplayedUnknown
        | Closing::Indeterminate
        | Closing::AwaitingCustomer
        | Closing::Absent => Vec::new(),
    };
    writes.extend(record(
        hash,
        Some(before),
        &after,
        finding.event_type(source),
    ));
    Ok(Decision::Mutate(writes, finding.output(after.attempt)))
}

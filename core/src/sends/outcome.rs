//! `record_send_outcome`: what the provider answered the fence that last sent.
//!
//! ```text
//! another plan bound (before any other rule)    -> plan_conflict
//! no plan bound / other attempt                 -> attempt_mismatch
//! not the holder / not the fence                -> lease_not_held / stale_fence
//! attempt closed, same outcome (and commitment) -> the same terminal outcome (read-only)
//! attempt closed, anything else                 -> terminal_conflict
//! attempt absent                                -> attempt_mismatch
//! open, the caller's fence did not send it last -> attempt_mismatch
//! ambiguous, ambiguous again                    -> send_ambiguous (read-only)
//! open + ambiguous, now ≥ sendCutoffAt          -> send_cutoff_passed
//! open, lease not active                        -> clock_regression / lease_expired
//! open + succeeded / declined                   -> close + B2B success / final failure, one commit
//! sending + ambiguous                           -> ambiguous
//! ```
//!
//! The cutoff stops sending, not the recording of an answer: the sender's success or
//! decline is evidence at any time while its lease runs.

use super::attempt::{AttemptState, OutcomeSource};
use super::close::{Closing, closed_retry, record_finding};
use super::load::{self, Context, bound_state};
use super::mutation::{active, held};
use super::output::SendOutcomeOutput;
use super::plan::ProviderPlan;
use super::reverted::{Rule, reverted};
use crate::envelope::record::MarksResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::LeaseCall;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};

/// A prepared `record_send_outcome`.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    call: LeaseCall,
    fence: FenceEpoch,
    attempt: i64,
    finding: Closing,
    plan: ProviderPlan,
    with_result: bool,
}

impl RecordOutcome {
    /// Prepares the record of `finding` (succeeded, declined or ambiguous) on `attempt`
    /// of the command bound to `plan`.
    pub fn new(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: i64,
        finding: Closing,
        plan: ProviderPlan,
    ) -> Self {
        Self {
            call,
            fence,
            attempt,
            finding,
            plan,
            with_result: false,
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<SendOutcomeOutput>, Halt> {
        let call = &self.call;
        let Context {
            lifecycle, sends, ..
        } = load::load(call.command(), snapshot)?;
        let state = bound_state(sends, Some(&self.plan), call.command())?;
        let lifecycle = held(lifecycle.as_ref(), call.owner(), self.fence.get())?;
        let attempt = &state.attempt;
        if attempt.attempt != self.attempt {
            return Err(Halt::Reject(JournalError::AttemptMismatch));
        }
        match attempt.state {
            AttemptState::Succeeded | AttemptState::Declined => {
                return closed_retry(lifecycle, attempt, &self.finding);
            }
            AttemptState::Absent => return Err(Halt::Reject(JournalError::AttemptMismatch)),
            AttemptState::Sending | AttemptState::Ambiguous => {}
        }
        if attempt.last_sent_fence_epoch != self.fence.get() {
            return Err(Halt::Reject(JournalError::AttemptMismatch));
        }
        if attempt.state == AttemptState::Ambiguous && self.finding == Closing::Ambiguous {
            return Ok(Decision::Observe(self.finding.output(attempt.attempt)));
        }
        let now = call.now();
        let cutoff_applies =
            self.finding == Closing::Ambiguous || reverted(Rule::EvidenceAfterCutoff);
        if cutoff_applies && now >= attempt.send_cutoff_at {
            return Err(Halt::Reject(JournalError::SendCutoffPassed));
        }
        active(lifecycle, now)?;
        if now < attempt.updated_at() {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        record_finding(
            call,
            self.fence.get(),
            &state,
            &self.finding,
            OutcomeSource::SendOutcome,
            snapshot,
            self.with_result,
        )
    }
}

/// Wrapped in `WithResult`: the send document marks the stored envelope.
impl MarksResult for RecordOutcome {
    fn storing_result(mut self) -> Self {
        self.with_result = true;
        self
    }
}

impl Transition for RecordOutcome {
    type Output = SendOutcomeOutput;

    fn name(&self) -> OperationName {
        OperationName::RecordSendOutcome
    }

    fn paths(&self) -> Vec<String> {
        load::first_read(self.call.command())
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<SendOutcomeOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

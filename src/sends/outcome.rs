//! `record_send_outcome`: what the provider answered the fence that last sent.
//!
//! ```text
//! no plan bound / other attempt                 -> attempt_mismatch
//! not the holder / not the fence                -> lease_not_held / stale_fence
//! attempt closed, same outcome (and commitment) -> the same terminal outcome (read-only)
//! attempt closed, anything else                 -> terminal_conflict
//! attempt absent                                -> attempt_mismatch
//! open, the caller's fence did not send it last -> attempt_mismatch
//! ambiguous, ambiguous again                    -> send_ambiguous (read-only)
//! open, now ≥ sendCutoffAt                      -> send_cutoff_passed
//! open, lease not active                        -> clock_regression / lease_expired
//! open + succeeded / declined                   -> close + B2B success / final failure, one commit
//! sending + ambiguous                           -> ambiguous
//! ```

use super::attempt::{AttemptState, OutcomeSource};
use super::close::{Finding, closed_retry, record_finding};
use super::load::{self, Context, Sends};
use super::mutation::{active, held};
use super::output::SendOutcomeOutput;
use crate::error::JournalError;
use crate::lease::LeaseCall;
use crate::transaction::{Decision, OperationName, Snapshot, Step, Transition};

/// A prepared `record_send_outcome`.
#[derive(Debug, Clone)]
pub struct RecordOutcome {
    call: LeaseCall,
    fence: i64,
    attempt: i64,
    finding: Finding,
}

impl RecordOutcome {
    /// Prepares the record of `finding` (succeeded, declined or ambiguous) on `attempt`.
    pub(crate) fn new(call: LeaseCall, fence: i64, attempt: i64, finding: Finding) -> Self {
        Self {
            call,
            fence,
            attempt,
            finding,
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<SendOutcomeOutput>, Step> {
        let call = &self.call;
        let Context {
            lifecycle, sends, ..
        } = load::load(call, snapshot)?;
        let state = match sends {
            Sends::Unbound => return Err(Step::Reject(JournalError::AttemptMismatch)),
            Sends::Unreadable(error) => return Err(Step::Reject(error)),
            Sends::Bound(state) => state,
        };
        let lifecycle = held(lifecycle.as_ref(), call.owner(), self.fence)?;
        let attempt = &state.attempt;
        if attempt.attempt != self.attempt {
            return Err(Step::Reject(JournalError::AttemptMismatch));
        }
        match attempt.state {
            AttemptState::Succeeded | AttemptState::Declined => {
                return closed_retry(lifecycle, attempt, &self.finding);
            }
            AttemptState::Absent => return Err(Step::Reject(JournalError::AttemptMismatch)),
            AttemptState::Sending | AttemptState::Ambiguous => {}
        }
        if attempt.last_sent_fence_epoch != self.fence {
            return Err(Step::Reject(JournalError::AttemptMismatch));
        }
        if attempt.state == AttemptState::Ambiguous && self.finding == Finding::Ambiguous {
            return Ok(Decision::Observe(self.finding.output(attempt.attempt)));
        }
        let now = call.now();
        if now >= attempt.send_cutoff_at {
            return Err(Step::Reject(JournalError::SendCutoffPassed));
        }
        active(lifecycle, now)?;
        if now < attempt.updated_at() {
            return Err(Step::Reject(JournalError::ClockRegression));
        }
        record_finding(
            call,
            self.fence,
            &state,
            &self.finding,
            OutcomeSource::SendOutcome,
            snapshot,
        )
    }
}

impl Transition for RecordOutcome {
    type Output = SendOutcomeOutput;

    fn name(&self) -> OperationName {
        OperationName::RecordSendOutcome
    }

    fn paths(&self) -> Vec<String> {
        load::first_read(&self.call)
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<SendOutcomeOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Step::decision)
    }
}

//! Recording what the provider answered an attempt: `record_send_outcome` (the
//! sender's own answer) and `reconcile_send` (evidence found later, by any holder of
//! the lease), one operation in two modes over one set of rules.
//!
//! ```text
//! either mode:
//! another plan bound (before any other rule)     -> plan_conflict
//! no plan bound / other attempt                  -> attempt_mismatch
//! not the holder / not the fence                 -> lease_not_held / stale_fence
//! attempt closed, same answer (and commitment)   -> the same terminal outcome (read-only)
//! attempt closed, anything else                  -> terminal_conflict
//! open, lease not active                         -> clock_regression / lease_expired
//! open + succeeded / declined                    -> close + B2B success / final failure, one commit
//! the sender's outcome:
//! attempt absent                                 -> attempt_mismatch
//! open, the caller's fence did not send it last  -> attempt_mismatch
//! ambiguous, unknown again                       -> ambiguous (read-only)
//! replayed_unknown or indeterminate, any unknown -> ambiguous (read-only; a must-act
//!                                                   too)
//! open + any unknown, now ≥ sendCutoffAt         -> send_cutoff_passed
//! sending + unknown                              -> ambiguous
//! sending or ambiguous + replayed unknown        -> replayed_unknown (never re-sent)
//! sending or ambiguous + indeterminate           -> indeterminate (never re-sent)
//! sending or ambiguous + the customer must act   -> awaiting_customer (never re-sent)
//! awaiting_customer, any unknown or must act     -> awaiting_customer (read-only)
//! a reconciliation:
//! attempt absent, not found again                -> absent (read-only)
//! attempt absent, succeeded / declined           -> attempt_mismatch
//! open + not found, absence not provable         -> absence_not_provable (from when;
//!                                                   never for replayed_unknown or
//!                                                   indeterminate: `absence`)
//! open + not found, provable                     -> absent: the next begin_send opens n + 1
//! awaiting_customer + closed (read by id)        -> declined + B2B final failure, one
//!                                                   commit: nothing charged
//! any other open state + closed                  -> absence_not_provable
//! ```
//!
//! The cutoff stops sending, not the recording of an answer: a success or decline is
//! evidence at any time while its recorder's lease runs.

use super::absence;
use super::attempt::{AttemptState, OutcomeSource};
use super::attempt_number::AttemptNumber;
use super::close::{closed_retry, record_finding};
use super::load::{self, Context, bound_state};
use super::mutation::{active, held};
use super::output::SendOutcomeOutput;
use super::plan::ProviderPlan;
use super::provider::{Closing, ProviderAnswer};
use super::reverted::{Rule, reverted};
use crate::envelope::record::{MarksResult, WithResult};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::LeaseCall;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};

/// Who records the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The sender, with the provider's answer to its own send (`record_send_outcome`).
    Outcome,
    /// A holder of the lease, with evidence about an attempt whose outcome is unknown
    /// (`reconcile_send`).
    Reconciliation,
}

/// A prepared record of a provider's answer.
#[derive(Debug, Clone)]
pub struct Record {
    call: LeaseCall,
    fence: FenceEpoch,
    attempt: AttemptNumber,
    finding: Closing,
    /// The plan the caller sends; `None` for a holder that knows the command by its
    /// key hash alone (the recovery job), which records under the plan the command
    /// bound.
    plan: Option<ProviderPlan>,
    mode: Mode,
    with_result: bool,
}

/// A record of an answer, with the result envelope of a success stored in its
/// commit.
pub(crate) type Recording = WithResult<Record>;

impl Record {
    /// Prepares the record of `answer` on `attempt` of the command bound to `plan`
    /// (the bound plan whatever it is, when `None`), under the fence `fence`.
    /// `invalid_input` for a "not found" offered as the sender's outcome (`outcome`)
    /// or an unknown answer offered as evidence (`evidence`).
    pub fn prepare(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: AttemptNumber,
        answer: &ProviderAnswer,
        plan: Option<ProviderPlan>,
        mode: Mode,
    ) -> Result<Recording, JournalError> {
        match (mode, answer) {
            (Mode::Outcome, ProviderAnswer::NotFound) => {
                return Err(JournalError::invalid("outcome"));
            }
            (
                Mode::Reconciliation,
                ProviderAnswer::Unknown
                | ProviderAnswer::ReplayedUnknown
                | ProviderAnswer::Indeterminate
                | ProviderAnswer::CustomerMustAct(_),
            ) => {
                return Err(JournalError::invalid("evidence"));
            }
            _ => {}
        }
        let (finding, envelope) = match (mode, answer) {
            // A send's "closed" tells nothing of the send: as an unknown.
            (Mode::Outcome, ProviderAnswer::Closed) => (Closing::Ambiguous, None),
            _ => answer.closing(call.identity()),
        };
        let (hash, now) = (call.hash().clone(), call.now());
        let op = Self::new(call, fence, attempt, finding, plan, mode);
        Ok(WithResult::optional(op, &hash, now, envelope))
    }

    /// The record of `finding` in `mode` on `attempt` of the command bound to `plan`,
    /// unchecked and storing no envelope: [`Record::prepare`] for a provider's
    /// answer.
    pub(crate) fn new(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: AttemptNumber,
        finding: Closing,
        plan: Option<ProviderPlan>,
        mode: Mode,
    ) -> Self {
        Self {
            call,
            fence,
            attempt,
            finding,
            plan,
            mode,
            with_result: false,
        }
    }

    #[cfg(test)]
    /// The sender's record of `finding` (unchecked, no envelope).
    pub(crate) fn outcome(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: AttemptNumber,
        finding: Closing,
        plan: ProviderPlan,
    ) -> Self {
        Self::new(call, fence, attempt, finding, Some(plan), Mode::Outcome)
    }

    #[cfg(test)]
    /// A reconciliation of `finding` (unchecked, no envelope).
    pub(crate) fn reconciliation(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: AttemptNumber,
        finding: Closing,
        plan: ProviderPlan,
    ) -> Self {
        Self::new(
            call,
            fence,
            attempt,
            finding,
            Some(plan),
            Mode::Reconciliation,
        )
    }

    #[cfg(test)]
    /// The fence, attempt, finding and mode it records (for the tables of the programs
    /// that prepare it).
    pub(crate) fn parts(&self) -> (FenceEpoch, AttemptNumber, &Closing, Mode) {
        (self.fence, self.attempt, &self.finding, self.mode)
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<SendOutcomeOutput>, Halt> {
        let call = &self.call;
        let Context {
            lifecycle, sends, ..
        } = load::load(call.command(), snapshot)?;
        let state = bound_state(sends, self.plan.as_ref(), call.command())?;
        let lifecycle = held(lifecycle.as_ref(), call.owner(), self.fence)?;
        let attempt = &state.attempt;
        if attempt.attempt != self.attempt {
            return Err(Halt::Reject(JournalError::AttemptMismatch));
        }
        let sender = self.mode == Mode::Outcome;
        match attempt.state {
            AttemptState::Succeeded | AttemptState::Declined => {
                return closed_retry(lifecycle, attempt, &self.finding);
            }
            AttemptState::Absent if !sender && self.finding == Closing::Absent => {
                return Ok(Decision::Observe(self.finding.output(attempt.attempt)));
            }
            AttemptState::Absent => return Err(Halt::Reject(JournalError::AttemptMismatch)),
            AttemptState::Sending
            | AttemptState::Ambiguous
            | AttemptState::ReplayedUnknown
            | AttemptState::Indeterminate
            | AttemptState::AwaitingCustomer => {}
        }
        let now = call.now();
        if sender {
            if attempt.last_sent_fence_epoch != self.fence {
                return Err(Halt::Reject(JournalError::AttemptMismatch));
            }
            // An unknown again changes nothing; an indeterminate attempt is never
            // undone by another unknown (the key still cannot tell, and the provider
            // may still complete it).
            let unknown = matches!(
                self.finding,
                Closing::Ambiguous
                    | Closing::ReplayedUnknown
                    | Closing::Indeterminate
                    | Closing::AwaitingCustomer
            );
            let kept = match attempt.state {
                AttemptState::Ambiguous => self.finding == Closing::Ambiguous,
                AttemptState::ReplayedUnknown
                | AttemptState::Indeterminate
                | AttemptState::AwaitingCustomer => unknown,
                _ => false,
            };
            if kept {
                return Ok(Decision::Observe(self.finding.output(attempt.attempt)));
            }
            let cutoff_applies = unknown || reverted(Rule::EvidenceAfterCutoff);
            if cutoff_applies && now >= attempt.send_cutoff_at {
                return Err(Halt::Reject(JournalError::SendCutoffPassed));
            }
        }
        active(lifecycle, now)?;
        if now < attempt.updated_at() {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        if !sender && self.finding == Closing::Absent {
            absence::check(&state.plan, attempt, now).map_err(Halt::Reject)?;
        }
        // Only an attempt that waits for its customer is proven closed by its object's
        // final state read by id; no other attempt's absence is proven so.
        if self.finding == Closing::Closed && attempt.state != AttemptState::AwaitingCustomer {
            return Err(Halt::Reject(JournalError::AbsenceNotProvable {
                provable_from: None,
            }));
        }
        let source = if sender {
            OutcomeSource::ProviderAnswer
        } else {
            OutcomeSource::Reconciliation
        };
        record_finding(
            call,
            self.fence,
            &state,
            &self.finding,
            source,
            snapshot,
            self.with_result,
        )
    }
}

/// Wrapped in `WithResult`: the send document marks the stored envelope.
impl MarksResult for Record {
    fn storing_result(mut self) -> Self {
        self.with_result = true;
        self
    }
}

impl Transition for Record {
    type Output = SendOutcomeOutput;

    fn name(&self) -> OperationName {
        match self.mode {
            Mode::Outcome => OperationName::RecordSendOutcome,
            Mode::Reconciliation => OperationName::ReconcileSend,
        }
    }

    /// A reconciled absence reads its attempt's late charge too (none can exist for an
    /// open attempt), and, for a caller that holds the plan, everything the next
    /// permit reads: `begin_send`'s first read (attempt 1's key index with it) and the
    /// next attempt's key index (none exists before that attempt opens), so that what
    /// the commit leaves known lets the next attempt's permit be planned with every
    /// absence proven.
    fn paths(&self) -> Vec<String> {
        let mut paths = load::first_read(self.call.command());
        if self.mode == Mode::Reconciliation && self.finding == Closing::Absent {
            paths.push(super::late::path(self.call.hash(), self.attempt));
            if let (Some(plan), Some(next)) = (&self.plan, self.attempt.next()) {
                let identity = self.call.identity();
                paths.push(super::begin::first_index(identity, plan));
                let key = super::plan::attempt_key(identity, plan.operation(), next);
                paths.push(super::key_index::path(&key));
            }
        }
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<SendOutcomeOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

//! `reconcile_send`: verified provider evidence about an attempt whose outcome is
//! unknown, recorded by a holder of the lease (before or after the cutoff).
//!
//! ```text
//! another plan bound (before any other rule)    -> plan_conflict
//! no plan bound / other attempt                 -> attempt_mismatch
//! not the holder / not the fence                -> lease_not_held / stale_fence
//! attempt closed, same evidence (and commitment)-> the same terminal outcome (read-only)
//! attempt closed, anything else                 -> terminal_conflict
//! attempt absent, not_found again               -> send_absent (read-only)
//! attempt absent, succeeded / declined          -> attempt_mismatch
//! open, lease not active                        -> clock_regression / lease_expired
//! open + succeeded / declined                   -> close + B2B success / final failure, one commit
//! open + not_found, absence not provable (`absence`) -> absence_not_provable (from when)
//! open + not_found, provable                    -> absent: the next begin_send opens n + 1
//! ```

use super::absence;
use super::attempt::{AttemptState, OutcomeSource};
use super::close::{Closing, closed_retry, record_finding};
use super::load::{self, Context, bound_state};
use super::mutation::{active, held};
use super::output::SendOutcomeOutput;
use super::plan::ProviderPlan;
use crate::envelope::record::MarksResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::LeaseCall;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};

/// A prepared `reconcile_send`.
#[derive(Debug, Clone)]
pub struct Reconcile {
    call: LeaseCall,
    fence: FenceEpoch,
    attempt: i64,
    finding: Closing,
    /// The plan the caller sends; `None` for the recovery job, which holds no
    /// parameters and reconciles under the plan the command bound.
    plan: Option<ProviderPlan>,
    with_result: bool,
}

impl Reconcile {
    /// Prepares the record of `finding` (succeeded, declined or absent) on `attempt`
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
            plan: Some(plan),
            with_result: false,
        }
    }

    /// Prepares the record of `finding` on `attempt` under the plan the command
    /// bound, whatever it is: for a holder that knows the command by its key hash
    /// alone (`recovery`). Every other rule is [`Reconcile::new`]'s.
    pub fn on_bound_plan(
        call: LeaseCall,
        fence: FenceEpoch,
        attempt: i64,
        finding: Closing,
    ) -> Self {
        Self {
            call,
            fence,
            attempt,
            finding,
            plan: None,
            with_result: false,
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<SendOutcomeOutput>, Halt> {
        let call = &self.call;
        let Context {
            lifecycle, sends, ..
        } = load::load(call.command(), snapshot)?;
        let state = bound_state(sends, self.plan.as_ref(), call.command())?;
        let lifecycle = held(lifecycle.as_ref(), call.owner(), self.fence.get())?;
        let attempt = &state.attempt;
        if attempt.attempt != self.attempt {
            return Err(Halt::Reject(JournalError::AttemptMismatch));
        }
        match attempt.state {
            AttemptState::Succeeded | AttemptState::Declined => {
                return closed_retry(lifecycle, attempt, &self.finding);
            }
            AttemptState::Absent if self.finding == Closing::Absent => {
                return Ok(Decision::Observe(self.finding.output(attempt.attempt)));
            }
            AttemptState::Absent => return Err(Halt::Reject(JournalError::AttemptMismatch)),
            AttemptState::Sending | AttemptState::Ambiguous => {}
        }
        let now = call.now();
        active(lifecycle, now)?;
        if now < attempt.updated_at() {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        if self.finding == Closing::Absent {
            absence::check(&state.plan, attempt, now).map_err(Halt::Reject)?;
        }
        record_finding(
            call,
            self.fence.get(),
            &state,
            &self.finding,
            OutcomeSource::Reconciliation,
            snapshot,
            self.with_result,
        )
    }
}

/// Wrapped in `WithResult`: the send document marks the stored envelope.
impl MarksResult for Reconcile {
    fn storing_result(mut self) -> Self {
        self.with_result = true;
        self
    }
}

impl Transition for Reconcile {
    type Output = SendOutcomeOutput;

    fn name(&self) -> OperationName {
        OperationName::ReconcileSend
    }

    fn paths(&self) -> Vec<String> {
        load::first_read(self.call.command())
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<SendOutcomeOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

//! The send layer: permits before a provider call, outcomes after it,
//! reconciliation, and the status with the send state.

use super::Engine;
use crate::engine::Memory;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId};
use crate::sends::begin::BeginSend;
use crate::sends::outcome::RecordOutcome;
use crate::sends::plan::MAX_ATTEMPT;
use crate::sends::reconcile::Reconcile;
use crate::sends::status::SendStatusRead;
use crate::sends::{
    BeginSendOutput, CommandStatus, ProviderPlan, SendEvidence, SendOutcome, SendOutcomeOutput,
};

/// The holder of a lease on a command, at the fence it holds.
#[derive(Clone, Copy)]
pub(crate) struct Holder<'a> {
    pub(crate) command: &'a CommandInput,
    pub(crate) lease: &'a LeaseId,
    pub(crate) fence: FenceEpoch,
}

fn check_attempt(attempt: i64) -> Result<(), JournalError> {
    if (1..=MAX_ATTEMPT).contains(&attempt) {
        Ok(())
    } else {
        Err(JournalError::invalid("attempt"))
    }
}

pub(crate) async fn begin(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
    fence: FenceEpoch,
    plan: &ProviderPlan,
    memory: &mut Memory,
) -> Result<BeginSendOutput, JournalError> {
    let op = BeginSend::new(engine.lease_call(command, lease)?, fence, plan.clone());
    engine.run_remembering(&op, memory).await
}

pub(crate) async fn record_outcome(
    engine: &Engine,
    holder: Holder<'_>,
    plan: &ProviderPlan,
    attempt: i64,
    outcome: &SendOutcome,
    memory: &mut Memory,
) -> Result<SendOutcomeOutput, JournalError> {
    check_attempt(attempt)?;
    let Holder {
        command,
        lease,
        fence,
    } = holder;
    let call = engine.lease_call(command, lease)?;
    let (finding, envelope) = outcome.closing(call.identity());
    let (now, hash) = (call.now(), call.hash().clone());
    let op = RecordOutcome::new(call, fence, attempt, finding, plan.clone());
    match envelope {
        None => engine.run_remembering(&op, memory).await,
        Some(envelope) => {
            let op = WithResult::new(op, &hash, now, envelope);
            engine.run_remembering(&op, memory).await
        }
    }
}

pub(crate) async fn reconcile(
    engine: &Engine,
    holder: Holder<'_>,
    plan: &ProviderPlan,
    attempt: i64,
    evidence: &SendEvidence,
    memory: &mut Memory,
) -> Result<SendOutcomeOutput, JournalError> {
    check_attempt(attempt)?;
    let Holder {
        command,
        lease,
        fence,
    } = holder;
    let call = engine.lease_call(command, lease)?;
    let (finding, envelope) = evidence.closing(call.identity());
    let (now, hash) = (call.now(), call.hash().clone());
    let op = Reconcile::new(call, fence, attempt, finding, plan.clone());
    match envelope {
        None => engine.run_remembering(&op, memory).await,
        Some(envelope) => {
            let op = WithResult::new(op, &hash, now, envelope);
            engine.run_remembering(&op, memory).await
        }
    }
}

/// `send_status`, answering `plan_conflict` first when `plan` is given and another
/// plan is bound: what `execute` reads before it derives a lookup key from the stored
/// plan.
pub(crate) async fn status(
    engine: &Engine,
    command: &CommandInput,
    plan: Option<&ProviderPlan>,
) -> Result<CommandStatus, JournalError> {
    let read = SendStatusRead::new(engine.command_call(command)?);
    let read = match plan {
        Some(plan) => read.for_plan(plan),
        None => read,
    };
    engine.run(&read).await
}

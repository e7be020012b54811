//! The send layer: permits before a provider call, outcomes after it,
//! reconciliation, and the status with the send state.

use super::Engine;
use crate::ProviderAnswer;
use crate::engine::Memory;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId};
use crate::sends::AttemptNumber;
use crate::sends::begin::BeginSend;
use crate::sends::record::{Mode, RecordAnswer};
use crate::sends::status::SendStatusRead;
use crate::sends::{BeginSendOutput, CommandStatus, ProviderPlan, SendOutcomeOutput};

/// The holder of a lease on a command, at the fence it holds.
#[derive(Clone, Copy)]
pub(crate) struct Holder<'a> {
    pub(crate) command: &'a CommandInput,
    pub(crate) lease: &'a LeaseId,
    pub(crate) fence: FenceEpoch,
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
    attempt: AttemptNumber,
    outcome: &ProviderAnswer,
    memory: &mut Memory,
) -> Result<SendOutcomeOutput, JournalError> {
    record(
        engine,
        holder,
        plan,
        attempt,
        outcome,
        Mode::Outcome,
        memory,
    )
    .await
}

pub(crate) async fn reconcile(
    engine: &Engine,
    holder: Holder<'_>,
    plan: &ProviderPlan,
    attempt: AttemptNumber,
    evidence: &ProviderAnswer,
    memory: &mut Memory,
) -> Result<SendOutcomeOutput, JournalError> {
    record(
        engine,
        holder,
        plan,
        attempt,
        evidence,
        Mode::Reconciliation,
        memory,
    )
    .await
}

async fn record(
    engine: &Engine,
    holder: Holder<'_>,
    plan: &ProviderPlan,
    attempt: AttemptNumber,
    answer: &ProviderAnswer,
    mode: Mode,
    memory: &mut Memory,
) -> Result<SendOutcomeOutput, JournalError> {
    let Holder {
        command,
        lease,
        fence,
    } = holder;
    let call = engine.lease_call(command, lease)?;
    let op = RecordAnswer::prepare(call, fence, attempt, answer, Some(plan.clone()), mode)?;
    engine.run_remembering(&op, memory).await
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

//! Registration, leases, terminal outcomes and status.

use super::Engine;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use crate::lease::{
    Acquire, LeaseOutput, StatusOutput, StatusRead, Terminal, TerminalOutput, TerminalRequest,
};
use crate::registration::{Registration, RegistrationOutput};
use crate::sends::guard::Guarded;
use crate::start::{Start, StartOutput};

pub(crate) async fn register(
    engine: &Engine,
    command: &CommandInput,
) -> Result<RegistrationOutput, JournalError> {
    let op = Registration::new(command.identity(), engine.now()?);
    engine.run(op).await
}

pub(crate) async fn acquire(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
) -> Result<LeaseOutput, JournalError> {
    let op = Acquire::new(engine.lease_call(command, lease)?);
    engine.run(op).await
}

pub(crate) async fn start(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
) -> Result<StartOutput, JournalError> {
    let identity = command.identity();
    let owner = command.lease_owner(&identity, lease)?;
    let op = Start::new(identity, owner, engine.now()?);
    engine.run(op).await
}

/// A terminal transition under the send guard: `complete_command` and `fail_command`.
pub(crate) async fn terminal(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
    fence: FenceEpoch,
    reference: Option<&TerminalReferenceFingerprint>,
) -> Result<TerminalOutput, JournalError> {
    let call = engine.lease_call(command, lease)?;
    let request = match reference {
        Some(reference) => TerminalRequest::Succeed(call.identity().terminal_commitment(reference)),
        None => TerminalRequest::Fail,
    };
    let hash = call.hash().clone();
    let op = Terminal::new(call, fence, request);
    engine.run(Guarded::new(op, &hash)).await
}

pub(crate) async fn status(
    engine: &Engine,
    command: &CommandInput,
) -> Result<StatusOutput, JournalError> {
    let op = StatusRead::new(engine.command_call(command)?);
    engine.run(op).await
}

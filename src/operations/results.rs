//! Result envelopes: a success that stores one, and reading it back.

use super::Engine;
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId};
use crate::lease::{Terminal, TerminalOutput, TerminalRequest};
use crate::sends::guard::Guarded;

pub(crate) async fn complete(
    engine: &Engine,
    command: &CommandInput,
    lease: &LeaseId,
    fence: FenceEpoch,
    result: &ResultEnvelope,
) -> Result<TerminalOutput, JournalError> {
    let call = engine.lease_call(command, lease)?;
    let now = call.now();
    let hash = call.hash().clone();
    let commitment = call.identity().terminal_commitment(&result.reference());
    let op = Terminal::new(call, fence, TerminalRequest::Succeed(commitment));
    let op = WithResult::new(Guarded::new(op, &hash), &hash, now, result);
    engine.run(op).await
}

/// The stored result, answered from what `memory` knows when that holds every
/// document the read needs (no RPC), read otherwise.
pub(crate) async fn read(
    engine: &Engine,
    command: &CommandInput,
) -> Result<Option<ResultEnvelope>, JournalError> {
    engine
        .run(ResultRead::new(engine.command_call(command)?))
        .await
}

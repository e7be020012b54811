//! Result envelopes on [`Journal`]: a success that stores one, and reading it back.

use super::Journal;
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId};
use crate::lease::{LeaseCall, Terminal, TerminalOutput, TerminalRequest};
use crate::sends::guard::Guarded;

impl Journal {
    /// [`complete_command`](Self::complete_command) with `result` as the outcome: the
    /// terminal reference is `result.reference()` (the SHA-256 of its canonical text)
    /// and the envelope is stored server-only at
    /// `checkoutRequests/{commandKeyHash}/results/current` in the same commit as the
    /// success. The same rules apply, the send guard included. An exact retry (the
    /// same envelope) answers the same and writes nothing; another envelope, or an
    /// envelope for a command that succeeded without one, is `terminal_conflict`; a
    /// results document that should not be there is `journal_corrupt`, nothing
    /// written.
    pub async fn complete_with_result(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
        result: &ResultEnvelope,
    ) -> Result<TerminalOutput, JournalError> {
        let call = self.lease_call(command, lease)?;
        let now = call.now();
        let identity = command.identity();
        let hash = identity.command_key_hash();
        let commitment = identity.terminal_commitment(&result.reference());
        let op = Terminal::new(
            call,
            expected_fence_epoch.get(),
            TerminalRequest::Succeed(commitment),
        );
        let op = WithResult::new(Guarded::new(op, hash), hash, now, result);
        self.run(&op).await
    }

    /// The result envelope a succeeded command stored, byte-identical to the one
    /// recorded: `Some` once its commitment is recomputed and equals the lifecycle's
    /// `terminalCommitmentHash`; `None` for a command that has not succeeded (yet) or
    /// succeeded with a bare reference. `not_registered` for an unknown command;
    /// `journal_corrupt` for an altered, non-canonical or misplaced envelope, or any
    /// malformed document read. Writes nothing.
    pub async fn result(
        &self,
        command: &CommandInput,
    ) -> Result<Option<ResultEnvelope>, JournalError> {
        let identity = command.identity();
        // The owner is not consulted by a read; any digest will do.
        let owner = identity.command_key_hash().clone();
        let op = ResultRead::new(LeaseCall::new(identity, owner, self.now()?));
        self.run(&op).await
    }
}

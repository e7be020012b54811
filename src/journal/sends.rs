//! The send layer's entry points on [`Journal`]: permits before a provider call,
//! outcomes after it, reconciliation, and the status with the send state.

use super::Journal;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId};
use crate::lease::LeaseCall;
use crate::sends::begin::BeginSend;
use crate::sends::close::Finding;
use crate::sends::outcome::RecordOutcome;
use crate::sends::plan::MAX_ATTEMPT;
use crate::sends::reconcile::Reconcile;
use crate::sends::status::SendStatusRead;
use crate::sends::{
    BeginSendOutput, CommandStatus, ProviderPlan, SendEvidence, SendOutcome, SendOutcomeOutput,
};

fn check_attempt(attempt: i64) -> Result<(), JournalError> {
    if (1..=MAX_ATTEMPT).contains(&attempt) {
        Ok(())
    } else {
        Err(JournalError::invalid("attempt"))
    }
}

impl Journal {
    /// A permit to send `plan` to the provider, recorded *before* the caller sends,
    /// for the exact active holder `lease` at `expected_fence_epoch`.
    ///
    /// The first call binds the plan for ever and opens attempt 1 (`sending`, with the
    /// captured `firstSentAt` and the stored `sendCutoffAt`); the same holder and
    /// fence again gets the same permit without a write; a later holder (after a
    /// takeover) re-sends the same attempt with the same key (`resend: true`) while
    /// `now < sendCutoffAt`; once an attempt is recorded absent, the next call opens
    /// attempt n + 1 with a new key (only a proven absence is recorded: see
    /// [`reconcile_send`](Self::reconcile_send)). A plan other than the bound one is
    /// `plan_conflict` before any other rule; at or after the cutoff with the outcome
    /// unknown, or with an unreadable send record, every caller gets
    /// `send_cutoff_passed`; a terminal command answers its terminal outcome. The
    /// permit carries its lease's expiry: the request must not be sent at or after
    /// it. Refusals write nothing.
    pub async fn begin_send(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
        plan: &ProviderPlan,
    ) -> Result<BeginSendOutput, JournalError> {
        let op = BeginSend::new(
            self.lease_call(command, lease)?,
            expected_fence_epoch.get(),
            plan.clone(),
        );
        self.run(&op).await
    }

    /// Records what the provider answered attempt `attempt` of the command bound to
    /// `plan`, for the holder whose fence last sent it: `Succeeded` performs B2B's
    /// terminal success and closes the attempt in one commit, `SucceededWith` likewise
    /// and stores the envelope in that commit (as
    /// [`complete_with_result`](Self::complete_with_result)), `Declined` final failure
    /// likewise, `Ambiguous` keeps it open. A success or decline is evidence whenever
    /// it arrives: it is recorded after the cutoff too, while the sender's lease runs;
    /// only `Ambiguous` at or after the cutoff is `send_cutoff_passed`. Another plan
    /// is `plan_conflict` before any other rule. Exact retries answer the same and
    /// write nothing.
    pub async fn record_send_outcome(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
        plan: &ProviderPlan,
        attempt: i64,
        outcome: &SendOutcome,
    ) -> Result<SendOutcomeOutput, JournalError> {
        check_attempt(attempt)?;
        let identity = command.identity();
        let (finding, envelope) = match outcome {
            SendOutcome::Succeeded(reference) => (
                Finding::Succeeded(identity.terminal_commitment(reference)),
                None,
            ),
            SendOutcome::SucceededWith(envelope) => (
                Finding::Succeeded(identity.terminal_commitment(&envelope.reference())),
                Some(envelope),
            ),
            SendOutcome::Declined => (Finding::Declined, None),
            SendOutcome::Ambiguous => (Finding::Ambiguous, None),
        };
        let call = self.lease_call(command, lease)?;
        let now = call.now();
        let op = RecordOutcome::new(
            call,
            expected_fence_epoch.get(),
            attempt,
            finding,
            plan.clone(),
        );
        match envelope {
            None => self.run(&op).await,
            Some(envelope) => {
                let hash = identity.command_key_hash();
                let op = WithResult::new(op, hash, now, envelope);
                self.run(&op).await
            }
        }
    }

    /// Records verified provider evidence about attempt `attempt` (of the command
    /// bound to `plan`) whose outcome is unknown, for a holder of the lease (acquire
    /// one first), before or after the cutoff: `Succeeded`, `SucceededWith` and
    /// `Declined` end the command as [`record_send_outcome`](Self::record_send_outcome)
    /// does, at any time; `NotFound` marks the attempt `absent`, the only way a new
    /// attempt (a new key) may open, and only once the journal can prove the absence
    /// from its own records: otherwise `absence_not_provable`, with the instant from
    /// which it will be where one exists, and nothing written. Another plan is
    /// `plan_conflict` before any other rule.
    pub async fn reconcile_send(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
        plan: &ProviderPlan,
        attempt: i64,
        evidence: &SendEvidence,
    ) -> Result<SendOutcomeOutput, JournalError> {
        check_attempt(attempt)?;
        let identity = command.identity();
        let (finding, envelope) = match evidence {
            SendEvidence::Succeeded(reference) => (
                Finding::Succeeded(identity.terminal_commitment(reference)),
                None,
            ),
            SendEvidence::SucceededWith(envelope) => (
                Finding::Succeeded(identity.terminal_commitment(&envelope.reference())),
                Some(envelope),
            ),
            SendEvidence::Declined => (Finding::Declined, None),
            SendEvidence::NotFound => (Finding::Absent, None),
        };
        let call = self.lease_call(command, lease)?;
        let now = call.now();
        let op = Reconcile::new(
            call,
            expected_fence_epoch.get(),
            attempt,
            finding,
            plan.clone(),
        );
        match envelope {
            None => self.run(&op).await,
            Some(envelope) => {
                let hash = identity.command_key_hash();
                let op = WithResult::new(op, hash, now, envelope);
                self.run(&op).await
            }
        }
    }

    /// [`status`](Self::status) with the send state: the same redacted fields, plus,
    /// once a plan is bound, the stored plan's fingerprint, the current attempt, its
    /// state, its cutoff, whether it needs reconciliation and from when its absence
    /// is provable. Writes nothing.
    pub async fn send_status(&self, command: &CommandInput) -> Result<CommandStatus, JournalError> {
        self.run(&self.status_read(command)?).await
    }

    /// `send_status` that answers `plan_conflict` when another plan than `plan` is
    /// bound: what `execute` reads before it derives a lookup key from the stored plan.
    pub(crate) async fn send_status_for(
        &self,
        command: &CommandInput,
        plan: &ProviderPlan,
    ) -> Result<CommandStatus, JournalError> {
        self.run(&self.status_read(command)?.for_plan(plan)).await
    }

    fn status_read(&self, command: &CommandInput) -> Result<SendStatusRead, JournalError> {
        let identity = command.identity();
        // The owner is not consulted by status; any digest will do.
        let owner = identity.command_key_hash().clone();
        Ok(SendStatusRead::new(LeaseCall::new(
            identity,
            owner,
            self.now()?,
        )))
    }
}

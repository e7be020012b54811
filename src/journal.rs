//! The entry point: a `Journal` over one Firestore project. Its `impl` here holds
//! every operation (the ledger's in [`ledger`]): each prepares the core's transition
//! (or program) from the caller's input and the time it captures, and runs it through
//! the one driver (`crate::runner`). How a journal is built and set up is in
//! [`settings`].

use crate::identity::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use crate::runner::{Calling, Engine, Unrecorded};
use crate::sends::{
    AttemptNumber, BeginSendOutput, CommandStatus, ProviderPlan, SendOutcomeOutput,
};
use command_journal_core::ProviderAnswer;
use command_journal_core::error::JournalError;
use command_journal_core::tools::envelope::read::ResultRead;
use command_journal_core::tools::envelope::record::WithResult;
use command_journal_core::tools::execute::program::ExecuteProgram;
use command_journal_core::tools::lease::{Acquire, StatusRead, Terminal, TerminalRequest};
use command_journal_core::tools::registration::Registration;
use command_journal_core::tools::sends::begin::BeginSend;
use command_journal_core::tools::sends::guard::Guarded;
use command_journal_core::tools::sends::record::{Mode, Record};
use command_journal_core::tools::sends::status::SendStatusRead;
use command_journal_core::tools::start::Start;
use command_journal_core::tools::transaction::Transition;
use command_journal_core::{
    Executed, Execution, FenceEpoch, LeaseOutput, Provider, RegistrationOutput, ResultEnvelope,
    StartOutput, StatusOutput, TerminalOutput,
};

mod ledger;
mod settings;

/// A command journal over one project: cheap to clone, safe to share across tasks.
///
/// Every operation recomputes the command identity from the caller's input, reads the
/// trusted clock once (truncated to microseconds), then runs one transaction whose
/// attempts all reuse that instant.
#[derive(Clone)]
pub struct Journal {
    engine: Engine,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("connection", &self.engine.connection)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// Registers `command` exactly once: `registered_new` creates the root and its
    /// revision-1 audit event atomically; `registered_existing` writes nothing;
    /// a different payload is `command_conflict`; any malformed or orphan state is
    /// `journal_corrupt` and nothing is written.
    pub async fn register_command(
        &self,
        command: &CommandInput,
    ) -> Result<RegistrationOutput, JournalError> {
        let op = Registration::new(command.identity(), self.engine.now()?);
        self.engine.run(op).await
    }

    /// Acquires the command's fixed 60 s lease for `lease`, one id per worker attempt.
    ///
    /// `lease_acquired` for a first acquisition (fence 1), an expired takeover (the
    /// fence plus one, also by the same lease id) or the same holder's retry before
    /// expiry (same fence and expiry, no write); `lease_busy` while another holder's lease is
    /// active; the terminal outcome once the command is terminal. A lease is
    /// concurrency evidence only: it does not authorise a provider call.
    pub async fn acquire_lease(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
    ) -> Result<LeaseOutput, JournalError> {
        let op = Acquire::new(self.engine.lease_call(command, lease)?);
        self.engine.run(op).await
    }

    /// Registers `command` if needed and acquires its lease for `lease`, in one
    /// operation at one captured time: exactly what
    /// [`register_command`](Self::register_command) followed by
    /// [`acquire_lease`](Self::acquire_lease) answer and store.
    ///
    /// For a command not yet registered, one read and one commit create the root, its
    /// revision-1 audit event, the lifecycle and the revision-2 lease event together
    /// (2 RPCs instead of 3). Otherwise it is one read, plus one commit when the lease
    /// is acquired or taken over. Refusals write nothing, the registration included.
    pub async fn start(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
    ) -> Result<StartOutput, JournalError> {
        let identity = command.identity();
        let owner = command.lease_owner(&identity, lease)?;
        self.engine
            .run(Start::new(identity, owner, self.engine.now()?))
            .await
    }

    /// Records success with the command-bound commitment of `reference`, for the
    /// exact holder and fence while the lease is active. An exact retry answers the
    /// same without writing, even after expiry; anything else is rejected unwritten.
    /// Once the command has a bound provider plan this is `send_outcome_required`:
    /// it ends only through [`record_send_outcome`](Self::record_send_outcome) or
    /// [`reconcile_send`](Self::reconcile_send).
    pub async fn complete_command(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
        reference: &TerminalReferenceFingerprint,
    ) -> Result<TerminalOutput, JournalError> {
        self.terminal(command, lease, expected_fence_epoch, Some(reference))
            .await
    }

    /// Records final failure (no reason is stored), under the same rules as
    /// [`complete_command`](Self::complete_command), the send guard included.
    pub async fn fail_command(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
    ) -> Result<TerminalOutput, JournalError> {
        self.terminal(command, lease, expected_fence_epoch, None)
            .await
    }

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
        let call = self.engine.lease_call(command, lease)?;
        let (now, hash) = (call.now(), call.hash().clone());
        let commitment = call.identity().terminal_commitment(&result.reference());
        let op = Terminal::new(
            call,
            expected_fence_epoch,
            TerminalRequest::Succeed(commitment),
        );
        let op = WithResult::new(Guarded::new(op, &hash), &hash, now, result);
        self.engine.run(op).await
    }

    /// Every command waiting for someone at the journal's time: a lease that expired
    /// without a terminal transition, with its send (none, an attempt whose outcome
    /// is unknown, or one proven absent) and what would move it on, in key-hash
    /// order, redacted as [`status`](Self::status) is. Reads the lifecycles not yet
    /// settled (one collection-group query) and, for each expired one, its send
    /// documents; writes nothing. A broken document among them is `journal_corrupt`.
    /// The query reads only the journal's own lifecycles (`checkoutRequests/{hash}`):
    /// a `lifecycle` collection elsewhere in the database is never listed.
    pub async fn pending(&self) -> Result<crate::pending::Listing, JournalError> {
        self.pending_in(crate::pending::KeyRange::ALL).await
    }

    /// [`pending`](Self::pending) over the commands of one key range only: `range`
    /// of the ranges that partition the key-hash space (a recovery task's share).
    pub async fn pending_in(
        &self,
        range: crate::pending::KeyRange,
    ) -> Result<crate::pending::Listing, JournalError> {
        crate::pending::listing::pending(&self.engine, range).await
    }

    /// Settles every pending command whose send outcome is unknown from `provider`'s
    /// evidence, with no client: lists them ([`pending`](Self::pending)), asks
    /// `provider.lookup` for each attempt's key (derived from the stored plan) and
    /// records what it finds under a recovery lease taken by key hash alone, by the
    /// rules of [`reconcile_send`](Self::reconcile_send): a charge found is the
    /// command's success with its result (which the client's later call replays), a
    /// decline its final failure, a "not found" the attempt's absence only where it is
    /// proven (looked up once provable, at the account `options.account` declares and
    /// the plan was bound to; a command bound to another account is left alone).
    /// Never calls `provider.send`, never opens an attempt, and writes nothing without
    /// evidence: what it cannot settle stays listed. `options` bounds concurrency,
    /// rate, count and time, chooses the key range, and starts after a cursor or the
    /// range's checkpoint (recording where the run stopped for the next);
    /// `on_progress` hears of each command in the order handled.
    /// An error of one command is reported with it and the run goes on; an invalid
    /// option, a failed listing or a broken checkpoint is the call's error.
    pub async fn recover<P: Provider>(
        &self,
        provider: &P,
        options: &crate::recovery::RecoverOptions,
        on_progress: impl FnMut(crate::recovery::Progress<'_>),
    ) -> Result<crate::recovery::Recovery, JournalError> {
        crate::recovery::job::recover(&self.engine, provider, options, on_progress).await
    }

    /// Records one piece of evidence given from outside (a provider's event, its
    /// signature verified by the provider's adapter first), with no client and no
    /// client's lease: the key index finds the command the evidence's provider
    /// idempotency key belongs to (no raw value), and the one settle program records
    /// the answer given under a lease it takes itself as a recovery holder, with the
    /// same takeover, fence and commit proofs as recovery's. A charge is the command's
    /// success (its result stored and replayed to the client's next call) or, for a
    /// command that ended or an attempt that moved on without it, a late charge; a
    /// final refusal its failure; a "not found" or an answer with no verdict writes
    /// nothing, and evidence never proves an absence. Never calls the provider. A key
    /// the journal does not know is [`EvidenceOutcome::UnknownObject`](crate::evidence::EvidenceOutcome::UnknownObject)
    /// (acknowledged, counted under `record_evidence`), not an error; a command whose
    /// lease another holder runs is `InProgress`, nothing written (give it again
    /// later). The same evidence twice, or evidence in any order, writes nothing twice.
    /// An index document the journal cannot hold to its command is `journal_corrupt`,
    /// nothing written.
    pub async fn record_evidence(
        &self,
        evidence: crate::evidence::Evidence,
        options: &crate::evidence::EvidenceOptions,
    ) -> Result<crate::evidence::EvidenceOutcome, JournalError> {
        crate::evidence::record(&self.engine, evidence, options).await
    }

    /// The evidence checkpoint of the feed named `feed` (1 to 256 characters of
    /// `A-Z a-z 0-9 _ - . :`, such as the provider, account and mode a backfill job
    /// reads; stored only as its digest): `None` when no run advanced it yet. Parsed
    /// strictly: a malformed document is `journal_corrupt`. Writes nothing.
    pub async fn evidence_checkpoint(
        &self,
        feed: &str,
    ) -> Result<Option<crate::evidence::EvidenceCheckpoint>, JournalError> {
        crate::evidence::checkpoint(&self.engine, feed).await
    }

    /// Advances the evidence checkpoint of the feed named `feed` to `list_from` (a Unix
    /// second: the next run lists the items created at or after it), forward only: a
    /// point at or before the stored one writes nothing (`Kept`); a run that advanced
    /// it meanwhile is never undone (the commit is conditional on the document as
    /// read, and decided again when it moved). A point after the journal's time is
    /// `invalid_input` (`listFrom`); a malformed checkpoint is `journal_corrupt`,
    /// nothing written.
    pub async fn advance_evidence_checkpoint(
        &self,
        feed: &str,
        list_from: i64,
    ) -> Result<crate::evidence::Advance, JournalError> {
        crate::evidence::advance_checkpoint(&self.engine, feed, list_from).await
    }

    /// The command's redacted state, revision and fence, validating every document
    /// it reads; writes nothing.
    pub async fn status(&self, command: &CommandInput) -> Result<StatusOutput, JournalError> {
        let op = StatusRead::new(self.engine.command_call(command)?);
        self.engine.run(op).await
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
        let op = ResultRead::new(self.engine.command_call(command)?);
        self.engine.run(op).await
    }

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
        let call = self.engine.lease_call(command, lease)?;
        let op = BeginSend::new(call, expected_fence_epoch, plan.clone());
        self.engine.run(op).await
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
        attempt: AttemptNumber,
        outcome: &ProviderAnswer,
    ) -> Result<SendOutcomeOutput, JournalError> {
        let call = self.engine.lease_call(command, lease)?;
        let plan = Some(plan.clone());
        let fence = expected_fence_epoch;
        let op = Record::prepare(call, fence, attempt, outcome, plan, Mode::Outcome)?;
        self.engine.run(op).await
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
        attempt: AttemptNumber,
        evidence: &ProviderAnswer,
    ) -> Result<SendOutcomeOutput, JournalError> {
        let call = self.engine.lease_call(command, lease)?;
        let (plan, fence) = (Some(plan.clone()), expected_fence_epoch);
        let mode = Mode::Reconciliation;
        let op = Record::prepare(call, fence, attempt, evidence, plan, mode)?;
        self.engine.run(op).await
    }

    /// [`status`](Self::status) with the send state: the same redacted fields, plus,
    /// once a plan is bound, the stored plan's fingerprint, the current attempt, its
    /// state, its cutoff, whether it needs reconciliation and from when its absence
    /// is provable. Writes nothing.
    pub async fn send_status(&self, command: &CommandInput) -> Result<CommandStatus, JournalError> {
        let op = SendStatusRead::new(self.engine.command_call(command)?);
        self.engine.run(op).await
    }

    /// Runs the whole send protocol for `command` with `plan` through `provider`:
    /// registers the command if new and takes a fresh lease; sends with a deadline
    /// that ends at least 10 s before the lease does, under a permit recorded first;
    /// records the answer under the fence; past the stored cutoff asks the provider
    /// instead of sending, records its evidence, and opens a new attempt (a new key)
    /// only after the provider has proven the old one absent. A succeeded command
    /// answers its stored result on every later call, without a send.
    ///
    /// At most one send per attempt per call, and a second attempt only once the
    /// provider has proven the first absent. A send that does not answer by its
    /// deadline (or a call dropped mid-send) leaves the attempt open: the next call
    /// re-sends it with the same key before the cutoff, or looks it up after. Errors
    /// are the journal's ([`JournalError`]); a lost lease is [`Execution::InProgress`].
    ///
    /// ```no_run
    /// # use command_journal::*;
    /// # async fn handler(journal: &Journal, command: &CommandInput, plan: &ProviderPlan,
    /// #     provider: &impl Provider) -> Result<(), JournalError> {
    /// match journal.execute(command, plan, provider).await? {
    ///     Execution::Succeeded(result) => println!("{}", result.canonical()),
    ///     Execution::Declined => println!("declined"),
    ///     Execution::InProgress | Execution::PendingReconciliation => println!("later"),
    ///     Execution::RetryLater { after } => println!("retry in {after:?}"),
    ///     Execution::SucceededWithoutResult => println!("succeeded"),
    ///     // The client secret or the page's URL: for the customer's browser only.
    ///     Execution::CustomerMustAct(_action) => println!("the customer must act"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn execute<P: Provider>(
        &self,
        command: &CommandInput,
        plan: &ProviderPlan,
        provider: &P,
    ) -> Result<Execution, JournalError> {
        let executed = self.execute_marked(command, plan, provider).await?;
        Ok(executed.execution)
    }

    /// [`execute`](Self::execute), the same call, whose answer also says whether it
    /// is a replay ([`Executed::replayed`](crate::sends::Executed)): a terminal outcome
    /// the journal had stored before this call, answered without a send. The
    /// execution is the one `execute` answers, a stored result byte for byte; the
    /// marker is what lets an HTTP edge set `Idempotent-Replayed: true` or count
    /// replays without a second read.
    pub async fn execute_marked<P: Provider>(
        &self,
        command: &CommandInput,
        plan: &ProviderPlan,
        provider: &P,
    ) -> Result<Executed, JournalError> {
        let lease = self.engine.new_lease();
        let identity = command.identity();
        let owner = command.lease_owner(&identity, &lease)?;
        let (mode, fast) = (
            self.engine.options.concurrency,
            !self.engine.options.reads_only,
        );
        let program = ExecuteProgram::new(identity, owner, plan.clone(), mode, fast)?;
        self.engine.run(Calling::with(program, provider)).await
    }

    /// Runs a transition of the core
    /// (`command_journal_core::tools::transaction::Transition`) through this journal's
    /// one runner, exactly as its own operations are run: the same reads, preconditions,
    /// follow-up bound, retries and counters, without an operation metric. For tests and
    /// tools that drive a transition of their own (the emulator test of the follow-up
    /// read bound); the journal's guarantees are those of its own transitions, and a
    /// foreign one writes whatever it decides. Left out of the documentation: its bound
    /// is the core's `tools`, not a service's API.
    #[doc(hidden)]
    pub async fn run_transition<T: Transition>(&self, op: &T) -> Result<T::Output, JournalError> {
        self.engine.run(Unrecorded(op)).await
    }

    /// A terminal transition (success with `reference`'s commitment, or final failure)
    /// for the holder `lease` at `fence`, behind the send guard.
    async fn terminal(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        fence: FenceEpoch,
        reference: Option<&TerminalReferenceFingerprint>,
    ) -> Result<TerminalOutput, JournalError> {
        let call = self.engine.lease_call(command, lease)?;
        let request = match reference {
            Some(reference) => {
                TerminalRequest::Succeed(call.identity().terminal_commitment(reference))
            }
            None => TerminalRequest::Fail,
        };
        let hash = call.hash().clone();
        let op = Terminal::new(call, fence, request);
        self.engine.run(Guarded::new(op, &hash)).await
    }
}

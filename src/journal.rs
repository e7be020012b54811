//! The entry point: a `Journal` over one Firestore project.

mod execute;
mod results;
mod sends;

use crate::connection::Connection;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use crate::lease::{
    Acquire, LeaseCall, LeaseOutput, StatusOutput, StatusRead, Terminal, TerminalOutput,
    TerminalRequest,
};
use crate::metrics::{self, MetricOutcome};
use crate::registration::{Registration, RegistrationOutput};
use crate::runner::{self, Concurrency, Counters, RetryPolicy, RunOptions, Stats};
use crate::sends::guard::Guarded;
use crate::start::{Start, StartOutput};
use crate::time::{Clock, SystemClock, Timestamp};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A command journal over one project: cheap to clone, safe to share across tasks.
///
/// Every operation recomputes the command identity from the caller's input, reads the
/// trusted clock once (truncated to microseconds), then runs one transaction whose
/// attempts all reuse that instant.
#[derive(Clone)]
pub struct Journal {
    connection: Connection,
    clock: Arc<dyn Clock>,
    counters: Arc<Counters>,
    options: RunOptions,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A journal on `connection` with the system clock, the default
    /// [`RetryPolicy`] and [`Concurrency::Preconditions`]; the `with_*` methods change
    /// one setting each.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), command_journal::JournalError> {
    /// use command_journal::{Connection, Journal, RetryPolicy, Target};
    /// use std::time::Duration;
    ///
    /// let connection = Connection::connect("my-project", Target::Production).await?;
    /// let journal = Journal::new(connection).with_retry_policy(RetryPolicy {
    ///     deadline: Some(Duration::from_secs(20)),
    ///     ..RetryPolicy::default()
    /// });
    /// # let _ = journal;
    /// # Ok(()) }
    /// ```
    pub fn new(connection: Connection) -> Self {
        Self {
            connection,
            clock: Arc::new(SystemClock),
            counters: Arc::new(Counters::default()),
            options: RunOptions::default(),
        }
    }

    /// The same journal with an injected clock (tests, the demo, the CLI's `--at`
    /// against an emulator). Production keeps the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same journal with another [`RetryPolicy`] (attempts, per-RPC timeout,
    /// whole-operation deadline, backoff).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.options.policy = policy;
        self
    }

    /// This journal's retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.options.policy
    }

    /// The same journal in another concurrency mode (default
    /// [`Concurrency::Preconditions`]). Both modes run the same decisions and give the
    /// same outputs; they differ in RPCs and in how contention is resolved.
    pub fn with_concurrency(mut self, concurrency: Concurrency) -> Self {
        self.options.concurrency = concurrency;
        self
    }

    /// This journal's concurrency mode.
    pub fn concurrency(&self) -> Concurrency {
        self.options.concurrency
    }

    /// The connection this journal uses.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Cumulative RPC and attempt counters of this journal (and its clones).
    pub fn stats(&self) -> Stats {
        self.counters.stats()
    }

    /// The journal's trusted time now, truncated to whole microseconds: the instant
    /// every operation captures, and the one to compare a lease's expiry with (for
    /// instance to bound a provider call by the lease's remaining time).
    pub fn now(&self) -> Result<Timestamp, JournalError> {
        Timestamp::from_datetime(self.clock.now()).ok_or(JournalError::ClockRegression)
    }

    /// How long a lease expiring at `expires_at` (an acquisition's `lease_expires_at`)
    /// has left on the journal's clock, zero once it has expired: the bound for work
    /// done under the lease, such as a provider call.
    pub fn lease_remaining(&self, expires_at: Timestamp) -> Result<Duration, JournalError> {
        Ok(self.now()?.until(expires_at))
    }

    /// Runs `op` and records it in the operator metrics (`crate::metrics`): its
    /// outcome or error code, and its duration.
    pub(crate) async fn run<T: crate::transaction::Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError>
    where
        T::Output: MetricOutcome,
    {
        let started = Instant::now();
        let result = self.run_unrecorded(op).await;
        metrics::record(op.name(), &result, started.elapsed());
        result
    }

    /// Runs `op` without an operation metric (its RPCs are still counted).
    pub(crate) async fn run_unrecorded<T: crate::transaction::Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        runner::run(&self.connection, &self.counters, self.options, op).await
    }

    /// Runs a transition of the core (`command_journal_core::transaction::Transition`)
    /// through this journal's one runner, exactly as its own operations are run: the
    /// same reads, preconditions, follow-up bound, retries and counters, without an
    /// operation metric. For tests and tools that drive a transition of their own (the
    /// follow-up-read bound, the verifier's scale benchmark); the journal's guarantees
    /// are those of its own transitions, and a foreign one writes whatever it decides.
    pub async fn run_transition<T: crate::transaction::Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        self.run_unrecorded(op).await
    }

    /// Registers `command` exactly once: `registered_new` creates the root and its
    /// revision-1 audit event atomically; `registered_existing` writes nothing;
    /// a different payload is `command_conflict`; any malformed or orphan state is
    /// `journal_corrupt` and nothing is written.
    pub async fn register_command(
        &self,
        command: &CommandInput,
    ) -> Result<RegistrationOutput, JournalError> {
        let op = Registration::new(command.identity(), self.now()?);
        self.run(&op).await
    }

    fn lease_call(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
    ) -> Result<LeaseCall, JournalError> {
        let identity = command.identity();
        let owner = command.lease_owner(&identity, lease)?;
        Ok(LeaseCall::new(identity, owner, self.now()?))
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
        let op = Acquire::new(self.lease_call(command, lease)?);
        self.run(&op).await
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
        let op = Start::new(identity, owner, self.now()?);
        self.run(&op).await
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
        let call = self.lease_call(command, lease)?;
        let identity = command.identity();
        let commitment = identity.terminal_commitment(reference);
        let hash = identity.command_key_hash().clone();
        let op = Terminal::new(
            call,
            expected_fence_epoch.get(),
            TerminalRequest::Succeed(commitment),
        );
        self.run(&Guarded::new(op, &hash)).await
    }

    /// Records final failure (no reason is stored), under the same rules as
    /// [`complete_command`](Self::complete_command), the send guard included.
    pub async fn fail_command(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
        expected_fence_epoch: FenceEpoch,
    ) -> Result<TerminalOutput, JournalError> {
        let hash = command.identity().command_key_hash().clone();
        let op = Terminal::new(
            self.lease_call(command, lease)?,
            expected_fence_epoch.get(),
            TerminalRequest::Fail,
        );
        self.run(&Guarded::new(op, &hash)).await
    }

    /// The command's redacted state, revision and fence, validating every document
    /// it reads; writes nothing.
    pub async fn status(&self, command: &CommandInput) -> Result<StatusOutput, JournalError> {
        let identity = command.identity();
        // The owner is not consulted by status; any digest will do.
        let owner = identity.command_key_hash().clone();
        let op = StatusRead::new(LeaseCall::new(identity, owner, self.now()?));
        self.run(&op).await
    }
}

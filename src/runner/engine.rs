//! What every call of a journal runs on: the connection, the trusted clock, the
//! counters and the run options, shared by the journal and its clones; the time each
//! call captures, and the calls it prepares from a caller's input.

use super::concurrency::RunOptions;
use super::counters::Counters;
use super::driver::{Driver, NoProvider};
use crate::connection::Connection;
use crate::identity::{CommandInput, LeaseId};
use crate::time::{Clock, SystemClock, Timestamp};
use command_journal_core::error::JournalError;
use command_journal_core::tools::call::{Labelled, Program, Single};
use command_journal_core::tools::lease::{CommandCall, LeaseCall};
use command_journal_core::tools::transaction::Transition;
use std::sync::Arc;

/// The shared state of a journal and its clones.
#[derive(Clone)]
pub(crate) struct Engine {
    pub(crate) connection: Connection,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) options: RunOptions,
}

impl Engine {
    /// An engine on `connection` with the system clock and the default options.
    pub(crate) fn new(connection: Connection) -> Self {
        Self {
            connection,
            clock: Arc::new(SystemClock),
            counters: Arc::new(Counters::default()),
            options: RunOptions::default(),
        }
    }

    /// The trusted time now, truncated to whole microseconds.
    pub(crate) fn now(&self) -> Result<Timestamp, JournalError> {
        Timestamp::from_datetime(self.clock.now()).ok_or(JournalError::ClockRegression)
    }

    /// A new lease id for a call that takes a lease of its own (`execute`, a
    /// recovery): random, from the shell.
    pub(crate) fn new_lease(&self) -> LeaseId {
        crate::identity::generate_lease_id()
    }

    /// A call on `command` at the time captured now: what a read needs.
    pub(crate) fn command_call(&self, command: &CommandInput) -> Result<CommandCall, JournalError> {
        Ok(CommandCall::new(command.identity(), self.now()?))
    }

    /// A call on `command` by the holder of `lease`, at the time captured now.
    pub(crate) fn lease_call(
        &self,
        command: &CommandInput,
        lease: &LeaseId,
    ) -> Result<LeaseCall, JournalError> {
        let identity = command.identity();
        let owner = command.lease_owner(&identity, lease)?;
        Ok(LeaseCall::new(identity, owner, self.now()?))
    }

    /// The driver of this engine's calls.
    pub(crate) fn driver(&self) -> Driver<'_> {
        Driver {
            connection: &self.connection,
            counters: &self.counters,
            options: self.options,
            clock: self.clock.as_ref(),
        }
    }

    /// Runs `op` as one call and records it in the operator metrics
    /// (`crate::metrics`): its outcome or error code, and its duration.
    pub(crate) async fn run<T: Transition>(&self, op: T) -> Result<T::Output, JournalError>
    where
        T::Output: Labelled,
    {
        let driver = self.driver();
        driver
            .drive(Single::new(op), &NoProvider, &mut |_| {})
            .await
    }

    /// Runs `op` without an operation metric (its span and RPCs are still counted).
    pub(crate) async fn run_unrecorded<T: Transition>(
        &self,
        op: T,
    ) -> Result<T::Output, JournalError> {
        self.run_borrowed(&op).await
    }

    /// Runs `program` with `provider`, each lookup's answer shown to `on_lookup`.
    pub(crate) async fn call<P, Q>(
        &self,
        program: P,
        provider: &Q,
        on_lookup: &mut (dyn FnMut(&crate::ProviderAnswer) + Send),
    ) -> Result<P::Output, JournalError>
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
        Q: command_journal_core::Provider,
    {
        self.driver().drive(program, provider, on_lookup).await
    }
}

/// A transition of the caller's own, run as borrowed: its answer carries no metric
/// label, since a tool's transition records none.
struct Borrowed<'a, T>(&'a T);

/// The answer of a [`Borrowed`] transition.
struct Untold<O>(O);

impl<O> Labelled for Untold<O> {
    fn label(&self) -> &'static str {
        "tool"
    }
}

impl<T: Transition> Transition for Borrowed<'_, T> {
    type Output = Untold<T::Output>;

    fn paths(&self) -> Vec<String> {
        self.0.paths()
    }

    fn decide(
        &self,
        snapshot: &command_journal_core::tools::transaction::Snapshot,
    ) -> command_journal_core::tools::transaction::Decision<Self::Output> {
        self.0.decide(snapshot).map(Untold)
    }

    fn name(&self) -> command_journal_core::tools::transaction::OperationName {
        self.0.name()
    }

    fn blind_create(&self) -> bool {
        self.0.blind_create()
    }

    fn first_read_unlocked(&self) -> bool {
        self.0.first_read_unlocked()
    }
}

impl Engine {
    /// Runs `op`, borrowed, without an operation metric.
    pub(crate) async fn run_borrowed<T: Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        let driver = self.driver();
        let program = Single::unrecorded(Borrowed(op));
        let ran = driver.drive(program, &NoProvider, &mut |_| {}).await;
        ran.map(|Untold(output)| output)
    }
}

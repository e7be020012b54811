//! What every operation of the journal runs on: the connection, the trusted clock, the
//! counters and the run options. [`Journal`](crate::Journal) wraps one; the operation
//! modules (`crate::operations`) take it and never name the journal.

use crate::connection::Connection;
use crate::error::JournalError;
use crate::identity::{CommandInput, LeaseId};
use crate::lease::{CommandCall, LeaseCall};
use crate::metrics::{self, MetricOutcome};
use crate::runner::{self, Counters, RunOptions};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::transaction::Transition;
use std::sync::Arc;
use std::time::Instant;

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

    /// Runs `op` and records it in the operator metrics (`crate::metrics`): its
    /// outcome or error code, and its duration.
    pub(crate) async fn run<T: Transition>(&self, op: &T) -> Result<T::Output, JournalError>
    where
        T::Output: MetricOutcome,
    {
        let started = Instant::now();
        let result = self.run_unrecorded(op).await;
        metrics::record(op.name(), &result, started.elapsed());
        result
    }

    /// Runs `op` without an operation metric (its RPCs are still counted).
    pub(crate) async fn run_unrecorded<T: Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        runner::run(&self.connection, &self.counters, self.options, op).await
    }
}

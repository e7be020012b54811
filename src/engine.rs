//! What every operation of the journal runs on: the connection, the trusted clock, the
//! counters and the run options. [`Journal`](crate::Journal) wraps one; the operation
//! modules (`crate::operations`) take it and never name the journal.

use crate::connection::Connection;
use crate::error::JournalError;
use crate::identity::{CommandInput, LeaseId};
use crate::known::{self, Known, Planned};
use crate::lease::{CommandCall, LeaseCall};
use crate::metrics::{self, MetricOutcome};
use crate::runner::{self, Concurrency, Counters, Ran, RunOptions};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::transaction::Transition;
use gcloud_sdk::prost_types;
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

    /// Runs `op` as [`Engine::run`] does, deciding it first from what `memory` knows
    /// (preconditions mode, when `memory` plans): a mutation decided from the state
    /// this call's own last read or commit left is committed under preconditions
    /// proving that state, with no read; anything else reads. `memory` then holds the
    /// state this operation left (nothing after an error).
    pub(crate) async fn run_remembering<T: Transition>(
        &self,
        op: &T,
        memory: &mut Memory,
    ) -> Result<T::Output, JournalError>
    where
        T::Output: MetricOutcome,
    {
        if !memory.remembers {
            // A call of its own (not `execute`): nothing to plan from, nothing to keep.
            return self.run(op).await;
        }
        let started = Instant::now();
        let known = memory.known.take();
        let planned = match (&known, memory.plans) {
            (Some(known), true) => known::plan(op, known),
            _ => None,
        };
        let result = self.run_with(op, op.paths(), planned).await;
        let result = result.map(|ran| {
            memory.known = Some(ran.known);
            ran.answer.into_inner()
        });
        metrics::record(op.name(), &result, started.elapsed());
        result
    }

    /// Runs `op` with `paths` as its first read and `planned` as its first attempt
    /// (`runner::run_with`); no operation metric.
    pub(crate) async fn run_with<T: Transition, P>(
        &self,
        op: &T,
        paths: Vec<String>,
        planned: Option<Planned<P, prost_types::Timestamp>>,
    ) -> Result<Ran<P, T::Output>, JournalError> {
        runner::run_with(
            &self.connection,
            &self.counters,
            self.options,
            op,
            paths,
            planned,
        )
        .await
    }

    /// Runs `op` without an operation metric (its RPCs are still counted).
    pub(crate) async fn run_unrecorded<T: Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        runner::run(&self.connection, &self.counters, self.options, op).await
    }
}

/// What one call knows of a command's documents from its own last read or commit,
/// and whether it may plan commits from it. Every call but `execute` has the default,
/// empty memory that keeps nothing and never plans.
#[derive(Default)]
pub(crate) struct Memory {
    pub(crate) known: Option<Known<prost_types::Timestamp>>,
    /// Whether what each operation leaves is kept (`execute` only).
    remembers: bool,
    plans: bool,
}

impl Memory {
    /// An empty memory that plans commits from what it learns when `engine` runs in
    /// preconditions mode (transaction mode keeps every read in its transaction); the
    /// default, empty memory when `engine` decides from reads only.
    pub(crate) fn planning(engine: &Engine) -> Self {
        if engine.options.reads_only {
            return Self::default();
        }
        Self {
            known: None,
            remembers: true,
            plans: engine.options.concurrency == Concurrency::Preconditions,
        }
    }

    /// Whether commits are planned from what is known.
    pub(crate) fn plans(&self) -> bool {
        self.plans
    }

    /// The answer of the read-only `op` from what is known, if it decides from it.
    pub(crate) fn observe<T: Transition>(&self, op: &T) -> Option<T::Output> {
        if !self.remembers {
            return None;
        }
        self.known
            .as_ref()
            .and_then(|known| known::observe(op, known))
    }
}

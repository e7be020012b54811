//! The entry point: a `Journal` over one Firestore project.

use crate::connection::Connection;
use crate::error::JournalError;
use crate::identity::CommandInput;
use crate::registration::{Registration, RegistrationOutput};
use crate::time::{Clock, SystemClock, Timestamp};
use crate::transaction::{self, Counters, Stats};
use std::sync::Arc;

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
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// A journal on `connection` with the system clock.
    pub fn new(connection: Connection) -> Self {
        Self::with_clock(connection, Arc::new(SystemClock))
    }

    /// A journal with an injected clock (tests, the demo, the CLI's `--at` against an
    /// emulator). In production use [`new`](Self::new).
    pub fn with_clock(connection: Connection, clock: Arc<dyn Clock>) -> Self {
        Self {
            connection,
            clock,
            counters: Arc::new(Counters::default()),
        }
    }

    /// The connection this journal uses.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// Cumulative RPC and attempt counters of this journal (and its clones).
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// The captured trusted time, truncated to whole microseconds.
    pub(crate) fn now(&self) -> Result<Timestamp, JournalError> {
        Timestamp::from_datetime(self.clock.now()).ok_or(JournalError::ClockRegression)
    }

    pub(crate) async fn run<T: transaction::Transition>(
        &self,
        op: &T,
    ) -> Result<T::Output, JournalError> {
        transaction::run(&self.connection, &self.counters, op).await
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
}

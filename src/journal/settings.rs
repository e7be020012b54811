//! How a [`Journal`] is built and set up: its connection, clock, retry policy,
//! concurrency mode and fast paths, and what it tells about itself (its counters, its
//! trusted time, a lease's remaining time). No operation is here: those are in
//! [`super`]'s one `impl`.

use super::Journal;
use crate::connection::Connection;
use crate::runner::{Concurrency, Engine, RetryPolicy, Stats};
use crate::time::{Clock, Timestamp};
use command_journal_core::error::JournalError;
use std::sync::Arc;
use std::time::Duration;

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
            engine: Engine::new(connection),
        }
    }

    /// The same journal with an injected clock (tests, the demo, the CLI's `--at`
    /// against an emulator). Production keeps the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.engine.clock = clock;
        self
    }

    /// The same journal with another [`RetryPolicy`] (attempts, per-RPC timeout,
    /// whole-operation deadline, backoff).
    pub fn with_retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.engine.options.policy = policy;
        self
    }

    /// This journal's retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.engine.options.policy
    }

    /// The same journal in another concurrency mode (default
    /// [`Concurrency::Preconditions`]). Both modes run the same decisions and give the
    /// same outputs; they differ in RPCs and in how contention is resolved.
    pub fn with_concurrency(mut self, concurrency: Concurrency) -> Self {
        self.engine.options.concurrency = concurrency;
        self
    }

    /// This journal's concurrency mode.
    pub fn concurrency(&self) -> Concurrency {
        self.engine.options.concurrency
    }

    /// The same journal with its fast paths on (`true`, the default) or off: off,
    /// every operation reads and decides, in either concurrency mode, with no blind
    /// creation, no commit planned or chained from what a call already knows, no
    /// answer given from it, and in transaction mode every read inside its
    /// transaction. The documents and answers are meant to be the same either
    /// way, only the round trips differ; off is the reference a differential test
    /// holds the fast paths to. Only with the library's `testing` feature.
    #[cfg(feature = "testing")]
    pub fn with_fast_paths(mut self, on: bool) -> Self {
        self.engine.options.reads_only = !on;
        self
    }

    /// The connection this journal uses.
    pub fn connection(&self) -> &Connection {
        &self.engine.connection
    }

    /// Cumulative RPC and attempt counters of this journal (and its clones).
    pub fn stats(&self) -> Stats {
        self.engine.counters.stats()
    }

    /// Resolves once no transaction this journal (and its clones) handed to the
    /// background reaper is still being rolled back: each released, found gone, or
    /// given up (about a minute at most). A service awaits it on shutdown, once its
    /// requests have drained and within what is left of its grace period: a
    /// transaction a dropped request left open is then released before the runtime
    /// stops, where otherwise it would be abandoned (`Stats::abandoned`) and keep its
    /// locks until the server expires it, about a minute.
    pub async fn reaped(&self) {
        self.engine.counters.reaped().await
    }

    /// The journal's trusted time now, truncated to whole microseconds: the instant
    /// every operation captures, and the one to compare a lease's expiry with (for
    /// instance to bound a provider call by the lease's remaining time).
    pub fn now(&self) -> Result<Timestamp, JournalError> {
        self.engine.now()
    }

    /// How long a lease expiring at `expires_at` (an acquisition's `lease_expires_at`)
    /// has left on the journal's clock, zero once it has expired and never more than a
    /// whole lease (more means the clock stepped back): the bound for work done under
    /// the lease, such as a provider call. Read it once, right after the acquisition,
    /// and count it down on a monotonic clock (`std::time::Instant`): a later reading
    /// moves with any step of the wall clock. `execute` does so by itself.
    pub fn lease_remaining(&self, expires_at: Timestamp) -> Result<Duration, JournalError> {
        let lease = command_journal_core::tools::document::lifecycle::LEASE_SECONDS;
        let lease = Duration::from_secs(lease.unsigned_abs());
        Ok(self.now()?.until(expires_at).min(lease))
    }
}

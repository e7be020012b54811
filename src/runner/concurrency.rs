//! The two ways the runner keeps a decision consistent with what it read, and the
//! options one operation runs with.

pub use command_journal_core::Concurrency;

/// The options every call of one journal runs with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RunOptions {
    /// Attempts, timeouts and backoff.
    pub policy: super::policy::RetryPolicy,
    /// The concurrency mode.
    pub concurrency: Concurrency,
    /// Every decision from a read of its own: no blind creation, no planned or
    /// chained commit, no answer from what a call already knows, and in transaction
    /// mode every read inside its transaction. Set only by
    /// `Journal::with_fast_paths(false)` (feature `testing`).
    pub reads_only: bool,
}

//! The two ways the runner keeps a decision consistent with what it read, and the
//! options one operation runs with.

use crate::error::JournalError;

/// How the runner keeps a decision consistent with what it read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// One read without a transaction; every write carries a precondition on what was
    /// read. No server lock is ever held. The default (docs/concurrency.md says why;
    /// BENCHMARKS.md has the measurements).
    #[default]
    Preconditions,
    /// Firestore read-write transactions: reads inside the transaction, commit with
    /// its id, rollback whenever an attempt ends without a commit.
    Transaction,
}

impl Concurrency {
    /// `preconditions` or `transaction`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Preconditions => "preconditions",
            Self::Transaction => "transaction",
        }
    }

    /// Parses `preconditions` or `transaction`.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match text {
            "preconditions" => Ok(Self::Preconditions),
            "transaction" => Ok(Self::Transaction),
            _ => Err(JournalError::invalid("concurrency")),
        }
    }
}

/// How one operation is run.
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

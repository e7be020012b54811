//! The two ways the runner keeps a decision consistent with what it read, and the
//! options one operation runs with.

use crate::error::JournalError;
use std::time::Duration;

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
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunOptions {
    /// Longest wait for one RPC.
    pub rpc_timeout: Duration,
    /// Longest time for the whole operation, retries included.
    pub deadline: Option<Duration>,
    /// The concurrency mode.
    pub concurrency: Concurrency,
}

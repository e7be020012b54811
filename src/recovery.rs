//! Recovery: [`Journal::recover`](crate::Journal::recover) settles every pending
//! command whose send outcome is unknown from the provider's evidence, with no client
//! and no raw command. It lists the pending commands
//! ([`Journal::pending`](crate::Journal::pending)), and for each asks the provider
//! what it holds for the attempt's key (derived from the stored plan) and records a
//! success (with its result), a decline or a proven absence under a lease of its own,
//! by the same rules as `reconcile_send`. It never sends, never opens an attempt and
//! never writes without evidence; it records an absence only at the account it
//! declares ([`RecoverOptions::account`]) and only where the command's plan was bound
//! to that account. `docs/recovery.md` gives the protocol, the recovery holder's
//! identity and how to run it as a job.

use crate::error::JournalError;
use crate::pending::{PendingCommand, Unblock};
use crate::sends::ProviderAccount;
use command_journal_core::digest::Digest;
use std::time::Duration;

pub use command_journal_core::recovery::{LOOKUP_DEADLINE, Recovered};

/// The most commands one run recovers at once.
pub const MAX_CONCURRENCY: usize = 64;
/// The most recoveries one run starts per second.
pub const MAX_PER_SECOND: u32 = 10_000;

/// How a recovery run goes: how many commands at once, how fast, from where, how
/// many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverOptions {
    /// Commands recovered at once: 1 to [`MAX_CONCURRENCY`] (default 4).
    pub concurrency: usize,
    /// At most this many recoveries started per second, 1 to [`MAX_PER_SECOND`]
    /// (default 10); `None` for no bound.
    pub per_second: Option<u32>,
    /// Resume after this key hash: the cursor a stopped run reported (commands whose
    /// key hash sorts at or before it are skipped).
    pub after: Option<Digest>,
    /// At most this many commands this run, from 1; the report's cursor then says
    /// where the next run resumes.
    pub limit: Option<usize>,
    /// The provider account the provider's lookups ask. Declared, a "not found"
    /// from the instant an attempt's absence is provable is recorded as its absence
    /// where the command's plan was bound to this account (and a command bound to
    /// another is left alone, `other_account`); `None` (the default): no absence is
    /// ever recorded, only charges and declines found.
    pub account: Option<ProviderAccount>,
}

impl Default for RecoverOptions {
    fn default() -> Self {
        Self {
            concurrency: 4,
            per_second: Some(10),
            after: None,
            limit: None,
            account: None,
        }
    }
}

impl RecoverOptions {
    /// The concurrency, or `invalid_input` on `recoverConcurrency` out of its range.
    pub(crate) fn checked_concurrency(&self) -> Result<usize, JournalError> {
        if (1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            Ok(self.concurrency)
        } else {
            Err(JournalError::invalid("recoverConcurrency"))
        }
    }

    /// The time between two starts, or `invalid_input` on `recoverPerSecond` out of
    /// its range.
    pub(crate) fn pace(&self) -> Result<Option<Duration>, JournalError> {
        match self.per_second {
            None => Ok(None),
            Some(n) if (1..=MAX_PER_SECOND).contains(&n) => Ok(Some(Duration::from_secs(1) / n)),
            Some(_) => Err(JournalError::invalid("recoverPerSecond")),
        }
    }

    /// `invalid_input` on `recoverLimit` zero: a run that may handle nothing could
    /// not say where the next one resumes.
    pub(crate) fn checked_limit(&self) -> Result<Option<usize>, JournalError> {
        match self.limit {
            Some(0) => Err(JournalError::invalid("recoverLimit")),
            limit => Ok(limit),
        }
    }
}

/// One command's recovery: its key hash and how it ended (or the error that ended
/// it: a broken document is `journal_corrupt`, and the run goes on with the next).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredCommand {
    /// The command's key hash.
    pub command_key_hash: Digest,
    /// How it ended.
    pub outcome: Result<Recovered, JournalError>,
}

/// What a run reports after each command, in key-hash order.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Commands handled so far, this one included.
    pub done: usize,
    /// Commands this run handles.
    pub total: usize,
    /// The command just handled: its key hash is a cursor to resume after.
    pub command: &'a RecoveredCommand,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// Every command the run's listing found pending (those with nothing to look up,
    /// and those after its limit, included), as `Journal::pending` lists them.
    pub pending: Vec<PendingCommand>,
    /// Every command handled, in key-hash order: the pending ones whose send outcome
    /// is unknown.
    pub commands: Vec<RecoveredCommand>,
    /// Where the next run resumes (`RecoverOptions::after`), when the run stopped at
    /// its limit with commands left; `None` when it handled everything.
    pub cursor: Option<Digest>,
}

impl Recovery {
    /// How many commands ended with `outcome`.
    pub fn count(&self, outcome: Recovered) -> usize {
        self.commands
            .iter()
            .filter(|c| c.outcome == Ok(outcome))
            .count()
    }

    /// How many listed commands waited for `reason`.
    pub fn waiting(&self, reason: Unblock) -> usize {
        self.pending
            .iter()
            .filter(|p| p.unblocked_by == reason)
            .count()
    }

    /// How many commands ended with an error.
    pub fn errors(&self) -> usize {
        self.commands.iter().filter(|c| c.outcome.is_err()).count()
    }
}

//! Recovery: [`Journal::recover`](crate::Journal::recover) settles every pending
//! command whose send outcome is unknown from the provider's evidence, with no client
//! and no raw command. It lists the pending commands
//! ([`Journal::pending`](crate::Journal::pending)), and for each asks the provider
//! what it holds for the attempt's key (derived from the stored plan) and records a
//! success (with its result), a decline or a proven absence under a lease of its own,
//! by the same rules as `reconcile_send`. It never sends, never opens an attempt and
//! never writes without evidence; it records an absence only at the account it
//! declares ([`RecoverOptions::account`]) and only where the command's plan was bound
//! to that account. A run covers one key range ([`RecoverOptions::range`]) and may
//! start after, and record, that range's checkpoint ([`RecoverOptions::checkpoint`]),
//! so that scheduled runs with a limit or a deadline reach every command.
//! `docs/recovery.md` gives the protocol, the recovery holder's identity and how to
//! run it as a job.

pub(crate) mod job;

use crate::pending::{KeyRange, PendingCommand, Unblock};
use crate::sends::ProviderAccount;
use command_journal_core::error::JournalError;
use command_journal_core::identity::Digest;
use std::time::Duration;

pub use command_journal_core::recovery::{Checkpoint, Recorded};
pub use command_journal_core::recovery::{LOOKUP_DEADLINE, Recovered};
pub use command_journal_core::recovery::{Lookups, Stop, Verdict};

/// The most commands one run recovers at once.
pub const MAX_CONCURRENCY: usize = 64;
/// The most recoveries one run starts per second.
pub const MAX_PER_SECOND: u32 = 10_000;

/// How a recovery run goes: how many commands at once, how fast, over which key
/// range, from where, how many and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoverOptions {
    /// Commands recovered at once: 1 to [`MAX_CONCURRENCY`] (default 4).
    pub concurrency: usize,
    /// At most this many recoveries started per second, 1 to [`MAX_PER_SECOND`]
    /// (default 10); `None` for no bound.
    pub per_second: Option<u32>,
    /// The key range listed and settled (default [`KeyRange::ALL`]): task `i` of `n`
    /// settles only the commands of range `i` of `n`, and the `n` ranges together
    /// hold every command once.
    pub range: KeyRange,
    /// Start after this key hash: the run handles the commands after it, then wraps
    /// to the range's start and handles those up to it. Given, it wins over the
    /// checkpoint's position.
    pub after: Option<Digest>,
    /// Read the range's checkpoint (`recoveryCheckpoints/{index}-of-{count}`) and
    /// start after it when `after` is not given; record where the run stopped in it
    /// for the next run. Off by default: the run then starts at the range's start
    /// (or after `after`) and writes no checkpoint.
    pub checkpoint: bool,
    /// At most this many commands this run, from 1; the report's cursor (and the
    /// checkpoint) then says where the next run goes on.
    pub limit: Option<usize>,
    /// Start no command once this long has passed since the run began (its first
    /// command always starts): the commands under way finish, and the cursor (and
    /// the checkpoint) say where the next run goes on. More than zero; `None` for no
    /// deadline.
    pub deadline: Option<Duration>,
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
            range: KeyRange::ALL,
            after: None,
            checkpoint: false,
            limit: None,
            deadline: None,
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

    /// `invalid_input` on `recoverDeadline` zero: a run that may start nothing.
    pub(crate) fn checked_deadline(&self) -> Result<Option<Duration>, JournalError> {
        match self.deadline {
            Some(deadline) if deadline.is_zero() => Err(JournalError::invalid("recoverDeadline")),
            deadline => Ok(deadline),
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

/// What a run reports after each command, in the order handled.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Commands handled so far, this one included.
    pub done: usize,
    /// Commands this run handles at most (its limit applied; a deadline may stop it
    /// sooner).
    pub total: usize,
    /// The command just handled: its key hash is a cursor to go on after.
    pub command: &'a RecoveredCommand,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// The key range the run listed and settled.
    pub range: KeyRange,
    /// Every command of the range the run's listing found pending, whatever the
    /// position it started from (those with nothing to look up, those before its
    /// start and those past its limit included), as `Journal::pending_in` lists
    /// them: the listing it resumed into, which also sets the pending gauge.
    pub pending: Vec<PendingCommand>,
    /// Where the run started: after this key hash (the option's `after`, else the
    /// checkpoint's), or at the range's start (`None`).
    pub started_after: Option<Digest>,
    /// Every command handled, in the order handled: the pending ones whose send
    /// outcome is unknown, from the start position around the range.
    pub commands: Vec<RecoveredCommand>,
    /// Why it stopped.
    pub stop: Stop,
    /// Where the next run goes on (`RecoverOptions::after`), when it stopped at its
    /// limit or deadline with commands left; `None` when it handled everything.
    pub cursor: Option<Digest>,
    /// What recording the checkpoint did: `None` when the run keeps none or handled
    /// nothing (the checkpoint then stays as it was); an error when it could not be
    /// recorded (the commands handled stand).
    pub checkpoint: Option<Result<Recorded, JournalError>>,
    /// The provider lookups the run made, answered or not.
    pub lookups: Lookups,
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

    /// What the run as a whole says ([`Verdict::of`]): the provider unavailable for
    /// every lookup it tried, a command's error or the checkpoint's, a command bound
    /// to another account, or clean.
    pub fn verdict(&self) -> Verdict {
        let checkpoint = usize::from(matches!(self.checkpoint, Some(Err(_))));
        Verdict::of(
            self.errors() + checkpoint,
            self.count(Recovered::OtherAccount),
            self.lookups,
        )
    }
}

//! What the call machine asks its driver to do, and what the driver answers: the
//! vocabulary between the pure [`Call`](super::Call) and whoever performs its I/O (the
//! library's gRPC driver, the in-memory store of the tests).

use crate::attempt::{Found, GuardedWrite, ReadKind};
use crate::error::{GrpcCode, JournalError};
use crate::sends::provider::{LookupRequest, ProviderAnswer, RetrieveRequest, SendRequest};
use crate::time::Timestamp;
use crate::transaction::{CommitTime, OperationName};
use std::collections::HashMap;
use std::time::Duration;

/// How the driver keeps a decision consistent with what it read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// One read without a transaction; every write carries a precondition on what was
    /// read, and every commit proves the mutable documents it read and does not write.
    /// No server lock is ever held. The default.
    #[default]
    Preconditions,
    /// Firestore read-write transactions: reads inside the transaction, the commit
    /// with its id, a rollback whenever an attempt ends without a commit.
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

    /// Parses `preconditions` or `transaction`; `invalid_input` on `concurrency`
    /// otherwise.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match text {
            "preconditions" => Ok(Self::Preconditions),
            "transaction" => Ok(Self::Transaction),
            _ => Err(JournalError::invalid("concurrency")),
        }
    }
}

/// The time as the driver reads it at one poll, every reading taken together: the
/// trusted clock's timestamp, that clock's steady time, and how long the call has run
/// on the driver's monotonic clock. Decisions compare the timestamp with stored times
/// (a transition captures it); a duration derived from a lease (a provider's deadline,
/// a lookup's, a `Retry-After`) is measured on the steady time too, which no step of
/// the trusted clock moves back; the call's own deadline on the elapsed time, which
/// is real time whatever the trusted clock is. Only differences of the durations count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// The trusted time, truncated to whole microseconds.
    pub at: Timestamp,
    /// The trusted clock's steady time (`Clock::steady`; for the system clock, its
    /// monotonic clock's): it moves forward with the trusted time and never back.
    pub steady: Duration,
    /// The time since the call's first poll, on the driver's monotonic clock.
    pub elapsed: Duration,
}

#[cfg(test)]
impl Now {
    /// A reading of a clock that never steps: its steady and elapsed times are its
    /// time since the Unix epoch, so that only the timestamp's differences count.
    pub(crate) fn unstepped(at: Timestamp) -> Self {
        let epoch = Timestamp::from_micros(0).unwrap_or(at);
        let since = epoch.until(at);
        Self {
            at,
            steady: since,
            elapsed: since,
        }
    }
}

/// A read-write transaction's id, as the server gave it.
#[derive(Clone, PartialEq, Eq)]
pub struct TransactionId(pub Vec<u8>);

impl std::fmt::Debug for TransactionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TransactionId({} bytes)", self.0.len())
    }
}

/// At what consistency a read is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consistency<V> {
    /// The server's current time (a first read outside a transaction).
    Latest,
    /// At this read time: a follow-up or confirming read of an attempt, consistent
    /// with its first.
    At(V),
    /// Opening a read-write transaction, naming the one it retries, if any.
    Begin {
        /// The transaction of the attempt this one retries.
        retrying: Option<TransactionId>,
    },
    /// Inside this open transaction.
    In(TransactionId),
}

/// How a commit was decided (counted apart by the driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitKind {
    /// Decided from a read of this attempt.
    Decided,
    /// A blind creation, sent before any read: every write under `exists: false`.
    Blind,
    /// Planned from what the call's own last read or commit left known.
    Planned,
}

/// Why a failed RPC is worth another attempt: the driver's backoff depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryCause {
    /// A precondition of the commit failed (ALREADY_EXISTS, FAILED_PRECONDITION): the
    /// documents are not as decided; nothing was written.
    PreconditionLost,
    /// ABORTED: a transaction conflict (in transaction mode, a held lock).
    Contention,
    /// RESOURCE_EXHAUSTED: back off to the maximum.
    Exhausted,
    /// Anything else transient (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, a lost
    /// connection): the outcome of a commit may be unknown.
    Transient,
}

/// A failed RPC, as the driver classified it.
#[derive(Debug, Clone, PartialEq)]
pub enum RpcFailure {
    /// Worth another attempt.
    Retry {
        /// The gRPC code the RPC ended with.
        code: GrpcCode,
        /// What kind of retry it is.
        cause: RetryCause,
    },
    /// The call's answer (a configuration refusal, credentials).
    Final(JournalError),
}

/// What one read returned.
#[derive(Debug, Clone)]
pub struct ReadAnswer<V> {
    /// The documents found, by path below the documents root; every other path
    /// asked for was absent.
    pub found: HashMap<String, Found<V>>,
    /// The read time the server answered with.
    pub read_time: Option<V>,
    /// The transaction the read opened (asked with [`Consistency::Begin`]).
    pub transaction: Option<TransactionId>,
}

/// One metric a finished transition records: its operation and its outcome label
/// (or its error's code). A transition that stands for two operations (a start and
/// the permit committed with it) records both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The operation.
    pub name: OperationName,
    /// Its outcome label, or its error's code.
    pub outcome: &'static str,
}

/// What the driver does next ([`Call::poll`](super::Call::poll)).
#[derive(Debug)]
pub enum Io<O, V> {
    /// A transition of the call begins (or, for a call that is more than its
    /// transitions, the call itself): its span, its deadline and its counters start
    /// here. Poll again.
    Began(OperationName),
    /// Read these paths at this consistency; answer with [`Input::Read`].
    Read {
        /// The paths, below the documents root.
        paths: Vec<String>,
        /// Why they are read.
        kind: ReadKind,
        /// At what consistency.
        consistency: Consistency<V>,
    },
    /// Commit these writes atomically, each under its precondition; answer with
    /// [`Input::Committed`].
    Commit {
        /// The writes.
        writes: Vec<GuardedWrite<V>>,
        /// The transaction they commit, if any.
        transaction: Option<TransactionId>,
        /// How the commit was decided.
        kind: CommitKind,
    },
    /// Roll this transaction back (the attempt ends without a commit); answer with
    /// [`Input::RolledBack`] whatever the outcome.
    Rollback(TransactionId),
    /// The attempt failed and another follows: wait the backoff for `spent` attempts
    /// spent and `cause` (no wait when `immediate`), then answer [`Input::Waited`], or
    /// [`Input::DeadlinePassed`] when the wait would pass the deadline.
    Retry {
        /// The attempts made so far, a refused fast path included (what the
        /// driver's log names).
        attempts: u32,
        /// The attempts spent so far (a refused fast path is not counted).
        spent: u32,
        /// The gRPC code of the failure.
        code: GrpcCode,
        /// Its kind.
        cause: RetryCause,
        /// A refused fast path: read at once, no backoff.
        immediate: bool,
    },
    /// The transition (or the call) begun last and not ended yet ended. Poll again.
    Ended {
        /// Its attempts (none for a call of several transitions).
        attempts: u32,
        /// Its error, if it ended with one.
        error: Option<JournalError>,
        /// The metrics it records (none for a tool's own transition).
        recorded: Vec<Metric>,
    },
    /// Call the provider's send; answer with [`Input::Sent`].
    Send(SendRequest),
    /// Call the provider's lookup; answer with [`Input::LookedUp`].
    Lookup(LookupRequest),
    /// Call the provider's retrieve by id; answer with [`Input::Retrieved`].
    Retrieve(RetrieveRequest),
    /// The call's answer. The machine is done.
    Done(Result<O, JournalError>),
}

/// What the driver answers ([`Call::handle`](super::Call::handle)).
#[derive(Debug)]
pub enum Input<V> {
    /// The read of the last [`Io::Read`].
    Read(Result<ReadAnswer<V>, RpcFailure>),
    /// The commit of the last [`Io::Commit`]: the update time answered for each write,
    /// in order (none for a delete), with its comparable form.
    Committed(Result<Vec<Option<(V, CommitTime)>>, RpcFailure>),
    /// The rollback of the last [`Io::Rollback`] was sent.
    RolledBack,
    /// The backoff of the last [`Io::Retry`] was waited.
    Waited,
    /// The running transition's deadline passed before its next RPC or wait (or
    /// during its RPC): it ends `unavailable`.
    DeadlinePassed,
    /// The running transition's deadline had passed when the attempt just asked for
    /// was to begin: answered to its first read or its fast commit, instead of sending
    /// it. It ends `unavailable`, that attempt not counted.
    DeadlinePassedBeforeAttempt,
    /// The provider answered the send (an answer not in time is `Unknown`).
    Sent(ProviderAnswer),
    /// The provider answered the lookup (an answer not in time is `Unknown`).
    LookedUp(ProviderAnswer),
    /// The provider answered the retrieve (an answer not in time is `Unknown`).
    Retrieved(ProviderAnswer),
}

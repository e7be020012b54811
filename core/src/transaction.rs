//! The pure transition contract every operation implements: a prepared operation
//! names the documents it reads and decides, from a [`Snapshot`] of them, what to
//! answer and what to write. Nothing in this module does I/O; the runner
//! (the library's runner) reads, calls `decide`, commits and retries.
//!
//! The runner's guarantees, which `decide` relies on: a snapshot holds every path
//! asked for (a missing document is read as absent); follow-up reads are at most
//! [`MAX_FOLLOW_UP_READS`] and consistent with the first read; a `Replace` is only
//! ever committed with a precondition on the update time that was read, and a
//! `Create` only where the document does not exist; `decide` may be called again with
//! a fresh snapshot on every attempt and must answer from that snapshot alone.

use crate::document::fields::FieldMap;
use crate::error::JournalError;
use std::collections::HashMap;

pub(crate) mod blind;

/// Follow-up reads one attempt may make (see [`Decision::Read`]).
pub const MAX_FOLLOW_UP_READS: usize = 2;

/// Every operation of the journal, the one list its names derive from: its `tracing`
/// span (`journal.register`, …), its metrics label (`register`, …) and the runner's
/// bookkeeping. The span of each is matched exhaustively (`src/runner/driver.rs`), so an
/// operation without a span of its own does not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationName {
    /// `journal.register`
    Register,
    /// `journal.acquire`
    Acquire,
    /// `journal.start`
    Start,
    /// `journal.complete`
    Complete,
    /// `journal.fail`
    Fail,
    /// `journal.status`
    Status,
    /// `journal.begin_send`
    BeginSend,
    /// `journal.record_send_outcome`
    RecordSendOutcome,
    /// `journal.reconcile_send`
    ReconcileSend,
    /// `journal.result`
    Result,
    /// `journal.ledger_accept`
    LedgerAccept,
    /// `journal.ledger_replay`
    LedgerReplay,
    /// `journal.ledger_link`
    LedgerLink,
    /// `journal.execute`: the whole send protocol of one call (its transitions are
    /// traced under their own names inside it).
    Execute,
    /// `journal.pending`: one listed command read to tell whether it waits, and why.
    Pending,
    /// `journal.recover`: the recovery job on one command (its registration read,
    /// and its transitions traced under their own names inside it).
    Recover,
    /// `journal.record_late_charge`: a charge its command ended without, recorded for
    /// a person (`execute` and recovery, when evidence arrives too late).
    RecordLateCharge,
    /// `journal.record_evidence`: one piece of evidence given from outside (a
    /// provider's event), recorded under a lease the call takes itself (its key index
    /// read, and its transitions traced under their own names inside it).
    RecordEvidence,
    /// `journal.release_lease`: a holder giving its lease up before it expires
    /// (`execute` and `record_evidence`, when they end without a terminal outcome).
    ReleaseLease,
}

impl OperationName {
    /// The span name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Register => "journal.register",
            Self::Acquire => "journal.acquire",
            Self::Start => "journal.start",
            Self::Complete => "journal.complete",
            Self::Fail => "journal.fail",
            Self::Status => "journal.status",
            Self::BeginSend => "journal.begin_send",
            Self::RecordSendOutcome => "journal.record_send_outcome",
            Self::ReconcileSend => "journal.reconcile_send",
            Self::Result => "journal.result",
            Self::LedgerAccept => "journal.ledger_accept",
            Self::LedgerReplay => "journal.ledger_replay",
            Self::LedgerLink => "journal.ledger_link",
            Self::Execute => "journal.execute",
            Self::Pending => "journal.pending",
            Self::Recover => "journal.recover",
            Self::RecordLateCharge => "journal.record_late_charge",
            Self::RecordEvidence => "journal.record_evidence",
            Self::ReleaseLease => "journal.release_lease",
        }
    }

    /// Every operation, in the order above: span names, metric labels and the CLI's
    /// subcommand words are derived by walking it.
    pub const ALL: [Self; 19] = [
        Self::Register,
        Self::Acquire,
        Self::Start,
        Self::Complete,
        Self::Fail,
        Self::Status,
        Self::BeginSend,
        Self::RecordSendOutcome,
        Self::ReconcileSend,
        Self::Result,
        Self::LedgerAccept,
        Self::LedgerReplay,
        Self::LedgerLink,
        Self::Execute,
        Self::Pending,
        Self::Recover,
        Self::RecordLateCharge,
        Self::RecordEvidence,
        Self::ReleaseLease,
    ];

    /// The words of the `command-journal` subcommand that runs this operation on one
    /// command read from stdin (`register`, `send begin`, `ledger accept`, …); `None`
    /// for `result` and `execute`, which the CLI does not offer (`execute` needs a
    /// provider), for `pending`, whose subcommand lists commands and reads none, and
    /// for `record_late_charge`, which only `execute` and recovery record (from a
    /// provider's evidence, never an operator's word), and for `record_evidence`,
    /// which a provider's verified event drives, and for `release_lease`, which only
    /// `execute` and `record_evidence` run, on a lease they took themselves.
    pub fn command_words(&self) -> Option<&'static str> {
        Some(match self {
            Self::Register => "register",
            Self::Acquire => "acquire",
            Self::Start => "start",
            Self::Complete => "complete",
            Self::Fail => "fail",
            Self::Status => "status",
            Self::BeginSend => "send begin",
            Self::RecordSendOutcome => "send outcome",
            Self::ReconcileSend => "send reconcile",
            Self::LedgerAccept => "ledger accept",
            Self::LedgerReplay => "ledger replay",
            Self::LedgerLink => "ledger link",
            Self::Result
            | Self::Execute
            | Self::Pending
            | Self::Recover
            | Self::RecordLateCharge
            | Self::RecordEvidence
            | Self::ReleaseLease => return None,
        })
    }

    /// The metrics label: the span name without `journal.`.
    pub fn label(&self) -> &'static str {
        let span = self.as_str();
        span.strip_prefix("journal.").unwrap_or(span)
    }
}

/// One write of a mutation.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// Create a document that must not exist.
    Create {
        /// Path relative to the documents root.
        path: String,
        /// The whole document.
        fields: FieldMap,
    },
    /// Replace the whole of a document, which must still be exactly as it was read.
    Replace {
        /// Path relative to the documents root; must be one the operation read.
        path: String,
        /// The whole new document.
        fields: FieldMap,
    },
    /// Write nothing, but commit only while a document the operation read as absent
    /// is still absent (a delete with an `exists: false` precondition): what a
    /// decision that depends on a document's absence, without creating it, needs.
    AssertAbsent {
        /// Path relative to the documents root; must be one the operation read absent.
        path: String,
    },
    /// Write nothing new, but commit only while a document the operation read present
    /// still has the update time it was read at: the document is rewritten exactly as
    /// read, which Firestore applies without changing its update time (and answers
    /// that time). What proves a mutable document a decision depends on but does not
    /// change, such as the lifecycle's holder, fence and expiry (the core's `proof`
    /// module).
    AssertUnchanged {
        /// Path relative to the documents root; must be one the operation read present.
        path: String,
        /// The document exactly as read.
        fields: FieldMap,
    },
}

impl Write {
    /// The document the write concerns.
    pub fn path(&self) -> &str {
        match self {
            Self::Create { path, .. }
            | Self::Replace { path, .. }
            | Self::AssertAbsent { path }
            | Self::AssertUnchanged { path, .. } => path,
        }
    }

    /// The document it stores, if it stores one (a guard stores nothing new).
    pub fn fields(&self) -> Option<&FieldMap> {
        match self {
            Self::Create { fields, .. } | Self::Replace { fields, .. } => Some(fields),
            Self::AssertAbsent { .. } | Self::AssertUnchanged { .. } => None,
        }
    }
}

/// What a pure `decide` function concluded from a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision<O> {
    /// Nothing to write: answer `O`.
    Observe(O),
    /// Commit these writes atomically, then answer `O`.
    Mutate(Vec<Write>, O),
    /// Refuse; nothing is written.
    Reject(JournalError),
    /// Read these documents too (at the same read time), then decide again.
    Read(Vec<String>),
}

/// Why a shared loading step inside a `decide` could not answer yet; becomes the
/// matching [`Decision`] with [`Halt::decision`].
#[derive(Debug, Clone, PartialEq)]
pub enum Halt {
    /// Read these paths too, then decide again.
    Read(Vec<String>),
    /// Fail with this error; nothing is written.
    Reject(JournalError),
}

impl Halt {
    /// The decision this step stands for.
    pub fn decision<O>(self) -> Decision<O> {
        match self {
            Self::Read(paths) => Decision::Read(paths),
            Self::Reject(error) => Decision::Reject(error),
        }
    }
}

impl From<JournalError> for Halt {
    fn from(error: JournalError) -> Self {
        Self::Reject(error)
    }
}

/// The documents an attempt read, by path relative to the documents root. Follow-up
/// reads of an attempt are at the first read's time. A first read is a snapshot on
/// Cloud Firestore but not always on the emulator; a decision of `journal_corrupt` is
/// therefore confirmed by re-reading everything at that read time before it stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every path read: its fields when present, `None` when absent.
    pub docs: HashMap<String, Option<FieldMap>>,
    /// The commit times of documents read present, where the reader gave them.
    pub stamps: HashMap<String, CommitStamps>,
}

/// A commit time in comparable form: seconds and nanoseconds of Firestore's
/// `createTime`/`updateTime` (or the in-memory store's logical time in seconds).
pub type CommitTime = (i64, i32);

/// When a document was created and when it was last written: the commit times
/// Firestore returns with every document read. Every write of one commit shares one
/// commit time, so two documents written by one commit have equal times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitStamps {
    /// The commit that created the document.
    pub created: CommitTime,
    /// The commit that last changed it.
    pub updated: CommitTime,
}

impl Snapshot {
    /// A snapshot of the given `(path, document)` pairs (`None` for a missing one).
    pub fn new(docs: impl IntoIterator<Item = (String, Option<FieldMap>)>) -> Self {
        Self {
            docs: docs.into_iter().collect(),
            stamps: HashMap::new(),
        }
    }

    /// The commit times of the document at `path`, where the reader gave them (the
    /// runner and the in-memory store always do; a hand-built snapshot may not).
    pub fn stamps(&self, path: &str) -> Option<CommitStamps> {
        self.stamps.get(path).copied()
    }

    /// The document at `path`, `None` when it does not exist or was not read.
    pub fn get(&self, path: &str) -> Option<&FieldMap> {
        self.docs.get(path).and_then(Option::as_ref)
    }

    /// Whether `path` was read (whether or not the document exists).
    pub fn was_read(&self, path: &str) -> bool {
        self.docs.contains_key(path)
    }
}

/// A prepared operation: validated inputs, derived hashes and the captured time.
pub trait Transition {
    /// The operation's answer.
    type Output;
    /// The documents to read, relative to the documents root.
    fn paths(&self) -> Vec<String>;
    /// Pure: no clock, randomness, logging or I/O.
    fn decide(&self, snapshot: &Snapshot) -> Decision<Self::Output>;
    /// The operation's name in traces and metrics (`journal.register`, …): every
    /// transition names itself.
    fn name(&self) -> OperationName;
    /// Whether the runner may first try this operation's decision for the state in
    /// which every path of [`Transition::paths`] is absent, as one commit sent before
    /// any read, without a transaction in either mode (see
    /// `core/src/transaction/blind.rs`). Opt in only where that decision creates
    /// documents and depends on nothing but the absence of the paths read: the commit
    /// proves every one of them absent, and any refusal falls back to reading and
    /// deciding. Off by default.
    fn blind_create(&self) -> bool {
        false
    }

    /// Whether, in transaction mode, the runner may take this operation's first
    /// read-and-decide attempt without a transaction and answer from it when its
    /// decision needs no lock: an observation, a rejection, or a mutation whose every
    /// write is under `exists: false` once every other document it read absent is
    /// guarded absent (the attempt machine's `proving_absences`), so that it
    /// read no mutable document present. Any other decision is taken again at once
    /// inside a read-write transaction, as is a commit refused because a document
    /// appeared. Sound for any operation (the commit proves the whole snapshot it
    /// decided on); worth it where the decision is usually a creation or an
    /// observation, since any other costs one read more. Off by default.
    fn first_read_unlocked(&self) -> bool {
        false
    }
}

impl<O> Decision<O> {
    /// The same decision with its answer mapped by `f`.
    pub fn map<P>(self, f: impl FnOnce(O) -> P) -> Decision<P> {
        match self {
            Self::Observe(output) => Decision::Observe(f(output)),
            Self::Mutate(writes, output) => Decision::Mutate(writes, f(output)),
            Self::Reject(error) => Decision::Reject(error),
            Self::Read(paths) => Decision::Read(paths),
        }
    }
}

#[cfg(test)]
mod operation_tests {
    use super::OperationName;

    #[test]
    fn all_lists_every_operation() {
        // Exhaustive: a new operation must be added here and to `ALL`.
        for op in OperationName::ALL {
            let index = match op {
                OperationName::Register => 0,
                OperationName::Acquire => 1,
                OperationName::Start => 2,
                OperationName::Complete => 3,
                OperationName::Fail => 4,
                OperationName::Status => 5,
                OperationName::BeginSend => 6,
                OperationName::RecordSendOutcome => 7,
                OperationName::ReconcileSend => 8,
                OperationName::Result => 9,
                OperationName::LedgerAccept => 10,
                OperationName::LedgerReplay => 11,
                OperationName::LedgerLink => 12,
                OperationName::Execute => 13,
                OperationName::Pending => 14,
                OperationName::Recover => 15,
                OperationName::RecordLateCharge => 16,
                OperationName::RecordEvidence => 17,
                OperationName::ReleaseLease => 18,
            };
            assert_eq!(OperationName::ALL[index], op);
        }
    }
}

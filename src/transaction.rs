//! The one transaction runner every operation goes through, and the pure `decide`
//! contract it drives.
//!
//! An attempt is one consistent `BatchGetDocuments` read, a pure `decide`, and — only
//! for a mutation — one atomic `Commit` whose every write carries a precondition on
//! the state that was read: `exists: false` for a document created, `updateTime` equal
//! to the read one for a document replaced. Documents that are read but never written
//! (roots, audit events, reservations) are immutable by contract. So a committed
//! mutation is 2 RPCs, an observation or rejection 1, no `BeginTransaction` or
//! `Rollback` is ever sent, and no lock is ever held on the server: a client that
//! crashes mid-operation leaves nothing to roll back.
//!
//! Why not a read-write transaction: the emulator locks what a transaction reads
//! (pessimistic) and grants no priority to retries, so N transactions that all read a
//! document and then all write it deadlock on the shared-to-exclusive upgrade until
//! its 2 s lock timeout aborts them all, round after round. Measured on this crate's
//! 24-way registration race: 5 of 24 callers exhausted 10 attempts in 26 s with
//! read-write transactions; with preconditions every round resolves in one retry.
//!
//! A failed precondition (ALREADY_EXISTS, FAILED_PRECONDITION) means another writer
//! won: the attempt is retried, re-reads and decides again. ABORTED, UNAVAILABLE and
//! DEADLINE_EXCEEDED are retried too, up to [`MAX_ATTEMPTS`]; every operation is
//! idempotent, so a retry after an unknown commit outcome re-reads and converges. The
//! trusted time is captured by the caller once and lives in the prepared operation, so
//! every attempt reuses it.

use crate::connection::{Connection, RawClient};
use crate::document::fields::FieldMap;
use crate::error::JournalError;
use gcloud_sdk::google::firestore::v1::{
    BatchGetDocumentsRequest, CommitRequest, Document, Precondition, Write as RawWrite,
    batch_get_documents_request, batch_get_documents_response, precondition, write,
};
use gcloud_sdk::prost_types;
use gcloud_sdk::tonic::{Code, Status};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Follow-up reads one attempt may make (see [`Decision::Read`]).
pub const MAX_FOLLOW_UP_READS: usize = 2;
/// Attempts per operation, fixed in code.
pub const MAX_ATTEMPTS: u32 = 10;
/// Default longest wait for one RPC before the attempt counts as DEADLINE_EXCEEDED
/// (see [`Journal::with_rpc_timeout`](crate::Journal::with_rpc_timeout)).
pub const RPC_TIMEOUT: Duration = Duration::from_secs(10);
/// First backoff ceiling; doubled per failed attempt up to [`BACKOFF_CAP`], full jitter.
pub const BACKOFF_BASE: Duration = Duration::from_millis(4);
/// Largest backoff ceiling.
pub const BACKOFF_CAP: Duration = Duration::from_millis(250);

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
/// matching [`Decision`] with [`Step::decision`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Read these paths too, then decide again.
    Read(Vec<String>),
    /// Fail with this error; nothing is written.
    Reject(JournalError),
}

impl Step {
    /// The decision this step stands for.
    pub fn decision<O>(self) -> Decision<O> {
        match self {
            Self::Read(paths) => Decision::Read(paths),
            Self::Reject(error) => Decision::Reject(error),
        }
    }
}

impl From<JournalError> for Step {
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
    docs: HashMap<String, Option<FieldMap>>,
}

impl Snapshot {
    /// A snapshot of the given `(path, document)` pairs (`None` for a missing one).
    pub fn new(docs: impl IntoIterator<Item = (String, Option<FieldMap>)>) -> Self {
        Self {
            docs: docs.into_iter().collect(),
        }
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
}

/// Cumulative counters of one [`Journal`](crate::Journal), for tests and metrics.
#[derive(Debug, Default)]
pub struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    batch_gets: AtomicU64,
    commits: AtomicU64,
    conflicts: AtomicU64,
}

/// A snapshot of [`Counters`]. Every RPC the runner sends is a BatchGet or a Commit,
/// so `rpcs()` is their sum: no other RPC exists in the crate's transaction path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations run.
    pub calls: u64,
    /// Attempts (one read each).
    pub attempts: u64,
    /// `BatchGetDocuments` RPCs.
    pub batch_gets: u64,
    /// `Commit` RPCs.
    pub commits: u64,
    /// Commits refused because another writer changed a document first.
    pub conflicts: u64,
}

impl Stats {
    /// RPCs sent.
    pub fn rpcs(&self) -> u64 {
        self.batch_gets + self.commits
    }

    /// `self - earlier`, field by field (saturating at zero).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            calls: self.calls.saturating_sub(earlier.calls),
            attempts: self.attempts.saturating_sub(earlier.attempts),
            batch_gets: self.batch_gets.saturating_sub(earlier.batch_gets),
            commits: self.commits.saturating_sub(earlier.commits),
            conflicts: self.conflicts.saturating_sub(earlier.conflicts),
        }
    }
}

impl Counters {
    /// The current values.
    pub fn snapshot(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            calls: get(&self.calls),
            attempts: get(&self.attempts),
            batch_gets: get(&self.batch_gets),
            commits: get(&self.commits),
            conflicts: get(&self.conflicts),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether a gRPC failure is worth another attempt.
fn retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Aborted
            | Code::Unavailable
            | Code::DeadlineExceeded
            | Code::AlreadyExists
            | Code::FailedPrecondition
            // tonic's answer for a connection lost mid-RPC: the outcome is unknown,
            // and every operation re-reads and converges.
            | Code::Unknown
    )
}

/// Runs `op` to completion: read, decide, commit, retrying as documented.
pub(crate) async fn run<T: Transition>(
    connection: &Connection,
    counters: &Counters,
    rpc_timeout: Duration,
    op: &T,
) -> Result<T::Output, JournalError> {
    Counters::bump(&counters.calls);
    let runner = Runner {
        rpc_timeout,
        raw: connection.raw(),
        counters,
        database: connection.database_path(),
        root: connection.documents_path(),
    };
    let paths = op.paths();
    let mut attempts = 0;
    let result = loop {
        attempts += 1;
        Counters::bump(&counters.attempts);
        match runner.attempt(&paths, op).await {
            Ok(output) => break Ok(output),
            Err(Failure::Final(error)) => break Err(error),
            Err(Failure::Retry(code)) => {
                tracing::debug!(
                    attempt = attempts,
                    ?code,
                    "journal attempt failed, retrying"
                );
                if attempts >= MAX_ATTEMPTS {
                    break Err(JournalError::Unavailable);
                }
                tokio::time::sleep(backoff(attempts)).await;
            }
        }
    };
    tracing::debug!(
        attempts,
        outcome = match &result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        },
        "journal operation finished"
    );
    result
}

/// Full-jitter exponential backoff after failed attempt `attempt` (1-based).
fn backoff(attempt: u32) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(BACKOFF_CAP);
    let micros = u64::try_from(ceiling.as_micros()).unwrap_or(u64::MAX);
    Duration::from_micros(fastrand::u64(0..=micros))
}

enum Failure {
    Retry(Code),
    Final(JournalError),
}

fn classify(rpc: &'static str, status: &Status) -> Failure {
    tracing::trace!(rpc, code = ?status.code(), "rpc failed");
    if retryable(status.code()) {
        Failure::Retry(status.code())
    } else {
        tracing::warn!(rpc, code = ?status.code(), "firestore refused a journal request");
        Failure::Final(JournalError::Unavailable)
    }
}

struct Runner<'a> {
    rpc_timeout: Duration,
    raw: RawClient,
    counters: &'a Counters,
    database: String,
    root: String,
}

/// A document as read: its fields and the update time a replacement must match.
struct Read {
    fields: FieldMap,
    update_time: Option<prost_types::Timestamp>,
}

impl Runner<'_> {
    async fn attempt<T: Transition>(&self, paths: &[String], op: &T) -> Result<T::Output, Failure> {
        let mut docs = HashMap::new();
        let mut update_times = HashMap::new();
        let mut read_time = None;
        let mut to_read = paths.to_vec();
        let mut confirming = false;
        // The follow-up reads decide may ask for, plus one confirming re-read.
        for _ in 0..MAX_FOLLOW_UP_READS + 2 {
            let read = tokio::time::timeout(self.rpc_timeout, self.read(&to_read, read_time));
            let (found, time) = match read.await {
                Ok(Ok(found)) => found,
                Ok(Err(status)) => return Err(classify("batch_get", &status)),
                Err(_) => return Err(Failure::Retry(Code::DeadlineExceeded)),
            };
            read_time = read_time.or(time);
            let mut found = found;
            for path in to_read.drain(..) {
                let doc = found.remove(&path).map(|read| {
                    update_times.insert(path.clone(), read.update_time);
                    read.fields
                });
                docs.insert(path, doc);
            }
            let snapshot = Snapshot { docs };
            match op.decide(&snapshot) {
                Decision::Observe(output) => return Ok(output),
                Decision::Reject(JournalError::JournalCorrupt { .. })
                    if !confirming && read_time.is_some() =>
                {
                    // The emulator's BatchGet is not always a snapshot: a read torn across
                    // two commits (a lifecycle and its audit event) looks corrupt. Confirm
                    // by re-reading everything at the first read's time, which is.
                    tracing::debug!("confirming a corrupt-looking read at its read time");
                    confirming = true;
                    to_read = snapshot.docs.into_keys().collect();
                    docs = HashMap::new();
                    update_times.clear();
                }
                Decision::Reject(error) => return Err(Failure::Final(error)),
                Decision::Mutate(writes, output) => {
                    let writes = writes
                        .into_iter()
                        .map(|w| self.raw_write(w, &update_times))
                        .collect::<Result<Vec<_>, _>>()?;
                    self.commit(writes).await?;
                    return Ok(output);
                }
                Decision::Read(more) => {
                    docs = snapshot.docs;
                    to_read = more.into_iter().filter(|p| !docs.contains_key(p)).collect();
                    if to_read.is_empty() {
                        break;
                    }
                }
            }
        }
        // decide kept asking for more (or for what it already had): a bug, fail closed.
        Err(Failure::Final(JournalError::corrupt(
            "unbounded follow-up reads",
        )))
    }

    /// One consistent read of every path; missing documents are absent from the map.
    async fn read(
        &self,
        paths: &[String],
        read_time: Option<prost_types::Timestamp>,
    ) -> Result<(HashMap<String, Read>, Option<prost_types::Timestamp>), Status> {
        Counters::bump(&self.counters.batch_gets);
        let request = BatchGetDocumentsRequest {
            database: self.database.clone(),
            documents: paths.iter().map(|p| format!("{}/{p}", self.root)).collect(),
            mask: None,
            request_options: None,
            consistency_selector: read_time
                .map(batch_get_documents_request::ConsistencySelector::ReadTime),
        };
        let mut stream = self
            .raw
            .clone()
            .batch_get_documents(request)
            .await?
            .into_inner();
        let prefix = format!("{}/", self.root);
        let mut found = HashMap::new();
        let mut read_time = None;
        while let Some(message) = stream.message().await? {
            read_time = read_time.or(message.read_time);
            if let Some(batch_get_documents_response::Result::Found(doc)) = message.result
                && let Some(path) = doc.name.strip_prefix(&prefix)
            {
                let read = Read {
                    fields: doc.fields,
                    update_time: doc.update_time,
                };
                found.insert(path.to_owned(), read);
            }
        }
        Ok((found, read_time))
    }

    async fn commit(&self, writes: Vec<RawWrite>) -> Result<(), Failure> {
        Counters::bump(&self.counters.commits);
        let request = CommitRequest {
            database: self.database.clone(),
            writes,
            transaction: Vec::new(),
            request_options: None,
        };
        match tokio::time::timeout(self.rpc_timeout, self.raw.clone().commit(request)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(status)) => {
                if matches!(
                    status.code(),
                    Code::AlreadyExists | Code::FailedPrecondition
                ) {
                    Counters::bump(&self.counters.conflicts);
                }
                Err(classify("commit", &status))
            }
            Err(_) => Err(Failure::Retry(Code::DeadlineExceeded)),
        }
    }

    fn raw_write(
        &self,
        write: Write,
        update_times: &HashMap<String, Option<prost_types::Timestamp>>,
    ) -> Result<RawWrite, Failure> {
        let (path, fields, condition) = match write {
            Write::Create { path, fields } => {
                (path, fields, precondition::ConditionType::Exists(false))
            }
            Write::Replace { path, fields } => match update_times.get(&path) {
                Some(Some(time)) => (path, fields, precondition::ConditionType::UpdateTime(*time)),
                // Replacing a document the attempt did not read is a bug in decide;
                // refuse rather than write without a precondition.
                _ => {
                    return Err(Failure::Final(JournalError::corrupt(
                        "unguarded replacement",
                    )));
                }
            },
        };
        Ok(RawWrite {
            update_mask: None,
            update_transforms: Vec::new(),
            current_document: Some(Precondition {
                condition_type: Some(condition),
            }),
            operation: Some(write::Operation::Update(Document {
                name: format!("{}/{path}", self.root),
                fields,
                create_time: None,
                update_time: None,
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_bounded_and_grows() {
        for attempt in 1..=MAX_ATTEMPTS {
            let ceiling = BACKOFF_BASE
                .saturating_mul(1 << (attempt - 1))
                .min(BACKOFF_CAP);
            for _ in 0..50 {
                assert!(backoff(attempt) <= ceiling);
            }
        }
    }

    #[test]
    fn only_transient_and_conflict_codes_are_retried() {
        for code in [
            Code::Aborted,
            Code::Unavailable,
            Code::DeadlineExceeded,
            Code::AlreadyExists,
            Code::FailedPrecondition,
            Code::Unknown,
        ] {
            assert!(retryable(code));
        }
        for code in [
            Code::PermissionDenied,
            Code::InvalidArgument,
            Code::NotFound,
            Code::Unauthenticated,
            Code::ResourceExhausted,
        ] {
            assert!(!retryable(code));
        }
    }
}

//! The one runner every operation goes through: it reads, calls the operation's pure
//! `decide` ([`crate::transaction`]), commits, and retries. This module and
//! [`crate::connection`] are the only ones of the journal's operations that do I/O.
//!
//! Two concurrency modes share everything but how an attempt is fenced
//! ([`Concurrency`]):
//!
//! - **preconditions**: one consistent `BatchGetDocuments` with no transaction, and,
//!   for a mutation only, one atomic `Commit` whose every write carries a precondition
//!   on the state read: `exists: false` for a document created, `updateTime` equal to
//!   the read one for a document replaced. Documents read but never written (roots,
//!   audit events, reservations) are immutable by contract, so a decision can only be
//!   invalidated by a write that also breaks one of those preconditions. 2 RPCs per
//!   committed mutation, 1 per observation, no lock held on the server.
//! - **transaction**: the first `BatchGetDocuments` opens a read-write transaction
//!   (`new_transaction`; on a retry `retry_transaction` names the previous one, so
//!   production Firestore keeps its priority), follow-up reads run inside it, the
//!   `Commit` carries its id (writes keep their preconditions), and `Rollback` is sent
//!   whenever the attempt ends without a commit, including when the caller drops the
//!   future. No `BeginTransaction`: 2 RPCs per committed mutation, 2 per observation.
//!
//! Retries: a lost precondition race (ALREADY_EXISTS, FAILED_PRECONDITION or NOT_FOUND
//! on a commit), ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED,
//! CANCELLED and UNKNOWN (a connection lost mid-RPC) are retried with full-jitter
//! exponential backoff, up to [`MAX_ATTEMPTS`]; RESOURCE_EXHAUSTED waits at least the
//! largest backoff. In transaction mode ABORTED backs off for about a second and more
//! ([`TRANSACTION_BACKOFF_BASE`], [`TRANSACTION_BACKOFF_CAP`]): its conflicts are held
//! locks, not lost preconditions. Every operation is idempotent, so a retry after an
//! unknown commit outcome re-reads and converges. Configuration refusals (credentials,
//! PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND or FAILED_PRECONDITION on a read,
//! INVALID_ARGUMENT) end the operation after one attempt with their own error. The
//! trusted time is captured by the caller once and lives in the prepared operation, so
//! every attempt reuses it. An optional deadline bounds the whole operation. Every
//! RPC's answer and every retry is counted in the operator metrics ([`crate::metrics`]).

use crate::connection::{Connection, RawClient};
use crate::error::{ConfigCause, GrpcCode, JournalError};
use crate::metrics;
use crate::transaction::{Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition, Write};
use blind::is_precondition_loss;
use gcloud_sdk::google::firestore::v1::{
    BatchGetDocumentsRequest, CommitRequest, Document, Precondition, RollbackRequest,
    TransactionOptions, Write as RawWrite, batch_get_documents_request,
    batch_get_documents_response, precondition, transaction_options, write,
};
use gcloud_sdk::google_cloud_auth::errors::CredentialsError;
use gcloud_sdk::prost_types;
use gcloud_sdk::tonic::{Code, Status};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tracing::Instrument;

/// Attempts per operation, fixed in code.
pub const MAX_ATTEMPTS: u32 = 10;
/// Default longest wait for one RPC before the attempt counts as DEADLINE_EXCEEDED
/// (see [`Journal::with_rpc_timeout`](crate::Journal::with_rpc_timeout)).
pub const RPC_TIMEOUT: Duration = Duration::from_secs(10);
/// First backoff ceiling; doubled per failed attempt up to [`BACKOFF_CAP`], full jitter.
pub const BACKOFF_BASE: Duration = Duration::from_millis(4);
/// Largest backoff ceiling.
pub const BACKOFF_CAP: Duration = Duration::from_millis(250);
/// First backoff base in transaction mode after ABORTED. The wait is drawn from
/// ½ to 1½ times a base that starts here and grows 1.5× per failed attempt up to
/// [`TRANSACTION_BACKOFF_CAP`]: the Node.js client's transaction retry schedule, with
/// a lower cap (its own is 60 s). Never shorter than half the base: on the emulator,
/// contenders whose commits wait for each other's read locks are aborted one by one by
/// its 2 s lock timeout, and the last one waiting commits only if no aborted contender
/// has come back to read (and so lock) the documents again before it does.
pub const TRANSACTION_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// Largest backoff base in transaction mode after ABORTED.
pub const TRANSACTION_BACKOFF_CAP: Duration = Duration::from_secs(10);

/// How the runner keeps a decision consistent with what it read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// One read without a transaction; every write carries a precondition on what was
    /// read. No server lock is ever held. The default (see the README for the
    /// measurements behind it).
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

/// Cumulative counters of one [`Journal`](crate::Journal), for tests and metrics.
#[derive(Debug, Default)]
pub struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    batch_gets: AtomicU64,
    commits: AtomicU64,
    rollbacks: AtomicU64,
    conflicts: AtomicU64,
    blind_commits: AtomicU64,
    documents_found: AtomicU64,
    documents_missing: AtomicU64,
    documents_written: AtomicU64,
    absence_guards: AtomicU64,
}

/// A journal's counters as read at one moment. Every RPC the runner sends is a BatchGet, a
/// Commit or a Rollback, so `rpcs()` is their sum: no other RPC exists in the crate's
/// transaction path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Operations run.
    pub calls: u64,
    /// Attempts: a first read each, or a blind creation.
    pub attempts: u64,
    /// `BatchGetDocuments` RPCs.
    pub batch_gets: u64,
    /// `Commit` RPCs.
    pub commits: u64,
    /// `Rollback` RPCs (transaction mode only).
    pub rollbacks: u64,
    /// Commits refused because another writer changed a document first (a lost
    /// precondition) or held its lock (ABORTED), blind creations refused because a
    /// document existed included: `commits - conflicts` is the commits that landed
    /// (or whose answer was lost).
    pub conflicts: u64,
    /// Blind creations sent (a subset of `commits` and of `attempts`): the commit a
    /// new command's operation tries before any read, in preconditions mode.
    pub blind_commits: u64,
    /// Documents the runner's reads returned (billed as one document read each).
    pub documents_found: u64,
    /// Documents the runner's reads asked for and found absent. Counted apart so that
    /// a bill can be computed either way; see `BENCHMARKS.md` ("Billed operations").
    pub documents_missing: u64,
    /// Documents created or replaced by commits Firestore acknowledged (billed as one
    /// document write each).
    pub documents_written: u64,
    /// Absence guards (deletes with `exists: false`, deleting nothing) in commits
    /// Firestore acknowledged (billed as one document delete each).
    pub absence_guards: u64,
}

impl Stats {
    /// RPCs sent.
    pub fn rpcs(&self) -> u64 {
        self.batch_gets + self.commits + self.rollbacks
    }

    /// Document reads as billed, every document asked for counted once, found or not.
    pub fn billed_reads(&self) -> u64 {
        self.documents_found + self.documents_missing
    }

    /// `self - earlier`, field by field (saturating at zero).
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            calls: self.calls.saturating_sub(earlier.calls),
            attempts: self.attempts.saturating_sub(earlier.attempts),
            batch_gets: self.batch_gets.saturating_sub(earlier.batch_gets),
            commits: self.commits.saturating_sub(earlier.commits),
            rollbacks: self.rollbacks.saturating_sub(earlier.rollbacks),
            conflicts: self.conflicts.saturating_sub(earlier.conflicts),
            blind_commits: self.blind_commits.saturating_sub(earlier.blind_commits),
            documents_found: self.documents_found.saturating_sub(earlier.documents_found),
            documents_missing: self
                .documents_missing
                .saturating_sub(earlier.documents_missing),
            documents_written: self
                .documents_written
                .saturating_sub(earlier.documents_written),
            absence_guards: self.absence_guards.saturating_sub(earlier.absence_guards),
        }
    }
}

impl Counters {
    /// The current values.
    pub fn stats(&self) -> Stats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Stats {
            calls: get(&self.calls),
            attempts: get(&self.attempts),
            batch_gets: get(&self.batch_gets),
            commits: get(&self.commits),
            rollbacks: get(&self.rollbacks),
            conflicts: get(&self.conflicts),
            blind_commits: get(&self.blind_commits),
            documents_found: get(&self.documents_found),
            documents_missing: get(&self.documents_missing),
            documents_written: get(&self.documents_written),
            absence_guards: get(&self.absence_guards),
        }
    }
}

/// Which counter an event bumps.
#[derive(Clone, Copy)]
enum Count {
    Attempt,
    BatchGet,
    Commit,
    Rollback,
    Conflict,
    BlindCommit,
    Found,
    Missing,
    Written,
    Guard,
}

/// The journal's cumulative counters and this operation's own, bumped together.
struct Tally<'a> {
    global: &'a Counters,
    local: Counters,
}

impl Tally<'_> {
    fn bump(&self, count: Count) {
        self.add(count, 1);
    }

    fn add(&self, count: Count, n: u64) {
        if n == 0 {
            return;
        }
        for counters in [self.global, &self.local] {
            let counter = match count {
                Count::Attempt => &counters.attempts,
                Count::BatchGet => &counters.batch_gets,
                Count::Commit => &counters.commits,
                Count::Rollback => &counters.rollbacks,
                Count::Conflict => &counters.conflicts,
                Count::BlindCommit => &counters.blind_commits,
                Count::Found => &counters.documents_found,
                Count::Missing => &counters.documents_missing,
                Count::Written => &counters.documents_written,
                Count::Guard => &counters.absence_guards,
            };
            counter.fetch_add(n, Ordering::Relaxed);
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

/// Runs `op` to completion: read, decide, commit, retrying as documented, inside one
/// `tracing` span named for the operation.
pub(crate) async fn run<T: Transition>(
    connection: &Connection,
    counters: &Counters,
    options: RunOptions,
    op: &T,
) -> Result<T::Output, JournalError> {
    let span = operation_span(op.name().as_str(), options.concurrency);
    run_in_span(connection, counters, options, op, span.clone())
        .instrument(span)
        .await
}

async fn run_in_span<T: Transition>(
    connection: &Connection,
    counters: &Counters,
    options: RunOptions,
    op: &T,
    span: tracing::Span,
) -> Result<T::Output, JournalError> {
    let started = Instant::now();
    counters.calls.fetch_add(1, Ordering::Relaxed);
    let runner = Runner {
        options,
        deadline: options.deadline.map(|d| started + d),
        raw: connection.raw(),
        tally: Tally {
            global: counters,
            local: Counters::default(),
        },
        database: connection.database_path(),
        root: connection.documents_path(),
    };
    let paths = op.paths();
    // A new command's creation is tried first as one commit, before any read.
    let mut blind = match options.concurrency {
        Concurrency::Preconditions => crate::transaction::blind::plan(op, &paths),
        Concurrency::Transaction => None,
    };
    let mut attempts = 0;
    let mut last_code = None;
    let mut previous_transaction = None;
    let result = loop {
        if runner.past_deadline() {
            break Err(deadline_error(last_code, attempts));
        }
        attempts += 1;
        runner.tally.bump(Count::Attempt);
        let was_blind = blind.is_some();
        let outcome = match blind.take() {
            Some(plan) => runner.blind_attempt(plan).await,
            None => {
                runner
                    .attempt(&paths, op, previous_transaction.take())
                    .await
            }
        };
        match outcome {
            Ok(output) => break Ok(output),
            Err(Failure::Final(error)) => break Err(error),
            Err(Failure::Deadline) => break Err(deadline_error(last_code, attempts)),
            Err(Failure::Retry { code, transaction }) => {
                last_code = Some(GrpcCode::from(code));
                previous_transaction = transaction;
                if attempts >= MAX_ATTEMPTS {
                    break Err(JournalError::Unavailable {
                        last_code,
                        attempts,
                        deadline: false,
                    });
                }
                // A blind creation refused because a document exists is no contention:
                // read what is there at once.
                let wait = if was_blind && is_precondition_loss(code) {
                    Duration::ZERO
                } else {
                    backoff(attempts, code, options.concurrency)
                };
                if runner.deadline.is_some_and(|d| Instant::now() + wait >= d) {
                    break Err(deadline_error(last_code, attempts));
                }
                tracing::debug!(
                    attempt = attempts,
                    code = GrpcCode::from(code).as_str(),
                    backoff_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "journal attempt failed, retrying"
                );
                metrics::retry(GrpcCode::from(code));
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
        }
    };
    let local = runner.tally.local.stats();
    span.record("attempts", attempts);
    span.record("rpcs", local.rpcs());
    span.record("conflicts", local.conflicts);
    span.record(
        "outcome",
        match &result {
            Ok(_) => "ok",
            Err(e) => e.code(),
        },
    );
    span.record(
        "elapsed_ms",
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    );
    if let Err(error) = &result
        && !matches!(error.class(), crate::error::ErrorClass::Refused)
    {
        tracing::warn!(
            code = error.code(),
            grpc = error.grpc_code().map(|c| c.as_str()),
            "journal operation failed"
        );
    }
    result
}

fn deadline_error(last_code: Option<GrpcCode>, attempts: u32) -> JournalError {
    JournalError::Unavailable {
        last_code,
        attempts,
        deadline: true,
    }
}

/// One span per operation, with a literal name (span names are static metadata).
fn operation_span(name: &'static str, mode: Concurrency) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                $name,
                mode = mode.as_str(),
                attempts = tracing::field::Empty,
                rpcs = tracing::field::Empty,
                conflicts = tracing::field::Empty,
                outcome = tracing::field::Empty,
                elapsed_ms = tracing::field::Empty,
            )
        };
    }
    match name {
        "journal.register" => span!("journal.register"),
        "journal.acquire" => span!("journal.acquire"),
        "journal.start" => span!("journal.start"),
        "journal.complete" => span!("journal.complete"),
        "journal.fail" => span!("journal.fail"),
        "journal.status" => span!("journal.status"),
        "journal.ledger_accept" => span!("journal.ledger_accept"),
        "journal.ledger_replay" => span!("journal.ledger_replay"),
        "journal.ledger_link" => span!("journal.ledger_link"),
        _ => span!("journal.operation"),
    }
}

/// Backoff after failed attempt `attempt` (1-based) that answered `code`.
///
/// - RESOURCE_EXHAUSTED waits between [`BACKOFF_CAP`] and four times it, as the
///   official clients back off to their maximum on that code.
/// - ABORTED in transaction mode (a lock conflict) waits ½ to 1½ times a base of
///   [`TRANSACTION_BACKOFF_BASE`] growing 1.5× per attempt up to
///   [`TRANSACTION_BACKOFF_CAP`].
/// - Everything else waits with full jitter under a ceiling of [`BACKOFF_BASE`]
///   doubled per attempt up to [`BACKOFF_CAP`].
fn backoff(attempt: u32, code: Code, mode: Concurrency) -> Duration {
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let retries = attempt.saturating_sub(1).min(16);
    match (code, mode) {
        (Code::ResourceExhausted, _) => Duration::from_micros(fastrand::u64(
            micros(BACKOFF_CAP)..=micros(BACKOFF_CAP.saturating_mul(4)),
        )),
        (Code::Aborted, Concurrency::Transaction) => {
            // `retries` is at most 16: 1.5^16 s is finite, so `mul_f64` cannot panic.
            let base = TRANSACTION_BACKOFF_BASE
                .mul_f64(1.5_f64.powi(retries as i32))
                .min(TRANSACTION_BACKOFF_CAP);
            Duration::from_micros(fastrand::u64(micros(base) / 2..=micros(base) * 3 / 2))
        }
        _ => {
            let ceiling = BACKOFF_BASE.saturating_mul(1 << retries).min(BACKOFF_CAP);
            Duration::from_micros(fastrand::u64(0..=micros(ceiling)))
        }
    }
}

enum Failure {
    /// Worth another attempt; `transaction` is this attempt's, for `retry_transaction`.
    Retry {
        code: Code,
        transaction: Option<Vec<u8>>,
    },
    /// The operation's deadline passed.
    Deadline,
    /// The operation's answer.
    Final(JournalError),
}

impl Failure {
    fn retry(code: Code) -> Self {
        Self::Retry {
            code,
            transaction: None,
        }
    }
}

/// Which RPC failed: the same code means different things on a read and a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rpc {
    Read,
    Commit,
}

/// Whether `status` was caused by credentials that could not produce a token, and
/// whether that cause is transient.
fn credentials_failure(status: &Status) -> Option<bool> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(credentials) = error.downcast_ref::<CredentialsError>() {
            return Some(credentials.is_transient());
        }
        source = error.source();
    }
    None
}

fn classify(rpc: Rpc, mode: Concurrency, status: &Status) -> Failure {
    let code = status.code();
    tracing::trace!(?rpc, code = GrpcCode::from(code).as_str(), "rpc failed");
    if let Some(transient) = credentials_failure(status) {
        return if transient {
            Failure::retry(Code::Unavailable)
        } else {
            Failure::Final(JournalError::CredentialsUnavailable)
        };
    }
    let config = |cause| {
        Failure::Final(JournalError::NotConfigured {
            cause,
            grpc: Some(GrpcCode::from(code)),
        })
    };
    match code {
        Code::Aborted
        | Code::Unavailable
        | Code::DeadlineExceeded
        | Code::Internal
        | Code::ResourceExhausted
        | Code::Cancelled
        // tonic's answer for a connection lost mid-RPC: the outcome is unknown, and
        // every operation re-reads and converges.
        | Code::Unknown => Failure::retry(code),
        // A precondition of this crate's own commit lost a race.
        Code::AlreadyExists | Code::FailedPrecondition | Code::NotFound
            if rpc == Rpc::Commit =>
        {
            Failure::retry(code)
        }
        // An expired or unknown transaction id: the transaction is gone, start anew.
        Code::InvalidArgument
            if mode == Concurrency::Transaction && status.message().contains("ransaction") =>
        {
            Failure::retry(Code::Aborted)
        }
        Code::PermissionDenied | Code::Unauthenticated => {
            Failure::Final(JournalError::PermissionDenied {
                grpc: GrpcCode::from(code),
            })
        }
        Code::NotFound => config(ConfigCause::DatabaseNotFound),
        Code::FailedPrecondition => config(ConfigCause::FailedPrecondition),
        Code::InvalidArgument | Code::AlreadyExists => config(ConfigCause::InvalidArgument),
        Code::Unimplemented | Code::OutOfRange => config(ConfigCause::Unsupported),
        Code::DataLoss | Code::Ok => {
            Failure::Final(JournalError::internal("firestore reported data loss"))
        }
    }
}

struct Runner<'a> {
    options: RunOptions,
    deadline: Option<Instant>,
    raw: RawClient,
    tally: Tally<'a>,
    database: String,
    root: String,
}

/// A document as read: its fields and the update time a replacement must match.
struct Read {
    fields: crate::document::fields::FieldMap,
    update_time: Option<prost_types::Timestamp>,
}

/// What one `BatchGetDocuments` returned.
struct Batch {
    found: HashMap<String, Read>,
    read_time: Option<prost_types::Timestamp>,
}

/// Streams one `BatchGetDocuments`: the documents found under `prefix`, the read time
/// and the transaction the read opened, if any (returned even when the stream fails
/// after announcing it, so that the caller can release it).
async fn batch_get(
    mut raw: RawClient,
    request: BatchGetDocumentsRequest,
    prefix: String,
) -> (Result<Batch, Status>, Option<Vec<u8>>) {
    let mut transaction = None;
    let result = async {
        let mut stream = raw.batch_get_documents(request).await?.into_inner();
        let mut found = HashMap::new();
        let mut read_time = None;
        while let Some(message) = stream.message().await? {
            read_time = read_time.or(message.read_time);
            if !message.transaction.is_empty() && transaction.is_none() {
                transaction = Some(message.transaction);
            }
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
        Ok(Batch { found, read_time })
    }
    .await;
    (result, transaction)
}

/// Rolls back a transaction when an attempt ends without committing it, including
/// when the caller drops the operation's future mid-attempt.
struct OpenTransaction {
    raw: RawClient,
    database: String,
    id: Option<Vec<u8>>,
}

impl OpenTransaction {
    /// The transaction is finished (committed, or its commit answered): no rollback.
    fn disarm(&mut self) -> Option<Vec<u8>> {
        self.id.take()
    }
}

impl Drop for OpenTransaction {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        // Dropped without an explicit rollback: the caller cancelled mid-attempt.
        // Release the server's locks in the background; best effort.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let mut raw = self.raw.clone();
            let request = RollbackRequest {
                database: self.database.clone(),
                transaction: id,
                request_options: None,
            };
            handle.spawn(async move {
                let _ = tokio::time::timeout(RPC_TIMEOUT, raw.rollback(request)).await;
            });
        }
    }
}

impl Runner<'_> {
    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The time one RPC may take: the per-RPC timeout, cut to the deadline.
    fn budget(&self) -> Result<Duration, Failure> {
        match self.deadline {
            None => Ok(self.options.rpc_timeout),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    Err(Failure::Deadline)
                } else {
                    Ok(left.min(self.options.rpc_timeout))
                }
            }
        }
    }

    /// An RPC that took longer than its budget.
    fn timed_out(&self) -> Failure {
        if self.past_deadline() {
            Failure::Deadline
        } else {
            Failure::retry(Code::DeadlineExceeded)
        }
    }

    async fn attempt<T: Transition>(
        &self,
        paths: &[String],
        op: &T,
        previous_transaction: Option<Vec<u8>>,
    ) -> Result<T::Output, Failure> {
        let transactional = self.options.concurrency == Concurrency::Transaction;
        let mut open = OpenTransaction {
            raw: self.raw.clone(),
            database: self.database.clone(),
            id: None,
        };
        let result = self
            .attempt_reads(paths, op, transactional, previous_transaction, &mut open)
            .await;
        match result {
            Ok(output) => Ok(output),
            Err(failure) => {
                // Ended without a commit: release the transaction now, and retry it
                // by name so production Firestore keeps its priority.
                let open_id = open.disarm();
                if let Some(id) = &open_id {
                    self.rollback(id.clone()).await;
                }
                Err(match failure {
                    // A commit the server aborted already ended its transaction and
                    // names it; otherwise name the one just rolled back.
                    Failure::Retry { code, transaction } => Failure::Retry {
                        code,
                        transaction: transaction.or(open_id),
                    },
                    other => other,
                })
            }
        }
    }

    async fn attempt_reads<T: Transition>(
        &self,
        paths: &[String],
        op: &T,
        transactional: bool,
        previous_transaction: Option<Vec<u8>>,
        open: &mut OpenTransaction,
    ) -> Result<T::Output, Failure> {
        let mut docs = HashMap::new();
        let mut update_times = HashMap::new();
        let mut read_time = None;
        let mut to_read = paths.to_vec();
        let mut confirming = false;
        let mut follow_ups = 0;
        // The follow-up reads decide may ask for, plus one confirming re-read.
        for index in 0..MAX_FOLLOW_UP_READS + 2 {
            let selector = match (&open.id, transactional, read_time) {
                (Some(id), _, _) => {
                    Some(batch_get_documents_request::ConsistencySelector::Transaction(id.clone()))
                }
                (None, true, _) if index == 0 => Some(
                    batch_get_documents_request::ConsistencySelector::NewTransaction(
                        TransactionOptions {
                            mode: Some(transaction_options::Mode::ReadWrite(
                                transaction_options::ReadWrite {
                                    retry_transaction: previous_transaction
                                        .clone()
                                        .unwrap_or_default(),
                                    // The database's own mode (pessimistic on Cloud
                                    // Firestore Native, as the official clients use).
                                    concurrency_mode: 0,
                                },
                            )),
                        },
                    ),
                ),
                (None, _, Some(time)) => Some(
                    batch_get_documents_request::ConsistencySelector::ReadTime(time),
                ),
                (None, _, None) => None,
            };
            let budget = self.budget()?;
            let read = tokio::time::timeout(budget, self.read(&to_read, selector, open));
            let batch = match read.await {
                Ok(Ok(batch)) => {
                    metrics::rpc(metrics::RPC_BATCH_GET, GrpcCode::Ok);
                    batch
                }
                Ok(Err(status)) => {
                    metrics::rpc(metrics::RPC_BATCH_GET, status.code().into());
                    return Err(classify(Rpc::Read, self.options.concurrency, &status));
                }
                Err(_) => {
                    metrics::rpc(metrics::RPC_BATCH_GET, GrpcCode::DeadlineExceeded);
                    return Err(self.timed_out());
                }
            };
            if transactional && open.id.is_none() {
                // A read-write transaction that did not come back is a server defect.
                return Err(Failure::retry(Code::Internal));
            }
            read_time = read_time.or(batch.read_time);
            let found_count = to_read
                .iter()
                .filter(|p| batch.found.contains_key(*p))
                .count();
            let asked = to_read.len();
            self.tally.add(Count::Found, found_count as u64);
            self.tally.add(Count::Missing, (asked - found_count) as u64);
            let mut found = batch.found;
            for path in to_read.drain(..) {
                let doc = found.remove(&path).map(|read| {
                    update_times.insert(path.clone(), read.update_time);
                    read.fields
                });
                docs.insert(path, doc);
            }
            let snapshot = Snapshot { docs };
            match op.decide(&snapshot) {
                Decision::Observe(output) => {
                    if let Some(id) = open.disarm() {
                        self.rollback(id).await;
                    }
                    return Ok(output);
                }
                Decision::Reject(JournalError::JournalCorrupt { .. })
                    if !confirming && (read_time.is_some() || open.id.is_some()) =>
                {
                    // The emulator's BatchGet is not always a snapshot: a read torn across
                    // two commits (a lifecycle and its audit event) looks corrupt. Confirm
                    // by re-reading everything at the first read's time (or inside the
                    // transaction), which is consistent.
                    tracing::debug!("confirming a corrupt-looking read");
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
                    self.commit(writes, open).await?;
                    return Ok(output);
                }
                Decision::Read(more) => {
                    follow_ups += 1;
                    docs = snapshot.docs;
                    to_read = more.into_iter().filter(|p| !docs.contains_key(p)).collect();
                    if to_read.is_empty() || follow_ups > MAX_FOLLOW_UP_READS {
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
    /// A transaction the read opens is stored in `open` once the answer arrives.
    ///
    /// A read that opens a transaction runs as its own task, so that a caller who
    /// drops the operation mid-read cannot orphan the transaction: the task finishes
    /// the read and rolls back a transaction nobody will use.
    async fn read(
        &self,
        paths: &[String],
        selector: Option<batch_get_documents_request::ConsistencySelector>,
        open: &mut OpenTransaction,
    ) -> Result<Batch, Status> {
        self.tally.bump(Count::BatchGet);
        let opens = matches!(
            selector,
            Some(batch_get_documents_request::ConsistencySelector::NewTransaction(_))
        );
        let request = BatchGetDocumentsRequest {
            database: self.database.clone(),
            documents: paths.iter().map(|p| format!("{}/{p}", self.root)).collect(),
            mask: None,
            request_options: None,
            consistency_selector: selector,
        };
        let prefix = format!("{}/", self.root);
        if !opens {
            let (result, _) = batch_get(self.raw.clone(), request, prefix).await;
            return result;
        }
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let raw = self.raw.clone();
        let database = self.database.clone();
        tokio::spawn(async move {
            let (result, transaction) = batch_get(raw.clone(), request, prefix).await;
            let orphan = match (&result, transaction) {
                // The read failed after the transaction was announced: release it here.
                (Err(_), Some(id)) => Some(id),
                (Ok(_), Some(id)) => match sender.send(result.map(|batch| (batch, id))) {
                    Ok(()) => None,
                    // The caller is gone: nobody will commit or roll back this one.
                    Err(Ok((_, id))) => Some(id),
                    Err(Err(_)) => None,
                },
                (Err(_), None) | (Ok(_), None) => {
                    let _ = sender.send(result.map(|batch| (batch, Vec::new())));
                    None
                }
            };
            if let Some(id) = orphan {
                let mut raw = raw;
                let request = RollbackRequest {
                    database,
                    transaction: id,
                    request_options: None,
                };
                let _ = tokio::time::timeout(RPC_TIMEOUT, raw.rollback(request)).await;
            }
        });
        match receiver.await {
            Ok(Ok((batch, id))) => {
                if !id.is_empty() {
                    open.id = Some(id);
                }
                Ok(batch)
            }
            Ok(Err(status)) => Err(status),
            Err(_) => Err(Status::internal("the read task ended without an answer")),
        }
    }

    async fn commit(
        &self,
        writes: Vec<RawWrite>,
        open: &mut OpenTransaction,
    ) -> Result<(), Failure> {
        let budget = self.budget()?;
        self.tally.bump(Count::Commit);
        let request = CommitRequest {
            database: self.database.clone(),
            writes,
            transaction: open.id.clone().unwrap_or_default(),
            request_options: None,
        };
        let guards = request
            .writes
            .iter()
            .filter(|w| matches!(w.operation, Some(write::Operation::Delete(_))))
            .count();
        let written = request.writes.len() - guards;
        let answered = tokio::time::timeout(budget, self.raw.clone().commit(request)).await;
        let code = match &answered {
            Ok(Ok(_)) => GrpcCode::Ok,
            Ok(Err(status)) => status.code().into(),
            Err(_) => GrpcCode::DeadlineExceeded,
        };
        metrics::rpc(metrics::RPC_COMMIT, code);
        match answered {
            Ok(Ok(_)) => {
                open.disarm();
                self.tally.add(Count::Written, written as u64);
                self.tally.add(Count::Guard, guards as u64);
                Ok(())
            }
            Ok(Err(status)) => {
                if matches!(
                    status.code(),
                    Code::AlreadyExists | Code::FailedPrecondition | Code::NotFound | Code::Aborted
                ) {
                    self.tally.bump(Count::Conflict);
                }
                // The transaction stays open in `open`: the attempt rolls it back (an
                // aborted commit does not release its read locks on the emulator) and
                // the retry names it.
                Err(classify(Rpc::Commit, self.options.concurrency, &status))
            }
            Err(_) => Err(self.timed_out()),
        }
    }

    /// Releases a transaction's locks; the answer does not change the attempt's.
    async fn rollback(&self, id: Vec<u8>) {
        self.tally.bump(Count::Rollback);
        let request = RollbackRequest {
            database: self.database.clone(),
            transaction: id,
            request_options: None,
        };
        let budget = self.options.rpc_timeout;
        match tokio::time::timeout(budget, self.raw.clone().rollback(request)).await {
            Ok(Ok(_)) => metrics::rpc(metrics::RPC_ROLLBACK, GrpcCode::Ok),
            Ok(Err(status)) => {
                let code = GrpcCode::from(status.code());
                metrics::rpc(metrics::RPC_ROLLBACK, code);
                tracing::debug!(code = code.as_str(), "rollback failed");
            }
            Err(_) => metrics::rpc(metrics::RPC_ROLLBACK, GrpcCode::DeadlineExceeded),
        }
    }

    fn raw_write(
        &self,
        write: Write,
        update_times: &HashMap<String, Option<prost_types::Timestamp>>,
    ) -> Result<RawWrite, Failure> {
        let (path, fields, condition) = match write {
            Write::AssertAbsent { path } => return Ok(self.absence_guard(&path)),
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

mod blind;
#[cfg(test)]
mod tests;

/// The error of a single RPC outside the runner (the verifier's scans): a retryable
/// code is `unavailable` after that one attempt, anything else its own refusal.
pub(crate) fn status_error(status: &Status) -> JournalError {
    match classify(Rpc::Read, Concurrency::Preconditions, status) {
        Failure::Retry { code, .. } => JournalError::Unavailable {
            last_code: Some(GrpcCode::from(code)),
            attempts: 1,
            deadline: false,
        },
        Failure::Deadline => JournalError::Unavailable {
            last_code: None,
            attempts: 1,
            deadline: true,
        },
        Failure::Final(error) => error,
    }
}

/// The error of a `firestore` crate call (the verifier's streamed queries), classified
/// by the gRPC code it carries, as [`status_error`] does.
pub(crate) fn firestore_error(error: &firestore::errors::FirestoreError) -> JournalError {
    use firestore::errors::FirestoreError as E;
    let name = match error {
        E::DatabaseError(e) => e.public.code.as_str(),
        E::DataConflictError(e) => e.public.code.as_str(),
        E::DataNotFoundError(e) => e.public.code.as_str(),
        _ => return JournalError::unreachable(),
    };
    let code = [
        Code::Cancelled,
        Code::Unknown,
        Code::InvalidArgument,
        Code::DeadlineExceeded,
        Code::NotFound,
        Code::AlreadyExists,
        Code::PermissionDenied,
        Code::ResourceExhausted,
        Code::FailedPrecondition,
        Code::Aborted,
        Code::OutOfRange,
        Code::Unimplemented,
        Code::Internal,
        Code::Unavailable,
        Code::DataLoss,
        Code::Unauthenticated,
    ]
    .into_iter()
    .find(|code| format!("{code:?}") == name)
    .unwrap_or(Code::Unknown);
    status_error(&Status::new(code, ""))
}

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
//!   A creation needs no read lock, so two fast paths before it take none, in this
//!   order: an opting-in operation's blind creation (`core/src/transaction/blind.rs`),
//!   as in preconditions mode; then, for an operation that opts in with
//!   `Transition::first_read_unlocked` (register, acquire, start, a ledger accept
//!   without originals), a first read-and-decide attempt without a transaction. Its
//!   observation or rejection is the answer (1 RPC); its mutation is committed without
//!   a transaction when, every document decided on and read absent given an absence
//!   guard, each write is under `exists: false`: no mutable document was read
//!   present, the present ones are immutable, so the commit proves the whole snapshot
//!   decided on, as the transaction's locks would. Any other decision ends that
//!   attempt unsent, and a commit it loses to a document that appeared writes
//!   nothing: either way the read-write transaction follows at once, unbudgeted.
//!
//! Retries: a lost precondition race (ALREADY_EXISTS, FAILED_PRECONDITION or NOT_FOUND
//! on a commit), ABORTED, UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED,
//! CANCELLED and UNKNOWN (a connection lost mid-RPC) are retried with full-jitter
//! exponential backoff, up to [`RetryPolicy`]'s attempts (a refused blind, planned or
//! unlocked commit wrote nothing and spends none of them: a read always follows it);
//! RESOURCE_EXHAUSTED waits at least the
//! largest backoff. In transaction mode ABORTED backs off for about a second and more
//! (the policy's contention backoff): its conflicts are held
//! locks, not lost preconditions. Every operation is idempotent, so a retry after an
//! unknown commit outcome re-reads and converges. Configuration refusals (credentials,
//! PERMISSION_DENIED, UNAUTHENTICATED, NOT_FOUND or FAILED_PRECONDITION on a read,
//! INVALID_ARGUMENT) end the operation after one attempt with their own error. The
//! trusted time is captured by the caller once and lives in the prepared operation, so
//! every attempt reuses it. An optional deadline bounds the whole operation. Every
//! RPC's answer and every retry is counted in the operator metrics ([`crate::metrics`]).
//!
//! Layout, one concern per file, no file importing one that imports it back:
//!
//! - `attempt.rs`: the sans-I/O attempt machine (reads asked for, follow-up bound,
//!   corrupt-read confirmation, preconditions), driven here and by the in-memory test
//!   store (`core/src/testing/store.rs`) alike;
//! - `reading.rs`: one read-and-decide attempt over gRPC, driving the machine;
//!   `planned.rs`: one commit sent without a read of its own (a blind creation, or a
//!   transition `execute` planned from what it knows, `core/src/known.rs`);
//! - `firestore.rs`: the Firestore calls (`BatchGetDocuments`, `Commit`, `Rollback`),
//!   the raw writes and the transaction handle; the verifier reads through it too;
//! - `retry.rs`: which failure is retried, the backoff, the tuning constants;
//! - `counters.rs`: [`Counters`] and [`Stats`]; `concurrency.rs`: [`Concurrency`];
//! - this file: the loop over attempts, its deadline and its span.

use crate::connection::Connection;
use crate::error::JournalError;
use crate::known::{Known, Planned};
use crate::metrics;
use crate::transaction::{OperationName, Transition};
use counters::{Count, Tally};
use firestore::Session;
use gcloud_sdk::prost_types::Timestamp;
use retry::{Failure, backoff, deadline_error, is_precondition_loss};
use std::time::{Duration, Instant};
use tracing::Instrument;

mod concurrency;
mod counters;
pub(crate) mod firestore;
mod planned;
mod policy;
mod reading;
pub(crate) mod retry;

pub use concurrency::Concurrency;
pub(crate) use concurrency::RunOptions;
pub use counters::{Counters, Stats};
pub use policy::RetryPolicy;

/// Runs `op` to completion: read, decide, commit, retrying as documented, inside one
/// `tracing` span named for the operation.
pub(crate) async fn run<T: Transition>(
    connection: &Connection,
    counters: &Counters,
    options: RunOptions,
    op: &T,
) -> Result<T::Output, JournalError> {
    let first = First::<T::Output> {
        paths: op.paths(),
        planned: None,
        remember: false,
    };
    let span = operation_span(op.name(), options.concurrency);
    let ran = run_in_span(connection, counters, options, op, first, span.clone())
        .instrument(span)
        .await?;
    Ok(ran.answer.into_inner())
}

/// Which answer an operation run with a plan gave.
pub(crate) enum Answer<P, O> {
    /// The planned commit landed: its answer.
    Planned(P),
    /// The operation read and decided: its own answer.
    Decided(O),
}

impl<O> Answer<O, O> {
    /// The answer, whichever way it came.
    pub(crate) fn into_inner(self) -> O {
        match self {
            Self::Planned(output) | Self::Decided(output) => output,
        }
    }
}

/// An operation's answer and the state it left known (empty unless asked for).
pub(crate) struct Ran<P, O> {
    pub(crate) answer: Answer<P, O>,
    pub(crate) known: Known<Timestamp>,
}

/// How a run begins: its first read, the commit planned before it, and whether the
/// state it leaves is kept.
struct First<P> {
    paths: Vec<String>,
    planned: Option<Planned<P, Timestamp>>,
    remember: bool,
}

/// The first attempt of a run: a planned commit, or the operation's own blind
/// creation.
enum Commit<P, O> {
    Planned(Planned<P, Timestamp>),
    Blind(Planned<O, Timestamp>),
}

/// Runs `op` as [`run`] does, its first read being `paths` (its own paths and any
/// more the caller will decide from), and its first attempt `planned` when given (in
/// preconditions mode only; otherwise its blind creation, if it makes one, in either
/// mode), keeping what it leaves known. A planned commit refused for any retryable
/// reason falls back to reading: at once after a lost precondition, after the usual
/// backoff otherwise.
pub(crate) async fn run_with<T: Transition, P>(
    connection: &Connection,
    counters: &Counters,
    options: RunOptions,
    op: &T,
    paths: Vec<String>,
    planned: Option<Planned<P, Timestamp>>,
) -> Result<Ran<P, T::Output>, JournalError> {
    let first = First {
        paths,
        planned,
        remember: true,
    };
    let span = operation_span(op.name(), options.concurrency);
    run_in_span(connection, counters, options, op, first, span.clone())
        .instrument(span)
        .await
}

async fn run_in_span<T: Transition, P>(
    connection: &Connection,
    counters: &Counters,
    options: RunOptions,
    op: &T,
    first: First<P>,
    span: tracing::Span,
) -> Result<Ran<P, T::Output>, JournalError> {
    let First {
        paths,
        planned,
        remember,
    } = first;
    let started = Instant::now();
    counters.count_call();
    let runner = Session {
        options,
        deadline: options.policy.deadline.map(|d| started + d),
        raw: connection.raw(),
        tally: Tally::new(counters),
        database: connection.database_path(),
        root: connection.documents_path(),
        remember,
    };
    // A planned commit (preconditions mode), or a new command's creation (either
    // mode: it takes no lock), is tried first as one commit, before any read.
    let mut first = match (options.concurrency, planned) {
        _ if options.reads_only => None,
        (Concurrency::Preconditions, Some(planned)) => Some(Commit::Planned(planned)),
        (Concurrency::Transaction, Some(_)) => None,
        (_, None) => crate::transaction::blind::plan(op, &paths)
            .map(|plan| Commit::Blind(crate::known::blind_commit(plan, &paths))),
    };
    // In transaction mode, an opting-in operation's first read takes no lock: its
    // decision is answered, or committed under `exists: false` alone, when it needs
    // none, and taken again in a transaction otherwise.
    let mut unlocked = options.concurrency == Concurrency::Transaction
        && !options.reads_only
        && op.first_read_unlocked();
    let mut attempts = 0;
    // Refused planned, blind or unlocked commits, and unlocked decisions needing a
    // lock: they wrote nothing, so they spend nothing of the retry budget, which
    // counts only the attempts that could have written.
    let mut refused_fast_paths = 0;
    let mut last_code = None;
    let mut previous_transaction = None;
    let result: Result<Ran<P, T::Output>, JournalError> = loop {
        if runner.past_deadline() {
            break Err(deadline_error(last_code, attempts));
        }
        attempts += 1;
        runner.tally.bump(Count::Attempt);
        let was_planned = first.is_some() || unlocked;
        let outcome = match first.take() {
            Some(Commit::Planned(plan)) => runner
                .planned_attempt(plan)
                .await
                .map(|(output, known)| (Answer::Planned(output), known)),
            Some(Commit::Blind(plan)) => runner
                .planned_attempt(plan)
                .await
                .map(|(output, known)| (Answer::Decided(output), known)),
            None => runner
                .attempt(
                    &paths,
                    op,
                    previous_transaction.take(),
                    std::mem::take(&mut unlocked),
                )
                .await
                .map(|(output, known)| (Answer::Decided(output), known)),
        };
        match outcome {
            Ok((answer, known)) => break Ok(Ran { answer, known }),
            Err(Failure::Final(error)) => break Err(error),
            Err(Failure::Deadline) => break Err(deadline_error(last_code, attempts)),
            // Nothing written: the transaction's attempt follows at once, unbudgeted.
            Err(Failure::NeedsLock) => refused_fast_paths += 1,
            Err(Failure::Retry { code, transaction }) => {
                last_code = Some(crate::grpc::grpc_code(code));
                previous_transaction = transaction;
                // A planned commit refused because a document exists or changed is no
                // contention and wrote nothing: read what is there at once, whatever
                // the budget.
                let refused = was_planned && is_precondition_loss(code);
                if refused {
                    refused_fast_paths += 1;
                }
                let spent = attempts - refused_fast_paths;
                if !refused && spent >= options.policy.attempts.get() {
                    break Err(JournalError::unavailable(last_code, attempts, false));
                }
                let wait = if refused {
                    Duration::ZERO
                } else {
                    backoff(spent, code, options.concurrency, &options.policy)
                };
                if runner.deadline.is_some_and(|d| Instant::now() + wait >= d) {
                    break Err(deadline_error(last_code, attempts));
                }
                tracing::debug!(
                    attempt = attempts,
                    code = crate::grpc::grpc_code(code).as_str(),
                    backoff_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "journal attempt failed, retrying"
                );
                metrics::retry(crate::grpc::grpc_code(code));
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
        }
    };
    let local = runner.tally.local();
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

/// One span per operation, with a literal name (span names are static metadata);
/// matched exhaustively, so every operation has its own.
pub(crate) fn operation_span(name: OperationName, mode: Concurrency) -> tracing::Span {
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
    use OperationName as O;
    match name {
        O::Register => span!("journal.register"),
        O::Acquire => span!("journal.acquire"),
        O::Start => span!("journal.start"),
        O::Complete => span!("journal.complete"),
        O::Fail => span!("journal.fail"),
        O::Status => span!("journal.status"),
        O::BeginSend => span!("journal.begin_send"),
        O::RecordSendOutcome => span!("journal.record_send_outcome"),
        O::ReconcileSend => span!("journal.reconcile_send"),
        O::Result => span!("journal.result"),
        O::LedgerAccept => span!("journal.ledger_accept"),
        O::LedgerReplay => span!("journal.ledger_replay"),
        O::LedgerLink => span!("journal.ledger_link"),
        O::Execute => span!("journal.execute"),
        O::Pending => span!("journal.pending"),
        O::Recover => span!("journal.recover"),
    }
}
#[cfg(test)]
mod span_tests;

//! The driver: it performs each step the core's call machine asks for (a read, a
//! commit, a rollback, the backoff's wait, a provider call), one span per transition
//! and per call, and records their metrics. It reads the clocks together at every poll
//! (the trusted time and its steady time, from which the machine measures the
//! deadlines derived from a lease, and the call's time on the monotonic clock, from
//! which it measures the call's deadline), cuts each RPC and backoff at the call's
//! deadline, and holds the transaction a read opened ([`Open`]) until it is committed
//! or rolled back: dropped with the call, the reaper ends it.

use super::concurrency::{Concurrency, RunOptions};
use super::counters::{Count, Counters, Tally};
use super::firestore::Session;
use super::reaper::{self, Open, Reaper};
use super::retry::{self, Failure, Rpc, backoff, classify};
use crate::connection::Connection;
use crate::metrics;
use crate::time::{Clock, Timestamp};
use command_journal_core::Provider;
use command_journal_core::ProviderAnswer;
use command_journal_core::error::JournalError;
use command_journal_core::tools::attempt::{Found, ReadKind};
use command_journal_core::tools::call::{
    Call, CallOptions, CommitKind, Consistency, Input, Io, Labelled, Now, Program, ReadAnswer,
    RpcFailure, TransactionId,
};
use command_journal_core::tools::transaction::{CommitStamps, OperationName};
use gcloud_sdk::google::firestore::v1::{
    TransactionOptions, batch_get_documents_request, transaction_options,
};
use gcloud_sdk::prost_types;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tracing::Instrument;

/// What a call runs on: the connection, the counters, the options and the clock.
#[derive(Clone, Copy)]
pub(crate) struct Driver<'a> {
    pub(crate) connection: &'a Connection,
    pub(crate) counters: &'a Arc<Counters>,
    pub(crate) options: RunOptions,
    pub(crate) clock: &'a dyn Clock,
}

/// A span open in a call: the call's own, or one transition's with its session.
struct Frame<'a> {
    span: tracing::Span,
    started: Instant,
    /// A transition's RPCs and deadline; `None` for the call's own frame.
    session: Option<Session<'a>>,
}

impl<'a> Driver<'a> {
    /// The trusted time now, truncated to whole microseconds.
    pub(crate) fn now(&self) -> Result<Timestamp, JournalError> {
        Timestamp::from_datetime(self.clock.now()).ok_or(JournalError::ClockRegression)
    }

    /// Runs `program` to its answer: every step the call machine asks for, the
    /// provider's calls through `provider` (a call that reaches none never asks one).
    pub(crate) async fn drive<P, Q>(
        &self,
        program: P,
        provider: Option<&Q>,
    ) -> Result<P::Output, JournalError>
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as command_journal_core::tools::transaction::Transition>::Output: Labelled,
        Q: Provider,
    {
        let began = Instant::now();
        let options = CallOptions {
            concurrency: self.options.concurrency,
            attempts: self.options.policy.attempts,
            fast_paths: !self.options.reads_only,
            deadline: self.options.policy.deadline,
        };
        let deadline = options.deadline.map(|d| began + d);
        let mut call = Call::<P, prost_types::Timestamp>::new(program, options);
        let own = call.program().name();
        let mut frames: Vec<Frame<'a>> = Vec::new();
        let reaper = Reaper::new(
            self.connection.raw(),
            self.connection.database_path(),
            Arc::clone(self.counters),
        );
        // The transaction a read opened, until it is committed or rolled back.
        let mut open: Option<Open> = None;
        loop {
            // Every reading together: the trusted time, its steady time (the system
            // clock's is this monotonic clock's) and the call's own.
            let (at, steady) = (self.now()?, self.clock.steady());
            let elapsed = began.elapsed();
            let now = Now {
                at,
                steady: steady.unwrap_or(elapsed),
                elapsed,
            };
            let io = call.poll(now);
            let span = frames
                .last()
                .map_or_else(tracing::Span::none, |f| f.span.clone());
            let input = match io {
                Io::Done(result) => return result,
                Io::Began(name) => {
                    let parent = frames.last().map(|f| f.span.clone());
                    let span = match parent {
                        Some(parent) => {
                            parent.in_scope(|| operation_span(name, options.concurrency))
                        }
                        None => operation_span(name, options.concurrency),
                    };
                    let session = (!(frames.is_empty() && own == Some(name))).then(|| {
                        self.counters.count_call();
                        self.session(deadline, &reaper)
                    });
                    frames.push(Frame {
                        span,
                        started: Instant::now(),
                        session,
                    });
                    continue;
                }
                Io::Ended {
                    attempts,
                    error,
                    recorded,
                } => {
                    if let Some(frame) = frames.pop() {
                        end(frame, attempts, error.as_ref(), &recorded);
                    }
                    continue;
                }
                // The machine cut the provider's deadline to what is left of the call's.
                Io::Send(request) => {
                    let Some(provider) = provider else {
                        return Err(JournalError::internal("driver: no provider to call"));
                    };
                    let deadline = request.deadline;
                    let sent = tokio::time::timeout(deadline, provider.send(request))
                        .instrument(span)
                        .await;
                    Input::Sent(sent.unwrap_or(ProviderAnswer::Unknown))
                }
                Io::Lookup(request) => {
                    let Some(provider) = provider else {
                        return Err(JournalError::internal("driver: no provider to call"));
                    };
                    // The key comes from the stored plan, after the plan check.
                    let deadline = request.deadline;
                    let found = tokio::time::timeout(deadline, provider.lookup(request))
                        .instrument(span)
                        .await
                        .unwrap_or(ProviderAnswer::Unknown);
                    Input::LookedUp(found)
                }
                Io::Retrieve(request) => {
                    let Some(provider) = provider else {
                        return Err(JournalError::internal("driver: no provider to call"));
                    };
                    // The key and what it may do come from the stored records.
                    let deadline = request.deadline;
                    let read = tokio::time::timeout(deadline, provider.retrieve(request))
                        .instrument(span)
                        .await
                        .unwrap_or(ProviderAnswer::Unknown);
                    Input::Retrieved(read)
                }
                io => {
                    let Some(session) = frames.last().and_then(|f| f.session.as_ref()) else {
                        return Err(JournalError::internal("driver: I/O outside a transition"));
                    };
                    store(session, io, &mut open).instrument(span).await
                }
            };
            call.handle(input);
        }
    }

    /// One transition's session: its RPCs, the call's `deadline`, its counters.
    fn session(&self, deadline: Option<Instant>, reaper: &Reaper) -> Session<'a> {
        Session {
            options: self.options,
            deadline,
            raw: self.connection.raw(),
            tally: Tally::new(self.counters),
            database: self.connection.database_path(),
            root: self.connection.documents_path(),
            reaper: reaper.clone(),
        }
    }
}

/// Performs one store step of a transition: a read, a commit, a rollback or the
/// backoff's wait (the machine asks for none past the call's deadline but a
/// rollback). The transaction a read opens is held in `open` until it is committed
/// or rolled back, so that a call dropped mid-way hands it to the reaper.
async fn store<O>(
    session: &Session<'_>,
    io: Io<O, prost_types::Timestamp>,
    open: &mut Option<Open>,
) -> Input<prost_types::Timestamp> {
    match io {
        Io::Read {
            paths,
            kind,
            consistency,
        } => {
            if kind == ReadKind::First {
                session.tally.bump(Count::Attempt);
            }
            if kind == ReadKind::Confirm {
                tracing::debug!("confirming a corrupt-looking read");
            }
            read(session, &paths, consistency, open).await
        }
        Io::Commit {
            writes,
            transaction,
            kind,
        } => {
            match kind {
                CommitKind::Blind => {
                    session.tally.bump(Count::Attempt);
                    session.tally.bump(Count::BlindCommit);
                }
                CommitKind::Planned => {
                    session.tally.bump(Count::Attempt);
                    session.tally.bump(Count::PlannedCommit);
                }
                CommitKind::Decided => {}
            }
            let transaction = transaction.map(|id| id.0);
            match session.commit(writes, transaction, open).await {
                Ok(results) => Input::Committed(Ok(results)),
                Err(failure) => match failure.into_rpc() {
                    Some(failure) => Input::Committed(Err(failure)),
                    None => Input::DeadlinePassed,
                },
            }
        }
        Io::Rollback(TransactionId(id)) => {
            // The transaction held, or (never expected) another the machine names:
            // owned from here on either way.
            let held = match open.take() {
                Some(held) if held.id() == id.as_slice() => held,
                other => {
                    drop(other);
                    session.reaper.own(id)
                }
            };
            // Retried within its bound, then handed to the reaper; a call dropped
            // while it is in flight hands it over too.
            reaper::roll_back(held, &session.tally, &session.options.policy).await;
            Input::RolledBack
        }
        Io::Retry {
            attempts,
            spent,
            code,
            cause,
            immediate,
        } => {
            let options = session.options;
            let wait = match immediate {
                true => Duration::ZERO,
                false => backoff(spent, cause, options.concurrency, &options.policy),
            };
            if session.deadline.is_some_and(|d| Instant::now() + wait >= d) {
                return Input::DeadlinePassed;
            }
            tracing::debug!(
                attempt = attempts,
                code = code.as_str(),
                backoff_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "journal attempt failed, retrying"
            );
            metrics::retry(code);
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            Input::Waited
        }
        Io::Began(_)
        | Io::Ended { .. }
        | Io::Send(_)
        | Io::Lookup(_)
        | Io::Retrieve(_)
        | Io::Done(_) => Input::DeadlinePassed,
    }
}

/// One `BatchGetDocuments` at `consistency`.
async fn read(
    session: &Session<'_>,
    paths: &[String],
    consistency: Consistency<prost_types::Timestamp>,
    open: &mut Option<Open>,
) -> Input<prost_types::Timestamp> {
    use batch_get_documents_request::ConsistencySelector as Selector;
    let selector = match consistency {
        Consistency::Latest => None,
        Consistency::At(time) => Some(Selector::ReadTime(time)),
        Consistency::In(id) => Some(Selector::Transaction(id.0)),
        Consistency::Begin { retrying } => Some(Selector::NewTransaction(TransactionOptions {
            mode: Some(transaction_options::Mode::ReadWrite(
                transaction_options::ReadWrite {
                    retry_transaction: retrying.map(|id| id.0).unwrap_or_default(),
                    // The database's own mode (pessimistic on Cloud Firestore Native,
                    // as the official clients use).
                    concurrency_mode: 0,
                },
            )),
        })),
    };
    let budget = match session.budget() {
        Ok(budget) => budget,
        Err(_) => return Input::DeadlinePassed,
    };
    let answered = session.read(paths, selector, budget).await;
    let (batch, transaction) = match answered {
        Some(Ok(read)) => {
            metrics::rpc(
                metrics::RPC_BATCH_GET,
                command_journal_core::error::GrpcCode::Ok,
            );
            read
        }
        Some(Err(status)) => {
            metrics::rpc(
                metrics::RPC_BATCH_GET,
                crate::grpc::grpc_code(status.code()),
            );
            let failure = classify(Rpc::Read, session.options.concurrency, &status);
            return match failure.into_rpc() {
                Some(failure) => Input::Read(Err(failure)),
                None => Input::DeadlinePassed,
            };
        }
        None => {
            metrics::rpc(
                metrics::RPC_BATCH_GET,
                command_journal_core::error::GrpcCode::DeadlineExceeded,
            );
            return match session.timed_out() {
                Failure::Retry { code } => Input::Read(Err(RpcFailure::Retry {
                    code: crate::grpc::grpc_code(code),
                    cause: retry::cause(code),
                })),
                _ => Input::DeadlinePassed,
            };
        }
    };
    let transaction = transaction.map(|held| {
        let id = TransactionId(held.id().to_vec());
        *open = Some(held);
        id
    });
    let found: HashMap<String, Found<prost_types::Timestamp>> = batch
        .found
        .into_iter()
        .map(|(path, doc)| {
            let stamp = |t: Option<&prost_types::Timestamp>| t.map(|t| (t.seconds, t.nanos));
            let stamps = match (
                stamp(doc.create_time.as_ref()),
                stamp(doc.update_time.as_ref()),
            ) {
                (Some(created), Some(updated)) => Some(CommitStamps { created, updated }),
                _ => None,
            };
            let found = Found {
                fields: crate::wire::fields_from_wire(doc.fields),
                version: doc.update_time,
                stamps,
            };
            (path, found)
        })
        .collect();
    let found_count = paths.iter().filter(|p| found.contains_key(*p)).count();
    session.tally.add(Count::Found, found_count as u64);
    session
        .tally
        .add(Count::Missing, (paths.len() - found_count) as u64);
    Input::Read(Ok(ReadAnswer {
        found,
        read_time: batch.read_time,
        transaction,
    }))
}

/// Closes `frame`: its span's fields, the warning of a failed transition (with a
/// corrupt read's parse detail), and the metrics it records.
fn end(
    frame: Frame<'_>,
    attempts: u32,
    error: Option<&JournalError>,
    recorded: &[command_journal_core::tools::call::Metric],
) {
    let elapsed = frame.started.elapsed();
    let span = &frame.span;
    if let Some(session) = &frame.session {
        let local = session.tally.local();
        span.record("attempts", attempts);
        span.record("rpcs", local.rpcs());
        span.record("conflicts", local.conflicts);
        span.record("outcome", error.map_or("ok", JournalError::code));
        span.record(
            "elapsed_ms",
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        );
        if let Some(JournalError::JournalCorrupt { reason, detail }) = error {
            // The core logs nothing: where a strict parse failed travels in the
            // error (a field's name, never a value) and is logged here.
            span.in_scope(|| {
                tracing::warn!(reason, detail, "journal corrupt: nothing was written");
            });
        }
        if let Some(error) = error
            && !matches!(
                error.class(),
                command_journal_core::error::ErrorClass::Refused
            )
        {
            span.in_scope(|| {
                tracing::warn!(
                    code = error.code(),
                    grpc = error.grpc_code().map(|c| c.as_str()),
                    "journal operation failed"
                );
            });
        }
    }
    for metric in recorded {
        metrics::operation(
            metrics::operation_label(metric.name),
            metric.outcome,
            elapsed,
        );
    }
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
        O::RecordLateCharge => span!("journal.record_late_charge"),
        O::RecordEvidence => span!("journal.record_evidence"),
        O::ReleaseLease => span!("journal.release_lease"),
    }
}

#[cfg(test)]
mod span_tests;

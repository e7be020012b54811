//! The Firestore calls of the transaction shell: one transition's [`Session`] (the
//! raw client, the call's deadline and the counters), its `BatchGetDocuments` and
//! `Commit`, and the raw writes with their preconditions; a transaction a read opens
//! is owned from the moment its id arrives ([`Open`]: ended by a commit or a
//! rollback, or by the reaper). [`batch_get`] is also the verifier's point read.

use super::concurrency::RunOptions;
use super::counters::{Count, Tally};
use super::reaper::{Open, Reaper};
use super::retry::{Failure, Rpc, classify};
use crate::connection::RawClient;
use crate::metrics;
use command_journal_core::error::GrpcCode;
use command_journal_core::tools::attempt::{GuardedWrite, Precondition};
use command_journal_core::tools::transaction::Write;
use gcloud_sdk::google::firestore::v1::{
    BatchGetDocumentsRequest, CommitRequest, Document, Precondition as RawPrecondition,
    Write as RawWrite, batch_get_documents_request, batch_get_documents_response, precondition,
    write,
};
use gcloud_sdk::prost_types;
use gcloud_sdk::tonic::{Code, Status};
use std::time::{Duration, Instant};

/// The update time Firestore answered for one write of a commit, as sent back in a
/// precondition and in comparable form.
pub(crate) type WriteTime = (
    prost_types::Timestamp,
    command_journal_core::tools::transaction::CommitTime,
);

/// One transition's connection to Firestore: every RPC of its attempts goes through it.
pub(super) struct Session<'a> {
    pub(super) options: RunOptions,
    /// The call's deadline, if its policy has one.
    pub(super) deadline: Option<Instant>,
    pub(super) raw: RawClient,
    pub(super) tally: Tally<'a>,
    pub(super) database: String,
    pub(super) root: String,
    /// What ends the transactions its reads open.
    pub(super) reaper: Reaper,
}

/// What one `BatchGetDocuments` returned.
pub(crate) struct Batch {
    /// The documents found, by path relative to the documents root, as they arrived.
    pub(crate) found: Vec<(String, Document)>,
    /// The read time the server answered with.
    pub(crate) read_time: Option<prost_types::Timestamp>,
}

/// A `BatchGetDocuments` of `paths` (relative to `root`, the documents root) of
/// `database`, at `selector`'s consistency (the server's current time when `None`).
pub(crate) fn batch_get_request<'p>(
    database: String,
    root: &str,
    paths: impl IntoIterator<Item = &'p str>,
    selector: Option<batch_get_documents_request::ConsistencySelector>,
) -> BatchGetDocumentsRequest {
    BatchGetDocumentsRequest {
        database,
        documents: paths.into_iter().map(|p| format!("{root}/{p}")).collect(),
        mask: None,
        request_options: None,
        consistency_selector: selector,
    }
}

/// Streams one `BatchGetDocuments`: the documents found under `prefix` and the read
/// time.
pub(crate) async fn batch_get(
    raw: RawClient,
    request: BatchGetDocumentsRequest,
    prefix: String,
) -> Result<Batch, Status> {
    stream(raw, request, prefix, |_| {}).await
}

/// Streams one `BatchGetDocuments`, handing the id of the transaction it opens, if
/// any, to `opened` as soon as the message that carries it arrives (so that a stream
/// that fails or stalls after it leaves the transaction owned).
async fn stream(
    mut raw: RawClient,
    request: BatchGetDocumentsRequest,
    prefix: String,
    mut opened: impl FnMut(Vec<u8>),
) -> Result<Batch, Status> {
    let mut stream = raw.batch_get_documents(request).await?.into_inner();
    let mut found = Vec::new();
    let mut read_time = None;
    let mut announced = false;
    while let Some(message) = stream.message().await? {
        read_time = read_time.or(message.read_time);
        if !message.transaction.is_empty() && !announced {
            announced = true;
            opened(message.transaction);
        }
        if let Some(batch_get_documents_response::Result::Found(doc)) = message.result
            && let Some(path) = doc.name.strip_prefix(&prefix)
        {
            found.push((path.to_owned(), doc));
        }
    }
    Ok(Batch { found, read_time })
}

impl Session<'_> {
    /// Whether the transition's deadline has passed.
    pub(super) fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// The time one RPC may take: the per-RPC timeout, cut to the deadline.
    pub(super) fn budget(&self) -> Result<Duration, Failure> {
        match self.deadline {
            None => Ok(self.options.policy.rpc_timeout),
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    Err(Failure::Deadline)
                } else {
                    Ok(left.min(self.options.policy.rpc_timeout))
                }
            }
        }
    }

    /// An RPC that took longer than its budget.
    pub(super) fn timed_out(&self) -> Failure {
        if self.past_deadline() {
            Failure::Deadline
        } else {
            Failure::retry(Code::DeadlineExceeded)
        }
    }

    /// One consistent read of every path, within `budget`; missing documents are
    /// absent from the map. A read that opens a transaction answers it beside the
    /// documents. `None`: not answered within `budget`.
    ///
    /// A read that opens a transaction runs as its own task, bounded by `budget` too,
    /// which owns the transaction from the moment the message carrying its id arrives
    /// ([`Open`]) and hands it over with the answer: a transaction nobody receives
    /// (the caller dropped the operation before or after the answer arrived, the read
    /// failed or stalled after opening it) is dropped unended, and the reaper ends it.
    /// A read that fails answers its own status, in both modes.
    pub(super) async fn read(
        &self,
        paths: &[String],
        selector: Option<batch_get_documents_request::ConsistencySelector>,
        budget: Duration,
    ) -> Option<Result<(Batch, Option<Open>), Status>> {
        self.tally.bump(Count::BatchGet);
        let opens = matches!(
            selector,
            Some(batch_get_documents_request::ConsistencySelector::NewTransaction(_))
        );
        let paths = paths.iter().map(String::as_str);
        let request = batch_get_request(self.database.clone(), &self.root, paths, selector);
        let prefix = format!("{}/", self.root);
        if !opens {
            let read = batch_get(self.raw.clone(), request, prefix);
            let answered = tokio::time::timeout(budget, read).await.ok()?;
            return Some(answered.map(|batch| (batch, None)));
        }
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let raw = self.raw.clone();
        let reaper = self.reaper.clone();
        let opening = reaper.opening();
        tokio::spawn(async move {
            let mut open = None;
            let read = stream(raw, request, prefix, |id| open = Some(reaper.own(id)));
            let answered = tokio::time::timeout(budget, read).await;
            // A failed or stalled read drops its transaction here; an answer nobody
            // receives drops it with the channel.
            let _ = sender.send(answered.map(|read| read.map(|batch| (batch, open))));
            // Counted until now: whatever it opened is in its caller's or the reaper's
            // hands.
            drop(opening);
        });
        match receiver.await {
            Ok(Ok(answer)) => Some(answer),
            Ok(Err(_elapsed)) => None,
            // The task ended without answering (it panicked): the outcome is unknown.
            Err(_) => Some(Err(Status::unknown(
                "the read task ended without an answer",
            ))),
        }
    }

    /// Sends one `Commit` of `writes` (in `transaction`, if any; `open`, the
    /// transaction, is ended once the commit answered success); the update time
    /// Firestore answered for each write, in order (none for a delete).
    pub(super) async fn commit(
        &self,
        writes: Vec<GuardedWrite<prost_types::Timestamp>>,
        transaction: Option<Vec<u8>>,
        open: &mut Option<Open>,
    ) -> Result<Vec<Option<WriteTime>>, Failure> {
        let budget = self.budget()?;
        self.tally.bump(Count::Commit);
        // An absence guard is a delete; an unchanged rewrite is billed as the write it is.
        let guards = writes
            .iter()
            .filter(|w| matches!(w.write, Write::AssertAbsent { .. }))
            .count();
        let written = writes.len() - guards;
        let request = CommitRequest {
            database: self.database.clone(),
            writes: writes.into_iter().map(|w| self.raw_write(w)).collect(),
            transaction: transaction.unwrap_or_default(),
            request_options: None,
        };
        let answered = tokio::time::timeout(budget, self.raw.clone().commit(request)).await;
        let code = match &answered {
            Ok(Ok(_)) => GrpcCode::Ok,
            Ok(Err(status)) => crate::grpc::grpc_code(status.code()),
            Err(_) => GrpcCode::DeadlineExceeded,
        };
        metrics::rpc(metrics::RPC_COMMIT, code);
        match answered {
            Ok(Ok(response)) => {
                if let Some(open) = open.take() {
                    open.ended();
                }
                self.tally.add(Count::Written, written as u64);
                self.tally.add(Count::Guard, guards as u64);
                Ok(response
                    .into_inner()
                    .write_results
                    .into_iter()
                    .map(|result| {
                        result
                            .update_time
                            .map(|time| (time, (time.seconds, time.nanos)))
                    })
                    .collect())
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

    /// A guarded write as sent: the write, its precondition as Firestore's
    /// (`exists: false`, or `updateTime` equal to the one read).
    fn raw_write(&self, guarded: GuardedWrite<prost_types::Timestamp>) -> RawWrite {
        let condition = match guarded.precondition {
            Precondition::Absent => precondition::ConditionType::Exists(false),
            Precondition::UpdatedAt(time) => precondition::ConditionType::UpdateTime(time),
        };
        let operation = match guarded.write {
            // An absence guard: a delete that deletes nothing, failing the commit
            // unless the document is absent.
            Write::AssertAbsent { path } => {
                write::Operation::Delete(format!("{}/{path}", self.root))
            }
            // An unchanged guard rewrites the document as read: Firestore applies a
            // write that changes nothing without changing the update time.
            Write::Create { path, fields }
            | Write::Replace { path, fields }
            | Write::AssertUnchanged { path, fields } => write::Operation::Update(Document {
                name: format!("{}/{path}", self.root),
                fields: crate::wire::fields_to_wire(&fields),
                create_time: None,
                update_time: None,
            }),
        };
        RawWrite {
            update_mask: None,
            update_transforms: Vec::new(),
            current_document: Some(RawPrecondition {
                condition_type: Some(condition),
            }),
            operation: Some(operation),
        }
    }
}

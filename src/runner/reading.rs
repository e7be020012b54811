//! One read-and-decide attempt over gRPC: the first `BatchGetDocuments` (opening the
//! transaction in transaction mode), the follow-up and confirming reads, the decision
//! and its commit.

use super::concurrency::Concurrency;
use super::counters::Count;
use super::firestore::{OpenTransaction, Session};
use super::retry::{Failure, Rpc, classify};
use crate::error::{GrpcCode, JournalError};
use crate::metrics;
use crate::transaction::{Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition};
use gcloud_sdk::google::firestore::v1::{
    TransactionOptions, batch_get_documents_request, transaction_options,
};
use gcloud_sdk::tonic::Code;
use std::collections::HashMap;

impl Session<'_> {
    /// One read-and-decide attempt, in `previous_transaction`'s place when retrying
    /// one; rolls back a transaction it leaves open.
    pub(super) async fn attempt<T: Transition>(
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
}

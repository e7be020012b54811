//! One read-and-decide attempt over gRPC: the first `BatchGetDocuments` (opening the
//! transaction in transaction mode), the follow-up and confirming reads, the decision
//! and its commit.

use super::concurrency::Concurrency;
use super::counters::Count;
use super::firestore::{OpenTransaction, Session, WriteTime};
use super::retry::{Failure, Rpc, classify};
use crate::attempt::{Action, Attempt, Found, Precondition, ReadKind};
use crate::error::GrpcCode;
use crate::known::Known;
use crate::metrics;
use crate::transaction::{CommitStamps, Transition, Write};
use gcloud_sdk::google::firestore::v1::{
    TransactionOptions, batch_get_documents_request, transaction_options,
};
use gcloud_sdk::prost_types;
use gcloud_sdk::tonic::Code;
use std::collections::HashMap;

impl Session<'_> {
    /// One read-and-decide attempt, in `previous_transaction`'s place when retrying
    /// one; rolls back a transaction it leaves open. `unlocked` (transaction mode's
    /// first attempt of an operation that opts in) reads without a transaction and
    /// commits only a decision that needs no lock, every write under `exists: false`
    /// once the documents read absent are guarded; any other decision is
    /// [`Failure::NeedsLock`], nothing written.
    pub(super) async fn attempt<T: Transition>(
        &self,
        paths: &[String],
        op: &T,
        previous_transaction: Option<Vec<u8>>,
        unlocked: bool,
    ) -> Result<(T::Output, Known<prost_types::Timestamp>), Failure> {
        let transactional = self.options.concurrency == Concurrency::Transaction && !unlocked;
        let mut open = OpenTransaction {
            raw: self.raw.clone(),
            database: self.database.clone(),
            id: None,
        };
        let result = self
            .attempt_reads(
                paths,
                op,
                (transactional, unlocked),
                previous_transaction,
                &mut open,
            )
            .await;
        match result {
            Ok(answer) => Ok(answer),
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

    /// Drives the attempt machine ([`super::attempt`]) over gRPC: each read it asks
    /// for is one `BatchGetDocuments` (the first opens the transaction in transaction
    /// mode, the others run inside it or at the first read's time), its commit one
    /// `Commit`; an observation rolls the transaction back. Answers the output and
    /// what the attempt left known: the documents read, updated by its commit.
    async fn attempt_reads<T: Transition>(
        &self,
        paths: &[String],
        op: &T,
        (transactional, unlocked): (bool, bool),
        previous_transaction: Option<Vec<u8>>,
        open: &mut OpenTransaction,
    ) -> Result<(T::Output, Known<prost_types::Timestamp>), Failure> {
        let mut attempt = Attempt::new(op, paths.to_vec());
        if transactional {
            attempt = attempt.in_transaction();
        } else if unlocked {
            attempt = attempt.proving_absences();
        }
        let mut step = attempt.start();
        let mut read_time = None;
        loop {
            let (to_read, kind) = match step {
                Action::Read { paths, kind } => (paths, kind),
                Action::Done(output) => {
                    if let Some(id) = open.disarm() {
                        self.rollback(id).await;
                    }
                    return Ok((output, self.known(&attempt, None)));
                }
                Action::Fail(error) => return Err(Failure::Final(error)),
                Action::Commit { writes, output } => {
                    if unlocked
                        && !writes
                            .iter()
                            .all(|w| matches!(w.precondition, Precondition::Absent))
                    {
                        // A replacement, or a mutable document read present: only a
                        // transaction's lock holds it.
                        return Err(Failure::NeedsLock);
                    }
                    let written: Vec<Write> = if self.remember {
                        writes.iter().map(|w| w.write.clone()).collect()
                    } else {
                        Vec::new()
                    };
                    let results = self.commit(writes, open).await?;
                    return Ok((output, self.known(&attempt, Some((&written, &results)))));
                }
            };
            if kind == ReadKind::Confirm {
                tracing::debug!("confirming a corrupt-looking read");
            }
            let selector = match (&open.id, transactional, read_time) {
                (Some(id), _, _) => {
                    Some(batch_get_documents_request::ConsistencySelector::Transaction(id.clone()))
                }
                (None, true, _) if kind == ReadKind::First => Some(
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
                    metrics::rpc(
                        metrics::RPC_BATCH_GET,
                        crate::grpc::grpc_code(status.code()),
                    );
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
            let found: HashMap<String, Found<prost_types::Timestamp>> = batch
                .found
                .into_iter()
                .map(|(path, doc)| {
                    let stamp =
                        |t: Option<&prost_types::Timestamp>| t.map(|t| (t.seconds, t.nanos));
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
            let found_count = to_read.iter().filter(|p| found.contains_key(*p)).count();
            self.tally.add(Count::Found, found_count as u64);
            self.tally
                .add(Count::Missing, (to_read.len() - found_count) as u64);
            step = attempt.read(op, found, read_time.is_some() || open.id.is_some());
        }
    }

    /// What `attempt` leaves known, once its commit (`written` and its write results)
    /// landed, if any; nothing unless this run remembers.
    fn known<T: Transition>(
        &self,
        attempt: &Attempt<T, prost_types::Timestamp>,
        committed: Option<(&[Write], &[Option<WriteTime>])>,
    ) -> Known<prost_types::Timestamp> {
        if !self.remember {
            return Known::default();
        }
        let (snapshot, versions) = attempt.read_state();
        let known = Known::read(snapshot.clone(), versions);
        match committed {
            Some((written, results)) => known.committed(written, results),
            None => known,
        }
    }
}

//! The journal verifier: scans every journal collection with streaming reads at one
//! read time (or in consistent ranges, each at its own), reports every broken invariant
//! with its document path and a stable code, and never writes.
//!
//! Every document below `checkoutRequests`, `auditEvents`, `ledgerReservations` and
//! `ledgerTransactions` is read, at any depth, so a document where the journal keeps
//! none is reported wherever it is. The checks use the documents' fields and the write
//! times Firestore keeps on each (`createTime`, `updateTime`), which no client can set:
//! docs/documents.md lists each check beside its finding code.
//!
//! Memory is bounded by one command at a time: each collection's subtree is streamed
//! in document-name order, which is command key hash order (reservation id order for
//! the ledger), and merged. The report keeps at most [`MAX_FINDINGS`] findings, the
//! first in path order, and counts the rest.

mod confirm;
#[cfg(test)]
mod edits;
mod merge;
mod reads;
#[cfg(test)]
mod results_tests;
mod scan;

// The checks are the core's (`command_journal_core::tools::verify`); this module
// streams a project's documents into them.
use command_journal_core::tools::verify::{
    attention, commerce, cross_checks, keys, ledger, pending_index, ranges, stored, write_times,
};
pub use command_journal_core::verify::{
    Attention, AttentionCode, Finding, FindingCode, MAX_FINDINGS, ScanRanges, Scanned, VerifyReport,
};

use crate::connection::Connection;
use command_journal_core::error::JournalError;

/// Scans the whole journal of `connection`'s project at one read time and reports
/// every broken invariant; writes nothing. `progress` is called with the number of
/// documents read so far, every thousand documents and at the end.
pub async fn verify(
    connection: &Connection,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<VerifyReport, JournalError> {
    verify_in_ranges(connection, ScanRanges::ONE, progress).await
}

/// [`verify`] split into `ranges` consistent ranges of the command key hash space,
/// each read at its own server read time, for journals too large to scan within the
/// read-time retention (one hour on Firestore without point-in-time recovery).
///
/// Every per-command and per-reservation invariant is checked on documents read at
/// one time, as with one range. The historical-link checks relate documents of
/// different ranges: their findings are read again at one fresh read time and
/// reported only if they still hold. On a journal nobody writes to, every number of
/// ranges gives the same report.
pub async fn verify_in_ranges(
    connection: &Connection,
    ranges: ScanRanges,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<VerifyReport, JournalError> {
    Ok(scan::run(connection, ranges, progress).await?.finish())
}

/// [`verify`] over documents held in memory instead of a project's (unit
/// tests): the same merge and the same checks, the write times as the documents
/// carry them.
#[cfg(test)]
pub(crate) fn verify_documents(
    documents_path: &str,
    documents: Vec<command_journal_core::testing::StoredDocument>,
) -> Result<VerifyReport, JournalError> {
    let time = |t: u64| {
        Some(gcloud_sdk::prost_types::Timestamp {
            seconds: i64::try_from(t).unwrap_or(i64::MAX),
            nanos: 0,
        })
    };
    let documents = documents
        .into_iter()
        .map(|d| gcloud_sdk::google::firestore::v1::Document {
            name: format!("{documents_path}/{}", d.path),
            fields: crate::wire::fields_to_wire(&d.fields),
            create_time: time(d.create_time),
            update_time: time(d.update_time),
        })
        .collect();
    futures::executor::block_on(scan::check_in_memory(documents_path, documents))
}

/// How many documents [`verify`] will read, from one COUNT aggregation per scanned
/// collection (a few RPCs, no document transferred): a total for progress and ETA.
/// Taken before the scan and not at its read time, so it is an estimate while the
/// journal is being written.
pub async fn count_documents(connection: &Connection) -> Result<u64, JournalError> {
    scan::count(connection).await
}

//! The verifier's point reads, through the runner's Firestore calls
//! ([`crate::runner::firestore`]): a server read time, and documents at one read time.

use crate::connection::Connection;
use crate::runner::firestore::{batch_get, batch_get_request};
use crate::runner::retry::status_error;
use command_journal_core::error::JournalError;
use command_journal_core::tools::document::root;
use gcloud_sdk::google::firestore::v1::Document;
use gcloud_sdk::google::firestore::v1::batch_get_documents_request::ConsistencySelector;
use gcloud_sdk::prost_types;
use std::collections::BTreeSet;

/// Documents asked for in one batch read.
const BATCH: usize = 100;

/// The documents at `paths` (relative to the documents root) that exist, read at
/// `read_time` (at the server's current time when `None`), and the read time the
/// server answered with. A failed read is `unavailable` after that one attempt, or
/// its own refusal.
async fn batch_read(
    connection: &Connection,
    paths: &[&str],
    read_time: Option<prost_types::Timestamp>,
) -> Result<(Vec<Document>, Option<prost_types::Timestamp>), JournalError> {
    let documents_path = connection.documents_path();
    let request = batch_get_request(
        connection.database_path(),
        &documents_path,
        paths.iter().copied(),
        read_time.map(ConsistencySelector::ReadTime),
    );
    let answer = batch_get(connection.raw(), request, format!("{documents_path}/")).await;
    let batch = answer.map_err(|status| status_error(&status))?;
    let found = batch.found.into_iter().map(|(_, doc)| doc).collect();
    Ok((found, batch.read_time))
}

/// A server read time, taken from a one-document read, so that every scan of a range
/// sees the same snapshot even while the journal is being written.
pub(super) async fn server_read_time(
    connection: &Connection,
) -> Result<prost_types::Timestamp, JournalError> {
    let probe = format!("{}/~verify", root::COLLECTION);
    match batch_read(connection, &[&probe], None).await? {
        (_, Some(read_time)) => Ok(read_time),
        (_, None) => Err(JournalError::unreachable()),
    }
}

/// The documents at `paths` (relative to the documents root) that exist at
/// `read_time`, read [`BATCH`] at a time.
pub(super) async fn read_at(
    connection: &Connection,
    paths: &BTreeSet<String>,
    read_time: &prost_types::Timestamp,
) -> Result<Vec<Document>, JournalError> {
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut found = Vec::new();
    for chunk in paths.chunks(BATCH) {
        found.extend(batch_read(connection, chunk, Some(*read_time)).await?.0);
    }
    Ok(found)
}

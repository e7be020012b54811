//! Confirming cross-range findings. With more than one range, an imported ledger row
//! and the reservation linking it, or a reversal and the original it corrects, can
//! sort into ranges read at different times, so such a finding may only say that a
//! migration or a reversal ran between two reads. Each such finding is decided again
//! from the documents it was decided from, all read at one fresh read time, and
//! reported only if it still holds there.

use super::Finding;
use super::cross_checks::CrossChecks;
use super::merge;
use super::reads::{read_at, server_read_time};
use crate::connection::Connection;
use command_journal_core::error::JournalError;

/// The findings of `found` (decided from `cross`) that still hold at a fresh read time.
pub(super) async fn again(
    connection: &Connection,
    cross: &CrossChecks,
    found: Vec<Finding>,
) -> Result<Vec<Finding>, JournalError> {
    let paths = cross.involved(&found);
    let read_time = server_read_time(connection).await?;
    let documents = read_at(connection, &paths, &read_time).await?;
    let fresh = merge::relink(&connection.documents_path(), documents)
        .await?
        .finish();
    Ok(still_holding(found, &fresh))
}

/// The findings of `found` that the fresh decision (sorted, as `finish` gives it) made
/// again: a finding the fresh read no longer supports was a difference in read times.
pub(super) fn still_holding(found: Vec<Finding>, fresh: &[Finding]) -> Vec<Finding> {
    found
        .into_iter()
        .filter(|finding| fresh.binary_search(finding).is_ok())
        .collect()
}

#[cfg(test)]
mod tests;

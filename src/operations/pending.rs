//! `pending`: every command that waits for someone. One collection-group query lists
//! the lifecycles in state `leased` (the index `firestore.indexes.json` keeps for it);
//! each whose lease has expired at the captured time is read once more with its send
//! documents (16 such reads in flight) and decided by the core
//! (`command_journal_core::pending`).

use super::Engine;
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::error::JournalError;
use command_journal_core::digest::Digest;
use command_journal_core::pending::{PendingCommand, PendingRead};
use futures::{StreamExt as _, TryStreamExt as _};

/// What one listing read and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The commands waiting, in key-hash order.
    pub pending: Vec<PendingCommand>,
    /// Lifecycles in state `leased` the query returned (in flight or waiting).
    pub listed: u64,
}

/// Every command pending at the journal's time; the gauge of pending commands by
/// reason is set from it. The first broken command fails the listing
/// (`journal_corrupt`).
pub(crate) async fn pending(engine: &Engine) -> Result<Listing, JournalError> {
    let (listed, found) = pending_after(engine, None).await?;
    let mut listing = Listing {
        pending: Vec::with_capacity(found.len()),
        listed,
    };
    for (_, waiting) in found {
        listing.pending.push(waiting?);
    }
    crate::metrics::pending(&listing.pending);
    Ok(listing)
}

/// What the listing found of one command: its key hash, and the command waiting or
/// the error reading it.
pub(crate) type Found = (Digest, Result<PendingCommand, JournalError>);

/// The lifecycles the query returned, and each command pending at the journal's time
/// whose key hash sorts after `after` (all when `None`), in key-hash order, or the
/// error that reading it met: a resumed recovery reads only what it has not handled,
/// and one broken command does not hide the others from it. The query still returns
/// every unsettled lifecycle; those at or before the cursor are not read again. A
/// leased lifecycle outside any command fails the whole listing.
pub(crate) async fn pending_after(
    engine: &Engine,
    after: Option<&Digest>,
) -> Result<(u64, Vec<Found>), JournalError> {
    let now = engine.now()?;
    let documents = engine.connection.documents_path();
    let prefix = format!("{documents}/{}/", crate::document::root::COLLECTION);
    let suffix = format!("/{}/current", lifecycle::COLLECTION);
    let db = engine.connection.db();
    let stream = db
        .fluent()
        .select()
        .from(lifecycle::COLLECTION)
        .all_descendants()
        .filter(|q| q.field("state").eq(LifecycleState::Leased.as_str()))
        .order(|o| o.fields([o.field("__name__").asc()]))
        .stream_query_with_errors()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?;
    let mut stream = std::pin::pin!(stream);
    let mut listed = 0;
    let mut expired = Vec::new();
    while let Some(document) = stream
        .try_next()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?
    {
        listed += 1;
        let hash = document
            .name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(&suffix))
            .and_then(Digest::parse)
            .ok_or(JournalError::corrupt(
                "a leased lifecycle outside a command",
            ))?;
        if after.is_some_and(|after| hash.as_str() <= after.as_str()) {
            continue;
        }
        match Lifecycle::parse(&hash, &crate::wire::fields_from_wire(document.fields)) {
            Ok(current) if now >= current.lease_expires_at => expired.push((hash, None)),
            Ok(_) => {}
            Err(error) => expired.push((hash, Some(error))),
        }
    }
    // One batch get per expired command, a few in flight, answered in key-hash order.
    let reads = futures::stream::iter(expired)
        .map(|(hash, broken)| async move {
            let read = match broken {
                Some(error) => Err(error),
                None => engine.run(&PendingRead::new(hash.clone(), now)).await,
            };
            (hash, read)
        })
        .buffered(READS_IN_FLIGHT);
    let found = reads
        .filter_map(|(hash, read)| async move {
            match read {
                Ok(None) => None,
                Ok(Some(waiting)) => Some((hash, Ok(waiting))),
                Err(error) => Some((hash, Err(error))),
            }
        })
        .collect()
        .await;
    Ok((listed, found))
}

/// The per-command reads of a listing in flight at once.
const READS_IN_FLIGHT: usize = 16;

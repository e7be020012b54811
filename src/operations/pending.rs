//! `pending`: every command that waits for someone. One collection-group query lists
//! the lifecycles in state `leased` (the index `firestore.indexes.json` keeps for it);
//! each whose lease has expired at the captured time is read once more with its send
//! documents and decided by the core (`command_journal_core::pending`).

use super::Engine;
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::error::JournalError;
use command_journal_core::digest::Digest;
use command_journal_core::pending::{PendingCommand, PendingRead};
use futures::TryStreamExt as _;

/// What one listing read and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The commands waiting, in key-hash order.
    pub pending: Vec<PendingCommand>,
    /// Lifecycles in state `leased` the query returned (in flight or waiting).
    pub listed: u64,
}

/// Every command pending at the journal's time; the gauge of pending commands by
/// reason is set from it.
pub(crate) async fn pending(engine: &Engine) -> Result<Listing, JournalError> {
    let listing = pending_after(engine, None).await?;
    crate::metrics::pending(&listing.pending);
    Ok(listing)
}

/// Every command pending at the journal's time whose key hash sorts after `after`
/// (all when `None`): a resumed recovery reads only what it has not handled. The
/// query still returns every unsettled lifecycle (`listed`); those at or before the
/// cursor are not read again.
pub(crate) async fn pending_after(
    engine: &Engine,
    after: Option<&Digest>,
) -> Result<Listing, JournalError> {
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
    let mut listing = Listing::default();
    let mut expired = Vec::new();
    while let Some(document) = stream
        .try_next()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?
    {
        listing.listed += 1;
        let hash = document
            .name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(&suffix))
            .and_then(Digest::parse)
            .ok_or(JournalError::corrupt(
                "a leased lifecycle outside a command",
            ))?;
        let current = Lifecycle::parse(&hash, &crate::wire::fields_from_wire(document.fields))?;
        let handled = after.is_some_and(|after| hash.as_str() <= after.as_str());
        if now >= current.lease_expires_at && !handled {
            expired.push(hash);
        }
    }
    for hash in expired {
        if let Some(waiting) = engine.run(&PendingRead::new(hash, now)).await? {
            listing.pending.push(waiting);
        }
    }
    Ok(listing)
}

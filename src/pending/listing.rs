//! `pending`: every command that waits for someone, in one key range. One
//! collection-group query lists the lifecycles in state `leased` (the index
//! `firestore.indexes.json` keeps for it) within the range's names, from
//! `checkoutRequests/{first hash of the range}` to before the next range's, so that
//! no `lifecycle` document of another collection is ever read; each whose lease has
//! expired at the captured time is read once more with its send documents (16 such
//! reads in flight) and decided by the core (`command_journal_core::tools::pending`).
//! A second collection-group query, over `lateCharges` by name within the same range,
//! lists every late charge (a charge its command ended without), strictly parsed.

use crate::runner::Engine;
use command_journal_core::error::JournalError;
use command_journal_core::identity::Digest;
use command_journal_core::pending::KeyRange;
use command_journal_core::pending::{LateChargeListed, PendingCommand};
use command_journal_core::tools::document::lifecycle::{self, Lifecycle, LifecycleState};
use command_journal_core::tools::document::root;
use command_journal_core::tools::pending::PendingRead;
use command_journal_core::tools::sends::late;
use firestore::{FirestoreDb, FirestoreQueryCursor, FirestoreResult, FirestoreValue};
use futures::stream::BoxStream;
use futures::{StreamExt as _, TryStreamExt as _};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{Document, Value};

/// What one listing read and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The commands waiting, in key-hash order.
    pub pending: Vec<PendingCommand>,
    /// Lifecycles in state `leased` the query returned (in flight or waiting).
    pub listed: u64,
    /// Every late charge of the range (a charge its command ended without, for a
    /// person to refund), in key-hash then attempt order.
    pub late_charges: Vec<LateChargeListed>,
}

/// Every command of `range` pending at the journal's time; the gauge of pending
/// commands by reason is set from it. The first broken command fails the listing
/// (`journal_corrupt`).
pub(crate) async fn pending(engine: &Engine, range: KeyRange) -> Result<Listing, JournalError> {
    let (listed, found) = listing(engine, range).await?;
    let late_charges = late_charges(engine, range).await?;
    let mut listing = Listing {
        pending: Vec::with_capacity(found.len()),
        listed,
        late_charges,
    };
    for (_, waiting) in found {
        listing.pending.push(waiting?);
    }
    crate::metrics::pending(&listing.pending);
    crate::metrics::late_charges(listing.late_charges.len());
    Ok(listing)
}

/// Every late charge of `range`: the `lateCharges` collection group by name, from the
/// range's first command to before the next range's, each parsed strictly (a
/// document there that is not a command's late charge fails the listing).
pub(crate) async fn late_charges(
    engine: &Engine,
    range: KeyRange,
) -> Result<Vec<LateChargeListed>, JournalError> {
    let documents = engine.connection.documents_path();
    let prefix = format!("{documents}/{}/", root::COLLECTION);
    let (start, end) = range_names(range);
    let name = |path: &str| {
        FirestoreValue::from(Value {
            value_type: Some(ValueType::ReferenceValue(format!("{documents}/{path}"))),
        })
    };
    let stream = engine
        .connection
        .db()
        .fluent()
        .select()
        .from(late::COLLECTION)
        .all_descendants()
        .order(|o| o.fields([o.field("__name__").asc()]))
        .start_at(FirestoreQueryCursor::BeforeValue(vec![name(&start)]))
        .end_at(FirestoreQueryCursor::BeforeValue(vec![name(&end)]))
        .stream_query_with_errors()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?;
    let mut stream = std::pin::pin!(stream);
    let mut found = Vec::new();
    while let Some(document) = stream
        .try_next()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?
    {
        let key = document.name.strip_prefix(&prefix).and_then(|rest| {
            let (hash, rest) = rest.split_once('/')?;
            let attempt = rest.strip_prefix(&format!("{}/", late::COLLECTION))?;
            Some((Digest::parse(hash)?, late::parse_id(attempt)?))
        });
        let (hash, attempt) = key
            .filter(|(hash, _)| range.contains(hash))
            .ok_or(JournalError::corrupt("a late charge outside a command"))?;
        let fields = crate::wire::fields_from_wire(document.fields);
        found.push(late::listed(&hash, attempt, &fields)?);
    }
    Ok(found)
}

/// What the listing found of one command: its key hash, and the command waiting or
/// the error reading it.
pub(crate) type Found = (Digest, Result<PendingCommand, JournalError>);

/// The least document id Firestore orders (numeric ids sort before text ids), as
/// `verify` bounds a collection's subtree.
const FIRST_ID: &str = "__id-9223372036854775808__";

/// The names `range`'s listing starts at and ends before, relative to the documents
/// root: the range's cuts under `checkoutRequests`, the first range from before the
/// collection's first id and the last to after its last, so that the ranges together
/// cover the whole `checkoutRequests` subtree and nothing outside it.
fn range_names(range: KeyRange) -> (String, String) {
    let start = range.start().unwrap_or_else(|| FIRST_ID.to_owned());
    let end = range.end().map_or_else(
        || format!("{}\0/{FIRST_ID}", root::COLLECTION),
        |end| format!("{}/{end}", root::COLLECTION),
    );
    (format!("{}/{start}", root::COLLECTION), end)
}

/// The whole `checkoutRequests` subtree's names, as [`range_names`] gives them.
pub(crate) fn journal_names() -> (String, String) {
    range_names(KeyRange::ALL)
}

/// The listing's query: the `lifecycle` collection group where `state == "leased"`,
/// by name, from `start` to before `end` (paths relative to the documents root), as
/// query cursors on the name order the `state` index keeps for each value.
pub(crate) async fn leased_lifecycles<'a>(
    db: &'a FirestoreDb,
    documents: &str,
    start: &str,
    end: &str,
) -> Result<BoxStream<'a, FirestoreResult<Document>>, JournalError> {
    let name = |path: &str| {
        FirestoreValue::from(Value {
            value_type: Some(ValueType::ReferenceValue(format!("{documents}/{path}"))),
        })
    };
    db.fluent()
        .select()
        .from(lifecycle::COLLECTION)
        .all_descendants()
        .filter(|q| q.field("state").eq(LifecycleState::Leased.as_str()))
        .order(|o| o.fields([o.field("__name__").asc()]))
        .start_at(FirestoreQueryCursor::BeforeValue(vec![name(start)]))
        .end_at(FirestoreQueryCursor::BeforeValue(vec![name(end)]))
        .stream_query_with_errors()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))
}

/// The lifecycles of `range` the query returned, and each command of `range`
/// pending at the journal's time, in key-hash order, or the error that reading it
/// met: one broken command does not hide the others from a recovery. A leased
/// lifecycle within the range's names that is not a command's `lifecycle/current`
/// fails the whole listing.
pub(crate) async fn listing(
    engine: &Engine,
    range: KeyRange,
) -> Result<(u64, Vec<Found>), JournalError> {
    let now = engine.now()?;
    let documents = engine.connection.documents_path();
    let prefix = format!("{documents}/{}/", root::COLLECTION);
    let suffix = format!("/{}/current", lifecycle::COLLECTION);
    let (start, end) = range_names(range);
    let stream = leased_lifecycles(engine.connection.db(), &documents, &start, &end).await?;
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
            .filter(|hash| range.contains(hash))
            .ok_or(JournalError::corrupt(
                "a leased lifecycle outside a command",
            ))?;
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
                None => engine.run(PendingRead::new(hash.clone(), now)).await,
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

//! The streaming side of the verifier: per range, three name-ordered scans of the
//! command documents merged by command key hash and two of the ledger merged by
//! reservation id ([`super::merge`]), all at the range's read time.

use super::ScanRanges;
use super::VerifyReport;
use super::confirm;
use super::cross_checks::CrossChecks;
use super::keys::{
    Classify, classify_audit, classify_command_tree, classify_effect, classify_reservation,
    classify_send_audit, classify_stray,
};
use super::merge::{Head, Tally, commands, ledger, strays};
use super::pending_index;
use super::ranges::{Bounds, bounds};
use super::reads;
use crate::connection::Connection;
use command_journal_core::error::JournalError;
use command_journal_core::tools::document::{audit, root};
use command_journal_core::tools::ledger::{effect, reservation};
use firestore::{FirestoreConsistencySelector, FirestoreDb, FirestoreResult, FirestoreValue};
use futures::TryStreamExt as _;
use futures::stream::{BoxStream, StreamExt};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{Document, Value};
use gcloud_sdk::prost_types;

/// The read time as the `firestore` crate takes it.
fn as_jiff(t: &prost_types::Timestamp) -> Result<firestore::jiff::Timestamp, JournalError> {
    let nanos = i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos);
    firestore::jiff::Timestamp::from_nanosecond(nanos)
        .map_err(|_| JournalError::internal("read time out of range"))
}

/// The least document id Firestore orders (numeric ids sort before text ids): the
/// lower bound of a collection's whole subtree, as the Node.js Admin SDK's
/// `recursiveDelete` bounds it.
const MIN_ID: &str = "__id-9223372036854775808__";

/// What one scan reads: every document at any depth below one top-level collection
/// (a kindless all-descendants query bounded by `__name__`), or below one id range of
/// it, and where a hash prefix cuts its name space.
struct Source {
    /// The top-level collection whose subtree is read.
    collection: &'static str,
    /// A hash prefix `p` cuts at the document `{collection}/{cut_id}{p}`.
    cut_id: &'static str,
    /// The source starts at the document `{collection}/{start_id}`.
    start_id: &'static str,
    /// The source ends before `{collection}/{id}`, or after the collection.
    end_id: Option<&'static str>,
    classify: Classify,
}

impl Source {
    /// Every document below `collection`, whose ids start with the key.
    const fn subtree(collection: &'static str, classify: Classify) -> Self {
        Self {
            collection,
            cut_id: "",
            start_id: MIN_ID,
            end_id: None,
            classify,
        }
    }

    /// The document path (relative to the documents root) hash prefix `prefix` cuts at.
    fn cut(&self, prefix: &str) -> String {
        format!("{}/{}{prefix}", self.collection, self.cut_id)
    }

    /// Whether the source's name range holds `path` (relative to the documents root),
    /// for documents held in memory; ids compare as Firestore orders text ids.
    #[cfg(test)]
    fn holds(&self, path: &str) -> bool {
        let Some(id) = path
            .strip_prefix(self.collection)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|rest| rest.split('/').next())
        else {
            return false;
        };
        let started = self.start_id == MIN_ID || id >= self.start_id;
        started && self.end_id.is_none_or(|end| id < end)
    }

    /// The first document name of the source.
    fn first(&self) -> String {
        format!("{}/{}", self.collection, self.start_id)
    }

    /// The first document name after the source (the next possible collection id when
    /// it runs to the collection's end).
    fn after(&self) -> String {
        match self.end_id {
            Some(id) => format!("{}/{id}", self.collection),
            None => format!("{}\0/{MIN_ID}", self.collection),
        }
    }
}

/// Roots, lifecycles and anything else stored below `checkoutRequests`.
const COMMANDS: Source = Source::subtree(root::COLLECTION, classify_command_tree);

/// The prefix of every send event id: they sort after every commerce event id, so
/// the send events are their own source, cut at their own prefix.
const SEND_EVENT_PREFIX: &str = "provider_send_";

/// The commerce events and any stray id up to the send events.
const AUDITS: Source = Source {
    cut_id: "commerce_command_",
    end_id: Some(SEND_EVENT_PREFIX),
    ..Source::subtree(audit::COLLECTION, classify_audit)
};

/// The send events and any stray id after them.
const SEND_AUDITS: Source = Source {
    cut_id: SEND_EVENT_PREFIX,
    start_id: SEND_EVENT_PREFIX,
    ..Source::subtree(audit::COLLECTION, classify_send_audit)
};

const RESERVATIONS: Source = Source::subtree(reservation::COLLECTION, classify_reservation);

const EFFECTS: Source = Source::subtree(effect::COLLECTION, classify_effect);

/// The subtree scans, in the order a range reads them.
const SOURCES: [&Source; 5] = [&COMMANDS, &AUDITS, &SEND_AUDITS, &RESERVATIONS, &EFFECTS];

/// A reference value to `{documents}/{path}`, as `__name__` compares.
fn reference(documents: &str, path: String) -> FirestoreValue {
    FirestoreValue::from(Value {
        value_type: Some(ValueType::ReferenceValue(format!("{documents}/{path}"))),
    })
}

/// A name-ordered query of every document at or after `start` and before `end`
/// (paths relative to the documents root), in any collection at any depth, or in the
/// `group` collection group only.
fn between<'a>(
    db: &'a FirestoreDb,
    documents: &str,
    group: Option<&str>,
    start: Option<String>,
    end: Option<String>,
) -> firestore::select_builder::FirestoreSelectDocBuilder<'a, FirestoreDb> {
    let start = start.map(|p| reference(documents, p));
    let end = end.map(|p| reference(documents, p));
    db.fluent()
        .select()
        .from(group.unwrap_or(""))
        .all_descendants()
        .filter(|q| {
            q.for_all([
                start
                    .clone()
                    .and_then(|v| q.field("__name__").greater_than_or_equal(v)),
                end.clone().and_then(|v| q.field("__name__").less_than(v)),
            ])
        })
}

/// The name ranges of one scan: for a subtree source within `bounds`, one range; for
/// the stray lifecycles, the two ranges before and after the `checkoutRequests`
/// subtree.
fn ranges(source: Option<&Source>, bounds: &Bounds) -> Vec<(Option<String>, Option<String>)> {
    match source {
        Some(source) => vec![(
            Some(
                bounds
                    .start
                    .as_deref()
                    .map_or_else(|| source.first(), |p| source.cut(p)),
            ),
            Some(
                bounds
                    .end
                    .as_deref()
                    .map_or_else(|| source.after(), |p| source.cut(p)),
            ),
        )],
        None => vec![
            (None, Some(COMMANDS.first())),
            (Some(COMMANDS.after()), None),
        ],
    }
}

/// A name-ordered stream of `source` within `bounds` (`None`: the stray lifecycles).
async fn scan<'a>(
    db: &'a FirestoreDb,
    documents: &str,
    source: Option<&Source>,
    bounds: &Bounds,
) -> Result<BoxStream<'a, FirestoreResult<Document>>, JournalError> {
    let group = source.is_none().then_some(STRAY_GROUP);
    let mut streams = Vec::new();
    for (start, end) in ranges(source, bounds) {
        let query = between(db, documents, group, start, end)
            .order(|o| o.fields([o.field("__name__").asc()]));
        streams.push(query.stream_query_with_errors().await.map_err(|error| {
            tracing::warn!(%error, "verify scan failed to start");
            crate::runner::retry::firestore_error(&error)
        })?);
    }
    Ok(futures::stream::iter(streams).flatten().boxed())
}

/// The collection group of the stray-lifecycle scan.
const STRAY_GROUP: &str = "lifecycle";

/// The recovery checkpoints and anything stored below them (read in the first range
/// only, each document checked on its own).
const CHECKPOINTS: Source = Source::subtree(
    command_journal_core::tools::recovery::checkpoint::COLLECTION,
    classify_stray,
);

/// The evidence checkpoints and anything stored below them (read in the first range
/// only, each document checked on its own).
const EVIDENCE_CHECKPOINTS: Source = Source::subtree(
    command_journal_core::tools::evidence::checkpoint::COLLECTION,
    classify_stray,
);

/// The recovery and evidence checkpoints' subtrees at the range's read time, each
/// document checked.
async fn checkpoints(
    db: &FirestoreDb,
    documents: &str,
    report: &mut VerifyReport,
) -> Result<(), JournalError> {
    use command_journal_core::tools::verify::checkpoints::{check, check_evidence};
    for (source, evidence) in [(&CHECKPOINTS, false), (&EVIDENCE_CHECKPOINTS, true)] {
        let query = between(
            db,
            documents,
            None,
            Some(source.first()),
            Some(source.after()),
        )
        .order(|o| o.fields([o.field("__name__").asc()]));
        let stream = query
            .stream_query_with_errors()
            .await
            .map_err(|error| crate::runner::retry::firestore_error(&error))?;
        let mut stream = std::pin::pin!(stream);
        let prefix = format!("{documents}/");
        while let Some(document) = stream
            .try_next()
            .await
            .map_err(|error| crate::runner::retry::firestore_error(&error))?
        {
            let doc = stored_doc(document, &prefix);
            if evidence {
                report.scanned.evidence_checkpoints += 1;
                report.record(check_evidence(&doc));
            } else {
                report.scanned.recovery_checkpoints += 1;
                report.record(check(&doc));
            }
        }
    }
    Ok(())
}

/// How many index documents verify holds to their commands at a time: its memory
/// stays bounded however many attempts the journal holds.
const PROVIDER_KEYS_AT_ONCE: usize = 300;

/// The provider keys' index and anything stored below it (read in the first range
/// only, each document held to its command).
const PROVIDER_KEYS: Source = Source::subtree(
    command_journal_core::tools::sends::key_index::COLLECTION,
    classify_stray,
);

/// The provider keys' index at the range's read time: each document checked, then
/// held to its command's root, bound plan and send record, read at the same time.
async fn provider_keys(
    connection: &Connection,
    db: &FirestoreDb,
    documents: &str,
    read_time: &prost_types::Timestamp,
    report: &mut VerifyReport,
) -> Result<(), JournalError> {
    use command_journal_core::tools::verify::provider_keys::check;
    let query = between(
        db,
        documents,
        None,
        Some(PROVIDER_KEYS.first()),
        Some(PROVIDER_KEYS.after()),
    )
    .order(|o| o.fields([o.field("__name__").asc()]));
    let stream = query
        .stream_query_with_errors()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?;
    let mut stream = std::pin::pin!(stream);
    let prefix = format!("{documents}/");
    let mut indexed = Vec::new();
    while let Some(document) = stream
        .try_next()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?
    {
        report.scanned.provider_keys += 1;
        match check(&stored_doc(document, &prefix)) {
            Ok(found) => indexed.push(found),
            Err(findings) => report.record(findings),
        }
        if indexed.len() == PROVIDER_KEYS_AT_ONCE {
            held_to_commands(connection, &indexed, read_time, &prefix, report).await?;
            indexed.clear();
        }
    }
    held_to_commands(connection, &indexed, read_time, &prefix, report).await
}

/// Holds each index document of `indexed` to its command's documents, read at
/// `read_time`.
async fn held_to_commands(
    connection: &Connection,
    indexed: &[command_journal_core::tools::verify::provider_keys::Indexed],
    read_time: &prost_types::Timestamp,
    prefix: &str,
    report: &mut VerifyReport,
) -> Result<(), JournalError> {
    use command_journal_core::tools::verify::provider_keys::check_command;
    let paths = indexed
        .iter()
        .flat_map(|found| found.command_paths())
        .collect::<std::collections::BTreeSet<_>>();
    let read: std::collections::HashMap<String, _> = reads::read_at(connection, &paths, read_time)
        .await?
        .into_iter()
        .map(|document| {
            let path = document
                .name
                .strip_prefix(prefix)
                .unwrap_or(&document.name)
                .to_owned();
            (path, crate::wire::fields_from_wire(document.fields))
        })
        .collect();
    for found in indexed {
        report.record(check_command(found, |path| read.get(path)));
    }
    Ok(())
}

/// A scanned document as the core's checks read it: its path below `prefix`, its
/// fields and its write times.
fn stored_doc(
    document: Document,
    prefix: &str,
) -> command_journal_core::tools::verify::stored::StoredDoc {
    let time = |t: Option<prost_types::Timestamp>| {
        t.map_or_else(Default::default, |t| {
            command_journal_core::tools::verify::stored::WriteTime {
                seconds: t.seconds,
                nanos: t.nanos,
            }
        })
    };
    command_journal_core::tools::verify::stored::StoredDoc {
        path: document
            .name
            .strip_prefix(prefix)
            .unwrap_or(&document.name)
            .to_owned(),
        fields: crate::wire::fields_from_wire(document.fields),
        created: time(document.create_time),
        updated: time(document.update_time),
    }
}

/// The documents the scans below read, counted with one COUNT aggregation per name
/// range.
pub(super) async fn count(connection: &Connection) -> Result<u64, JournalError> {
    let documents = connection.documents_path();
    let whole = Bounds {
        start: None,
        end: None,
    };
    let sources = SOURCES
        .into_iter()
        .chain([&CHECKPOINTS, &PROVIDER_KEYS])
        .map(Some)
        .chain([None]);
    let mut total = 0;
    for source in sources {
        let group = source.is_none().then_some(STRAY_GROUP);
        for (start, end) in ranges(source, &whole) {
            let answer = between(connection.db(), &documents, group, start, end)
                .aggregate(|a| a.fields([a.field("count").count()]))
                .query()
                .await
                .map_err(|error| {
                    tracing::warn!(%error, "verify count failed");
                    crate::runner::retry::firestore_error(&error)
                })?;
            for document in answer {
                if let Some(Value {
                    value_type: Some(ValueType::IntegerValue(n)),
                }) = document.fields.get("count")
                {
                    total += u64::try_from(*n).unwrap_or(0);
                }
            }
        }
    }
    Ok(total)
}

/// The documents the pending listing's query (`Journal::pending`: the `lifecycle`
/// collection group where `state == "leased"`, by name, within the `checkoutRequests`
/// subtree) returns at the range's read time, as paths relative to the documents
/// root: those of the commands whose key hash lies within `bounds`. The query is the
/// listing's own, so a `lifecycle` document of another collection is never in it
/// (the stray scan reports it).
async fn listed_leased(
    db: &FirestoreDb,
    documents: &str,
    bounds: &Bounds,
) -> Result<Vec<String>, JournalError> {
    let prefix = format!("{documents}/");
    let commands = format!("{}/", root::COLLECTION);
    let (start, end) = crate::pending::listing::journal_names();
    let stream = crate::pending::listing::leased_lifecycles(db, documents, &start, &end).await?;
    let mut stream = std::pin::pin!(stream);
    let mut listed = Vec::new();
    while let Some(document) = stream
        .try_next()
        .await
        .map_err(|error| crate::runner::retry::firestore_error(&error))?
    {
        let path = document
            .name
            .strip_prefix(&prefix)
            .unwrap_or(&document.name)
            .to_owned();
        let hash = path
            .strip_prefix(&commands)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default();
        let within = bounds.start.as_deref().is_none_or(|start| hash >= start)
            && bounds.end.as_deref().is_none_or(|end| hash < end);
        if within {
            listed.push(path);
        }
    }
    Ok(listed)
}

/// The scan of `source` within `bounds`, ready to merge.
async fn head<'a>(
    db: &'a FirestoreDb,
    documents: &str,
    source: Option<&Source>,
    bounds: &Bounds,
) -> Result<Head<'a>, JournalError> {
    let stream = scan(db, documents, source, bounds).await?;
    let classify = source.map_or(classify_stray as Classify, |s| s.classify);
    Ok(Head::new(stream, classify, format!("{documents}/")))
}

/// Documents held in memory (tests), sorted and merged as the scans
/// of one range read them, and checked exactly as a scan checks them: the whole
/// verifier without Firestore.
#[cfg(test)]
pub(crate) async fn check_in_memory(
    documents_path: &str,
    documents: Vec<Document>,
) -> Result<VerifyReport, JournalError> {
    let prefix = format!("{documents_path}/");
    // Firestore orders names segment by segment.
    let order = |d: &Document| d.name.split('/').map(str::to_owned).collect::<Vec<_>>();
    let mut parts: [Vec<Document>; 6] = Default::default();
    for document in documents {
        let path = document.name.strip_prefix(&prefix).unwrap_or_default();
        let slot = SOURCES
            .iter()
            .position(|source| source.holds(path))
            .or_else(|| (path.rsplit('/').nth(1) == Some(STRAY_GROUP)).then_some(5));
        if let Some(slot) = slot {
            parts[slot].push(document);
        }
    }
    let [
        commands_docs,
        audit_docs,
        send_audit_docs,
        reservation_docs,
        effect_docs,
        stray_docs,
    ] = parts.map(|mut docs| {
        docs.sort_by_key(order);
        docs
    });
    let from = |docs: Vec<Document>, classify: Classify| {
        Head::new(
            futures::stream::iter(docs.into_iter().map(Ok)).boxed(),
            classify,
            prefix.clone(),
        )
    };
    let mut report = VerifyReport::default();
    let mut cross = CrossChecks::default();
    let mut ignore = |_| {};
    let mut tally = Tally::new(&mut ignore);
    strays(from(stray_docs, classify_stray), &mut report, &mut tally).await?;
    let heads = [
        from(commands_docs, COMMANDS.classify),
        from(audit_docs, AUDITS.classify),
        from(send_audit_docs, SEND_AUDITS.classify),
    ];
    commands(heads, &mut report, &mut tally, &mut Vec::new()).await?;
    let heads = [
        from(reservation_docs, RESERVATIONS.classify),
        from(effect_docs, EFFECTS.classify),
    ];
    ledger(heads, &mut cross, &mut report, &mut tally).await?;
    report.record(cross.finish());
    Ok(report.finish())
}

/// Verifies every range at its own read time, then settles the historical links; with
/// more than one range their findings are confirmed at one fresh read time.
pub(super) async fn run(
    connection: &Connection,
    ranges: ScanRanges,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<VerifyReport, JournalError> {
    let documents = connection.documents_path();
    let mut report = VerifyReport::default();
    let mut cross = CrossChecks::default();
    let mut tally = Tally::new(progress);
    for bounds in bounds(ranges) {
        let server_time = reads::server_read_time(connection).await?;
        let read_time = as_jiff(&server_time)?;
        let db = connection
            .db()
            .clone_with_consistency_selector(FirestoreConsistencySelector::ReadTime(read_time));
        if bounds.start.is_none() {
            strays(
                head(&db, &documents, None, &bounds).await?,
                &mut report,
                &mut tally,
            )
            .await?;
            checkpoints(&db, &documents, &mut report).await?;
            provider_keys(connection, &db, &documents, &server_time, &mut report).await?;
        }
        let heads = [
            head(&db, &documents, Some(&COMMANDS), &bounds).await?,
            head(&db, &documents, Some(&AUDITS), &bounds).await?,
            head(&db, &documents, Some(&SEND_AUDITS), &bounds).await?,
        ];
        let mut leased = Vec::new();
        commands(heads, &mut report, &mut tally, &mut leased).await?;
        let listed = listed_leased(&db, &documents, &bounds).await?;
        report.record(pending_index::check(leased, listed));
        let heads = [
            head(&db, &documents, Some(&RESERVATIONS), &bounds).await?,
            head(&db, &documents, Some(&EFFECTS), &bounds).await?,
        ];
        ledger(heads, &mut cross, &mut report, &mut tally).await?;
    }
    let found = cross.finish();
    let found = if ranges.count() > 1 && !found.is_empty() {
        confirm::again(connection, &cross, found).await?
    } else {
        found
    };
    report.record(found);
    (tally.progress)(report.scanned.total());
    Ok(report)
}

#[cfg(test)]
mod tests;

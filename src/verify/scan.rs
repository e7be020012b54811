//! The streaming side of the verifier: per range, three name-ordered scans of the
//! command documents merged by command key hash and two of the ledger merged by
//! reservation id, all at the range's read time.

use super::commerce::{CommandDocs, StoredDoc, WriteTime, check_command};
use super::confirm;
use super::historical_links::HistoricalLinks;
use super::ledger::{check_reservation, check_standalone_effect};
use super::ranges::{Bounds, ScanRanges};
use super::{Finding, FindingCode, VerifyReport, write_times};
use crate::connection::Connection;
use crate::digest::Digest;
use crate::document::{audit, root};
use crate::error::JournalError;
use crate::ledger::{effect, reservation};
use firestore::{FirestoreConsistencySelector, FirestoreDb, FirestoreResult, FirestoreValue};
use futures::stream::{BoxStream, StreamExt};
use gcloud_sdk::google::firestore::v1::batch_get_documents_request::ConsistencySelector;
use gcloud_sdk::google::firestore::v1::batch_get_documents_response::Result as Got;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{BatchGetDocumentsRequest, Document, Value};
use gcloud_sdk::prost_types;

/// The documents at `paths` (relative to the documents root) that exist, read at
/// `read_time` (at the server's current time when `None`), and the read time the
/// server answered with.
pub(super) async fn batch_get(
    connection: &Connection,
    paths: &[&str],
    read_time: Option<prost_types::Timestamp>,
) -> Result<(Vec<Document>, Option<prost_types::Timestamp>), JournalError> {
    let documents_path = connection.documents_path();
    let request = BatchGetDocumentsRequest {
        database: connection.database_path(),
        documents: paths
            .iter()
            .map(|path| format!("{documents_path}/{path}"))
            .collect(),
        mask: None,
        request_options: None,
        consistency_selector: read_time.map(ConsistencySelector::ReadTime),
    };
    let unavailable = |status: gcloud_sdk::tonic::Status| crate::runner::status_error(&status);
    let mut stream = connection
        .raw()
        .batch_get_documents(request)
        .await
        .map_err(unavailable)?
        .into_inner();
    let (mut found, mut answered_at) = (Vec::new(), None);
    while let Some(message) = stream.message().await.map_err(unavailable)? {
        answered_at = answered_at.or(message.read_time);
        if let Some(Got::Found(document)) = message.result {
            found.push(document);
        }
    }
    Ok((found, answered_at))
}

/// A server read time, taken from a one-document read, so that every scan of a range
/// sees the same snapshot even while the journal is being written.
pub(super) async fn server_read_time(
    connection: &Connection,
) -> Result<prost_types::Timestamp, JournalError> {
    let probe = format!("{}/~verify", root::COLLECTION);
    match batch_get(connection, &[&probe], None).await? {
        (_, Some(read_time)) => Ok(read_time),
        (_, None) => Err(JournalError::unreachable()),
    }
}

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
            crate::runner::firestore_error(&error)
        })?);
    }
    Ok(futures::stream::iter(streams).flatten().boxed())
}

/// The collection group of the stray-lifecycle scan.
const STRAY_GROUP: &str = "lifecycle";

/// The documents the scans below read, counted with one COUNT aggregation per name
/// range.
pub(super) async fn count(connection: &Connection) -> Result<u64, JournalError> {
    let documents = connection.documents_path();
    let whole = Bounds {
        start: None,
        end: None,
    };
    let sources = SOURCES.into_iter().map(Some).chain([None]);
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
                    crate::runner::firestore_error(&error)
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

/// Which journal document of its command (or reservation) a scanned document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `checkoutRequests/{hash}`.
    Root,
    /// `checkoutRequests/{hash}/lifecycle/{id}` (only `current` is expected).
    Lifecycle,
    /// The audit event of this revision.
    Audit(i64),
    /// `checkoutRequests/{hash}/providerSends/{plan|current}`.
    Send,
    /// `checkoutRequests/{hash}/results/current`.
    Result,
    /// The send event of this send revision.
    SendEvent(i64),
    /// `ledgerReservations/{id}`.
    Reservation,
    /// `ledgerTransactions/{id}_{index}`.
    Effect,
}

/// How a scanned document sorts into the merge.
enum Keyed {
    /// Belongs to the command (or reservation) with this hash, as this part.
    Command(Digest, Part, StoredDoc),
    /// A journal document checked on its own (a historical unlinked ledger effect).
    Standalone(StoredDoc),
    /// Not a journal document: reported as unexpected.
    Unexpected(String),
}

type Classify = fn(StoredDoc) -> Keyed;

/// The `N` segments of `path`, when it has exactly `N`.
fn segments<const N: usize>(path: &str) -> Option<[&str; N]> {
    let mut parts = path.split('/');
    let mut out = [""; N];
    for slot in &mut out {
        *slot = parts.next()?;
    }
    parts.next().is_none().then_some(out)
}

/// `doc` keyed by `key`, or unexpected without one.
fn keyed(key: Option<(Digest, Part)>, doc: StoredDoc) -> Keyed {
    match key {
        Some((hash, part)) => Keyed::Command(hash, part, doc),
        None => Keyed::Unexpected(doc.path),
    }
}

/// A document `{collection}/{id}` whose id is a digest belongs to that digest.
fn keyed_by_digest_id(collection: &str, part: Part, doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([c, id]) if c == collection => Digest::parse(id).map(|hash| (hash, part)),
        _ => None,
    };
    keyed(key, doc)
}

/// A root, a document of its `lifecycle` collection, or (anything else below
/// `checkoutRequests`, at any depth) unexpected.
fn classify_command_tree(doc: StoredDoc) -> Keyed {
    let key = match segments::<2>(&doc.path) {
        Some([root::COLLECTION, id]) => Digest::parse(id).map(|hash| (hash, Part::Root)),
        _ => match segments(&doc.path) {
            Some([root::COLLECTION, id, "lifecycle", _]) => {
                Digest::parse(id).map(|hash| (hash, Part::Lifecycle))
            }
            Some([root::COLLECTION, id, "providerSends", "plan" | "current"]) => {
                Digest::parse(id).map(|hash| (hash, Part::Send))
            }
            Some(
                [
                    root::COLLECTION,
                    id,
                    crate::envelope::stored::COLLECTION,
                    "current",
                ],
            ) => Digest::parse(id).map(|hash| (hash, Part::Result)),
            _ => None,
        },
    };
    keyed(key, doc)
}

/// A `lifecycle` document outside `checkoutRequests` is never the journal's.
fn classify_stray(doc: StoredDoc) -> Keyed {
    Keyed::Unexpected(doc.path)
}

fn classify_audit(doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([audit::COLLECTION, id]) => {
            audit::parse_id(id).map(|(hash, revision)| (hash, Part::Audit(revision)))
        }
        _ => None,
    };
    keyed(key, doc)
}

fn classify_send_audit(doc: StoredDoc) -> Keyed {
    let key = match segments(&doc.path) {
        Some([audit::COLLECTION, id]) => crate::sends::event::parse_id(id)
            .map(|(hash, revision)| (hash, Part::SendEvent(revision))),
        _ => None,
    };
    keyed(key, doc)
}

fn classify_reservation(doc: StoredDoc) -> Keyed {
    keyed_by_digest_id(reservation::COLLECTION, Part::Reservation, doc)
}

/// An effect at `{reservationId}_{index:04}` belongs to that reservation; any other id
/// is an imported row, checked on its own.
fn classify_effect(doc: StoredDoc) -> Keyed {
    let Some([effect::COLLECTION, id]) = segments(&doc.path) else {
        return Keyed::Unexpected(doc.path);
    };
    let derived = match id.split_once('_') {
        Some((rid, index)) if index.len() == 4 && index.bytes().all(|b| b.is_ascii_digit()) => {
            Digest::parse(rid)
        }
        _ => None,
    };
    match derived {
        Some(rid) => Keyed::Command(rid, Part::Effect, doc),
        None => Keyed::Standalone(doc),
    }
}

/// One name-ordered scan with a one-document lookahead.
struct Head<'a> {
    stream: BoxStream<'a, FirestoreResult<Document>>,
    classify: Classify,
    prefix: String,
    next: Option<(Digest, Part, StoredDoc)>,
    read: u64,
    /// Of `read`, the documents of a `lifecycle` collection.
    lifecycles: u64,
    /// Historical rows seen on their own, checked when the scan is complete.
    links: HistoricalLinks,
}

impl<'a> Head<'a> {
    fn new(
        stream: BoxStream<'a, FirestoreResult<Document>>,
        classify: Classify,
        prefix: String,
    ) -> Self {
        Self {
            stream,
            classify,
            prefix,
            next: None,
            read: 0,
            lifecycles: 0,
            links: HistoricalLinks::default(),
        }
    }

    /// Makes `next` the following journal document, reporting unexpected ones.
    async fn fill(&mut self, report: &mut VerifyReport) -> Result<(), JournalError> {
        while self.next.is_none() {
            let Some(item) = self.stream.next().await else {
                return Ok(());
            };
            let document = item.map_err(|error| {
                tracing::warn!(%error, "verify scan failed");
                crate::runner::firestore_error(&error)
            })?;
            self.read += 1;
            let mut path = document.name;
            if path.starts_with(&self.prefix) {
                path.drain(..self.prefix.len());
            }
            if path.rsplit('/').nth(1) == Some("lifecycle") {
                self.lifecycles += 1;
            }
            let time = |t: Option<prost_types::Timestamp>| {
                t.map_or_else(WriteTime::default, |t| WriteTime {
                    seconds: t.seconds,
                    nanos: t.nanos,
                })
            };
            let doc = StoredDoc {
                path,
                fields: document.fields,
                created: time(document.create_time),
                updated: time(document.update_time),
            };
            match (self.classify)(doc) {
                Keyed::Command(hash, part, doc) => self.next = Some((hash, part, doc)),
                Keyed::Standalone(doc) => {
                    report.record(check_standalone_effect(&doc, &mut self.links));
                }
                Keyed::Unexpected(path) => report.record(vec![Finding {
                    code: FindingCode::UnexpectedDocument,
                    path,
                }]),
            }
        }
        Ok(())
    }

    fn hash(&self) -> Option<&Digest> {
        self.next.as_ref().map(|(h, _, _)| h)
    }

    /// Takes every document of `hash` (the scan is in hash order).
    async fn take(
        &mut self,
        hash: &Digest,
        report: &mut VerifyReport,
    ) -> Result<Vec<(Part, StoredDoc)>, JournalError> {
        let mut taken = Vec::new();
        loop {
            self.fill(report).await?;
            match self.next.take() {
                Some((h, part, doc)) if &h == hash => taken.push((part, doc)),
                other => {
                    self.next = other;
                    return Ok(taken);
                }
            }
        }
    }
}

/// Documents read so far over every range, passed to `progress` every thousand.
struct Tally<'p> {
    reported: u64,
    progress: &'p mut (dyn FnMut(u64) + Send),
}

impl Tally<'_> {
    fn update(&mut self, read: u64) {
        if read / 1_000 > self.reported {
            self.reported = read / 1_000;
            (self.progress)(read);
        }
    }
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

/// The historical links of `documents` alone (ledger documents read again, in any
/// order, relative to nothing else): the same merge and checks as a scan, in memory.
pub(super) async fn relink(
    documents_path: &str,
    mut documents: Vec<Document>,
) -> Result<HistoricalLinks, JournalError> {
    documents.sort_by(|a, b| a.name.cmp(&b.name));
    let reservations_under = format!("{documents_path}/{}/", reservation::COLLECTION);
    let (reservations, effects): (Vec<_>, Vec<_>) = documents
        .into_iter()
        .partition(|d| d.name.starts_with(&reservations_under));
    let prefix = format!("{documents_path}/");
    let from = |docs: Vec<Document>, classify: Classify| {
        Head::new(
            futures::stream::iter(docs.into_iter().map(Ok)).boxed(),
            classify,
            prefix.clone(),
        )
    };
    let heads = [
        from(reservations, RESERVATIONS.classify),
        from(effects, EFFECTS.classify),
    ];
    let mut links = HistoricalLinks::default();
    let mut ignore = |_| {};
    let mut tally = Tally {
        reported: 0,
        progress: &mut ignore,
    };
    ledger(heads, &mut links, &mut VerifyReport::default(), &mut tally).await?;
    Ok(links)
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
    let mut links = HistoricalLinks::default();
    let mut ignore = |_| {};
    let mut tally = Tally {
        reported: 0,
        progress: &mut ignore,
    };
    strays(from(stray_docs, classify_stray), &mut report, &mut tally).await?;
    let heads = [
        from(commands_docs, COMMANDS.classify),
        from(audit_docs, AUDITS.classify),
        from(send_audit_docs, SEND_AUDITS.classify),
    ];
    commands(heads, &mut report, &mut tally).await?;
    let heads = [
        from(reservation_docs, RESERVATIONS.classify),
        from(effect_docs, EFFECTS.classify),
    ];
    ledger(heads, &mut links, &mut report, &mut tally).await?;
    report.record(links.finish());
    Ok(report.finish())
}

/// The command tree (roots and lifecycles) and audit events of one range, merged by
/// command key hash: each command is checked on its own documents, all read at the
/// range's read time.
async fn commands(
    heads: [Head<'_>; 3],
    report: &mut VerifyReport,
    tally: &mut Tally<'_>,
) -> Result<(), JournalError> {
    let [mut tree, mut audits, mut send_audits] = heads;
    let before = report.scanned.total();
    loop {
        tree.fill(report).await?;
        audits.fill(report).await?;
        send_audits.fill(report).await?;
        let Some(hash) = [tree.hash(), audits.hash(), send_audits.hash()]
            .into_iter()
            .flatten()
            .min()
            .cloned()
        else {
            break;
        };
        let mut docs = CommandDocs::default();
        let taken = [
            tree.take(&hash, report).await?,
            audits.take(&hash, report).await?,
            send_audits.take(&hash, report).await?,
        ];
        for (part, doc) in taken.into_iter().flatten() {
            match part {
                Part::Root => docs.root = Some(doc),
                Part::Lifecycle => docs.lifecycles.push(doc),
                Part::Audit(revision) => docs.audits.push((revision, doc)),
                Part::Send => docs.sends.push(doc),
                Part::Result => docs.result = Some(doc),
                Part::SendEvent(revision) => docs.send_events.push((revision, doc)),
                Part::Reservation | Part::Effect => {}
            }
        }
        report.record(check_command(&hash, &docs));
        tally.update(before + tree.read + audits.read + send_audits.read);
    }
    report.scanned.checkout_requests += tree.read - tree.lifecycles;
    report.scanned.lifecycles += tree.lifecycles;
    report.scanned.audit_events += audits.read + send_audits.read;
    Ok(())
}

/// The `lifecycle` documents outside `checkoutRequests`: each is unexpected.
async fn strays(
    mut head: Head<'_>,
    report: &mut VerifyReport,
    tally: &mut Tally<'_>,
) -> Result<(), JournalError> {
    let before = report.scanned.total();
    head.fill(report).await?;
    tally.update(before + head.read);
    report.scanned.lifecycles += head.read;
    Ok(())
}

/// Reservations and the effects whose ids derive from them, merged by reservation id
/// (an effect id is `{reservationId}_{index:04}`); imported rows go to `links`, whose
/// findings wait until every range was read.
async fn ledger(
    heads: [Head<'_>; 2],
    links: &mut HistoricalLinks,
    report: &mut VerifyReport,
    tally: &mut Tally<'_>,
) -> Result<(), JournalError> {
    let [mut reservations, mut effects] = heads;
    effects.links = std::mem::take(links);
    let before = report.scanned.total();
    loop {
        reservations.fill(report).await?;
        effects.fill(report).await?;
        let Some(rid) = [reservations.hash(), effects.hash()]
            .into_iter()
            .flatten()
            .min()
            .cloned()
        else {
            break;
        };
        let reservation_doc = reservations
            .take(&rid, report)
            .await?
            .into_iter()
            .next()
            .map(|(_, d)| d);
        let effect_docs: Vec<StoredDoc> = effects
            .take(&rid, report)
            .await?
            .into_iter()
            .map(|(_, d)| d)
            .collect();
        report.record(check_reservation(
            &rid,
            reservation_doc.as_ref(),
            &effect_docs,
            &mut effects.links,
        ));
        report.record(write_times::check_reservation(
            reservation_doc.as_ref(),
            &effect_docs,
        ));
        tally.update(before + reservations.read + effects.read);
    }
    *links = std::mem::take(&mut effects.links);
    report.scanned.ledger_reservations += reservations.read;
    report.scanned.ledger_transactions += effects.read;
    Ok(())
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
    let mut links = HistoricalLinks::default();
    let mut tally = Tally {
        reported: 0,
        progress,
    };
    for bounds in ranges.bounds() {
        let read_time = as_jiff(&server_read_time(connection).await?)?;
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
        }
        let heads = [
            head(&db, &documents, Some(&COMMANDS), &bounds).await?,
            head(&db, &documents, Some(&AUDITS), &bounds).await?,
            head(&db, &documents, Some(&SEND_AUDITS), &bounds).await?,
        ];
        commands(heads, &mut report, &mut tally).await?;
        let heads = [
            head(&db, &documents, Some(&RESERVATIONS), &bounds).await?,
            head(&db, &documents, Some(&EFFECTS), &bounds).await?,
        ];
        ledger(heads, &mut links, &mut report, &mut tally).await?;
    }
    let found = links.finish();
    let found = if ranges.count() > 1 && !found.is_empty() {
        confirm::again(connection, &links, found).await?
    } else {
        found
    };
    report.record(found);
    (tally.progress)(report.scanned.total());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> StoredDoc {
        StoredDoc::new(path, Default::default(), WriteTime::default())
    }

    /// The key a classifier gives a path: `Ok(Some(..))` a command or reservation,
    /// `Ok(None)` standalone, `Err(())` unexpected.
    type Key = Result<Option<(String, Part)>, ()>;

    fn key(classify: Classify, path: &str) -> Key {
        match classify(doc(path)) {
            Keyed::Command(hash, part, d) => {
                assert_eq!(d.path, path);
                Ok(Some((hash.as_str().to_owned(), part)))
            }
            Keyed::Standalone(d) => {
                assert_eq!(d.path, path);
                Ok(None)
            }
            Keyed::Unexpected(p) => {
                assert_eq!(p, path);
                Err(())
            }
        }
    }

    #[test]
    fn segments_are_exact() {
        assert_eq!(segments::<2>("a/b"), Some(["a", "b"]));
        assert_eq!(segments::<2>("a/b/c"), None);
        assert_eq!(segments::<2>("a"), None);
        assert_eq!(segments::<4>("a/b/c/d"), Some(["a", "b", "c", "d"]));
        assert_eq!(segments::<2>("a/"), Some(["a", ""]));
    }

    #[test]
    fn every_collection_keys_its_documents_and_nothing_else() {
        let h = "ab".repeat(32);
        let some = |part| Ok(Some((h.clone(), part)));
        let tree = classify_command_tree;
        let cases: [(Classify, String, Key); 35] = [
            (tree, format!("checkoutRequests/{h}"), some(Part::Root)),
            (tree, "checkoutRequests/not-a-hash".into(), Err(())),
            (tree, format!("checkoutRequests/{h}/x"), Err(())),
            (
                tree,
                format!("checkoutRequests/{h}/lifecycle/current"),
                some(Part::Lifecycle),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/lifecycle/other"),
                some(Part::Lifecycle),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/lifecycles/current"),
                Err(()),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/lifecycle/current/history/x"),
                Err(()),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/a/b/lifecycle/current"),
                Err(()),
            ),
            (tree, "checkoutRequests/x/lifecycle/current".into(), Err(())),
            (
                classify_stray,
                format!("elsewhere/{h}/lifecycle/current"),
                Err(()),
            ),
            (
                classify_audit,
                format!("auditEvents/commerce_command_{h}_0000000002"),
                some(Part::Audit(2)),
            ),
            (
                classify_audit,
                format!("auditEvents/commerce_command_{h}_2"),
                Err(()),
            ),
            (classify_audit, "auditEvents/aaaa".into(), Err(())),
            (
                classify_audit,
                format!("auditEvents/commerce_command_{h}_0000000002/sub/x"),
                Err(()),
            ),
            (
                classify_reservation,
                format!("ledgerReservations/{h}"),
                some(Part::Reservation),
            ),
            (classify_reservation, "ledgerReservations/0".into(), Err(())),
            (
                classify_reservation,
                format!("ledgerReservations/{h}/a/b"),
                Err(()),
            ),
            (
                classify_effect,
                format!("ledgerTransactions/{h}_0001"),
                some(Part::Effect),
            ),
            (
                classify_effect,
                format!("ledgerTransactions/{h}_1"),
                Ok(None),
            ),
            (
                classify_effect,
                "ledgerTransactions/legacy-0".into(),
                Ok(None),
            ),
            (classify_effect, "ledgerTransactions/a/b/c".into(), Err(())),
            (
                classify_effect,
                format!("ledgerTransactions/{h}_0001/x/y"),
                Err(()),
            ),
            (
                classify_effect,
                "ledgerTransactions/legacy-0/x/y".into(),
                Err(()),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/providerSends/x"),
                Err(()),
            ),
            (tree, "checkoutRequests".into(), Err(())),
            (
                tree,
                format!("checkoutRequests/{h}/providerSends/plan"),
                some(Part::Send),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/providerSends/current"),
                some(Part::Send),
            ),
            (
                tree,
                format!("checkoutRequests/{h}/providerSends/plan/x/y"),
                Err(()),
            ),
            (
                classify_send_audit,
                format!("auditEvents/provider_send_{h}_0000000001"),
                some(Part::SendEvent(1)),
            ),
            (
                classify_send_audit,
                format!("auditEvents/provider_send_{h}_1"),
                Err(()),
            ),
            (classify_send_audit, "auditEvents/~last".into(), Err(())),
            (
                tree,
                format!("checkoutRequests/{h}/results/current"),
                some(Part::Result),
            ),
            (tree, format!("checkoutRequests/{h}/results/other"), Err(())),
            (
                tree,
                format!("checkoutRequests/{h}/results/current/x/y"),
                Err(()),
            ),
            (tree, "checkoutRequests/x/results/current".into(), Err(())),
        ];
        for (classify, path, expected) in cases {
            assert_eq!(key(classify, &path), expected, "{path}");
        }
    }

    #[test]
    fn a_subtree_is_bounded_by_its_collection_and_cut_at_hash_prefixes() {
        let whole = Bounds {
            start: None,
            end: None,
        };
        assert_eq!(
            ranges(Some(&COMMANDS), &whole),
            vec![(
                Some(format!("checkoutRequests/{MIN_ID}")),
                Some(format!("checkoutRequests\0/{MIN_ID}"))
            )]
        );
        let cut = Bounds {
            start: Some("0a00".into()),
            end: None,
        };
        // The commerce events end where the send events begin; those run to the end.
        assert_eq!(
            ranges(Some(&AUDITS), &cut),
            vec![(
                Some("auditEvents/commerce_command_0a00".into()),
                Some("auditEvents/provider_send_".into())
            )]
        );
        assert_eq!(
            ranges(Some(&SEND_AUDITS), &whole),
            vec![(
                Some("auditEvents/provider_send_".into()),
                Some(format!("auditEvents\0/{MIN_ID}"))
            )]
        );
        let cut_both = Bounds {
            start: Some("0a00".into()),
            end: Some("8000".into()),
        };
        assert_eq!(
            ranges(Some(&SEND_AUDITS), &cut_both),
            vec![(
                Some("auditEvents/provider_send_0a00".into()),
                Some("auditEvents/provider_send_8000".into())
            )]
        );
        assert_eq!(
            ranges(None, &whole),
            vec![
                (None, Some(format!("checkoutRequests/{MIN_ID}"))),
                (Some(format!("checkoutRequests\0/{MIN_ID}")), None)
            ]
        );
    }
}

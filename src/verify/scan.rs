//! The streaming side of the verifier: three name-ordered scans at one read time,
//! merged by command key hash.

use super::commerce::{CommandDocs, StoredDoc, check_command};
use super::historical_links::HistoricalLinks;
use super::ledger::{check_reservation, check_standalone_effect};
use super::{Finding, FindingCode, VerifyReport};
use crate::connection::Connection;
use crate::digest::Digest;
use crate::document::{audit, root};
use crate::error::JournalError;
use crate::ledger::{effect, reservation};
use firestore::{FirestoreConsistencySelector, FirestoreDb, FirestoreResult};
use futures::stream::{BoxStream, StreamExt};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{BatchGetDocumentsRequest, Document, Value};

/// A server read time, taken from a one-document read, so that every scan sees the
/// same snapshot even while the journal is being written.
async fn server_read_time(
    connection: &Connection,
) -> Result<firestore::jiff::Timestamp, JournalError> {
    let request = BatchGetDocumentsRequest {
        database: connection.database_path(),
        documents: vec![format!(
            "{}/{}/~verify",
            connection.documents_path(),
            root::COLLECTION
        )],
        mask: None,
        request_options: None,
        consistency_selector: None,
    };
    let unavailable = |status: gcloud_sdk::tonic::Status| crate::runner::status_error(&status);
    let mut stream = connection
        .raw()
        .batch_get_documents(request)
        .await
        .map_err(unavailable)?
        .into_inner();
    while let Some(message) = stream.message().await.map_err(unavailable)? {
        if let Some(t) = message.read_time {
            let nanos = i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos);
            return firestore::jiff::Timestamp::from_nanosecond(nanos)
                .map_err(|_| JournalError::internal("read time out of range"));
        }
    }
    Err(JournalError::unreachable())
}

async fn scan<'a>(
    db: &'a FirestoreDb,
    collection: &str,
    all_descendants: bool,
) -> Result<BoxStream<'a, FirestoreResult<Document>>, JournalError> {
    let query = db
        .fluent()
        .select()
        .from(collection)
        .order(|o| o.fields([o.field("__name__").asc()]));
    let query = if all_descendants {
        query.all_descendants()
    } else {
        query
    };
    query.stream_query_with_errors().await.map_err(|error| {
        tracing::warn!(%error, "verify scan failed to start");
        crate::runner::firestore_error(&error)
    })
}

/// The documents the scans below read, counted with one COUNT aggregation each.
pub(super) async fn count(connection: &Connection) -> Result<u64, JournalError> {
    let collections = [
        (root::COLLECTION, false),
        ("lifecycle", true),
        (audit::COLLECTION, false),
        (reservation::COLLECTION, false),
        (effect::COLLECTION, false),
    ];
    let mut total = 0;
    for (collection, all_descendants) in collections {
        let query = connection.db().fluent().select().from(collection);
        let query = if all_descendants {
            query.all_descendants()
        } else {
            query
        };
        let answer = query
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
    Ok(total)
}

/// How a scanned document sorts into the merge.
enum Keyed {
    /// Belongs to the command (or reservation) with this hash; the number is the
    /// audit revision where one applies.
    Command(Digest, i64, StoredDoc),
    /// A journal document checked on its own (a historical unlinked ledger effect).
    Standalone(StoredDoc),
    /// Not a journal document: reported as unexpected.
    Unexpected(String),
}

type Classify = fn(&str, StoredDoc) -> Keyed;

/// A document `{collection}/{id}` whose id is a digest belongs to that digest.
fn keyed_by_digest_id(collection: &str, path: &str, doc: StoredDoc) -> Keyed {
    match path.split('/').collect::<Vec<_>>()[..] {
        [c, id] if c == collection => match Digest::parse(id) {
            Some(hash) => Keyed::Command(hash, 0, doc),
            None => Keyed::Unexpected(doc.path),
        },
        _ => Keyed::Unexpected(doc.path),
    }
}

fn classify_root(path: &str, doc: StoredDoc) -> Keyed {
    keyed_by_digest_id(root::COLLECTION, path, doc)
}

fn classify_lifecycle(path: &str, doc: StoredDoc) -> Keyed {
    match path.split('/').collect::<Vec<_>>()[..] {
        [root::COLLECTION, id, "lifecycle", _] => match Digest::parse(id) {
            Some(hash) => Keyed::Command(hash, 0, doc),
            None => Keyed::Unexpected(doc.path),
        },
        _ => Keyed::Unexpected(doc.path),
    }
}

fn classify_audit(path: &str, doc: StoredDoc) -> Keyed {
    match path.split('/').collect::<Vec<_>>()[..] {
        [audit::COLLECTION, id] => match audit::parse_id(id) {
            Some((hash, revision)) => Keyed::Command(hash, revision, doc),
            None => Keyed::Unexpected(doc.path),
        },
        _ => Keyed::Unexpected(doc.path),
    }
}

fn classify_reservation(path: &str, doc: StoredDoc) -> Keyed {
    keyed_by_digest_id(reservation::COLLECTION, path, doc)
}

fn classify_effect(path: &str, doc: StoredDoc) -> Keyed {
    match path.split('/').collect::<Vec<_>>()[..] {
        [effect::COLLECTION, id] => match id.split_once('_') {
            Some((rid, index)) if index.len() == 4 && index.bytes().all(|b| b.is_ascii_digit()) => {
                match Digest::parse(rid) {
                    Some(rid) => Keyed::Command(rid, 0, doc),
                    None => Keyed::Standalone(doc),
                }
            }
            _ => Keyed::Standalone(doc),
        },
        _ => Keyed::Unexpected(doc.path),
    }
}

/// One name-ordered scan with a one-document lookahead.
struct Head<'a> {
    stream: BoxStream<'a, FirestoreResult<Document>>,
    classify: Classify,
    prefix: String,
    next: Option<(Digest, i64, StoredDoc)>,
    read: u64,
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
            let path = document
                .name
                .strip_prefix(&self.prefix)
                .unwrap_or(&document.name)
                .to_owned();
            let doc = StoredDoc {
                path: path.clone(),
                fields: document.fields,
            };
            match (self.classify)(&path, doc) {
                Keyed::Command(hash, revision, doc) => self.next = Some((hash, revision, doc)),
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
    ) -> Result<Vec<(i64, StoredDoc)>, JournalError> {
        let mut taken = Vec::new();
        loop {
            self.fill(report).await?;
            match self.next.take() {
                Some((h, revision, doc)) if &h == hash => taken.push((revision, doc)),
                other => {
                    self.next = other;
                    return Ok(taken);
                }
            }
        }
    }
}

pub(super) async fn run(
    connection: &Connection,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<VerifyReport, JournalError> {
    let read_time = server_read_time(connection).await?;
    let db = connection
        .db()
        .clone_with_consistency_selector(FirestoreConsistencySelector::ReadTime(read_time));
    let prefix = format!("{}/", connection.documents_path());
    let mut report = VerifyReport::default();
    let mut roots = Head::new(
        scan(&db, root::COLLECTION, false).await?,
        classify_root,
        prefix.clone(),
    );
    let mut lifecycles = Head::new(
        scan(&db, "lifecycle", true).await?,
        classify_lifecycle,
        prefix.clone(),
    );
    let mut audits = Head::new(
        scan(&db, audit::COLLECTION, false).await?,
        classify_audit,
        prefix.clone(),
    );
    let mut reported = 0;
    loop {
        roots.fill(&mut report).await?;
        lifecycles.fill(&mut report).await?;
        audits.fill(&mut report).await?;
        let Some(hash) = [roots.hash(), lifecycles.hash(), audits.hash()]
            .into_iter()
            .flatten()
            .min()
            .cloned()
        else {
            break;
        };
        let docs = CommandDocs {
            root: roots
                .take(&hash, &mut report)
                .await?
                .into_iter()
                .next()
                .map(|(_, d)| d),
            lifecycles: lifecycles
                .take(&hash, &mut report)
                .await?
                .into_iter()
                .map(|(_, d)| d)
                .collect(),
            audits: audits.take(&hash, &mut report).await?,
        };
        report.record(check_command(&hash, &docs));
        let read = roots.read + lifecycles.read + audits.read;
        if read / 1_000 > reported {
            reported = read / 1_000;
            progress(read);
        }
    }
    report.scanned.checkout_requests = roots.read;
    report.scanned.lifecycles = lifecycles.read;
    report.scanned.audit_events = audits.read;

    // Ledger: reservations and the effects whose ids derive from them, merged by
    // reservation id (an effect id is `{reservationId}_{index:04}`).
    let mut reservations = Head::new(
        scan(&db, reservation::COLLECTION, false).await?,
        classify_reservation,
        prefix.clone(),
    );
    let mut effects = Head::new(
        scan(&db, effect::COLLECTION, false).await?,
        classify_effect,
        prefix,
    );
    loop {
        reservations.fill(&mut report).await?;
        effects.fill(&mut report).await?;
        let Some(rid) = [reservations.hash(), effects.hash()]
            .into_iter()
            .flatten()
            .min()
            .cloned()
        else {
            break;
        };
        let reservation_doc = reservations
            .take(&rid, &mut report)
            .await?
            .into_iter()
            .next()
            .map(|(_, d)| d);
        let effect_docs: Vec<StoredDoc> = effects
            .take(&rid, &mut report)
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
        let read = report.scanned.total() + reservations.read + effects.read;
        if read / 1_000 > reported {
            reported = read / 1_000;
            progress(read);
        }
    }
    report.record(std::mem::take(&mut effects.links).finish());
    report.scanned.ledger_reservations = reservations.read;
    report.scanned.ledger_transactions = effects.read;
    progress(report.scanned.total());
    Ok(report)
}

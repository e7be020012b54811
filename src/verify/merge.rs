//! The merge of a range's name-ordered scans: each scan behind a one-document
//! lookahead ([`Head`]), the command scans merged by command key hash and the ledger
//! scans by reservation id, every group checked on its own documents.

use super::attention::attention;
use super::commerce::check_command;
use super::cross_checks::CrossChecks;
use super::keys::{Classify, Keyed, Part, classify_effect, classify_reservation};
use super::ledger::{check_reservation, check_standalone_effect};
use super::pending_index;
use super::stored::{CommandDocs, StoredDoc, WriteTime};
use super::write_times;
use super::{Finding, FindingCode, VerifyReport};
use command_journal_core::error::JournalError;
use command_journal_core::identity::Digest;
use command_journal_core::tools::ledger::reservation;
use firestore::FirestoreResult;
use futures::stream::{BoxStream, StreamExt};
use gcloud_sdk::google::firestore::v1::Document;
use gcloud_sdk::prost_types;

/// One name-ordered scan with a one-document lookahead.
pub(super) struct Head<'a> {
    stream: BoxStream<'a, FirestoreResult<Document>>,
    classify: Classify,
    prefix: String,
    next: Option<(Digest, Part, StoredDoc)>,
    pub(super) read: u64,
    /// Of `read`, the documents of a `lifecycle` collection.
    lifecycles: u64,
    /// Imported rows (and their bounds) seen on their own, checked when the scan is
    /// complete.
    cross: CrossChecks,
}

impl<'a> Head<'a> {
    /// A merge head over `stream`, whose documents `classify` keys and whose names
    /// start with `prefix` (the documents root and a slash).
    pub(super) fn new(
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
            cross: CrossChecks::default(),
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
                crate::runner::retry::firestore_error(&error)
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
                fields: crate::wire::fields_from_wire(document.fields),
                created: time(document.create_time),
                updated: time(document.update_time),
            };
            match (self.classify)(doc) {
                Keyed::Command(hash, part, doc) => self.next = Some((hash, part, doc)),
                Keyed::Standalone(doc) => {
                    report.record(check_standalone_effect(&doc, &mut self.cross));
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
pub(super) struct Tally<'p> {
    reported: u64,
    pub(super) progress: &'p mut (dyn FnMut(u64) + Send),
}

impl<'p> Tally<'p> {
    /// A tally reporting to `progress`, nothing read yet.
    pub(super) fn new(progress: &'p mut (dyn FnMut(u64) + Send)) -> Self {
        Self {
            reported: 0,
            progress,
        }
    }

    /// `read` documents read so far.
    fn update(&mut self, read: u64) {
        if read / 1_000 > self.reported {
            self.reported = read / 1_000;
            (self.progress)(read);
        }
    }
}

/// The cross-document checks of `documents` alone (ledger documents read again, in
/// any order, relative to nothing else): the same merge and checks as a scan, in
/// memory, the documents in Firestore's order (segment by segment).
pub(super) async fn relink(
    documents_path: &str,
    mut documents: Vec<Document>,
) -> Result<CrossChecks, JournalError> {
    documents.sort_by(|a, b| a.name.split('/').cmp(b.name.split('/')));
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
        from(reservations, classify_reservation),
        from(effects, classify_effect),
    ];
    let mut cross = CrossChecks::default();
    let mut ignore = |_| {};
    let mut tally = Tally::new(&mut ignore);
    ledger(heads, &mut cross, &mut VerifyReport::default(), &mut tally).await?;
    Ok(cross)
}

/// The command tree (roots and lifecycles) and audit events of one range, merged by
/// command key hash: each command is checked on its own documents, all read at the
/// range's read time.
/// The paths of the lifecycles in state `leased` read go to `leased`, for the
/// pending index check.
pub(super) async fn commands(
    heads: [Head<'_>; 3],
    report: &mut VerifyReport,
    tally: &mut Tally<'_>,
    leased: &mut Vec<String>,
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
                Part::LateCharge(attempt) => docs.late_charges.push((attempt, doc)),
                Part::Release(fence) => docs.releases.push((fence, doc)),
                Part::Reservation | Part::Effect | Part::Correction => {}
            }
        }
        leased.extend(
            docs.lifecycles
                .iter()
                .filter(|doc| pending_index::leased(&doc.fields))
                .map(|doc| doc.path.clone()),
        );
        report.record(check_command(&hash, &docs));
        report.note(attention(&hash, &docs));
        tally.update(before + tree.read + audits.read + send_audits.read);
    }
    report.scanned.checkout_requests += tree.read - tree.lifecycles;
    report.scanned.lifecycles += tree.lifecycles;
    report.scanned.audit_events += audits.read + send_audits.read;
    Ok(())
}

/// The `lifecycle` documents outside `checkoutRequests`: each is unexpected.
pub(super) async fn strays(
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

/// Reservations and the effects whose ids derive from them (with those effects'
/// correction bounds), merged by reservation id (an effect id is
/// `{reservationId}_{index:04}`); imported rows, reversals and bounds go to `cross`,
/// whose findings wait until every range was read.
pub(super) async fn ledger(
    heads: [Head<'_>; 2],
    cross: &mut CrossChecks,
    report: &mut VerifyReport,
    tally: &mut Tally<'_>,
) -> Result<(), JournalError> {
    let [mut reservations, mut effects] = heads;
    effects.cross = std::mem::take(cross);
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
        let (effect_docs, bound_docs): (Vec<_>, Vec<_>) = effects
            .take(&rid, report)
            .await?
            .into_iter()
            .partition(|(part, _)| *part == Part::Effect);
        let effect_docs: Vec<StoredDoc> = effect_docs.into_iter().map(|(_, d)| d).collect();
        let bound_docs: Vec<StoredDoc> = bound_docs.into_iter().map(|(_, d)| d).collect();
        report.record(check_reservation(
            &rid,
            reservation_doc.as_ref(),
            &effect_docs,
            &bound_docs,
            &mut effects.cross,
        ));
        report.record(write_times::check_reservation(
            reservation_doc.as_ref(),
            &effect_docs,
        ));
        tally.update(before + reservations.read + effects.read);
    }
    *cross = std::mem::take(&mut effects.cross);
    report.scanned.ledger_reservations += reservations.read;
    report.scanned.ledger_transactions += effects.read;
    Ok(())
}

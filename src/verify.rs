//! The journal verifier: scans every journal collection with streaming reads at one
//! read time, reports every broken invariant with its document path and a stable code,
//! and never writes.
//!
//! Memory is bounded by one command at a time: roots, lifecycles (a collection-group
//! scan) and audit events are each streamed in document-name order, which is command
//! key hash order for all three, and merged. The report keeps at most
//! [`MAX_FINDINGS`] findings and counts the rest.

pub mod commerce;
mod historical_links;
pub mod ledger;
mod scan;

use crate::connection::Connection;
use crate::error::JournalError;
use serde::Serialize;
use std::collections::BTreeMap;

/// Findings kept in a report; further ones are only counted.
pub const MAX_FINDINGS: usize = 10_000;

/// The stable code of a broken invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingCode {
    /// A document that fails its strict codec.
    MalformedDocument,
    /// A document where the journal keeps none (a stray id or subcollection document).
    UnexpectedDocument,
    /// A lifecycle whose root does not exist.
    OrphanLifecycle,
    /// An audit event whose root does not exist.
    OrphanAuditEvent,
    /// A root without its revision-1 audit event.
    MissingRegistrationEvent,
    /// The revision-1 event disagrees with its root.
    RegistrationMismatch,
    /// A lifecycle without the audit event of its current revision.
    LifecycleWithoutCurrentEvent,
    /// The current audit event disagrees with the lifecycle.
    LifecycleEventMismatch,
    /// A revision below the current one has no audit event.
    AuditGap,
    /// An audit event beyond the lifecycle's current revision.
    ExtraAuditEvent,
    /// A takeover that did not raise the fence by exactly one (or a terminal event at
    /// another fence than the lease it ended).
    FenceNotIncremented,
    /// An event recorded after a terminal event.
    ChangedAfterTerminal,
    /// Times that run backwards along a chain or before the registration.
    TimestampRegression,
    /// A ledger reservation whose effects are missing or do not link back.
    ReservationMissingEffects,
    /// A canonical ledger effect without its reservation.
    CanonicalEffectWithoutReservation,
    /// A ledger effect whose lineage fields break the lineage rules.
    LineageViolation,
    /// An imported historical row and the reservation linking it disagree (either
    /// side names the other at another reservation, index or migration, or not at all).
    BrokenHistoricalLink,
    /// A row a migration created holds the same monetary content as an imported row:
    /// one monetary effect represented twice.
    DuplicateMonetaryEffect,
}

impl FindingCode {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MalformedDocument => "malformed_document",
            Self::UnexpectedDocument => "unexpected_document",
            Self::OrphanLifecycle => "orphan_lifecycle",
            Self::OrphanAuditEvent => "orphan_audit_event",
            Self::MissingRegistrationEvent => "missing_registration_event",
            Self::RegistrationMismatch => "registration_mismatch",
            Self::LifecycleWithoutCurrentEvent => "lifecycle_without_current_event",
            Self::LifecycleEventMismatch => "lifecycle_event_mismatch",
            Self::AuditGap => "audit_gap",
            Self::ExtraAuditEvent => "extra_audit_event",
            Self::FenceNotIncremented => "fence_not_incremented",
            Self::ChangedAfterTerminal => "changed_after_terminal",
            Self::TimestampRegression => "timestamp_regression",
            Self::ReservationMissingEffects => "reservation_missing_effects",
            Self::CanonicalEffectWithoutReservation => "canonical_effect_without_reservation",
            Self::LineageViolation => "lineage_violation",
            Self::BrokenHistoricalLink => "broken_historical_link",
            Self::DuplicateMonetaryEffect => "duplicate_monetary_effect",
        }
    }
}

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// What is broken.
    pub code: FindingCode,
    /// The document (or missing document) it concerns, relative to the documents root.
    pub path: String,
}

/// Documents scanned per collection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scanned {
    /// `checkoutRequests` roots.
    pub checkout_requests: u64,
    /// `lifecycle` documents (collection group).
    pub lifecycles: u64,
    /// `auditEvents`.
    pub audit_events: u64,
    /// `ledgerReservations`.
    pub ledger_reservations: u64,
    /// `ledgerTransactions`.
    pub ledger_transactions: u64,
}

impl Scanned {
    /// Documents scanned in all.
    pub fn total(&self) -> u64 {
        self.checkout_requests
            + self.lifecycles
            + self.audit_events
            + self.ledger_reservations
            + self.ledger_transactions
    }
}

/// The verifier's report: JSON on stdout for the CLI.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// True when no invariant is broken.
    pub clean: bool,
    /// Documents read.
    pub scanned: Scanned,
    /// Findings per code, all of them (also those beyond [`MAX_FINDINGS`]).
    pub finding_counts: BTreeMap<&'static str, u64>,
    /// The first [`MAX_FINDINGS`] findings.
    pub findings: Vec<Finding>,
    /// True when findings were dropped from the list (never from the counts).
    pub truncated: bool,
}

impl VerifyReport {
    pub(crate) fn record(&mut self, found: Vec<Finding>) {
        for f in found {
            *self.finding_counts.entry(f.code.as_str()).or_insert(0) += 1;
            if self.findings.len() < MAX_FINDINGS {
                self.findings.push(f);
            } else {
                self.truncated = true;
            }
        }
    }
}

/// Scans the whole journal of `connection`'s project at one read time and reports
/// every broken invariant; writes nothing. `progress` is called with the number of
/// documents read so far, every thousand documents and at the end.
pub async fn verify(
    connection: &Connection,
    progress: &mut (dyn FnMut(u64) + Send),
) -> Result<VerifyReport, JournalError> {
    let mut report = scan::run(connection, progress).await?;
    report.clean = report.finding_counts.is_empty();
    Ok(report)
}

/// How many documents [`verify`] will read, from one COUNT aggregation per scanned
/// collection (a few RPCs, no document transferred): a total for progress and ETA.
/// Taken before the scan and not at its read time, so it is an estimate while the
/// journal is being written.
pub async fn count_documents(connection: &Connection) -> Result<u64, JournalError> {
    scan::count(connection).await
}

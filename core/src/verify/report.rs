//! The verifier's report: each finding with its stable code and document path, the
//! documents scanned per collection, and the bound on findings kept.

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
    /// A transition event disagrees with its root (environment, caller scope kind,
    /// command type or command key hash).
    EventRootMismatch,
    /// An acquisition or takeover event whose lease does not run exactly 60 s from
    /// its `occurredAt`.
    LeaseDurationMismatch,
    /// A takeover recorded before the lease it took over had expired: two holders
    /// active at once.
    OverlappingLease,
    /// A terminal event that does not carry the expiry and fence of the lease it
    /// ended, or that occurred at or after that lease's expiry.
    TerminalLeaseMismatch,
    /// The lifecycle disagrees with the events of the revisions it summarises (its
    /// creation, the current lease's acquisition and expiry).
    LifecycleHistoryMismatch,
    /// A reservation whose stored fingerprint differs from the one rebuilt from its
    /// stored effect rows under the stored version.
    EffectFingerprintMismatch,
    /// A reservation whose stored integrity digest differs from the one computed over
    /// its stored effect rows.
    EffectIntegrityMismatch,
    /// The reversals of one effect return more than it booked: the magnitudes of the
    /// amounts of every reversal effect naming it, or its correction bound's total,
    /// exceed the magnitude of its amount.
    OverReversal,
    /// An effect's correction bound disagrees with the reversals its commits counted:
    /// it is missing while a guarded reversal names the effect, its total or count is
    /// not theirs, or its parent row does not exist.
    CorrectionBoundMismatch,
    /// A canonical reservation of schema version 3 with an effect row that breaks the
    /// fields seed 003 fixes: a mechanism outside the closed canonical set, or
    /// compensation cents, locators or a subtype on a non-recovery effect.
    FixedFieldViolation,
    /// A document the journal creates once and never changes whose Firestore update
    /// time differs from its create time: it was written again outside the journal.
    RewrittenDocument,
    /// Documents the journal writes in one commit whose Firestore commit times differ,
    /// or audit events created out of revision order: a document deleted and written
    /// again, or written outside the journal.
    CommitTimeMismatch,
    /// A provider-send plan or send record whose root does not exist.
    OrphanSendRecord,
    /// A send document or event that fails its strict codec.
    MalformedSendDocument,
    /// A plan without its send record, the reverse, or send events without either.
    UnpairedSendRecord,
    /// The plan was rewritten, or not created in the commit of attempt 1's opening.
    PlanNotImmutable,
    /// A send revision below the current one has no event.
    SendAuditGap,
    /// A send event beyond the current send revision.
    ExtraSendEvent,
    /// The send chain does not replay from nothing to the current send record.
    SendChainMismatch,
    /// A cutoff that is not `firstSentAt + r − ⌊r/4⌋`, changes within an attempt, or a
    /// permit or sender's `ambiguous` recorded at or after it (a sender's success or
    /// decline is evidence whenever it arrives).
    SendCutoffMismatch,
    /// The send layer and the lifecycle disagree (terminal state, time, fence).
    SendLifecycleMismatch,
    /// Send commit times out of order, a send event rewritten, or the send record not
    /// written by the commit of the last send event.
    SendCommitTimeMismatch,
    /// An attempt recorded absent outside the window in which the journal can prove an
    /// absence (`docs/providers.md`, "Proven absence"): nothing may be built on it.
    AbsenceNotProven,
    /// The send record's `resultStored` disagrees with the presence of
    /// `results/current`.
    SendResultMismatch,
    /// A result envelope (`results/current`) of a command that has not succeeded, or
    /// has no root.
    OrphanResult,
    /// A result envelope document that fails its strict codec (its text not exactly the
    /// canonical form of a valid envelope included).
    MalformedResult,
    /// A result envelope that does not bind its lifecycle: the commitment of its
    /// reference is not the `terminalCommitmentHash`, or its `createdAt` is not the
    /// success's time.
    ResultCommitmentMismatch,
    /// A lifecycle in state `leased` the pending listing's collection-group query does
    /// not return, or a document it returns that is not a command's leased lifecycle
    /// (`Journal::pending` would miss it, or list it wrongly).
    PendingIndexMismatch,
    /// A recovery checkpoint that fails its strict codec: its range disagrees with its
    /// id, or its position lies outside the range (every recovery run of the range
    /// would fail on it).
    MalformedRecoveryCheckpoint,
    /// An evidence checkpoint (`evidenceCheckpoints/{digest of the feed's name}`) that
    /// fails its strict codec (every backfill run of its feed would fail on it).
    MalformedEvidenceCheckpoint,
    /// A late charge (`lateCharges/{attempt}`) that fails its strict codec, was
    /// rewritten, has no root or no send record, names an attempt after the current
    /// one, or gives a reason its attempt's recorded state contradicts (an attempt
    /// still open, or succeeded).
    LateChargeMismatch,
    /// A provider key index document (`providerKeys/{digest of the key}`) that fails
    /// its strict codec, was rewritten, names no command that opened an attempt, or
    /// whose command's stored plan does not derive, at the attempt it names (one
    /// opened already), the key whose digest is its id.
    ProviderKeyMismatch,
    /// A lease release record (`leaseReleases/{fence}`) that fails its strict codec,
    /// was rewritten, has no registration, or whose fence has no acquisition or
    /// takeover it was released within (`acquiredAt <= releasedAt < acquiredAt +
    /// 60 s`); or a lifecycle that disagrees with the records: released (version 2)
    /// without its fence's record, at another time, or not in the record's commit;
    /// or still holding a fence that was released.
    ReleaseMismatch,
    /// A terminal event by a fence that released its lease, or a send event by it
    /// after its release (on the journal's time or the commit times).
    WriteAfterRelease,
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
            Self::EventRootMismatch => "event_root_mismatch",
            Self::LeaseDurationMismatch => "lease_duration_mismatch",
            Self::OverlappingLease => "overlapping_lease",
            Self::TerminalLeaseMismatch => "terminal_lease_mismatch",
            Self::LifecycleHistoryMismatch => "lifecycle_history_mismatch",
            Self::EffectFingerprintMismatch => "effect_fingerprint_mismatch",
            Self::EffectIntegrityMismatch => "effect_integrity_mismatch",
            Self::FixedFieldViolation => "fixed_field_violation",
            Self::OverReversal => "over_reversal",
            Self::CorrectionBoundMismatch => "correction_bound_mismatch",
            Self::RewrittenDocument => "rewritten_document",
            Self::CommitTimeMismatch => "commit_time_mismatch",
            Self::OrphanSendRecord => "orphan_send_record",
            Self::MalformedSendDocument => "malformed_send_document",
            Self::UnpairedSendRecord => "unpaired_send_record",
            Self::PlanNotImmutable => "plan_not_immutable",
            Self::SendAuditGap => "send_audit_gap",
            Self::ExtraSendEvent => "extra_send_event",
            Self::SendChainMismatch => "send_chain_mismatch",
            Self::SendCutoffMismatch => "send_cutoff_mismatch",
            Self::SendLifecycleMismatch => "send_lifecycle_mismatch",
            Self::SendCommitTimeMismatch => "send_commit_time_mismatch",
            Self::AbsenceNotProven => "absence_not_proven",
            Self::SendResultMismatch => "send_result_mismatch",
            Self::OrphanResult => "orphan_result",
            Self::MalformedResult => "malformed_result",
            Self::ResultCommitmentMismatch => "result_commitment_mismatch",
            Self::PendingIndexMismatch => "pending_index_mismatch",
            Self::MalformedRecoveryCheckpoint => "malformed_recovery_checkpoint",
            Self::MalformedEvidenceCheckpoint => "malformed_evidence_checkpoint",
            Self::LateChargeMismatch => "late_charge_mismatch",
            Self::ProviderKeyMismatch => "provider_key_mismatch",
            Self::ReleaseMismatch => "release_mismatch",
            Self::WriteAfterRelease => "write_after_release",
        }
    }
}

/// The stable code of something `verify` lists for a person that is no broken
/// invariant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionCode {
    /// An attempt the provider answered as indeterminate (`replayed_unknown`,
    /// `indeterminate`: Stripe's 500) and may still complete: only its final state
    /// settles the command, and no new key is issued for it; a person if that never
    /// comes.
    IndeterminateSend,
    /// An attempt that waits for its customer (`awaiting_customer`: 3-D Secure, a
    /// hosted page): the customer's return, or the provider's object read by id,
    /// settles it, and no new key is issued while the customer may still pay.
    AwaitingCustomer,
    /// A charge its command ended without (`lateCharges/{attempt}`: the attempt was
    /// recorded absent or declined): money moved for no settled command; a person
    /// refunds it.
    LateCharge,
}

impl AttentionCode {
    /// The stable snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IndeterminateSend => "indeterminate_send",
            Self::AwaitingCustomer => "awaiting_customer",
            Self::LateCharge => "late_charge",
        }
    }
}

/// Something listed for a person: the code and the document it concerns.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Attention {
    /// What waits.
    pub code: AttentionCode,
    /// The document it concerns, relative to the documents root.
    pub path: String,
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
    /// Every document of the `checkoutRequests` tree but the lifecycles: each root
    /// and its `providerSends/plan`, `providerSends/current` and `results/current`
    /// (one checkout through `execute` counts 4), and any unexpected one.
    pub checkout_requests: u64,
    /// `lifecycle` documents (collection group), one per acquired command.
    pub lifecycles: u64,
    /// `auditEvents`: the lease's events and the send events.
    pub audit_events: u64,
    /// `ledgerReservations`.
    pub ledger_reservations: u64,
    /// `ledgerTransactions`.
    pub ledger_transactions: u64,
    /// `recoveryCheckpoints`: one per key range a recovery job keeps a checkpoint of.
    pub recovery_checkpoints: u64,
    /// `providerKeys`: one per attempt opened since the key index exists (left out of
    /// the JSON while zero, so that a journal without any reads as before).
    #[serde(skip_serializing_if = "is_zero")]
    pub provider_keys: u64,
    /// `evidenceCheckpoints`: one per feed a backfill job keeps a checkpoint of (left
    /// out of the JSON while zero).
    #[serde(skip_serializing_if = "is_zero")]
    pub evidence_checkpoints: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Scanned {
    /// Documents scanned in all.
    pub fn total(&self) -> u64 {
        self.checkout_requests
            + self.lifecycles
            + self.audit_events
            + self.ledger_reservations
            + self.ledger_transactions
            + self.recovery_checkpoints
            + self.provider_keys
            + self.evidence_checkpoints
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
    /// The first [`MAX_FINDINGS`] findings in path order (then code order), whatever
    /// order the scan found them in.
    pub findings: Vec<Finding>,
    /// True when findings were dropped from the list (never from the counts).
    pub truncated: bool,
    /// True when the scan read no document at all. A wrong project or database reads
    /// as empty, so an empty report is never clean unless the caller accepted an
    /// empty journal ([`allow_empty`](Self::allow_empty)).
    pub empty: bool,
    /// True when the caller accepted an empty journal as clean (`verify
    /// --allow-empty`).
    pub empty_allowed: bool,
    /// What waits for a person although no invariant is broken (a command only the
    /// provider's final state can settle), the first [`MAX_FINDINGS`] in path order;
    /// left out of the JSON when there is none. It never makes a report unclean.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attention: Vec<Attention>,
}

/// The order of the findings list: by path, then by code.
fn by_path(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (&a.path, a.code).cmp(&(&b.path, b.code))
}

impl VerifyReport {
    /// Adds `found` to the report, keeping at most [`MAX_FINDINGS`] in path order.
    pub fn record(&mut self, found: Vec<Finding>) {
        for f in found {
            *self.finding_counts.entry(f.code.as_str()).or_insert(0) += 1;
            self.findings.push(f);
        }
        if self.findings.len() >= 2 * MAX_FINDINGS {
            self.keep_first();
        }
    }

    /// Adds `items` to the report's attention list, keeping at most [`MAX_FINDINGS`].
    pub fn note(&mut self, items: Vec<Attention>) {
        self.attention.extend(items);
        if self.attention.len() >= 2 * MAX_FINDINGS {
            self.attention.sort_unstable();
            self.attention.truncate(MAX_FINDINGS);
        }
    }

    /// Keeps the first [`MAX_FINDINGS`] findings in path order.
    fn keep_first(&mut self) {
        self.findings.sort_unstable_by(by_path);
        if self.findings.len() > MAX_FINDINGS {
            self.findings.truncate(MAX_FINDINGS);
            self.truncated = true;
        }
    }

    /// The report as returned: findings in order and bounded, `clean` set (false for
    /// an empty scan).
    pub fn finish(mut self) -> Self {
        self.keep_first();
        self.attention
            .sort_unstable_by(|a, b| (&a.path, a.code).cmp(&(&b.path, b.code)));
        self.attention.truncate(MAX_FINDINGS);
        self.empty = self.scanned.total() == 0;
        self.clean = self.finding_counts.is_empty() && !self.empty;
        self
    }

    /// The report with an empty journal accepted: `clean` when nothing is broken,
    /// whether or not anything was scanned, and `empty_allowed` set to say so.
    pub fn allow_empty(mut self) -> Self {
        self.empty_allowed = true;
        self.clean = self.finding_counts.is_empty();
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(code: FindingCode, n: usize) -> Finding {
        Finding {
            code,
            path: format!("auditEvents/{n:08}"),
        }
    }

    #[test]
    fn the_report_keeps_the_first_findings_in_path_order_and_counts_all() {
        let mut report = VerifyReport::default();
        // Found in descending order, in batches, more than twice the bound.
        let total = 2 * MAX_FINDINGS + 7;
        for batch in (0..total).rev().collect::<Vec<_>>().chunks(1000) {
            report.record(
                batch
                    .iter()
                    .map(|n| at(FindingCode::AuditGap, *n))
                    .collect(),
            );
        }
        report.record(vec![at(FindingCode::ExtraAuditEvent, 0)]);
        let report = report.finish();
        assert!(!report.clean);
        assert!(report.truncated);
        assert_eq!(report.findings.len(), MAX_FINDINGS);
        assert_eq!(report.finding_counts["audit_gap"], total as u64);
        assert_eq!(report.finding_counts["extra_audit_event"], 1);
        assert_eq!(report.findings[0], at(FindingCode::AuditGap, 0));
        assert_eq!(report.findings[1], at(FindingCode::ExtraAuditEvent, 0));
        assert_eq!(
            report.findings[MAX_FINDINGS - 1],
            at(FindingCode::AuditGap, MAX_FINDINGS - 2)
        );
    }

    #[test]
    fn a_report_within_the_bound_is_complete_and_sorted() {
        let mut report = VerifyReport::default();
        report.record(vec![
            at(FindingCode::AuditGap, 2),
            at(FindingCode::OrphanAuditEvent, 1),
        ]);
        let report = report.finish();
        assert!(!report.truncated);
        assert_eq!(
            report.findings,
            vec![
                at(FindingCode::OrphanAuditEvent, 1),
                at(FindingCode::AuditGap, 2)
            ]
        );
        let empty = VerifyReport::default().finish();
        assert!(empty.empty && !empty.clean && !empty.empty_allowed);
        let allowed = empty.allow_empty();
        assert!(allowed.clean && allowed.empty && allowed.empty_allowed);
    }
}

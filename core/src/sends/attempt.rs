//! `checkoutRequests/{commandKeyHash}/providerSends/current`: the command's current
//! provider attempt, replaced by every send mutation. Earlier attempts live on only
//! in the audit chain (`auditEvents/provider_send_…`).
//!
//! Four versions are read: `sendSchemaVersion` 1 (13 fields); 2, which adds
//! `resultStored` (true exactly when the attempt succeeded with a result envelope,
//! stored in `results/current` by the same commit); 3, version 2's fields for an
//! attempt in the state `indeterminate`, which versions 1 and 2 do not know; and 4,
//! version 2's fields for an attempt in the state `awaiting_customer`, which versions 1
//! to 3 do not know. Every write is version 3 or 4 for those states and version 2 for
//! every other ([`version_of`]), so every document an earlier library could write
//! stays byte for byte what it was.

use super::attempt_number::AttemptNumber;
use super::reverted::{Rule, reverted};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::time::Timestamp;

/// The `journal_corrupt` reason of a malformed send document.
pub(crate) const KIND: &str = "malformed provider send document";
/// The send document version every write uses but that of an `indeterminate`
/// attempt ([`version_of`]).
pub(crate) const VERSION: i64 = 2;
/// The version of a document holding an `indeterminate` attempt.
pub(crate) const VERSION_INDETERMINATE: i64 = 3;
/// The version of a document holding an `awaiting_customer` attempt.
pub(crate) const VERSION_AWAITING_CUSTOMER: i64 = 4;

/// The version a write of an attempt in `state` uses: 3 exactly for `indeterminate`,
/// 4 exactly for `awaiting_customer`.
pub(crate) fn version_of(state: AttemptState) -> i64 {
    match state {
        AttemptState::Indeterminate => VERSION_INDETERMINATE,
        AttemptState::AwaitingCustomer => VERSION_AWAITING_CUSTOMER,
        _ => VERSION,
    }
}

/// The fields of a version-2 (and version-3) send document: version 1's and
/// `resultStored`.
pub const FIELDS: [&str; 14] = [
    "sendSchemaVersion",
    "commandKeyHash",
    "sendRevision",
    "attempt",
    "state",
    "firstSentAt",
    "firstSentFenceEpoch",
    "sendCutoffAt",
    "lastSentAt",
    "lastSentFenceEpoch",
    "outcomeAt",
    "outcomeFenceEpoch",
    "outcomeSource",
    "resultStored",
];
/// The fields of a version-1 send document: version 2's without `resultStored`.
pub(crate) const FIELDS_V1: &[&str] = FIELDS.split_at(FIELDS.len() - 1).0;

/// The collection below the root that holds the send document.
pub(crate) const COLLECTION: &str = "providerSends";

/// The send document's path relative to the documents root.
pub(crate) fn path(hash: &Digest) -> String {
    format!(
        "{}/{hash}/{COLLECTION}/current",
        crate::document::root::COLLECTION
    )
}

/// The state of the current attempt, serialized as its stored name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    /// A permit was issued; the outcome is unknown.
    Sending,
    /// The sender recorded a timeout, 5xx or lost connection: still unknown.
    Ambiguous,
    /// The sender heard the provider replay an unknown answer it stored for the key:
    /// still unknown, and never re-sent (the key can no longer tell); only a lookup
    /// settles it, at once rather than after the cutoff. Indeterminate: no absence of
    /// it is ever proven.
    ReplayedUnknown,
    /// The sender heard an answer the provider documents as indeterminate (Stripe's
    /// 500): the provider may still complete the request. Never re-sent, looked up at
    /// once, and no absence of it is ever proven: only the provider's final state (a
    /// success or a decline for the key) settles it. Stored in version 3 only.
    Indeterminate,
    /// The provider answered that the customer must act (3-D Secure, a hosted page):
    /// nothing is charged yet and the customer may still pay. Never re-sent blindly,
    /// and no lookup's "not found" proves it absent: only the provider's object read
    /// by id (a charge, a refusal, or its final state with nothing charged) settles
    /// it. Stored in version 4 only.
    AwaitingCustomer,
    /// Reconciliation proved the provider has no object for the attempt's key.
    Absent,
    /// The provider succeeded; the command succeeded in the same commit.
    Succeeded,
    /// The provider refused finally; the command failed in the same commit.
    Declined,
}

impl AttemptState {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sending => "sending",
            Self::Ambiguous => "ambiguous",
            Self::ReplayedUnknown => "replayed_unknown",
            Self::Indeterminate => "indeterminate",
            Self::AwaitingCustomer => "awaiting_customer",
            Self::Absent => "absent",
            Self::Succeeded => "succeeded",
            Self::Declined => "declined",
        }
    }

    /// The state stored as `text`; `None` for any other text.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "sending" => Some(Self::Sending),
            "ambiguous" => Some(Self::Ambiguous),
            "replayed_unknown" => Some(Self::ReplayedUnknown),
            "indeterminate" => Some(Self::Indeterminate),
            "awaiting_customer" => Some(Self::AwaitingCustomer),
            "absent" => Some(Self::Absent),
            "succeeded" => Some(Self::Succeeded),
            "declined" => Some(Self::Declined),
            _ => None,
        }
    }

    /// Whether the provider outcome of the attempt is unknown (`sending`,
    /// `ambiguous`, `replayed_unknown`, `indeterminate`, `awaiting_customer`).
    pub fn outcome_unknown(self) -> bool {
        matches!(
            self,
            Self::Sending
                | Self::Ambiguous
                | Self::ReplayedUnknown
                | Self::Indeterminate
                | Self::AwaitingCustomer
        )
    }

    /// Whether the provider may still complete the attempt after any lookup's "not
    /// found" (`replayed_unknown`, `indeterminate`, `awaiting_customer`): no absence of
    /// it is provable from a lookup.
    pub fn indeterminate(self) -> bool {
        matches!(
            self,
            Self::ReplayedUnknown | Self::Indeterminate | Self::AwaitingCustomer
        )
    }

    /// Whether a later holder may re-send the attempt's key before its cutoff
    /// (`sending`, `ambiguous`): not once the provider replayed a stored unknown.
    pub(crate) fn resendable(self) -> bool {
        matches!(self, Self::Sending | Self::Ambiguous)
            || (self == Self::ReplayedUnknown && reverted(Rule::ReplayedLookedUp))
    }

    /// Whether only a lookup can settle the attempt now, whatever the cutoff: its
    /// key replays a stored unknown, or the provider stored an indeterminate answer.
    pub(crate) fn key_cannot_tell(self) -> bool {
        matches!(self, Self::Indeterminate | Self::AwaitingCustomer)
            || (self == Self::ReplayedUnknown && !reverted(Rule::ReplayedLookedUp))
    }
}

/// Who recorded the attempt's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutcomeSource {
    /// `record_send_outcome`, by the fence that last sent.
    ProviderAnswer,
    /// `reconcile_send`, by a holder of the lease.
    Reconciliation,
}

impl OutcomeSource {
    /// The stored name (`send_outcome`, `reconciliation`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ProviderAnswer => "send_outcome",
            Self::Reconciliation => "reconciliation",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        match text {
            "send_outcome" => Ok(Self::ProviderAnswer),
            "reconciliation" => Ok(Self::Reconciliation),
            _ => Err(()),
        }
    }
}

/// A recorded outcome: when, by which fence, through which operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordedOutcome {
    /// The journal's time of the recording.
    pub at: Timestamp,
    /// The fence of the caller that recorded it.
    pub fence_epoch: FenceEpoch,
    /// The operation that recorded it.
    pub source: OutcomeSource,
}

/// A parsed send document whose own field relations hold (the cutoff against the
/// plan's retention is checked where both are known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SendAttempt {
    /// `sendSchemaVersion`: 1, 2 or 3; every write is [`version_of`] its state.
    pub version: i64,
    /// The command's key hash (the parent document's id).
    pub command_key_hash: Digest,
    /// The revision of the send audit chain; its event is the document's partner.
    pub send_revision: i64,
    /// The attempt's number.
    pub attempt: AttemptNumber,
    /// The attempt's state.
    pub state: AttemptState,
    /// When the attempt was opened (its first permit).
    pub first_sent_at: Timestamp,
    /// The fence of the lease that opened the attempt.
    pub first_sent_fence_epoch: FenceEpoch,
    /// `firstSentAt + retention − retention/4`.
    pub send_cutoff_at: Timestamp,
    /// The latest permit: the opening one, or a re-send by a later fence.
    pub last_sent_at: Timestamp,
    /// The fence of the lease of the latest permit.
    pub last_sent_fence_epoch: FenceEpoch,
    /// `None` while `sending`.
    pub outcome: Option<RecordedOutcome>,
    /// Version 2: the success stored a result envelope in `results/current` (false
    /// for version 1, which did not say).
    pub result_stored: bool,
}

impl SendAttempt {
    /// Parses strictly; `hash` is the command the document was read under.
    pub(crate) fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let current = map.len() == FIELDS.len();
        let expected: &[&str] = if current { &FIELDS } else { FIELDS_V1 };
        let f = Strict::new(map, expected, KIND)?;
        let version = if current {
            f.int_in("sendSchemaVersion", VERSION..=VERSION_AWAITING_CUSTOMER)?
        } else {
            f.int_in("sendSchemaVersion", 1..=1)?
        };
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let at = f.nullable_timestamp("outcomeAt")?;
        let fence = f.nullable_fence("outcomeFenceEpoch")?;
        let source = f.nullable("outcomeSource", OutcomeSource::parse)?;
        let outcome = match (at, fence, source) {
            (None, None, None) => None,
            (Some(at), Some(fence_epoch), Some(source)) => Some(RecordedOutcome {
                at,
                fence_epoch,
                source,
            }),
            _ => return Err(f.corrupt("outcome")),
        };
        let result_stored = if version >= 2 {
            f.boolean("resultStored")?
        } else {
            false
        };
        let attempt = Self {
            version,
            command_key_hash,
            send_revision: f.int_in("sendRevision", 1..=MAX_REVISION)?,
            attempt: f.attempt("attempt")?,
            state: f.parsed("state", |t| AttemptState::parse(t).ok_or(()))?,
            first_sent_at: f.timestamp("firstSentAt")?,
            first_sent_fence_epoch: f.fence("firstSentFenceEpoch")?,
            send_cutoff_at: f.timestamp("sendCutoffAt")?,
            last_sent_at: f.timestamp("lastSentAt")?,
            last_sent_fence_epoch: f.fence("lastSentFenceEpoch")?,
            outcome,
            result_stored,
        };
        if !attempt.relations_hold() {
            return Err(f.corrupt("relations"));
        }
        // Version 3 holds exactly an indeterminate attempt and version 4 exactly an
        // attempt awaiting the customer, which no earlier version may hold.
        if version >= VERSION_INDETERMINATE && version != version_of(attempt.state) {
            return Err(f.corrupt("sendSchemaVersion"));
        }
        if version < VERSION_INDETERMINATE && version_of(attempt.state) >= VERSION_INDETERMINATE {
            return Err(f.corrupt("sendSchemaVersion"));
        }
        Ok(attempt)
    }

    /// Whether the latest permit was a re-send by a later fence.
    pub(crate) fn resent(&self) -> bool {
        self.last_sent_fence_epoch != self.first_sent_fence_epoch
    }

    /// The time of the latest mutation: the partner event's `occurredAt`.
    pub(crate) fn updated_at(&self) -> Timestamp {
        self.outcome.map_or(self.last_sent_at, |o| o.at)
    }

    /// The fence of the latest mutation: the partner event's `fenceEpoch`.
    pub(crate) fn updated_by(&self) -> FenceEpoch {
        self.outcome
            .map_or(self.last_sent_fence_epoch, |o| o.fence_epoch)
    }

    /// `docs/providers.md`, "providerSends/current": the document's own invariants.
    fn relations_hold(&self) -> bool {
        let resend_fits = if self.resent() {
            // Equal times only when the sender released its lease at the permit's
            // instant and the next holder took it over and re-sent at that instant.
            self.last_sent_fence_epoch > self.first_sent_fence_epoch
                && self.last_sent_at >= self.first_sent_at
        } else {
            self.last_sent_at == self.first_sent_at
        };
        let sent_before_cutoff =
            self.first_sent_at < self.send_cutoff_at && self.last_sent_at < self.send_cutoff_at;
        // Every attempt before this one was opened and recorded absent.
        let chain_fits = self.send_revision >= 2 * self.attempt.get() - 1;
        let outcome_fits = match (self.state, self.outcome) {
            (AttemptState::Sending, None) => true,
            (AttemptState::Sending, Some(_)) | (_, None) => false,
            (state, Some(o)) => {
                let source_fits = match state {
                    AttemptState::Ambiguous
                    | AttemptState::ReplayedUnknown
                    | AttemptState::Indeterminate
                    | AttemptState::AwaitingCustomer => o.source == OutcomeSource::ProviderAnswer,
                    AttemptState::Absent => o.source == OutcomeSource::Reconciliation,
                    _ => true,
                };
                let fence_fits = match o.source {
                    OutcomeSource::ProviderAnswer => o.fence_epoch == self.last_sent_fence_epoch,
                    OutcomeSource::Reconciliation => o.fence_epoch >= self.last_sent_fence_epoch,
                };
                source_fits && fence_fits && o.at >= self.last_sent_at
            }
        };
        let result_fits = !self.result_stored || self.state == AttemptState::Succeeded;
        resend_fits && sent_before_cutoff && chain_fits && outcome_fits && result_fits
    }

    /// The exact stored field map.
    pub(crate) fn encode(&self) -> FieldMap {
        let outcome_at = self
            .outcome
            .map_or_else(fields::null, |o| fields::timestamp(o.at));
        let outcome_fence = self
            .outcome
            .map_or_else(fields::null, |o| fields::int(o.fence_epoch.get()));
        let outcome_source = fields::nullable_string(self.outcome.map(|o| o.source.as_str()));
        let mut map = fields::map([
            ("sendSchemaVersion", fields::int(self.version)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("sendRevision", fields::int(self.send_revision)),
            ("attempt", fields::int(self.attempt.get())),
            ("state", fields::string(self.state.as_str())),
            ("firstSentAt", fields::timestamp(self.first_sent_at)),
            (
                "firstSentFenceEpoch",
                fields::int(self.first_sent_fence_epoch.get()),
            ),
            ("sendCutoffAt", fields::timestamp(self.send_cutoff_at)),
            ("lastSentAt", fields::timestamp(self.last_sent_at)),
            (
                "lastSentFenceEpoch",
                fields::int(self.last_sent_fence_epoch.get()),
            ),
            ("outcomeAt", outcome_at),
            ("outcomeFenceEpoch", outcome_fence),
            ("outcomeSource", outcome_source),
        ]);
        if self.version >= 2 {
            map.insert(
                "resultStored".to_owned(),
                fields::boolean(self.result_stored),
            );
        }
        map
    }
}

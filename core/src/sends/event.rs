//! `auditEvents/provider_send_{commandKeyHash}_{sendRevision:010}`: one deterministic
//! event per send mutation, audit schema version 3, aggregate `provider_send`; version
//! 4, the same fields, exactly for an event that names the state `indeterminate` (as
//! its `fromState` or `toState`), which version 3 does not know; version 5, the same
//! fields, exactly for an event that names the state `awaiting_customer`, which
//! versions 3 and 4 do not know (no event names both: no transition joins them). B2B's
//! `commerce_command` events (versions 1 and 2) are untouched; a send that ends the
//! command also writes B2B's own terminal event in the same commit.

use super::attempt::AttemptState;
use super::attempt_number::AttemptNumber;
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::COLLECTION;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::time::Timestamp;

/// The `journal_corrupt` reason of a malformed send event.
pub(crate) const KIND: &str = "malformed provider send audit event";
/// The exact field set of a send event.
pub const FIELDS: [&str; 11] = [
    "auditSchemaVersion",
    "aggregateType",
    "commandKeyHash",
    "sendRevision",
    "eventType",
    "attempt",
    "fromState",
    "toState",
    "fenceEpoch",
    "sendCutoffAt",
    "occurredAt",
];

/// The event id of `revision` of the command's send chain.
pub(crate) fn id(hash: &Digest, revision: i64) -> String {
    format!("provider_send_{hash}_{revision:010}")
}

/// Splits a send event id into its command key hash and send revision; `None` unless
/// it is exactly `provider_send_{64 lowercase hex}_{10 digits}` with a revision of 1
/// or more (the verifier's scan meets every `auditEvents` id).
pub(crate) fn parse_id(id: &str) -> Option<(Digest, i64)> {
    let rest = id.strip_prefix("provider_send_")?;
    let (hash, revision) = rest.split_once('_')?;
    let hash = Digest::parse(hash)?;
    if revision.len() != 10 || !revision.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let revision: i64 = revision.parse().ok()?;
    (revision >= 1).then_some((hash, revision))
}

/// The event's path relative to the documents root.
pub(crate) fn path(hash: &Digest, revision: i64) -> String {
    format!("{COLLECTION}/{}", id(hash, revision))
}

/// What a send event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SendEventType {
    /// An attempt opened (`begin_send`): attempt 1 from nothing, n ≥ 2 from `absent`.
    Opened,
    /// A later fence re-sent the same attempt with the same key.
    Resent,
    /// The sender recorded an ambiguous outcome.
    Ambiguous,
    /// The sender heard the provider replay a stored unknown answer for the key.
    ReplayedUnknown,
    /// The sender heard an answer the provider documents as indeterminate.
    Indeterminate,
    /// The sender heard that the customer must act: the attempt waits for them.
    AwaitingCustomer,
    /// The sender recorded success (with B2B's `command_succeeded`).
    Succeeded,
    /// The sender recorded a final refusal (with B2B's `command_failed_final`).
    Declined,
    /// Reconciliation proved success.
    ReconciledSucceeded,
    /// Reconciliation proved a final refusal.
    ReconciledDeclined,
    /// Reconciliation proved the provider has no object for the key.
    ReconciledAbsent,
}

impl SendEventType {
    /// The stored name of the event type.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Opened => "provider_send_opened",
            Self::Resent => "provider_send_resent",
            Self::Ambiguous => "provider_send_ambiguous",
            Self::ReplayedUnknown => "provider_send_replayed_unknown",
            Self::Indeterminate => "provider_send_indeterminate",
            Self::AwaitingCustomer => "provider_send_awaiting_customer",
            Self::Succeeded => "provider_send_succeeded",
            Self::Declined => "provider_send_declined",
            Self::ReconciledSucceeded => "provider_send_reconciled_succeeded",
            Self::ReconciledDeclined => "provider_send_reconciled_declined",
            Self::ReconciledAbsent => "provider_send_reconciled_absent",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        [
            Self::Opened,
            Self::Resent,
            Self::Ambiguous,
            Self::ReplayedUnknown,
            Self::Indeterminate,
            Self::AwaitingCustomer,
            Self::Succeeded,
            Self::Declined,
            Self::ReconciledSucceeded,
            Self::ReconciledDeclined,
            Self::ReconciledAbsent,
        ]
        .into_iter()
        .find(|t| t.as_str() == text)
        .ok_or(())
    }

    /// The state the event leaves the attempt in.
    pub(crate) fn to_state(self) -> AttemptState {
        match self {
            Self::Opened | Self::Resent => AttemptState::Sending,
            Self::Ambiguous => AttemptState::Ambiguous,
            Self::ReplayedUnknown => AttemptState::ReplayedUnknown,
            Self::Indeterminate => AttemptState::Indeterminate,
            Self::AwaitingCustomer => AttemptState::AwaitingCustomer,
            Self::Succeeded | Self::ReconciledSucceeded => AttemptState::Succeeded,
            Self::Declined | Self::ReconciledDeclined => AttemptState::Declined,
            Self::ReconciledAbsent => AttemptState::Absent,
        }
    }

    /// Whether `from` (`None`: no attempt yet) may precede the event.
    pub(crate) fn allows_from(self, from: Option<AttemptState>, attempt: AttemptNumber) -> bool {
        match self {
            Self::Opened if attempt == AttemptNumber::FIRST => from.is_none(),
            Self::Opened => from == Some(AttemptState::Absent),
            Self::Ambiguous => from == Some(AttemptState::Sending),
            Self::ReplayedUnknown | Self::Indeterminate | Self::AwaitingCustomer => {
                from.is_some_and(AttemptState::resendable)
            }
            Self::Resent => from.is_some_and(AttemptState::resendable),
            _ => from.is_some_and(AttemptState::outcome_unknown),
        }
    }
}

/// A parsed send event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SendEvent {
    /// The command's key hash.
    pub command_key_hash: Digest,
    /// The revision of the send audit chain this event records.
    pub send_revision: i64,
    /// What happened.
    pub event_type: SendEventType,
    /// The attempt it happened to.
    pub attempt: AttemptNumber,
    /// `None` only for attempt 1's `provider_send_opened`.
    pub from_state: Option<AttemptState>,
    /// The fence of the caller that made the mutation.
    pub fence_epoch: FenceEpoch,
    /// The attempt's cutoff after the mutation.
    pub send_cutoff_at: Timestamp,
    /// The journal's time of the mutation.
    pub occurred_at: Timestamp,
}

/// The audit schema version of a send event from `from` to `to`: 4 exactly when
/// either is `indeterminate`, 5 exactly when either is `awaiting_customer`, else 3.
fn version_of(from: Option<AttemptState>, to: AttemptState) -> i64 {
    let names = |named: AttemptState| move |state: AttemptState| state == named;
    let either = |named| from.is_some_and(names(named)) || names(named)(to);
    if either(AttemptState::AwaitingCustomer) {
        5
    } else if either(AttemptState::Indeterminate) {
        4
    } else {
        3
    }
}

impl SendEvent {
    /// Parses strictly; `document_id` is the id the event was read under.
    pub(crate) fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        let version = f.int_in("auditSchemaVersion", 3..=5)?;
        f.string_eq("aggregateType", "provider_send")?;
        let command_key_hash = f.digest("commandKeyHash")?;
        let send_revision = f.int_in("sendRevision", 1..=MAX_REVISION)?;
        if id(&command_key_hash, send_revision) != document_id {
            return Err(f.corrupt("commandKeyHash"));
        }
        let event_type = f.parsed("eventType", SendEventType::parse)?;
        let attempt = f.attempt("attempt")?;
        let from_state = f.nullable("fromState", |t| AttemptState::parse(t).ok_or(()))?;
        if !event_type.allows_from(from_state, attempt) {
            return Err(f.corrupt("fromState"));
        }
        f.string_eq("toState", event_type.to_state().as_str())?;
        if version != version_of(from_state, event_type.to_state()) {
            return Err(f.corrupt("auditSchemaVersion"));
        }
        let first = send_revision == 1;
        if first != (event_type == SendEventType::Opened && attempt == AttemptNumber::FIRST) {
            return Err(f.corrupt("sendRevision"));
        }
        Ok(Self {
            command_key_hash,
            send_revision,
            event_type,
            attempt,
            from_state,
            fence_epoch: f.fence("fenceEpoch")?,
            send_cutoff_at: f.timestamp("sendCutoffAt")?,
            occurred_at: f.timestamp("occurredAt")?,
        })
    }

    /// The exact stored field map.
    pub(crate) fn encode(&self) -> FieldMap {
        fields::map([
            (
                "auditSchemaVersion",
                fields::int(version_of(self.from_state, self.event_type.to_state())),
            ),
            ("aggregateType", fields::string("provider_send")),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("sendRevision", fields::int(self.send_revision)),
            ("eventType", fields::string(self.event_type.as_str())),
            ("attempt", fields::int(self.attempt.get())),
            (
                "fromState",
                fields::nullable_string(self.from_state.map(AttemptState::as_str)),
            ),
            (
                "toState",
                fields::string(self.event_type.to_state().as_str()),
            ),
            ("fenceEpoch", fields::int(self.fence_epoch.get())),
            ("sendCutoffAt", fields::timestamp(self.send_cutoff_at)),
            ("occurredAt", fields::timestamp(self.occurred_at)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_nothing_else_parses() {
        let hash = Digest::parse(&"ab".repeat(32)).expect("digest");
        assert_eq!(parse_id(&id(&hash, 7)), Some((hash.clone(), 7)));
        for bad in [
            format!("provider_send_{hash}_0000000000"),
            format!("provider_send_{hash}_000000001"),
            format!("provider_send_{hash}_00000000x1"),
            format!("commerce_command_{hash}_0000000001"),
            format!("provider_send_{}_0000000001", "AB".repeat(32)),
        ] {
            assert_eq!(parse_id(&bad), None, "{bad}");
        }
    }
}

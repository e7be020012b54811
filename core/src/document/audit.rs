//! `auditEvents/commerce_command_{commandKeyHash}_{revision:010}`: one deterministic
//! event per real mutation (version 1 for registration, version 2 for transitions).

use super::MAX_REVISION;
use super::fields::{self, FieldMap, Strict};
use super::lifecycle::LifecycleState;
use crate::digest::Digest;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CallerScopeKind, CommandType, Environment};
use crate::time::Timestamp;

/// The collection of audit events.
pub const COLLECTION: &str = "auditEvents";
const KIND_V1: &str = "malformed registration audit event";
const KIND_V2: &str = "malformed transition audit event";
/// The exact field set of a version-1 (registration) audit event.
pub const FIELDS_V1: [&str; 11] = [
    "auditSchemaVersion",
    "aggregateType",
    "commandKeyHash",
    "commandRevision",
    "eventType",
    "fromState",
    "toState",
    "environment",
    "callerScopeKind",
    "commandType",
    "occurredAt",
];
/// The exact field set of a version-2 (transition) audit event.
pub const FIELDS_V2: [&str; 13] = [
    "auditSchemaVersion",
    "aggregateType",
    "commandKeyHash",
    "commandRevision",
    "eventType",
    "fromState",
    "toState",
    "environment",
    "callerScopeKind",
    "commandType",
    "fenceEpoch",
    "leaseExpiresAt",
    "occurredAt",
];

/// The event id for `revision` of the command.
pub fn id(hash: &Digest, revision: i64) -> String {
    format!("commerce_command_{hash}_{revision:010}")
}

/// Splits an event id into its command key hash and revision; `None` unless it is
/// exactly `commerce_command_{64 lowercase hex}_{10 digits}` with a revision of 1 or more.
pub fn parse_id(id: &str) -> Option<(Digest, i64)> {
    let rest = id.strip_prefix("commerce_command_")?;
    let (hash, revision) = rest.split_once('_')?;
    let hash = Digest::parse(hash)?;
    if revision.len() != 10 || !revision.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let revision: i64 = revision.parse().ok()?;
    (revision >= 1).then_some((hash, revision))
}

/// The event's path relative to the documents root.
pub fn path(hash: &Digest, revision: i64) -> String {
    format!("{COLLECTION}/{}", id(hash, revision))
}

/// The revision-1 `command_registered` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationEvent {
    /// The command.
    pub command_key_hash: Digest,
    /// Copied from the root.
    pub environment: Environment,
    /// Copied from the root.
    pub caller_scope_kind: CallerScopeKind,
    /// Copied from the root.
    pub command_type: CommandType,
    /// Equals the root's `registeredAt`.
    pub occurred_at: Timestamp,
}

impl RegistrationEvent {
    /// Parses strictly; `document_id` is the id the event was read under.
    pub fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS_V1, KIND_V1)?;
        f.int_in("auditSchemaVersion", 1..=1)?;
        f.string_eq("aggregateType", "commerce_command")?;
        f.int_in("commandRevision", 1..=1)?;
        f.string_eq("eventType", "command_registered")?;
        f.null("fromState")?;
        f.string_eq("toState", "registered")?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if id(&command_key_hash, 1) != document_id {
            return Err(f.corrupt("commandKeyHash"));
        }
        Ok(Self {
            command_key_hash,
            environment: f.parsed("environment", Environment::parse)?,
            caller_scope_kind: f.parsed("callerScopeKind", CallerScopeKind::parse)?,
            command_type: f.parsed("commandType", CommandType::parse)?,
            occurred_at: f.timestamp("occurredAt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("auditSchemaVersion", fields::int(1)),
            ("aggregateType", fields::string("commerce_command")),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("commandRevision", fields::int(1)),
            ("eventType", fields::string("command_registered")),
            ("fromState", fields::null()),
            ("toState", fields::string("registered")),
            ("environment", fields::string(self.environment.as_str())),
            (
                "callerScopeKind",
                fields::string(self.caller_scope_kind.as_str()),
            ),
            ("commandType", fields::string(self.command_type.as_str())),
            ("occurredAt", fields::timestamp(self.occurred_at)),
        ])
    }
}

/// What a transition event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `registered -> leased`, fence 1, revision 2.
    LeaseAcquired,
    /// `leased -> leased` after expiry, fence + 1.
    LeaseTakenOver,
    /// `leased -> succeeded`.
    Succeeded,
    /// `leased -> failed_final`.
    FailedFinal,
}

impl EventType {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LeaseAcquired => "command_lease_acquired",
            Self::LeaseTakenOver => "command_lease_taken_over",
            Self::Succeeded => "command_succeeded",
            Self::FailedFinal => "command_failed_final",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        match text {
            "command_lease_acquired" => Ok(Self::LeaseAcquired),
            "command_lease_taken_over" => Ok(Self::LeaseTakenOver),
            "command_succeeded" => Ok(Self::Succeeded),
            "command_failed_final" => Ok(Self::FailedFinal),
            _ => Err(()),
        }
    }

    /// The only `(fromState, toState)` pair the event type allows; `None` is
    /// `registered`.
    pub fn states(self) -> (Option<LifecycleState>, LifecycleState) {
        match self {
            Self::LeaseAcquired => (None, LifecycleState::Leased),
            Self::LeaseTakenOver => (Some(LifecycleState::Leased), LifecycleState::Leased),
            Self::Succeeded => (Some(LifecycleState::Leased), LifecycleState::Succeeded),
            Self::FailedFinal => (Some(LifecycleState::Leased), LifecycleState::FailedFinal),
        }
    }
}

/// A version-2 transition event (revision 2 and later).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionEvent {
    /// The command.
    pub command_key_hash: Digest,
    /// 2..=9,999,999,999, equal to the id's suffix.
    pub command_revision: i64,
    /// What happened; fixes `fromState` and `toState`.
    pub event_type: EventType,
    /// Copied from the root.
    pub environment: Environment,
    /// Copied from the root.
    pub caller_scope_kind: CallerScopeKind,
    /// Copied from the root.
    pub command_type: CommandType,
    /// The lifecycle's fence after the transition.
    pub fence_epoch: FenceEpoch,
    /// The lifecycle's lease expiry after the transition.
    pub lease_expires_at: Timestamp,
    /// The transition time (the lifecycle's `updatedAt`).
    pub occurred_at: Timestamp,
}

impl TransitionEvent {
    /// Parses strictly; `document_id` is the id the event was read under.
    pub fn parse(document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS_V2, KIND_V2)?;
        f.int_in("auditSchemaVersion", 2..=2)?;
        f.string_eq("aggregateType", "commerce_command")?;
        let command_key_hash = f.digest("commandKeyHash")?;
        let command_revision = f.int_in("commandRevision", 2..=MAX_REVISION)?;
        if id(&command_key_hash, command_revision) != document_id {
            return Err(f.corrupt("commandKeyHash"));
        }
        let event_type = f.parsed("eventType", EventType::parse)?;
        let (from, to) = event_type.states();
        match from {
            None => f.string_eq("fromState", "registered")?,
            Some(state) => f.string_eq("fromState", state.as_str())?,
        }
        f.string_eq("toState", to.as_str())?;
        let fence_epoch = f.fence("fenceEpoch")?;
        // Revision 1 is registration and every fence increment costs one revision.
        let fence_fits = match event_type {
            EventType::LeaseAcquired => command_revision == 2 && fence_epoch == FenceEpoch::FIRST,
            EventType::LeaseTakenOver => {
                fence_epoch > FenceEpoch::FIRST && command_revision == fence_epoch.get() + 1
            }
            EventType::Succeeded | EventType::FailedFinal => {
                command_revision == fence_epoch.get() + 2
            }
        };
        if !fence_fits {
            return Err(f.corrupt("fenceEpoch"));
        }
        Ok(Self {
            command_key_hash,
            command_revision,
            event_type,
            environment: f.parsed("environment", Environment::parse)?,
            caller_scope_kind: f.parsed("callerScopeKind", CallerScopeKind::parse)?,
            command_type: f.parsed("commandType", CommandType::parse)?,
            fence_epoch,
            lease_expires_at: f.timestamp("leaseExpiresAt")?,
            occurred_at: f.timestamp("occurredAt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        let (from, to) = self.event_type.states();
        fields::map([
            ("auditSchemaVersion", fields::int(2)),
            ("aggregateType", fields::string("commerce_command")),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("commandRevision", fields::int(self.command_revision)),
            ("eventType", fields::string(self.event_type.as_str())),
            (
                "fromState",
                fields::string(from.map_or("registered", LifecycleState::as_str)),
            ),
            ("toState", fields::string(to.as_str())),
            ("environment", fields::string(self.environment.as_str())),
            (
                "callerScopeKind",
                fields::string(self.caller_scope_kind.as_str()),
            ),
            ("commandType", fields::string(self.command_type.as_str())),
            ("fenceEpoch", fields::int(self.fence_epoch.get())),
            ("leaseExpiresAt", fields::timestamp(self.lease_expires_at)),
            ("occurredAt", fields::timestamp(self.occurred_at)),
        ])
    }
}

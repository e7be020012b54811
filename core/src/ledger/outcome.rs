//! What the ledger operations answer.

use super::effect::LedgerEffect;
use super::fingerprint::CommandFamily;
use crate::digest::Digest;
use crate::time::SecondsNanos;
use crate::time::Timestamp;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// How a ledger operation concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// `accepted`: this call created the reservation and every effect, atomically.
    Accepted,
    /// `replayed`: the reservation existed with the same fingerprint (under its stored
    /// version) and scope; its stored effects are returned and nothing was written.
    Replayed,
    /// `linked`: the migration call created the historical reservation and effects.
    Linked,
    /// `already_linked`: the migration had already linked exactly this command;
    /// nothing was written.
    AlreadyLinked,
}

impl Outcome {
    /// The exact snake_case text of the `outcome` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Replayed => "replayed",
            Self::Linked => "linked",
            Self::AlreadyLinked => "already_linked",
        }
    }
}

/// A reservation and its complete ordered effect vector, as accepted (or as stored).
///
/// Serializes camelCase:
/// `{"outcome","reservationId","commandFamily","fingerprint","fingerprintVersion",
/// "acceptedAt":{"seconds","nanoseconds"},"migrationId","effectIds":[…],"effects":[…]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LedgerOutcome {
    /// How the operation concluded.
    pub outcome: Outcome,
    /// The reservation's document id.
    pub reservation_id: Digest,
    /// The accepted command family.
    pub command_family: CommandFamily,
    /// The stored replay fingerprint.
    pub fingerprint: Digest,
    /// The stored fingerprint version (the serializer the fingerprint was made with).
    pub fingerprint_version: u32,
    /// When the command was accepted.
    pub accepted_at: Timestamp,
    /// The migration that linked a historical reservation; `None` for canonical ones.
    pub migration_id: Option<String>,
    /// The effects, in accepted creation order.
    pub effects: Vec<LedgerEffect>,
}

impl LedgerOutcome {
    /// The effect ids, in accepted creation order.
    pub fn effect_ids(&self) -> Vec<&str> {
        self.effects.iter().map(|e| e.effect_id.as_str()).collect()
    }
}

impl Serialize for LedgerOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("LedgerOutcome", 9)?;
        s.serialize_field("outcome", self.outcome.as_str())?;
        s.serialize_field("reservationId", self.reservation_id.as_str())?;
        s.serialize_field("commandFamily", self.command_family.as_str())?;
        s.serialize_field("fingerprint", self.fingerprint.as_str())?;
        s.serialize_field("fingerprintVersion", &self.fingerprint_version)?;
        s.serialize_field("acceptedAt", &SecondsNanos(self.accepted_at))?;
        s.serialize_field("migrationId", &self.migration_id)?;
        s.serialize_field("effectIds", &self.effect_ids())?;
        s.serialize_field("effects", &self.effects)?;
        s.end()
    }
}

/// The answer of a replay before pricing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerReplay {
    /// The reservation exists and the supplied business tuple and scope match it: the
    /// original effects, whatever current prices or balances would say.
    Replayed(LedgerOutcome),
    /// No reservation exists for the key: the caller prices the command and then
    /// calls `accept_ledger_command`. Serializes
    /// as `{"outcome":"not_reserved","reservationId":…}`.
    NotReserved {
        /// The reservation id the key derives.
        reservation_id: Digest,
    },
}

impl Serialize for LedgerReplay {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Replayed(outcome) => outcome.serialize(serializer),
            Self::NotReserved { reservation_id } => {
                let mut s = serializer.serialize_struct("LedgerReplay", 2)?;
                s.serialize_field("outcome", "not_reserved")?;
                s.serialize_field("reservationId", reservation_id.as_str())?;
                s.end()
            }
        }
    }
}

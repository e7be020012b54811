//! The answers of the send operations and their fixed JSON shapes.

use super::attempt_number::AttemptNumber;
use crate::lease::TerminalOutput;
use crate::time::SecondsNanos;
use crate::time::Timestamp;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// Permission to send attempt `attempt` to the provider with `provider_idempotency_key`,
/// recorded before the caller sends. Valid only before `send_cutoff_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendPermit {
    /// The attempt number.
    pub attempt: AttemptNumber,
    /// Whether this permit re-sends an attempt a previous holder already sent (same
    /// attempt, same key), after a takeover.
    pub resend: bool,
    /// The key to send: attempt 1's is the command's provider idempotency key for the
    /// plan's operation; a later attempt's is its own framed derivation.
    pub provider_idempotency_key: String,
    /// The stored cutoff: from this instant on no permit is issued for the attempt.
    pub send_cutoff_at: Timestamp,
    /// The instant the customer must have acted by (`act_by` of the stored plan's
    /// window and the attempt): the cutoff when the plan binds no window, and the
    /// same instant on every permit of the attempt. Serialized as `actBy` only when
    /// it is before the cutoff, so a plan without a window prints what it printed.
    pub act_by: Timestamp,
    /// The expiry of the lease this permit was issued under: the request must not be
    /// sent at or after it (a request still in flight then is one the journal counts
    /// on having reached the provider within the plan's settle window).
    pub lease_expires_at: Timestamp,
}

/// The answer to `begin_send`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginSendOutput {
    /// Send (or re-send) now, with this key.
    Permitted(SendPermit),
    /// The command is already terminal: do not send.
    Terminal(TerminalOutput),
}

/// The answer to `record_send_outcome` and `reconcile_send`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcomeOutput {
    /// The command ended (success or final failure) with the attempt closed.
    Terminal(TerminalOutput),
    /// The attempt's outcome stays unknown (`send_ambiguous`).
    Ambiguous {
        /// The attempt.
        attempt: AttemptNumber,
    },
    /// The provider waits for the customer (`send_awaiting_customer`): the attempt
    /// stays open and is never re-sent; the provider's object settles it.
    AwaitingCustomer {
        /// The attempt.
        attempt: AttemptNumber,
    },
    /// The provider has no object for the attempt's key (`send_absent`): the next
    /// `begin_send` opens a new attempt with a new key.
    Absent {
        /// The attempt found absent.
        attempt: AttemptNumber,
    },
}

/// `{"journalSchemaVersion":1,"outcome":"send_permitted","attempt":N,"resend":B,
/// "providerIdempotencyKey":"cj1-…","sendCutoffAt":{"seconds":S,"nanoseconds":N},
/// "leaseExpiresAt":{"seconds":S,"nanoseconds":N}}`, with
/// `"actBy":{"seconds":S,"nanoseconds":N}` after `sendCutoffAt` when the customer's
/// window ends before the cutoff.
impl Serialize for SendPermit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let windowed = self.act_by < self.send_cutoff_at;
        let mut s = serializer.serialize_struct("SendPermit", 7 + usize::from(windowed))?;
        s.serialize_field("journalSchemaVersion", &1)?;
        s.serialize_field("outcome", "send_permitted")?;
        s.serialize_field("attempt", &self.attempt)?;
        s.serialize_field("resend", &self.resend)?;
        s.serialize_field("providerIdempotencyKey", &self.provider_idempotency_key)?;
        s.serialize_field("sendCutoffAt", &SecondsNanos(self.send_cutoff_at))?;
        if windowed {
            s.serialize_field("actBy", &SecondsNanos(self.act_by))?;
        }
        s.serialize_field("leaseExpiresAt", &SecondsNanos(self.lease_expires_at))?;
        s.end()
    }
}

/// The permit's shape, or B2B's terminal output shape.
impl Serialize for BeginSendOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Permitted(permit) => permit.serialize(serializer),
            Self::Terminal(terminal) => terminal.serialize(serializer),
        }
    }
}

/// B2B's terminal output shape, or
/// `{"journalSchemaVersion":1,"outcome":"send_ambiguous"|"send_awaiting_customer"|
/// "send_absent","attempt":N}`.
impl Serialize for SendOutcomeOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (outcome, attempt) = match self {
            Self::Terminal(terminal) => return terminal.serialize(serializer),
            Self::Ambiguous { attempt } => ("send_ambiguous", attempt),
            Self::AwaitingCustomer { attempt } => ("send_awaiting_customer", attempt),
            Self::Absent { attempt } => ("send_absent", attempt),
        };
        let mut s = serializer.serialize_struct("SendOutcomeOutput", 3)?;
        s.serialize_field("journalSchemaVersion", &1)?;
        s.serialize_field("outcome", outcome)?;
        s.serialize_field("attempt", attempt)?;
        s.end()
    }
}

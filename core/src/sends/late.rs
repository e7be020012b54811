//! A charge that arrives after its command ended without it:
//! `checkoutRequests/{commandKeyHash}/lateCharges/{attempt:04}`, created once, never
//! changed (an append-only record, as a ledger reservation is: it is its own audit
//! record), listed by `pending` and `verify` for a person (a refund), never dropped.
//!
//! A provider's success for an attempt's key is evidence whenever it arrives, but the
//! command may no longer take it as its outcome: the attempt was recorded absent (a
//! later one may have opened under a new key), or declined. `record_late_charge`
//! (`RecordLateCharge`) records it then, decided from the command's own documents:
//!
//! ```text
//! no plan bound, or an attempt after the current one   -> attempt_mismatch
//! the attempt is the current one, its outcome unknown   -> attempt_mismatch (reconcile it)
//! the attempt is the current one, succeeded, this charge -> own_charge (read-only)
//! the attempt is the current one, succeeded, another    -> terminal_conflict
//! recorded already, the same charge                     -> recorded (read-only)
//! recorded already, another charge                     -> terminal_conflict
//! an earlier attempt (every one was recorded absent),
//!   or the current one recorded absent                  -> create: reason attempt_absent
//! the current attempt declined                          -> create: reason attempt_declined
//! ```
//!
//! The reason is a fact about the attempt that never changes once true (an absent or
//! declined attempt never reopens, and an attempt is earlier only once absent), so
//! the decision needs no lease and no proof of the send record: only the new
//! document's absence (`exists: false`). The charge is stored as its command-bound
//! commitment (`terminalCommitmentHash` of its reference), never as the reference or
//! the envelope: a person finds the charge at the provider under the attempt's key
//! (`command-journal identity` derives it).

use super::attempt::AttemptState;
use super::attempt_number::AttemptNumber;
use super::load::{self, Sends};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::lease::CommandCall;
use crate::time::Timestamp;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition, Write};
use serde::Serialize;

/// The collection below the root that holds the late charges.
pub const COLLECTION: &str = "lateCharges";
/// The `journal_corrupt` reason of a malformed late charge document.
pub(crate) const KIND: &str = "malformed late charge document";
/// The exact field set of a late charge document (`lateChargeSchemaVersion` 1).
pub(crate) const FIELDS: [&str; 6] = [
    "lateChargeSchemaVersion",
    "commandKeyHash",
    "attempt",
    "terminalCommitmentHash",
    "reason",
    "recordedAt",
];

/// The document of attempt `attempt`'s late charge, relative to the documents root.
pub(crate) fn path(hash: &Digest, attempt: AttemptNumber) -> String {
    format!(
        "{}/{hash}/{COLLECTION}/{:04}",
        crate::document::root::COLLECTION,
        attempt.get()
    )
}

/// Splits a late charge's document id into its attempt: exactly four digits, 1 to
/// 9999 (the verifier's scan meets every id).
pub fn parse_id(id: &str) -> Option<AttemptNumber> {
    if id.len() != 4 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    AttemptNumber::new(id.parse().ok()?).ok()
}

/// Why the command could not take the charge as its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LateReason {
    /// The charge's attempt was recorded absent (and a later attempt may have opened,
    /// even charged, under a new key).
    AttemptAbsent,
    /// The charge's attempt was recorded as a final refusal: the command failed.
    AttemptDeclined,
}

impl LateReason {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AttemptAbsent => "attempt_absent",
            Self::AttemptDeclined => "attempt_declined",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        match text {
            "attempt_absent" => Ok(Self::AttemptAbsent),
            "attempt_declined" => Ok(Self::AttemptDeclined),
            _ => Err(()),
        }
    }
}

/// A parsed late charge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LateCharge {
    /// The command's key hash (the parent document's id).
    pub command_key_hash: Digest,
    /// The attempt whose key the charge was made under.
    pub attempt: AttemptNumber,
    /// The command-bound commitment of the charge's reference.
    pub commitment: Digest,
    /// Why the command did not take it.
    pub reason: LateReason,
    /// The journal's time of the record.
    pub recorded_at: Timestamp,
}

impl LateCharge {
    /// Parses strictly; `hash` and `attempt` are those of the path it was read under.
    pub(crate) fn parse(
        hash: &Digest,
        attempt: AttemptNumber,
        map: &FieldMap,
    ) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("lateChargeSchemaVersion", 1..=1)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let stored = f.attempt("attempt")?;
        if stored != attempt {
            return Err(f.corrupt("attempt"));
        }
        Ok(Self {
            command_key_hash,
            attempt,
            commitment: f.digest("terminalCommitmentHash")?,
            reason: f.parsed("reason", LateReason::parse)?,
            recorded_at: f.timestamp("recordedAt")?,
        })
    }

    /// The exact stored field map.
    pub(crate) fn encode(&self) -> FieldMap {
        fields::map([
            ("lateChargeSchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("attempt", fields::int(self.attempt.get())),
            (
                "terminalCommitmentHash",
                fields::string(self.commitment.as_str()),
            ),
            ("reason", fields::string(self.reason.as_str())),
            ("recordedAt", fields::timestamp(self.recorded_at)),
        ])
    }
}

/// What `record_late_charge` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateChargeOutput {
    /// The late charge is recorded (now, or by an earlier call with the same charge).
    Recorded {
        /// The attempt whose key charged.
        attempt: AttemptNumber,
        /// Why the command did not take it.
        reason: LateReason,
        /// Whether this call wrote it (`false`: it was recorded already).
        new: bool,
    },
    /// The charge is the command's own outcome (its current attempt succeeded with
    /// it): nothing is late.
    OwnCharge,
}

impl LateChargeOutput {
    /// The metrics' outcome label: `recorded`, `already_recorded` or `own_charge`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Recorded { new: true, .. } => "recorded",
            Self::Recorded { new: false, .. } => "already_recorded",
            Self::OwnCharge => "own_charge",
        }
    }
}

/// A prepared record of a late charge: the command of `call`, the attempt whose key
/// charged, and the charge's command-bound commitment.
#[derive(Debug, Clone)]
pub struct RecordLateCharge {
    call: CommandCall,
    attempt: AttemptNumber,
    commitment: Digest,
}

impl RecordLateCharge {
    /// Prepares the record of a charge with `commitment` (the command-bound commitment
    /// of its terminal reference) under `attempt`'s key.
    pub fn new(call: CommandCall, attempt: AttemptNumber, commitment: Digest) -> Self {
        Self {
            call,
            attempt,
            commitment,
        }
    }

    #[cfg(test)]
    /// The attempt and the charge's commitment it records (for the tables of the
    /// programs that prepare it).
    pub(crate) fn parts(&self) -> (AttemptNumber, &Digest) {
        (self.attempt, &self.commitment)
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<LateChargeOutput>, Halt> {
        let hash = self.call.hash();
        let context = load::load(&self.call, snapshot)?;
        let state = match context.sends {
            Sends::Bound(state) => state,
            Sends::Unbound => return Err(Halt::Reject(JournalError::AttemptMismatch)),
            Sends::Unreadable(_, error) => return Err(Halt::Reject(error)),
        };
        let current = &state.attempt;
        let reason = if self.attempt < current.attempt {
            // Every earlier attempt was recorded absent: attempts open only from it.
            LateReason::AttemptAbsent
        } else if self.attempt > current.attempt {
            return Err(Halt::Reject(JournalError::AttemptMismatch));
        } else {
            match current.state {
                AttemptState::Absent => LateReason::AttemptAbsent,
                AttemptState::Declined => LateReason::AttemptDeclined,
                AttemptState::Succeeded => {
                    let own = context
                        .lifecycle
                        .as_ref()
                        .and_then(|l| l.terminal_commitment.as_ref())
                        == Some(&self.commitment);
                    return if own {
                        Ok(Decision::Observe(LateChargeOutput::OwnCharge))
                    } else {
                        Err(Halt::Reject(JournalError::TerminalConflict))
                    };
                }
                // Still open: the charge is its outcome, for `reconcile_send`.
                _ => return Err(Halt::Reject(JournalError::AttemptMismatch)),
            }
        };
        let late_path = path(hash, self.attempt);
        if !snapshot.was_read(&late_path) {
            return Err(Halt::Read(vec![late_path]));
        }
        if let Some(map) = snapshot.get(&late_path) {
            let stored = LateCharge::parse(hash, self.attempt, map).map_err(Halt::Reject)?;
            if stored.commitment != self.commitment {
                return Err(Halt::Reject(JournalError::TerminalConflict));
            }
            return Ok(Decision::Observe(LateChargeOutput::Recorded {
                attempt: self.attempt,
                reason: stored.reason,
                new: false,
            }));
        }
        let late = LateCharge {
            command_key_hash: hash.clone(),
            attempt: self.attempt,
            commitment: self.commitment.clone(),
            reason,
            recorded_at: self.call.now(),
        };
        let write = Write::Create {
            path: late_path,
            fields: late.encode(),
        };
        Ok(Decision::Mutate(
            vec![write],
            LateChargeOutput::Recorded {
                attempt: self.attempt,
                reason,
                new: true,
            },
        ))
    }
}

impl Transition for RecordLateCharge {
    type Output = LateChargeOutput;

    fn name(&self) -> OperationName {
        OperationName::RecordLateCharge
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = load::first_read(&self.call);
        paths.push(path(self.call.hash(), self.attempt));
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<LateChargeOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

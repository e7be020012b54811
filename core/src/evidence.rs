//! Evidence given from outside the journal (a provider's event, verified first by its
//! adapter; a backfill of events): recorded with no client and no client's lease.
//!
//! Evidence names only the provider idempotency key its object carries (Stripe's
//! `metadata.journal_key`) and what the provider holds for it, as one
//! [`ProviderAnswer`]. The key finds its command through the key index
//! (`providerKeys/{digest of the key}`, written with every attempt that opens), never
//! through a raw value; then the one settle program runs from the answer given
//! (`Source::Given`), under a lease it takes itself as a recovery holder
//! (`recovery_owner`, a fresh lease id): the same takeover, fence and commit proofs
//! as recovery's planned reconciliation. The attempt the answer is about is proven
//! from the stored plan (the key derived at the attempt the index names must be the
//! key given), never taken from the index or the giver.
//!
//! | the key | the answer given | what it does |
//! |---|---|---|
//! | not of the journal's form (`cj1-` and 64 lowercase hex), or no index document | any | nothing read beyond the index, nothing written: [`EvidenceOutcome::UnknownObject`] (another integration's object) |
//! | the open attempt's, its lease expired | a charge or a final refusal | the lease taken over, recorded as the command's success (its envelope stored, replayed to the client) or final failure: `Succeeded`, `Declined` |
//! | | `Closed` read by id just now ([`Evidence::read_by_id`]), the attempt awaiting its customer, its lease expired | the lease taken over, recorded as the command's final failure, nothing charged (the retrieve's rule): `Declined` |
//! | | a "not found", or no verdict (`Unknown`, a replayed unknown, an indeterminate answer; `CustomerMustAct`; a `Closed` not read by id, read too long ago, or about an attempt that does not wait for its customer) | nothing written, no lease taken: `NotFound`, `Inconclusive` (evidence never proves an absence) |
//! | the open attempt's, another holder's lease running | any | nothing written: `InProgress` (given again once the lease has ended, it settles) |
//! | an earlier attempt's, or the current one recorded absent | a charge | recorded as a late charge (listed for a person): `LateCharge` |
//! | | anything else | nothing written: `NothingOpen` |
//! | any attempt's, the command ended | a charge | a late charge, or, its own charge, nothing: `LateCharge`, `AlreadySettled` |
//! | | anything else | nothing written: `AlreadySettled` |
//! | the plan bound to another account than the one declared | any | nothing written: `OtherAccount` |
//! | an index document that is malformed, names no registered command, or whose command's plan derives another key at its attempt | any | `journal_corrupt`, nothing written |
//!
//! The same evidence twice, or evidence in any order, writes nothing twice: the second
//! finds the command ended (its own charge: nothing; a charge it ended without: the
//! late charge already recorded) or the attempt no longer open.

pub(crate) mod checkpoint;
mod index_read;
pub(crate) mod program;
#[cfg(test)]
mod tests;

pub use checkpoint::{
    Advance, EvidenceCheckpoint, Feed, ListingProgress, MAX_FEED_BYTES, Window, window,
};

use crate::call::Labelled;
use crate::sends::provider::ProviderAnswer;
use crate::time::Timestamp;
use serde::Serialize;

/// How long a read by id stays "just now": one lease. A [`Evidence::read_by_id`] read
/// earlier than this before the record's captured time, or after it, is weighed as
/// any answer given.
pub const READ_BY_ID_FRESH_SECONDS: i64 = crate::document::lifecycle::LEASE_SECONDS;

/// One piece of evidence: the provider idempotency key the provider's object names,
/// what the provider holds for it, and, when the adapter read the object by id for
/// it, when. `Debug` shows the answer and that time, never the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Evidence {
    key: String,
    answer: ProviderAnswer,
    read_at: Option<Timestamp>,
}

impl std::fmt::Debug for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evidence")
            .field("answer", &self.answer)
            .field("read_at", &self.read_at)
            .finish_non_exhaustive()
    }
}

impl Evidence {
    /// `answer`, about the object that carries the provider idempotency key `key`, as
    /// something other than a read by id tells it (an event's body, a backfill's): a
    /// `Closed` or `CustomerMustAct` so given is inconclusive.
    pub fn new(key: impl Into<String>, answer: ProviderAnswer) -> Self {
        Self {
            key: key.into(),
            answer,
            read_at: None,
        }
    }

    /// `answer`, the object's current state as the provider's adapter read it **by
    /// id** (read after write: never a search, never an event's snapshot), at or after
    /// `at` on the journal's clock (take `at` before the read). Weighed as a
    /// retrieve's answer: a `Closed` ends an attempt that waits for its customer (its
    /// final failure, nothing charged) when read within
    /// [`READ_BY_ID_FRESH_SECONDS`] before the record, and not after it.
    pub fn read_by_id(key: impl Into<String>, answer: ProviderAnswer, at: Timestamp) -> Self {
        Self {
            key: key.into(),
            answer,
            read_at: Some(at),
        }
    }

    /// What the provider holds for the key.
    pub fn answer(&self) -> &ProviderAnswer {
        &self.answer
    }

    /// When the object was read by id for this answer, if it was.
    pub fn read_at(&self) -> Option<Timestamp> {
        self.read_at
    }

    /// The key, for the index's digest and the settle program only.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Whether the key has the journal's form: `cj1-` and 64 lowercase hex characters
    /// (every attempt's key has it; anything else is another integration's).
    pub(crate) fn journal_key(&self) -> bool {
        self.key
            .strip_prefix("cj1-")
            .is_some_and(|digest| crate::digest::Digest::parse(digest).is_some())
    }
}

/// What recording one piece of evidence did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceOutcome {
    /// The charge is recorded as the command's success, with its result, which the
    /// client's next call replays.
    Succeeded,
    /// The final refusal is recorded: the command failed for good.
    Declined,
    /// The charge is recorded as a late charge (the command ended, or its attempt
    /// moved on, without it), listed for a person (a refund), never dropped.
    LateCharge,
    /// Nothing written: the command had ended already (with this very charge, or
    /// otherwise, and the evidence is no charge it lacks).
    AlreadySettled,
    /// Nothing written: the answer is no charge and names an attempt no longer open
    /// (proven absent, or followed by another).
    NothingOpen,
    /// Nothing written: another holder's lease runs (a client's, or a recovery's);
    /// the same evidence given once it has ended settles the command.
    InProgress,
    /// Nothing written: the evidence says the provider holds nothing for the key,
    /// which proves no absence from outside.
    NotFound,
    /// Nothing written: the evidence tells no outcome (unknown, indeterminate, or the
    /// customer must still act).
    Inconclusive,
    /// Nothing written: the command's plan sends to another provider account than
    /// the one declared.
    OtherAccount,
    /// Nothing written: no attempt of this journal carries the key (another
    /// integration's object, or an attempt opened before the key index existed).
    UnknownObject,
}

impl EvidenceOutcome {
    /// The metrics' label: the serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Declined => "declined",
            Self::LateCharge => "late_charge",
            Self::AlreadySettled => "already_settled",
            Self::NothingOpen => "nothing_open",
            Self::InProgress => "in_progress",
            Self::NotFound => "not_found",
            Self::Inconclusive => "inconclusive",
            Self::OtherAccount => "other_account",
            Self::UnknownObject => "unknown_object",
        }
    }

    /// Every outcome, in declaration order.
    pub const ALL: [Self; 10] = [
        Self::Succeeded,
        Self::Declined,
        Self::LateCharge,
        Self::AlreadySettled,
        Self::NothingOpen,
        Self::InProgress,
        Self::NotFound,
        Self::Inconclusive,
        Self::OtherAccount,
        Self::UnknownObject,
    ];

    /// Whether the evidence stands recorded (a success, a decline or a late charge:
    /// by this call, or, for a late charge, by the same evidence before).
    pub fn recorded(self) -> bool {
        matches!(self, Self::Succeeded | Self::Declined | Self::LateCharge)
    }
}

impl Labelled for EvidenceOutcome {
    fn label(&self) -> &'static str {
        self.as_str()
    }
}

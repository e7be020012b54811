//! The commands that wait for someone: a lease that expired without a terminal
//! transition, with the state of its send (none, an attempt whose outcome is unknown,
//! an attempt proven absent) and what would move it on.
//!
//! Which commands to look at comes from the journal's own index: the lifecycle's
//! `state` field, indexed for collection-group equality queries on the `lifecycle`
//! group only (`firestore.indexes.json`). Every transition that makes a command
//! non-terminal writes `state: leased`, and every terminal one `succeeded` or
//! `failed_final`, in the same commit as everything else it changes; so the query
//! `state == leased` lists exactly the commands not yet settled, at a cost that grows
//! with their number and not with the journal's. Each listed command is then read by
//! a prepared read, which decides from its lifecycle and send documents, strictly
//! parsed, whether it is pending at the captured time and why.

pub(crate) mod late;
pub(crate) mod read;

pub use crate::document::lifecycle::LifecycleState;
pub use crate::key_range::{KeyRange, MAX_KEY_RANGES};

use crate::digest::Digest;
use crate::fence::FenceEpoch;
use crate::sends::status::{digest_text, nullable_seconds_nanos, seconds_nanos};
use crate::sends::{AttemptNumber, AttemptState, LateReason};
use crate::time::Timestamp;
use serde::Serialize;

/// What would move a pending command on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unblock {
    /// The lease expired and nothing is open at the provider (no send, or the last
    /// attempt proven absent): the next call takes the lease over and goes on.
    Retry,
    /// An attempt's outcome is unknown before its cutoff: a retry re-sends it with
    /// the same key, or the provider's evidence for the key settles it.
    ResendOrEvidence,
    /// An attempt's outcome is unknown past its cutoff: only the provider's evidence
    /// settles it (a "not found" from `absenceProvableFrom` on).
    Evidence,
    /// An attempt's outcome is unknown past its cutoff and no absence can be proven
    /// (the provider may have forgotten the key, or the plan's lookup is
    /// `final_state`): a success or a decline found at the provider settles it,
    /// otherwise a person.
    EvidenceOrPerson,
    /// The provider answered the attempt as indeterminate (`replayed_unknown`,
    /// `indeterminate`: Stripe's stored 500) and may still complete it: only its final
    /// state (a charge or a refusal for the key) settles it, whatever the cutoff, and
    /// no "not found" ever does, so no new key is issued (`docs/providers.md`,
    /// "Indeterminate answers"). A person if it never comes.
    FinalEvidence,
    /// The attempt waits for the customer (`awaiting_customer`: 3-D Secure, a hosted
    /// page): the customer's return, or the provider's object read by id (a charge, a
    /// refusal, or its final state with nothing charged), settles it; no "not found"
    /// ever does, so no new key is issued while the customer may still pay.
    Customer,
}

impl Unblock {
    /// Every reason, in declaration order.
    pub const ALL: [Self; 6] = [
        Self::Retry,
        Self::ResendOrEvidence,
        Self::Evidence,
        Self::EvidenceOrPerson,
        Self::FinalEvidence,
        Self::Customer,
    ];

    /// The serialized name: `retry`, `resend_or_evidence`, `evidence`,
    /// `evidence_or_person`, `final_evidence` or `customer` (also the metrics'
    /// `reason` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::ResendOrEvidence => "resend_or_evidence",
            Self::Evidence => "evidence",
            Self::EvidenceOrPerson => "evidence_or_person",
            Self::FinalEvidence => "final_evidence",
            Self::Customer => "customer",
        }
    }
}

/// The send state of a pending command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSend {
    /// The current attempt.
    pub attempt: AttemptNumber,
    /// `sending`, `ambiguous`, `replayed_unknown`, `indeterminate`,
    /// `awaiting_customer` or `absent`.
    pub state: AttemptState,
    /// The attempt's stored cutoff, `{"seconds": S, "nanoseconds": N}`.
    #[serde(serialize_with = "seconds_nanos")]
    pub send_cutoff_at: Timestamp,
    /// While the outcome is unknown, the instant from which a provider's "not found"
    /// is accepted; `null` otherwise.
    #[serde(serialize_with = "nullable_seconds_nanos")]
    pub absence_provable_from: Option<Timestamp>,
}

/// One command that waits, redacted as `status` is: its key hash, never a raw id,
/// payload, holder or key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCommand {
    /// The command's key hash (64 lowercase hex).
    #[serde(serialize_with = "digest_text")]
    pub command_key_hash: Digest,
    /// Always [`LifecycleState::Leased`] (`leased`): a lease was taken and no terminal
    /// transition followed.
    pub state: LifecycleState,
    /// The fence of the expired lease.
    pub fence_epoch: FenceEpoch,
    /// When that lease expired: the command has waited since then.
    #[serde(serialize_with = "seconds_nanos")]
    pub since: Timestamp,
    /// The send, once a plan is bound; `null` for a command that never sent under
    /// the send layer.
    pub send: Option<PendingSend>,
    /// What would move it on.
    pub unblocked_by: Unblock,
}

/// A charge its command ended without (`checkoutRequests/{hash}/lateCharges/{attempt}`:
/// its attempt was recorded absent or declined), as `pending` lists it after the
/// waiting commands: money moved that no settled command accounts for, for a person to
/// refund. Redacted as `status` is: the key hash, never a key or a charge id (a person
/// finds the charge at the provider under the attempt's key, which `command-journal
/// identity` derives).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LateChargeListed {
    /// The command's key hash (64 lowercase hex).
    #[serde(serialize_with = "digest_text")]
    pub command_key_hash: Digest,
    /// The charge: its attempt, why the command did not take it, when it was
    /// recorded.
    pub late_charge: LateChargeDetail,
    /// Always `refund`: a person settles it.
    pub unblocked_by: &'static str,
}

/// What a listed late charge says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LateChargeDetail {
    /// The attempt whose key charged.
    pub attempt: AttemptNumber,
    /// `attempt_absent` or `attempt_declined`.
    pub reason: LateReason,
    /// When the journal recorded it, `{"seconds": S, "nanoseconds": N}`.
    #[serde(serialize_with = "seconds_nanos")]
    pub recorded_at: Timestamp,
}

#[cfg(test)]
mod tests;

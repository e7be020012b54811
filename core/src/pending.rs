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
//! [`PendingRead`], which decides from its lifecycle and send documents, strictly
//! parsed, whether it is pending at the captured time and why.

use crate::digest::Digest;
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::sends::load::{self, Sends};
use crate::sends::status::{digest_text, nullable_seconds_nanos, seconds_nanos};
use crate::sends::{AttemptNumber, AttemptState, absence};
use crate::time::Timestamp;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};
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
    /// any more (the provider may have forgotten the key): a success or a decline
    /// found at the provider settles it, otherwise a person.
    EvidenceOrPerson,
}

impl Unblock {
    /// Every reason, in declaration order.
    pub const ALL: [Self; 4] = [
        Self::Retry,
        Self::ResendOrEvidence,
        Self::Evidence,
        Self::EvidenceOrPerson,
    ];

    /// The serialized name: `retry`, `resend_or_evidence`, `evidence` or
    /// `evidence_or_person` (also the metrics' `reason` label).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Retry => "retry",
            Self::ResendOrEvidence => "resend_or_evidence",
            Self::Evidence => "evidence",
            Self::EvidenceOrPerson => "evidence_or_person",
        }
    }
}

/// The send state of a pending command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSend {
    /// The current attempt.
    pub attempt: AttemptNumber,
    /// `sending`, `ambiguous`, `replayed_unknown` or `absent`.
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

/// A prepared read of one listed command: is it pending at `now`, and why.
#[derive(Debug, Clone)]
pub struct PendingRead {
    hash: Digest,
    now: Timestamp,
}

impl PendingRead {
    /// Prepares the read of the command `hash` (from the listing) at the captured
    /// time `now`.
    pub fn new(hash: Digest, now: Timestamp) -> Self {
        Self { hash, now }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Option<PendingCommand>, Halt> {
        let Some(map) = snapshot.get(&lifecycle::path(&self.hash)) else {
            // Listed by the index but gone: lifecycles are never deleted.
            return Err(Halt::Reject(JournalError::corrupt(
                "a listed lifecycle does not exist",
            )));
        };
        let current = Lifecycle::parse(&self.hash, map)?;
        if current.state != LifecycleState::Leased || self.now < current.lease_expires_at {
            // Settled since the listing, or its lease still runs: nobody waits yet.
            return Ok(None);
        }
        let pending = |send: Option<PendingSend>, unblocked_by| PendingCommand {
            command_key_hash: self.hash.clone(),
            state: current.state,
            fence_epoch: current.fence_epoch,
            since: current.lease_expires_at,
            send,
            unblocked_by,
        };
        Ok(Some(match load::load_sends(&self.hash, snapshot)? {
            Sends::Unbound => pending(None, Unblock::Retry),
            Sends::Unreadable(_, error) => return Err(Halt::Reject(error)),
            Sends::Bound(state) => {
                let a = &state.attempt;
                let provable = absence::provable_from(&state.plan, a, self.now);
                let unblocked_by = match a.state {
                    AttemptState::Absent => Unblock::Retry,
                    AttemptState::Sending | AttemptState::Ambiguous
                        if self.now < a.send_cutoff_at =>
                    {
                        Unblock::ResendOrEvidence
                    }
                    AttemptState::Sending
                    | AttemptState::Ambiguous
                    | AttemptState::ReplayedUnknown => match provable {
                        Some(_) => Unblock::Evidence,
                        None => Unblock::EvidenceOrPerson,
                    },
                    // A terminal send under a leased lifecycle: the two are written
                    // by one commit, so this is a broken journal.
                    AttemptState::Succeeded | AttemptState::Declined => {
                        return Err(Halt::Reject(JournalError::corrupt(
                            "a terminal send under a leased lifecycle",
                        )));
                    }
                };
                let open = a.state.outcome_unknown();
                pending(
                    Some(PendingSend {
                        attempt: a.attempt,
                        state: a.state,
                        send_cutoff_at: a.send_cutoff_at,
                        absence_provable_from: provable.filter(|_| open),
                    }),
                    unblocked_by,
                )
            }
        }))
    }
}

impl Transition for PendingRead {
    type Output = Option<PendingCommand>;

    fn name(&self) -> OperationName {
        OperationName::Pending
    }

    /// The lifecycle and every document the send layer reads.
    fn paths(&self) -> Vec<String> {
        let mut paths = vec![lifecycle::path(&self.hash)];
        paths.extend(load::send_paths(&self.hash));
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Option<PendingCommand>> {
        match self.decide_inner(snapshot) {
            Ok(pending) => Decision::Observe(pending),
            Err(halt) => halt.decision(),
        }
    }
}

#[cfg(test)]
mod tests;

//! The prepared read of one listed command: is it pending at the captured time, and
//! why, decided from its lifecycle and send documents, strictly parsed.

use super::{PendingCommand, PendingSend, Unblock};
use crate::digest::Digest;
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::error::JournalError;
use crate::sends::load::{self, Sends};
use crate::sends::{AttemptState, absence};
use crate::time::Timestamp;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};

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
                    // The customer may still pay: their return or the object by id.
                    AttemptState::AwaitingCustomer => Unblock::Customer,
                    // The provider may still complete it: its final state alone.
                    state if state.indeterminate() => Unblock::FinalEvidence,
                    AttemptState::Sending | AttemptState::Ambiguous
                        if self.now < a.send_cutoff_at =>
                    {
                        Unblock::ResendOrEvidence
                    }
                    AttemptState::Sending
                    | AttemptState::Ambiguous
                    | AttemptState::ReplayedUnknown
                    | AttemptState::Indeterminate => match provable {
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

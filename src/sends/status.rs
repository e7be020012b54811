//! `status` with the send layer: B2B's redacted status, plus, once a plan is bound,
//! the current attempt's number, state, cutoff and whether it needs reconciliation.

use super::load::{self, Sends};
use crate::error::JournalError;
use crate::lease::{LeaseCall, StatusOutput, StatusRead};
use crate::time::SecondsNanos;
use crate::time::Timestamp;
use crate::transaction::{Decision, OperationName, Snapshot, Step, Transition};
use serde::Serialize;

/// The send state `status` shows: no key, plan, account or reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendStatus {
    /// The current attempt, from 1.
    pub attempt: i64,
    /// `sending`, `ambiguous`, `absent`, `succeeded` or `declined`.
    pub state: &'static str,
    /// The attempt's stored cutoff.
    #[serde(serialize_with = "seconds_nanos")]
    pub send_cutoff_at: Timestamp,
    /// The outcome is unknown and the cutoff has passed: only `reconcile_send` moves
    /// the command now.
    pub needs_reconciliation: bool,
}

fn seconds_nanos<S: serde::Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    SecondsNanos(*at).serialize(s)
}

/// B2B's status and the send state. Serializes as B2B's status object, with a `send`
/// object added only once a plan is bound (so a command without sends prints exactly
/// what it printed before).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommandStatus {
    /// B2B's redacted status.
    #[serde(flatten)]
    pub command: StatusOutput,
    /// The send state, `None` while no plan is bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send: Option<SendStatus>,
}

/// A prepared read-only status with the send layer.
#[derive(Debug, Clone)]
pub struct SendStatusRead {
    call: LeaseCall,
    status: StatusRead,
}

impl SendStatusRead {
    /// Prepares a status read; `call`'s owner is not used.
    pub fn new(call: LeaseCall) -> Self {
        Self {
            status: StatusRead::new(call.clone()),
            call,
        }
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<CommandStatus>, Step> {
        let context = load::load(&self.call, snapshot)?;
        let command = match self.status.decide(snapshot) {
            Decision::Observe(status) => status,
            Decision::Reject(error) => return Err(Step::Reject(error)),
            Decision::Read(paths) => return Err(Step::Read(paths)),
            Decision::Mutate(..) => {
                return Err(Step::Reject(JournalError::internal("status wrote")));
            }
        };
        let send = match context.sends {
            Sends::Unbound => None,
            Sends::Unreadable(error) => return Err(Step::Reject(error)),
            Sends::Bound(state) => {
                let a = state.attempt;
                Some(SendStatus {
                    attempt: a.attempt,
                    state: a.state.as_str(),
                    send_cutoff_at: a.send_cutoff_at,
                    needs_reconciliation: a.state.outcome_unknown()
                        && self.call.now() >= a.send_cutoff_at,
                })
            }
        };
        Ok(Decision::Observe(CommandStatus { command, send }))
    }
}

impl Transition for SendStatusRead {
    type Output = CommandStatus;

    fn name(&self) -> OperationName {
        OperationName::Status
    }

    fn paths(&self) -> Vec<String> {
        load::first_read(&self.call)
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<CommandStatus> {
        self.decide_inner(snapshot).unwrap_or_else(Step::decision)
    }
}

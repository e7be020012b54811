//! `status` with the send layer: B2B's redacted status, plus, once a plan is bound,
//! the stored plan's fingerprint, the current attempt's number, state, cutoff, whether
//! it needs reconciliation and from when its absence is provable.

use super::absence;
use super::attempt::AttemptState;
use super::attempt_number::AttemptNumber;
use super::load::{self, Sends};
use super::plan::{ProviderPlan, attempt_key};
use super::reverted::{Rule, reverted};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::lease::{CommandCall, StatusOutput, StatusRead};
use crate::time::SecondsNanos;
use crate::time::Timestamp;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition};
use serde::Serialize;

/// The send state `status` shows: no key, plan parameters, account or reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SendStatus {
    /// The stored plan's fingerprint (64 lowercase hex): compare it with
    /// `command-journal identity`'s `planFingerprint` of the plan a service sends.
    #[serde(serialize_with = "digest_text")]
    pub plan_fingerprint: Digest,
    /// The current attempt.
    pub attempt: AttemptNumber,
    /// `sending`, `ambiguous`, `replayed_unknown`, `absent`, `succeeded` or
    /// `declined`.
    pub state: AttemptState,
    /// The attempt's stored cutoff, `{"seconds": S, "nanoseconds": N}`.
    #[serde(serialize_with = "seconds_nanos")]
    pub send_cutoff_at: Timestamp,
    /// The outcome is unknown and the cutoff has passed, or the key can no longer
    /// tell (`replayed_unknown`): only `reconcile_send` moves the command now.
    pub needs_reconciliation: bool,
    /// While the outcome is unknown, the instant from which a provider's "not found"
    /// is accepted (`docs/providers.md`, "Proven absence"); `null` once the outcome
    /// is known, or when no absence can be proven any more (the provider may have
    /// forgotten the key: evidence or an operator settles it).
    #[serde(serialize_with = "nullable_seconds_nanos")]
    pub absence_provable_from: Option<Timestamp>,
    /// The instant the attempt's customer must have acted by: `act_by` of the stored
    /// plan's customer window and the stored attempt (the cutoff without a window).
    /// Not serialized: `status` prints what it printed.
    #[serde(skip)]
    pub act_by: Timestamp,
    /// The current attempt's provider key, derived from the stored plan's operation
    /// (what a lookup asks for). Never serialized.
    #[serde(skip)]
    pub key: String,
}

/// Serializes a digest as its hex text (`status`'s and `pending`'s outputs).
pub(crate) fn digest_text<S: serde::Serializer>(digest: &Digest, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(digest.as_str())
}

/// Serializes a time as `{"seconds": S, "nanoseconds": N}`.
pub(crate) fn seconds_nanos<S: serde::Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    SecondsNanos(*at).serialize(s)
}

/// [`seconds_nanos`], or `null`.
pub(crate) fn nullable_seconds_nanos<S: serde::Serializer>(
    at: &Option<Timestamp>,
    s: S,
) -> Result<S::Ok, S::Error> {
    at.map(SecondsNanos).serialize(s)
}

/// B2B's status and the send state. Serializes as B2B's status object, with a `send`
/// object added only once a plan is bound (so a command without sends prints exactly
/// what it printed before).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    call: CommandCall,
    status: StatusRead,
    plan: Option<ProviderPlan>,
}

impl SendStatusRead {
    /// Prepares a status read: a read needs no lease, so it takes no owner.
    pub fn new(call: CommandCall) -> Self {
        Self {
            status: StatusRead::new(call.clone()),
            call,
            plan: None,
        }
    }

    /// The same read that first answers `plan_conflict` when a plan other than `plan`
    /// is bound (what `execute` asks before it derives a lookup key).
    pub fn for_plan(mut self, plan: &ProviderPlan) -> Self {
        self.plan = Some(plan.clone());
        self
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<CommandStatus>, Halt> {
        let context = load::load(&self.call, snapshot)?;
        let command = match self.status.decide(snapshot) {
            Decision::Observe(status) => status,
            Decision::Reject(error) => return Err(Halt::Reject(error)),
            Decision::Read(paths) => return Err(Halt::Read(paths)),
            Decision::Mutate(..) => {
                return Err(Halt::Reject(JournalError::internal("status wrote")));
            }
        };
        if let (Some(plan), Some(bound)) = (&self.plan, context.sends.plan())
            && !bound.is(plan, self.call.identity())
            && !reverted(Rule::PlanFirst)
        {
            return Err(Halt::Reject(JournalError::PlanConflict));
        }
        let now = self.call.now();
        let send = match context.sends {
            Sends::Unbound => None,
            Sends::Unreadable(_, error) => return Err(Halt::Reject(error)),
            Sends::Bound(state) => {
                let a = &state.attempt;
                let open = a.state.outcome_unknown();
                let provable_from = absence::provable_from(&state.plan, a, now);
                Some(SendStatus {
                    plan_fingerprint: state.plan.plan_fingerprint.clone(),
                    attempt: a.attempt,
                    state: a.state,
                    send_cutoff_at: a.send_cutoff_at,
                    act_by: state.plan.act_by(a),
                    needs_reconciliation: open
                        && (now >= a.send_cutoff_at || a.state.key_cannot_tell()),
                    absence_provable_from: provable_from.filter(|_| open),
                    key: attempt_key(self.call.identity(), &state.plan.operation, a.attempt),
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
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

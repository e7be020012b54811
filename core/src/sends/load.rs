//! The read set of every send operation and its validation before any decision: the
//! lease's own (root, revision-1 event, lifecycle, its current event, the absent next
//! one) plus the plan, the send document, its current send event and the absent next
//! one, and the agreement between the send layer and the lifecycle.

use super::absence;
use super::attempt::{self, AttemptState, OutcomeSource, SendAttempt};
use super::bound_plan::{self, BoundPlan};
use super::event::{self, SendEvent, SendEventType};
use super::plan::{ProviderPlan, send_cutoff_at};
use super::reverted::{Rule, reverted};
use crate::digest::Digest;
use crate::document::lifecycle::{Lifecycle, LifecycleState};
use crate::envelope::stored;
use crate::error::JournalError;
use crate::lease::{CommandCall, Loaded};
use crate::transaction::{Halt, Snapshot};

/// Send events read speculatively with the send document, so that the common
/// histories (open, outcome, one re-send) need a single read.
const SPECULATIVE_EVENTS: std::ops::RangeInclusive<i64> = 1..=3;

/// The first read of every send operation.
pub fn first_read(call: &CommandCall) -> Vec<String> {
    let mut paths = call.first_read();
    paths.extend(send_paths(call.hash()));
    paths
}

/// The send layer's own first read: the plan, the send record, the speculative send
/// events and the stored result (which a success with an envelope must have).
pub(crate) fn send_paths(hash: &Digest) -> Vec<String> {
    let mut paths = vec![bound_plan::path(hash), attempt::path(hash)];
    paths.extend(SPECULATIVE_EVENTS.map(|r| event::path(hash, r)));
    paths.push(stored::path(hash));
    paths
}

/// A bound plan and the current attempt, validated against each other and their
/// current send event.
#[derive(Debug, Clone)]
pub(crate) struct SendState {
    /// The bound plan.
    pub plan: BoundPlan,
    /// The current attempt.
    pub attempt: SendAttempt,
}

/// What the send layer of a command holds.
#[derive(Debug, Clone)]
pub(crate) enum Sends {
    /// No plan bound, no send record: nothing was ever sent under the send layer.
    Unbound,
    /// A plan and its current attempt.
    Bound(Box<SendState>),
    /// A send record exists but fails to parse or its cutoff disagrees with the plan:
    /// its send time is unknown. `begin_send` answers `send_cutoff_passed`; every
    /// other operation fails with this error (after the plan check).
    Unreadable(Box<BoundPlan>, JournalError),
}

impl Sends {
    /// The bound plan, when one is.
    pub(crate) fn plan(&self) -> Option<&BoundPlan> {
        match self {
            Self::Unbound => None,
            Self::Bound(state) => Some(&state.plan),
            Self::Unreadable(plan, _) => Some(plan),
        }
    }
}

/// Everything a send decision starts from.
pub(crate) struct Context {
    /// The command's current lifecycle, `None` before its first lease.
    pub lifecycle: Option<Lifecycle>,
    /// The command's send documents, as loaded and cross-checked.
    pub sends: Sends,
}

fn corrupt(reason: &'static str) -> Halt {
    Halt::Reject(JournalError::corrupt(reason))
}

/// Loads and validates the lease's documents and the send layer's, merging the
/// follow-up reads both ask for into one.
pub(crate) fn load(call: &CommandCall, snapshot: &Snapshot) -> Result<Context, Halt> {
    let lease = call.load(snapshot);
    let sends = load_sends(call.hash(), snapshot);
    let (loaded, sends) = match (lease, sends) {
        (Err(Halt::Reject(error)), _) | (_, Err(Halt::Reject(error))) => {
            return Err(Halt::Reject(error));
        }
        (Err(Halt::Read(mut a)), Err(Halt::Read(b))) => {
            a.extend(b);
            return Err(Halt::Read(a));
        }
        (Err(Halt::Read(a)), Ok(_)) | (Ok(_), Err(Halt::Read(a))) => return Err(Halt::Read(a)),
        (Ok(loaded), Ok(sends)) => (loaded, sends),
    };
    let Loaded { current, .. } = loaded;
    if let Sends::Bound(state) = &sends {
        let Some(lifecycle) = &current else {
            return Err(corrupt("provider send record without a lifecycle"));
        };
        if !agrees(state, lifecycle) {
            return Err(corrupt("provider send record disagrees with the lifecycle"));
        }
    }
    Ok(Context {
        lifecycle: current,
        sends,
    })
}

/// The bound state an outcome or a reconciliation needs: `plan_conflict` for a plan
/// other than the bound one (checked first), `attempt_mismatch` without a plan, the
/// parse error of an unreadable send record.
/// `plan` is `None` for a holder that takes the bound plan as it is (recovery).
pub(crate) fn bound_state(
    sends: Sends,
    plan: Option<&ProviderPlan>,
    call: &CommandCall,
) -> Result<Box<SendState>, Halt> {
    if let (Some(bound), Some(plan)) = (sends.plan(), plan)
        && !bound.is(plan, call.identity())
        && !reverted(Rule::PlanFirst)
    {
        return Err(Halt::Reject(JournalError::PlanConflict));
    }
    match sends {
        Sends::Unbound => Err(Halt::Reject(JournalError::AttemptMismatch)),
        Sends::Unreadable(_, error) => Err(Halt::Reject(error)),
        Sends::Bound(state) => Ok(state),
    }
}

/// The send layer and the lifecycle tell one story: no send fence ahead of the
/// lifecycle's, and an attempt is closed exactly when the command is terminal, by the
/// same commit (same time, same fence).
fn agrees(state: &SendState, lifecycle: &Lifecycle) -> bool {
    let a = &state.attempt;
    let fences_fit = state.plan.bound_fence_epoch <= a.first_sent_fence_epoch
        && a.last_sent_fence_epoch <= lifecycle.fence_epoch
        && a.updated_by() <= lifecycle.fence_epoch
        && lifecycle.created_at <= state.plan.bound_at;
    let terminal_fits = match (a.state, lifecycle.state) {
        (AttemptState::Succeeded, LifecycleState::Succeeded)
        | (AttemptState::Declined, LifecycleState::FailedFinal) => a.outcome.is_some_and(|o| {
            o.at == lifecycle.updated_at && o.fence_epoch == lifecycle.fence_epoch
        }),
        (AttemptState::Succeeded | AttemptState::Declined, _) => false,
        (_, LifecycleState::Leased) => true,
        (_, _) => false,
    };
    fences_fit && terminal_fits
}

/// The send layer's documents, parsed and checked against each other (not against
/// the lifecycle): what the guard of `complete`/`fail` reads too.
pub(crate) fn load_sends(hash: &Digest, snapshot: &Snapshot) -> Result<Sends, Halt> {
    let plan = snapshot.get(&bound_plan::path(hash));
    let current = snapshot.get(&attempt::path(hash));
    let (plan, current) = match (plan, current) {
        (None, None) => {
            let stray = SPECULATIVE_EVENTS
                .clone()
                .any(|r| snapshot.get(&event::path(hash, r)).is_some());
            if stray {
                return Err(corrupt("provider send audit event without a send record"));
            }
            return Ok(Sends::Unbound);
        }
        (Some(plan), Some(current)) => (plan, current),
        _ => {
            return Err(corrupt(
                "provider plan without its send record, or the reverse",
            ));
        }
    };
    let plan = BoundPlan::parse(hash, plan).map_err(Halt::Reject)?;
    let attempt = match SendAttempt::parse(hash, current) {
        Ok(attempt) => attempt,
        Err(error) => return Ok(Sends::Unreadable(Box::new(plan), error)),
    };
    if send_cutoff_at(attempt.first_sent_at, plan.key_retention_seconds)
        != Some(attempt.send_cutoff_at)
    {
        return Ok(Sends::Unreadable(
            Box::new(plan),
            JournalError::corrupt("send cutoff disagrees with the plan's key retention"),
        ));
    }
    if attempt.attempt == 1
        && (plan.bound_at != attempt.first_sent_at
            || plan.bound_fence_epoch != attempt.first_sent_fence_epoch)
    {
        return Err(corrupt("provider plan disagrees with attempt 1"));
    }
    let partner_path = event::path(hash, attempt.send_revision);
    let next_path = event::path(hash, attempt.send_revision + 1);
    let missing: Vec<String> = [&partner_path, &next_path]
        .into_iter()
        .filter(|p| !snapshot.was_read(p))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(Halt::Read(missing));
    }
    if snapshot.get(&next_path).is_some() {
        return Err(corrupt("the next provider send audit event already exists"));
    }
    let partner = snapshot
        .get(&partner_path)
        .ok_or_else(|| corrupt("provider send record without its current audit event"))?;
    let event =
        SendEvent::parse(&event::id(hash, attempt.send_revision), partner).map_err(Halt::Reject)?;
    if !partners(&attempt, &event) {
        return Err(corrupt(
            "provider send record disagrees with its current audit event",
        ));
    }
    if !one_commit(snapshot, &attempt::path(hash), &partner_path) {
        return Err(corrupt(
            "provider send record and its current audit event were not written by one commit",
        ));
    }
    let result_present = snapshot.get(&stored::path(hash)).is_some();
    if attempt.version >= 2 && attempt.result_stored != result_present {
        return Err(corrupt(
            "stored result disagrees with the provider send record",
        ));
    }
    // An absence is built on only if it was provable when recorded: in its window,
    // and recorded from a state whose absence is provable at all (its event says which).
    let sent = absence::Sent::in_state(&attempt, event.from_state);
    if attempt.state == AttemptState::Absent
        && !absence::recorded_in_window(&plan, sent, attempt.updated_at())
    {
        return Err(corrupt("recorded absence outside its provable window"));
    }
    Ok(Sends::Bound(Box::new(SendState { plan, attempt })))
}

/// The send record's last write and its current event belong to one commit, and the
/// event was never rewritten: the event's create time is the record's update time and
/// its own update time. Checked where the reader gave commit times (the runner and
/// the in-memory store always do).
fn one_commit(snapshot: &Snapshot, record: &str, event: &str) -> bool {
    match (snapshot.stamps(record), snapshot.stamps(event)) {
        (Some(record), Some(event)) => {
            record.updated == event.created && event.created == event.updated
        }
        _ => true,
    }
}

/// The send document and its current event describe the same mutation.
pub(crate) fn partners(attempt: &SendAttempt, event: &SendEvent) -> bool {
    let source = attempt.outcome.map(|o| o.source);
    let type_fits = match event.event_type {
        SendEventType::Opened => source.is_none() && !attempt.resent(),
        SendEventType::Resent => source.is_none() && attempt.resent(),
        SendEventType::Ambiguous
        | SendEventType::ReplayedUnknown
        | SendEventType::Indeterminate
        | SendEventType::AwaitingCustomer
        | SendEventType::Succeeded
        | SendEventType::Declined => source == Some(OutcomeSource::ProviderAnswer),
        SendEventType::ReconciledSucceeded
        | SendEventType::ReconciledDeclined
        | SendEventType::ReconciledAbsent => source == Some(OutcomeSource::Reconciliation),
    };
    type_fits
        && event.command_key_hash == attempt.command_key_hash
        && event.event_type.to_state() == attempt.state
        && event.attempt == attempt.attempt
        && event.fence_epoch == attempt.updated_by()
        && event.occurred_at == attempt.updated_at()
        && event.send_cutoff_at == attempt.send_cutoff_at
}

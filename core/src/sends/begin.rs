//! `begin_send`: a permit to send, recorded before the caller sends.
//!
//! ```text
//! another plan bound (before any cutoff or state rule) -> plan_conflict
//! outcome unknown, now ≥ sendCutoffAt, or send record unreadable -> send_cutoff_passed (anyone)
//! replayed_unknown or indeterminate (the key can no longer tell)
//!                                                 -> send_cutoff_passed (anyone): look it up
//! not the holder / not the fence                  -> lease_not_held / stale_fence
//! command terminal                                -> the terminal outcome (read-only)
//! lease not active                                -> clock_regression / lease_expired
//! no plan bound                                   -> bind plan, open attempt 1 (sending)
//! outcome unknown, fence already sent it, lease runs -> the same permit (read-only,
//!                                                    even at an earlier-captured time)
//! sending or ambiguous, a later fence             -> re-send: same attempt and key
//! attempt absent, a late charge of it recorded  -> send_cutoff_passed (anyone): no new key
//! attempt absent (proven: see `absence`)         -> open attempt n + 1, new key and cutoff
//!                                                    (the late charge's absence asserted)
//! ```
//!
//! Every commit that opens an attempt (1, or n + 1) also creates the attempt key's
//! index document (`key_index`), so that evidence naming only the key finds its
//! command; a re-send opens nothing and writes no index.
//!
//! Every permit states its lease's expiry: the request must not be sent at or after
//! it, which is what lets a later absence be proven (`absence`).

use super::attempt::{self, AttemptState, SendAttempt};
use super::attempt_number::AttemptNumber;
use super::bound_plan::{self, BoundPlan};
use super::event::SendEventType;
use super::key_index::{self, KeyIndex};
use super::late;
use super::load::{self, Context, SendState, Sends};
use super::mutation::{active, held, next_revision, record};
use super::output::{BeginSendOutput, SendPermit};
use super::plan::{ProviderPlan, attempt_key, send_cutoff_at};
use super::reverted::{Rule, reverted};
use crate::document::lifecycle::{self, LEASE_SECONDS, Lifecycle, LifecycleState};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::CommandIdentity;
use crate::lease::{LeaseCall, TerminalOutput};
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition, Write};

/// The index document of attempt 1's key under `plan` for the command `identity`,
/// read with `begin_send`'s first read: the first send creates it.
pub(crate) fn first_index(identity: &CommandIdentity, plan: &ProviderPlan) -> String {
    key_index::path(&attempt_key(
        identity,
        plan.operation(),
        AttemptNumber::FIRST,
    ))
}

/// A prepared `begin_send` by the holder in `call` at `fence` for `plan`.
#[derive(Debug, Clone)]
pub struct BeginSend {
    call: LeaseCall,
    fence: FenceEpoch,
    plan: ProviderPlan,
}

impl BeginSend {
    /// Prepares a `begin_send` of `plan` (checked against the bound plan's fingerprint
    /// for `call`'s command).
    pub fn new(call: LeaseCall, fence: FenceEpoch, plan: ProviderPlan) -> Self {
        Self { call, fence, plan }
    }

    #[cfg(test)]
    /// The fence it is asked under.
    pub(crate) fn fence(&self) -> FenceEpoch {
        self.fence
    }

    /// The permit of `attempt` under the bound `plan` (its customer window).
    fn permit(&self, attempt: &SendAttempt, lifecycle: &Lifecycle, plan: &BoundPlan) -> SendPermit {
        SendPermit {
            lease_expires_at: lifecycle.lease_expires_at,
            attempt: attempt.attempt,
            resend: attempt.resent(),
            provider_idempotency_key: attempt_key(
                self.call.identity(),
                self.plan.operation(),
                attempt.attempt,
            ),
            send_cutoff_at: attempt.send_cutoff_at,
            act_by: plan.act_by(attempt),
        }
    }

    fn opened(&self, attempt: AttemptNumber, send_revision: i64) -> Result<SendAttempt, Halt> {
        let now = self.call.now();
        let cutoff = send_cutoff_at(now, self.plan.key_retention_seconds())
            .ok_or(Halt::Reject(JournalError::ClockRegression))?;
        Ok(SendAttempt {
            command_key_hash: self.call.hash().clone(),
            send_revision,
            attempt,
            state: AttemptState::Sending,
            first_sent_at: now,
            first_sent_fence_epoch: self.fence,
            send_cutoff_at: cutoff,
            last_sent_at: now,
            last_sent_fence_epoch: self.fence,
            outcome: None,
            result_stored: false,
            version: attempt::VERSION,
        })
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<BeginSendOutput>, Halt> {
        let call = &self.call;
        let now = call.now();
        let Context {
            lifecycle, sends, ..
        } = load::load(call.command(), snapshot)?;
        // The plan first: another plan is a conflict before any cutoff or state rule.
        let plan_first = !reverted(Rule::PlanFirst);
        let other_plan = sends
            .plan()
            .is_some_and(|bound| !bound.is(&self.plan, call.identity()));
        if plan_first && other_plan {
            return Err(Halt::Reject(JournalError::PlanConflict));
        }
        // The cutoff outranks every permit, a same-holder recovery included.
        let leased = lifecycle
            .as_ref()
            .is_some_and(|l| l.state == LifecycleState::Leased);
        match &sends {
            Sends::Unreadable(..) => return Err(Halt::Reject(JournalError::SendCutoffPassed)),
            // So does a key that can no longer tell: its attempt is looked up, never
            // re-sent.
            Sends::Bound(state)
                if leased
                    && state.attempt.state.outcome_unknown()
                    && (now >= state.attempt.send_cutoff_at
                        || state.attempt.state.key_cannot_tell()) =>
            {
                return Err(Halt::Reject(JournalError::SendCutoffPassed));
            }
            _ => {}
        }
        if other_plan {
            // Reverted (tests only): the plan checked after the cutoff rule, as before.
            return Err(Halt::Reject(JournalError::PlanConflict));
        }
        let lifecycle = held(lifecycle.as_ref(), call.owner(), self.fence)?;
        match lifecycle.state {
            LifecycleState::Succeeded => {
                return Ok(Decision::Observe(BeginSendOutput::Terminal(
                    TerminalOutput::Succeeded,
                )));
            }
            LifecycleState::FailedFinal => {
                return Ok(Decision::Observe(BeginSendOutput::Terminal(
                    TerminalOutput::FailedFinal,
                )));
            }
            LifecycleState::Leased => {}
        }
        // The same holder and fence again (a lost response): the same permit and no
        // write while its lease runs, even at an earlier-captured time, as the lease's
        // own same-holder recovery.
        if let Sends::Bound(state) = &sends
            && state.attempt.state.outcome_unknown()
            && state.attempt.last_sent_fence_epoch == self.fence
            && !lifecycle.released
            && now < lifecycle.lease_expires_at
        {
            return Ok(Decision::Observe(BeginSendOutput::Permitted(self.permit(
                &state.attempt,
                lifecycle,
                &state.plan,
            ))));
        }
        active(lifecycle, now)?;
        let hash = call.hash();
        let Sends::Bound(state) = sends else {
            if snapshot
                .get(&first_index(self.call.identity(), &self.plan))
                .is_some()
            {
                return Err(Halt::Reject(JournalError::corrupt(
                    "a provider key index before its attempt opened",
                )));
            }
            // First send: bind the plan and open attempt 1. The lifecycle is rewritten
            // unchanged so that the commit is conditioned on it as read (a takeover or
            // terminal transition in between makes it fail). The write changes nothing,
            // so Firestore keeps the lifecycle's update time; a concurrent terminal
            // transition that read the absent plan is stopped by its own assertion
            // that the plan is still absent (`guard`).
            let after = self.opened(AttemptNumber::FIRST, 1)?;
            let bound = BoundPlan::bind(&self.plan, call.identity(), now, self.fence);
            let mut writes = vec![
                Write::Create {
                    path: bound_plan::path(hash),
                    fields: bound.encode(),
                },
                Write::Replace {
                    path: lifecycle::path(hash),
                    fields: lifecycle.encode(),
                },
            ];
            writes.extend(record(hash, None, &after, SendEventType::Opened));
            let permit = self.permit(&after, lifecycle, &bound);
            writes.push(KeyIndex::create(
                hash,
                after.attempt,
                &permit.provider_idempotency_key,
            ));
            return Ok(Decision::Mutate(writes, BeginSendOutput::Permitted(permit)));
        };
        let SendState { attempt, plan, .. } = *state;
        if now < attempt.updated_at() {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        match attempt.state {
            state if state.resendable() => {
                // (The fence that sent it last was answered above.) A later holder
                // after a takeover, before the cutoff: re-send the same attempt with
                // the same key, recording which fence re-sent and when; but not while
                // the last sender's request may still be on its way, until the lease
                // it was sent under would have ended (a released lease ends sooner).
                let from = attempt
                    .last_sent_at
                    .plus_seconds(LEASE_SECONDS)
                    .ok_or(Halt::Reject(JournalError::RevisionOverflow))?;
                if now < from && !reverted(Rule::ResendAfterSendersLease) {
                    return Err(Halt::Reject(JournalError::ResendNotYet { from }));
                }
                let after = SendAttempt {
                    send_revision: next_revision(Some(&attempt))?,
                    state: AttemptState::Sending,
                    last_sent_at: now,
                    last_sent_fence_epoch: self.fence,
                    outcome: None,
                    version: attempt::VERSION,
                    ..attempt.clone()
                };
                let writes = record(hash, Some(&attempt), &after, SendEventType::Resent);
                let permit = self.permit(&after, lifecycle, &plan);
                Ok(Decision::Mutate(writes, BeginSendOutput::Permitted(permit)))
            }
            AttemptState::Absent => {
                // A charge found for the absent attempt's key (a late charge): its
                // absence was wrong, and a new key would charge the customer again.
                // Nothing is sent any more; a person settles it (`pending` lists it).
                // Its absence is proven by the commit that opens the next attempt, so a
                // late charge recorded meanwhile and the next key never both land.
                let late = late::path(hash, attempt.attempt);
                // Proven absent: the only way to a new attempt, with a new key.
                let Some(next) = attempt.attempt.next() else {
                    return Err(Halt::Reject(JournalError::RevisionOverflow));
                };
                // The next key's index document is created with the attempt: read
                // (absent) with the late charge.
                let index =
                    key_index::path(&attempt_key(call.identity(), self.plan.operation(), next));
                let unread: Vec<String> = [&late, &index]
                    .into_iter()
                    .filter(|path| !snapshot.was_read(path))
                    .cloned()
                    .collect();
                if !unread.is_empty() {
                    return Err(Halt::Read(unread));
                }
                if snapshot.get(&late).is_some() {
                    return Err(Halt::Reject(JournalError::SendCutoffPassed));
                }
                if snapshot.get(&index).is_some() {
                    return Err(Halt::Reject(JournalError::corrupt(
                        "a provider key index before its attempt opened",
                    )));
                }
                let after = self.opened(next, next_revision(Some(&attempt))?)?;
                let mut writes = record(hash, Some(&attempt), &after, SendEventType::Opened);
                writes.push(Write::AssertAbsent { path: late });
                let permit = self.permit(&after, lifecycle, &plan);
                writes.push(KeyIndex::create(
                    hash,
                    after.attempt,
                    &permit.provider_idempotency_key,
                ));
                Ok(Decision::Mutate(writes, BeginSendOutput::Permitted(permit)))
            }
            // A closed attempt under a leased lifecycle was refused by the loader.
            // A key that cannot tell was refused with the cutoff above.
            AttemptState::Sending
            | AttemptState::Ambiguous
            | AttemptState::ReplayedUnknown
            | AttemptState::Indeterminate
            | AttemptState::AwaitingCustomer => Err(Halt::Reject(JournalError::SendCutoffPassed)),
            AttemptState::Succeeded | AttemptState::Declined => Err(Halt::Reject(
                JournalError::corrupt("provider send record disagrees with the lifecycle"),
            )),
        }
    }
}

impl Transition for BeginSend {
    type Output = BeginSendOutput;

    fn name(&self) -> OperationName {
        OperationName::BeginSend
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = load::first_read(self.call.command());
        paths.push(first_index(self.call.identity(), &self.plan));
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<BeginSendOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

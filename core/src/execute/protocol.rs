//! The pure decisions of `execute`: given what the journal or the provider just
//! answered, the next step. No I/O and no clock: the driver passes the journal's time.
//!
//! | answer | next step |
//! |---|---|
//! | start: acquired, enough lease left | `begin_send` |
//! | start: acquired, less than [`MIN_SEND_DEADLINE`] after the margin | done: retry later |
//! | start: busy | done: in progress |
//! | start or `begin_send`: succeeded | read the stored result |
//! | start or `begin_send`: failed | done: declined |
//! | `begin_send`: permitted | send with the permit's key |
//! | `begin_send` or record: `send_cutoff_passed` | read the send status (checking the plan) |
//! | status: the attempt needs reconciliation | look up the attempt's key, derived from the stored plan |
//! | status: anything else | done: in progress |
//! | send: succeeded, declined, ambiguous | record it under the fence |
//! | record: terminal | done: the envelope sent, or declined |
//! | record: ambiguous | done: retry after the lease's remaining time |
//! | record of a success or decline refused | reconcile with that answer (it is evidence) |
//! | that reconciliation refused, lease lost (once) | start again, then reconcile with it |
//! | lookup: found, declined | reconcile with that evidence |
//! | lookup: not found, started at or after `absenceProvableFrom` | reconcile: absent |
//! | lookup: not found, started before it (or never provable) | done: pending reconciliation |
//! | lookup: unavailable | done: pending reconciliation |
//! | reconcile: terminal | done: the envelope found, or declined |
//! | reconcile: absent (first time) | `begin_send` (opens the next attempt) |
//! | reconcile: `absence_not_provable` | done: pending reconciliation |
//! | a success held (sent or found) meets a command that ended, or an attempt that moved on, without it (start: terminal; reconcile: `terminal_conflict`, `attempt_mismatch`) | `record_late_charge`, then the command's own answer (in progress after a reconcile) |
//! | any lease lost (`lease_expired`, `stale_fence`, `lease_not_held`) | done: in progress |
//! | result read: stored / none | done: succeeded with it / without a result |
//!
//! Every other error ends the call with that error.

use super::Execution;
use crate::answer::ProviderAnswer;
use crate::envelope::ResultEnvelope;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::{LeaseOutput, TerminalOutput};
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{
    AttemptNumber, BeginSendOutput, LateChargeOutput, SendOutcomeOutput, SendStatus,
};
use crate::time::Timestamp;
use std::time::Duration;

/// Lease time kept back after the provider's deadline, to record its answer.
pub(crate) const SEND_MARGIN: Duration = Duration::from_secs(10);
/// The shortest provider call worth starting.
pub(crate) const MIN_SEND_DEADLINE: Duration = Duration::from_secs(1);
/// More steps than any path takes (the longest, a reconciled absence then a new
/// attempt, takes nine): a bound against a journal that keeps changing under us.
const MAX_STEPS: u32 = 16;

/// The next thing the driver does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `Journal::start` with this call's lease.
    Start,
    /// `begin_send` under `fence`.
    BeginSend {
        /// The fence of this call's lease.
        fence: FenceEpoch,
    },
    /// The provider's send with the permit.
    Send {
        /// The attempt the permit is for.
        attempt: AttemptNumber,
        /// True when the permit re-sends an open attempt under the same key.
        resend: bool,
        /// The attempt's idempotency key.
        key: String,
        /// How long the provider call may take before the lease runs out.
        deadline: Duration,
    },
    /// `record_send_outcome` for `attempt`.
    Record {
        /// The fence of this call's lease.
        fence: FenceEpoch,
        /// The attempt the answer is for.
        attempt: AttemptNumber,
        /// The provider's answer, as the journal records it.
        outcome: ProviderAnswer,
    },
    /// `send_status`: which attempt's cutoff passed.
    Status,
    /// The provider's lookup of `attempt`'s key (derived from the stored plan).
    Lookup {
        /// The attempt looked up.
        attempt: AttemptNumber,
        /// Its idempotency key.
        key: String,
        /// How long the lookup may take.
        deadline: Duration,
    },
    /// `reconcile_send` for `attempt`.
    Reconcile {
        /// The fence of this call's lease.
        fence: FenceEpoch,
        /// The attempt the evidence is for.
        attempt: AttemptNumber,
        /// What the provider showed, as the journal records it.
        evidence: ProviderAnswer,
    },
    /// `Journal::result`.
    FetchResult,
    /// `record_late_charge`: the success `evidence` for `attempt`'s key, which the
    /// command ended (or moved on) without.
    RecordLateCharge {
        /// The attempt whose key charged.
        attempt: AttemptNumber,
        /// The provider's success.
        evidence: ProviderAnswer,
    },
    /// The answer.
    Done(Execution),
}

/// What the step the driver performed answered.
#[derive(Debug)]
pub enum Event {
    /// `start` answered a lease.
    Started(LeaseOutput),
    /// `begin_send` answered.
    BeganSend(Result<BeginSendOutput, JournalError>),
    /// The provider answered the send.
    Sent(ProviderAnswer),
    /// `record_send_outcome` answered.
    Recorded(Result<SendOutcomeOutput, JournalError>),
    /// The send state `send_status` answered (`None` while no plan is bound).
    Status(Option<SendStatus>),
    /// The provider answered the lookup.
    LookedUp(ProviderAnswer),
    /// `reconcile_send` answered.
    Reconciled(Result<SendOutcomeOutput, JournalError>),
    /// `result` answered the stored envelope, if any.
    Fetched(Option<ResultEnvelope>),
    /// `record_late_charge` answered.
    LateCharge(Result<LateChargeOutput, JournalError>),
}

/// How long a provider call may take at the journal's time.
#[derive(Debug)]
enum Window {
    /// A call may start, with this deadline.
    Call(Duration),
    /// Too little lease is left: the call ends with this answer.
    TooShort(Execution),
}

/// The protocol's state between steps.
#[derive(Debug, Clone, Default)]
pub struct Protocol {
    /// The lease this call holds: fence and expiry.
    lease: Option<(FenceEpoch, Timestamp)>,
    /// The attempt sent or looked up (none before the first permit or status), and
    /// the result it would record.
    attempt: Option<AttemptNumber>,
    pending: Option<ResultEnvelope>,
    /// The provider's success or decline this call holds until it is recorded.
    answer: Option<ProviderAnswer>,
    /// Whether the held answer was already offered to `reconcile_send`.
    answer_reconciled: bool,
    /// Whether this call already took a second lease to record its held answer.
    reacquired: bool,
    /// Whether the lookup in flight started at or after the instant from which the
    /// attempt's absence is provable: only then may its "not found" be recorded.
    lookup_proves_absence: bool,
    /// Whether this call already recorded an absence (it opens at most one attempt).
    absent_recorded: bool,
    /// The send heard a replay of the key's stored unknown answer, or an answer the
    /// provider documents as indeterminate: once recorded, the key is looked up at
    /// once instead of waiting for a re-send or the cutoff.
    replayed_unknown: bool,
    /// The evidence the reconciliation in flight offers: a success it refuses because
    /// the command ended or moved on without it is a late charge.
    reconciling: Option<ProviderAnswer>,
    /// What the call does once the late charge it holds is recorded.
    after_late: Option<Box<Step>>,
    steps: u32,
}

/// Whole seconds, rounded up, at least one: what a `Retry-After` can carry.
fn whole_seconds(duration: Duration) -> Duration {
    let seconds = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    Duration::from_secs(seconds.max(1))
}

fn lease_lost(error: &JournalError) -> bool {
    matches!(
        error,
        JournalError::LeaseExpired | JournalError::StaleFence | JournalError::LeaseNotHeld
    )
}

fn done(execution: Execution) -> Result<Step, JournalError> {
    Ok(Step::Done(execution))
}

/// Whether `answer` is a provider's success: a charge made.
fn is_success(answer: Option<&ProviderAnswer>) -> bool {
    matches!(
        answer,
        Some(ProviderAnswer::Succeeded(_) | ProviderAnswer::SucceededWithReference(_))
    )
}

impl Protocol {
    /// A new call: its first step is [`Step::Start`].
    pub fn new() -> (Self, Step) {
        (Self::default(), Step::Start)
    }

    /// The lease held, or an internal error if a step needing it came first.
    fn held(&self) -> Result<(FenceEpoch, Timestamp), JournalError> {
        self.lease
            .ok_or(JournalError::internal("execute: no lease held"))
    }

    /// The attempt sent or looked up, or an internal error if a step needing it came
    /// first.
    fn attempt(&self) -> Result<AttemptNumber, JournalError> {
        self.attempt
            .ok_or(JournalError::internal("execute: no attempt known"))
    }

    /// The provider's deadline at `now`: a call can start, or too little lease is left
    /// and the answer is to retry after it.
    fn deadline(&self, now: Timestamp) -> Result<Window, JournalError> {
        let (_, expires_at) = self.held()?;
        let remaining = now.until(expires_at);
        let deadline = remaining.saturating_sub(SEND_MARGIN);
        Ok(if deadline < MIN_SEND_DEADLINE {
            Window::TooShort(Execution::RetryLater {
                after: whole_seconds(remaining),
            })
        } else {
            Window::Call(deadline)
        })
    }

    fn retry_after_lease(&self, now: Timestamp) -> Result<Step, JournalError> {
        let (_, expires_at) = self.held()?;
        done(Execution::RetryLater {
            after: whole_seconds(now.until(expires_at)),
        })
    }

    fn terminal(&mut self, outcome: TerminalOutput) -> Result<Step, JournalError> {
        match outcome {
            TerminalOutput::Succeeded => match self.pending.take() {
                Some(envelope) => done(Execution::Succeeded(envelope)),
                None => Ok(Step::FetchResult),
            },
            TerminalOutput::FailedFinal => done(Execution::Declined),
        }
    }

    /// Offers the held answer to `reconcile_send` under the lease held.
    fn reconcile_answer(&mut self) -> Result<Step, JournalError> {
        self.answer_reconciled = true;
        let (fence, _) = self.held()?;
        let evidence = self
            .answer
            .clone()
            .ok_or(JournalError::internal("execute: no answer held"))?;
        self.reconcile(fence, evidence)
    }

    /// `reconcile_send` of `evidence` for the attempt this call sent or looked up.
    fn reconcile(
        &mut self,
        fence: FenceEpoch,
        evidence: ProviderAnswer,
    ) -> Result<Step, JournalError> {
        self.reconciling = Some(evidence.clone());
        Ok(Step::Reconcile {
            fence,
            attempt: self.attempt()?,
            evidence,
        })
    }

    /// Records `evidence`, if it is a success, as a charge its command ended without,
    /// then goes on with `then`; `then` at once for anything else (a decline moved no
    /// money).
    fn late_charge(
        &mut self,
        evidence: Option<ProviderAnswer>,
        then: Step,
    ) -> Result<Step, JournalError> {
        match evidence {
            Some(evidence) if is_success(Some(&evidence)) => {
                self.answer = None;
                self.pending = None;
                self.after_late = Some(Box::new(then));
                Ok(Step::RecordLateCharge {
                    attempt: self.attempt()?,
                    evidence,
                })
            }
            _ => Ok(then),
        }
    }

    /// The step after `event`, at the journal's time `now`.
    pub fn step(&mut self, event: Event, now: Timestamp) -> Result<Step, JournalError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(JournalError::internal("execute: step bound exceeded"));
        }
        match event {
            Event::Started(lease) => match lease {
                LeaseOutput::Acquired {
                    fence_epoch,
                    lease_expires_at,
                } => {
                    self.lease = Some((fence_epoch, lease_expires_at));
                    if let Some(evidence) = self.answer.clone() {
                        // A second lease taken to record the answer this call holds.
                        return self.reconcile(fence_epoch, evidence);
                    }
                    match self.deadline(now)? {
                        Window::Call(_) => Ok(Step::BeginSend { fence: fence_epoch }),
                        Window::TooShort(later) => done(later),
                    }
                }
                LeaseOutput::Busy => done(Execution::InProgress),
                // A success this call holds, for a command that ended meanwhile: a
                // charge it may have ended without (its own, if it is the one).
                LeaseOutput::Succeeded => {
                    let held = self.answer.clone();
                    self.late_charge(held, Step::FetchResult)
                }
                LeaseOutput::FailedFinal => {
                    let held = self.answer.clone();
                    self.late_charge(held, Step::Done(Execution::Declined))
                }
            },
            Event::BeganSend(answer) => match answer {
                Ok(BeginSendOutput::Permitted(permit)) => match self.deadline(now)? {
                    Window::Call(deadline) => {
                        self.attempt = Some(permit.attempt);
                        Ok(Step::Send {
                            attempt: permit.attempt,
                            resend: permit.resend,
                            key: permit.provider_idempotency_key,
                            deadline,
                        })
                    }
                    // The permit stands: the next holder re-sends it with the same key.
                    Window::TooShort(later) => done(later),
                },
                Ok(BeginSendOutput::Terminal(outcome)) => {
                    self.pending = None;
                    self.terminal(outcome)
                }
                Err(JournalError::SendCutoffPassed) => Ok(Step::Status),
                Err(error) if lease_lost(&error) => done(Execution::InProgress),
                Err(error) => Err(error),
            },
            Event::Sent(answer) => {
                let (fence, _) = self.held()?;
                // A send cannot prove an absence: its "not found" tells nothing.
                let answer = match answer {
                    ProviderAnswer::NotFound => ProviderAnswer::Unknown,
                    other => other,
                };
                self.pending = answer.envelope().cloned();
                // A success or decline is evidence whenever it arrives.
                self.answer = answer.evidence();
                // A replayed or indeterminate answer: its key cannot tell, so it is
                // looked up at once (not re-sent).
                self.replayed_unknown = (answer == ProviderAnswer::Indeterminate)
                    || (answer == ProviderAnswer::ReplayedUnknown
                        && !reverted(Rule::ReplayedLookedUp));
                Ok(Step::Record {
                    fence,
                    attempt: self.attempt()?,
                    outcome: answer,
                })
            }
            Event::Recorded(answer) => match answer {
                Ok(SendOutcomeOutput::Terminal(outcome)) => self.terminal(outcome),
                // The key can no longer tell: look it up now, under the same lease.
                Ok(SendOutcomeOutput::Ambiguous { .. }) if self.replayed_unknown => {
                    Ok(Step::Status)
                }
                Ok(SendOutcomeOutput::Ambiguous { .. }) => self.retry_after_lease(now),
                Ok(SendOutcomeOutput::Absent { .. }) => Err(JournalError::internal(
                    "execute: a send outcome recorded absence",
                )),
                // The answer is evidence whenever it arrives: where recording it as the
                // sender's outcome is refused, offer it to reconciliation.
                Err(_) if self.answer.is_some() && !self.answer_reconciled => {
                    self.reconcile_answer()
                }
                Err(JournalError::SendCutoffPassed) => {
                    self.pending = None;
                    Ok(Step::Status)
                }
                Err(error) if lease_lost(&error) => done(Execution::InProgress),
                Err(error) => Err(error),
            },
            Event::Status(send) => match (send, self.deadline(now)?) {
                (Some(send), Window::Call(deadline)) if send.needs_reconciliation => {
                    self.attempt = Some(send.attempt);
                    // The lookup starts after this status read: its "not found" proves
                    // the absence only if the absence was provable already.
                    self.lookup_proves_absence =
                        send.absence_provable_from.is_some_and(|from| now >= from)
                            || reverted(Rule::SenderSettled);
                    Ok(Step::Lookup {
                        attempt: send.attempt,
                        key: send.key,
                        deadline,
                    })
                }
                (Some(send), Window::TooShort(later)) if send.needs_reconciliation => done(later),
                _ => done(Execution::InProgress),
            },
            Event::LookedUp(result) => {
                let (fence, _) = self.held()?;
                let evidence = match result {
                    ProviderAnswer::NotFound if self.lookup_proves_absence => {
                        ProviderAnswer::NotFound
                    }
                    // Looked up before the absence was provable (the charge may not be
                    // visible yet), or never provable: nothing is written.
                    ProviderAnswer::NotFound
                    | ProviderAnswer::Unknown
                    | ProviderAnswer::ReplayedUnknown
                    | ProviderAnswer::Indeterminate => {
                        return done(Execution::PendingReconciliation);
                    }
                    found => {
                        self.pending = found.envelope().cloned();
                        found
                    }
                };
                self.reconcile(fence, evidence)
            }
            Event::Reconciled(answer) => match answer {
                Ok(SendOutcomeOutput::Terminal(outcome)) => self.terminal(outcome),
                Ok(SendOutcomeOutput::Absent { .. }) if !self.absent_recorded => {
                    self.absent_recorded = true;
                    let (fence, _) = self.held()?;
                    Ok(Step::BeginSend { fence })
                }
                Ok(SendOutcomeOutput::Absent { .. }) => Err(JournalError::internal(
                    "execute: a second absence in one call",
                )),
                Ok(SendOutcomeOutput::Ambiguous { .. }) => Err(JournalError::internal(
                    "execute: reconciliation left an attempt open",
                )),
                // The lease ran out before the answer this call holds was recorded:
                // take a lease once more and record it then.
                Err(error) if lease_lost(&error) && self.answer.is_some() && !self.reacquired => {
                    self.reacquired = true;
                    Ok(Step::Start)
                }
                Err(JournalError::AbsenceNotProvable { .. }) => {
                    done(Execution::PendingReconciliation)
                }
                Err(error) if lease_lost(&error) => done(Execution::InProgress),
                // The command ended, or its attempt moved on, without the success
                // offered: record it as a late charge, never drop it.
                Err(JournalError::TerminalConflict | JournalError::AttemptMismatch)
                    if self.after_late.is_none() && is_success(self.reconciling.as_ref()) =>
                {
                    let offered = self.reconciling.take();
                    self.late_charge(offered, Step::Done(Execution::InProgress))
                }
                Err(error) => Err(error),
            },
            Event::Fetched(result) => done(match result {
                Some(envelope) => Execution::Succeeded(envelope),
                None => Execution::SucceededWithoutResult,
            }),
            Event::LateCharge(answer) => {
                let then = self
                    .after_late
                    .take()
                    .ok_or(JournalError::internal("execute: a late charge unasked"))?;
                match answer? {
                    // The command's own charge after all: its stored answer.
                    LateChargeOutput::OwnCharge => Ok(Step::FetchResult),
                    LateChargeOutput::Recorded { .. } => Ok(*then),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;

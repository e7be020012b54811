//! The pure decisions of `execute`: given what the journal or the provider just
//! answered, the next step. No I/O and no clock: the driver passes the journal's time
//! (its timestamp, and the call's time on its monotonic clock).
//!
//! What is left of the lease is read on both of the trusted clock's readings: until
//! its expiry on its time, and, on its steady time, what was left when the lease was
//! heard (never more than a whole lease) less the time since. A duration that bounds
//! work under the lease (the provider's deadline, the lookup's) is the lesser: a wall
//! clock stepped back after the lease was heard lengthens none of them, and a request
//! leaves within the lease less [`SEND_MARGIN`] of the permit, in real time. A
//! `Retry-After` is the greater: it promises no takeover before the lease has run out
//! on either reading, whichever the next caller's clock agrees with.
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
//! | record: the call's deadline passed | done: that error (the next call re-sends with the key) |
//! | record of a success or decline refused | reconcile with that answer (it is evidence) |
//! | that reconciliation refused, lease lost (once) | start again, then reconcile with it |
//! | lookup: found, declined | reconcile with that evidence |
//! | lookup: not found, started at or after `absenceProvableFrom` | reconcile: absent |
//! | lookup: not found, started before it (or never provable) | done: pending reconciliation |
//! | lookup: unavailable | done: pending reconciliation |
//! | reconcile: terminal | done: the envelope found, or declined |
//! | reconcile: absent (first time) | `begin_send` (opens the next attempt) |
//! | reconcile: `absence_not_provable` | done: pending reconciliation |
//! | any lease lost (`lease_expired`, `stale_fence`, `lease_not_held`) | done: in progress |
//! | result read: stored / none | done: succeeded with it / without a result |
//!
//! Every other error ends the call with that error.

use super::Execution;
use crate::answer::ProviderAnswer;
use crate::call::Now;
use crate::document::lifecycle::LEASE_SECONDS;
use crate::envelope::ResultEnvelope;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::{LeaseOutput, TerminalOutput};
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{AttemptNumber, BeginSendOutput, SendOutcomeOutput, SendStatus};
use crate::time::Timestamp;
use std::time::Duration;

/// Lease time kept back after the provider's deadline, to record its answer.
pub(crate) const SEND_MARGIN: Duration = Duration::from_secs(10);
/// The shortest provider call worth starting.
pub(crate) const MIN_SEND_DEADLINE: Duration = Duration::from_secs(1);
/// A whole lease: the most a lease heard can have left.
const LEASE: Duration = Duration::from_secs(LEASE_SECONDS.unsigned_abs());
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
    /// When the lease held was heard: the reading its remaining time is measured from
    /// on the steady time.
    heard: Option<Now>,
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
    /// The send heard a replay of the key's stored unknown answer: once recorded, the
    /// key is looked up at once instead of waiting for a re-send or the cutoff.
    replayed_unknown: bool,
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

    /// The lease's time left at `now` on the trusted clock's two readings: until its
    /// expiry on its time; on its steady time, what was left when the lease was heard
    /// (at most a lease) less the time since.
    fn left(&self, now: Now) -> Result<(Duration, Duration), JournalError> {
        let (_, expires_at) = self.held()?;
        let trusted = now.at.until(expires_at);
        let Some(heard) = self.heard else {
            return Err(JournalError::internal("execute: a lease never heard"));
        };
        let then = heard.at.until(expires_at).min(LEASE);
        let since = now.steady.saturating_sub(heard.steady);
        Ok((trusted, then.saturating_sub(since)))
    }

    /// The time work under the lease may take at `now`: the lesser of its readings.
    fn remaining(&self, now: Now) -> Result<Duration, JournalError> {
        let (trusted, steady) = self.left(now)?;
        Ok(trusted.min(steady))
    }

    /// A `Retry-After` at `now`: the greater of its readings, so that the lease has
    /// run out on both once it has passed.
    fn retry_after(&self, now: Now) -> Result<Duration, JournalError> {
        let (trusted, steady) = self.left(now)?;
        Ok(whole_seconds(trusted.max(steady)))
    }

    /// The provider's deadline at `now`: a call can start, or too little lease is left
    /// and the answer is to retry after it.
    fn deadline(&self, now: Now) -> Result<Window, JournalError> {
        let remaining = self.remaining(now)?;
        let deadline = remaining.saturating_sub(SEND_MARGIN);
        Ok(if deadline < MIN_SEND_DEADLINE {
            Window::TooShort(Execution::RetryLater {
                after: self.retry_after(now)?,
            })
        } else {
            Window::Call(deadline)
        })
    }

    fn retry_after_lease(&self, now: Now) -> Result<Step, JournalError> {
        done(Execution::RetryLater {
            after: self.retry_after(now)?,
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
        Ok(Step::Reconcile {
            fence,
            attempt: self.attempt()?,
            evidence,
        })
    }

    /// The step after `event`, at the journal's time `now`.
    pub fn step(&mut self, event: Event, now: Now) -> Result<Step, JournalError> {
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
                    self.heard = Some(now);
                    if let Some(evidence) = self.answer.clone() {
                        // A second lease taken to record the answer this call holds.
                        return Ok(Step::Reconcile {
                            fence: fence_epoch,
                            attempt: self.attempt()?,
                            evidence,
                        });
                    }
                    match self.deadline(now)? {
                        Window::Call(_) => Ok(Step::BeginSend { fence: fence_epoch }),
                        Window::TooShort(later) => done(later),
                    }
                }
                LeaseOutput::Busy => done(Execution::InProgress),
                LeaseOutput::Succeeded => Ok(Step::FetchResult),
                LeaseOutput::FailedFinal => done(Execution::Declined),
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
                self.replayed_unknown =
                    answer == ProviderAnswer::ReplayedUnknown && !reverted(Rule::ReplayedLookedUp);
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
                // The call's deadline passed before the answer was recorded: it starts
                // nothing more. The permit stands: the next call re-sends under the
                // same key and records what the provider answers it.
                Err(error @ JournalError::Unavailable { deadline: true, .. }) => Err(error),
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
                    self.lookup_proves_absence = send
                        .absence_provable_from
                        .is_some_and(|from| now.at >= from)
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
                    | ProviderAnswer::ReplayedUnknown => {
                        return done(Execution::PendingReconciliation);
                    }
                    found => {
                        self.pending = found.envelope().cloned();
                        found
                    }
                };
                Ok(Step::Reconcile {
                    fence,
                    attempt: self.attempt()?,
                    evidence,
                })
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
                Err(error) => Err(error),
            },
            Event::Fetched(result) => done(match result {
                Some(envelope) => Execution::Succeeded(envelope),
                None => Execution::SucceededWithoutResult,
            }),
        }
    }
}

#[cfg(test)]
mod tests;

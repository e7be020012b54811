//! The recovery protocol: the steps one command's recovery takes, from its status and
//! the provider's evidence to the lease and the reconciliation, as a state machine. A
//! success found for a command that ended, or whose attempt moved on, before it could
//! be recorded is recorded as a late charge (`record_late_charge`), never dropped.

use super::{LOOKUP_DEADLINE, Recovered, Registered};
use crate::answer::ProviderAnswer;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::lease::{CommandState, LeaseOutput, TerminalOutput};
use crate::sends::{
    AttemptNumber, AttemptState, LateChargeOutput, ProviderAccount, SendOutcomeOutput,
};
use std::time::Duration;

/// The next thing the recovery driver does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RecoveryStep {
    /// The registration and the send status (`RegisteredIdentity`): the current
    /// attempt, its state and its key.
    Status,
    /// The provider's lookup of `attempt`'s key.
    Lookup {
        /// The attempt looked up.
        attempt: AttemptNumber,
        /// Its idempotency key, derived from the stored plan.
        key: String,
        /// How long the lookup may take.
        deadline: Duration,
    },
    /// `acquire_lease` under the recovery's own lease.
    Acquire,
    /// `reconcile_send` on the bound plan, under the recovery's lease.
    Reconcile {
        /// The recovery lease's fence.
        fence: FenceEpoch,
        /// The attempt the evidence is for.
        attempt: AttemptNumber,
        /// What the provider showed.
        evidence: ProviderAnswer,
    },
    /// `record_late_charge` of the success `evidence` for `attempt`'s key.
    RecordLateCharge {
        /// The attempt whose key charged.
        attempt: AttemptNumber,
        /// What the provider showed: a success.
        evidence: ProviderAnswer,
    },
    /// The answer.
    Done(Recovered),
}

/// What the step the driver performed answered.
#[derive(Debug)]
pub(crate) enum RecoveryEvent {
    /// The first read (`RegisteredIdentity`) answered.
    Status(Box<Registered>),
    /// The provider answered the lookup.
    LookedUp(ProviderAnswer),
    /// `acquire_lease` answered.
    Acquired(LeaseOutput),
    /// `reconcile_send` answered.
    Reconciled(Result<SendOutcomeOutput, JournalError>),
    /// `record_late_charge` answered.
    LateCharge(Result<LateChargeOutput, JournalError>),
}

/// The recovery's state between steps.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecoveryProtocol {
    /// The provider account the job's lookups ask, as the job declares it.
    account: Option<ProviderAccount>,
    /// The attempt the first read found open.
    attempt: Option<AttemptNumber>,
    /// Whether the lookup in flight asked the plan's own account and started at or
    /// after the instant from which the attempt's absence is provable: only then
    /// may its "not found" be recorded.
    lookup_proves_absence: bool,
    /// The evidence found, until the lease to record it is taken.
    evidence: Option<ProviderAnswer>,
    /// The recovery lease's fence, once taken to confirm an absence under it.
    confirming: Option<FenceEpoch>,
    /// Whether the reconciliation in flight records an absence.
    recording_absence: bool,
    /// The evidence the reconciliation in flight offers.
    offered: Option<ProviderAnswer>,
    steps: u32,
}

/// More steps than the longest path (status, lookup, acquire, status, lookup,
/// reconcile) takes.
const MAX_STEPS: u32 = 8;

fn done(recovered: Recovered) -> Result<RecoveryStep, JournalError> {
    Ok(RecoveryStep::Done(recovered))
}

/// Whether `answer` is a provider's success: a charge made.
fn is_success(answer: Option<&ProviderAnswer>) -> bool {
    matches!(
        answer,
        Some(ProviderAnswer::Succeeded(_) | ProviderAnswer::SucceededWithReference(_))
    )
}

fn lease_lost(error: &JournalError) -> bool {
    matches!(
        error,
        JournalError::LeaseExpired | JournalError::StaleFence | JournalError::LeaseNotHeld
    )
}

impl RecoveryProtocol {
    /// A new recovery of one command by a job whose lookups ask `account` (`None`:
    /// undeclared, so no "not found" proves an absence): its first step is
    /// [`RecoveryStep::Status`].
    pub(crate) fn new(account: Option<ProviderAccount>) -> (Self, RecoveryStep) {
        let protocol = Self {
            account,
            ..Self::default()
        };
        (protocol, RecoveryStep::Status)
    }

    /// The step after `event`.
    pub(crate) fn step(&mut self, event: RecoveryEvent) -> Result<RecoveryStep, JournalError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(JournalError::internal("recover: step bound exceeded"));
        }
        match event {
            RecoveryEvent::Status(registered) => self.status(*registered),
            RecoveryEvent::LookedUp(result) => {
                let evidence = match result {
                    ProviderAnswer::NotFound if self.lookup_proves_absence => {
                        ProviderAnswer::NotFound
                    }
                    ProviderAnswer::NotFound => return done(Recovered::NotFound),
                    ProviderAnswer::Unknown
                    | ProviderAnswer::ReplayedUnknown
                    | ProviderAnswer::Indeterminate => {
                        return done(Recovered::LookupUnavailable);
                    }
                    found => found,
                };
                // Looked up under the job's own lease: record it now.
                if let Some(fence) = self.confirming {
                    return self.reconcile(fence, evidence);
                }
                self.evidence = Some(evidence);
                Ok(RecoveryStep::Acquire)
            }
            RecoveryEvent::Acquired(lease) => match lease {
                LeaseOutput::Acquired { fence_epoch, .. } => {
                    let evidence = self
                        .evidence
                        .take()
                        .ok_or(JournalError::internal("recover: a lease without evidence"))?;
                    if evidence == ProviderAnswer::NotFound {
                        // Looked up before the lease, a "not found" may have missed a
                        // re-send made since the first read: confirm it under the
                        // lease, where no permit can be given, as `execute` does.
                        self.confirming = Some(fence_epoch);
                        return Ok(RecoveryStep::Status);
                    }
                    self.reconcile(fence_epoch, evidence)
                }
                LeaseOutput::Busy => done(Recovered::InProgress),
                // Settled meanwhile: a charge found for it is its own, or one it ended
                // without (a late charge).
                LeaseOutput::Succeeded | LeaseOutput::FailedFinal => {
                    let evidence = self.evidence.take();
                    self.late_charge(evidence, Recovered::AlreadySettled)
                }
            },
            RecoveryEvent::Reconciled(answer) => match answer {
                Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) => {
                    done(Recovered::Succeeded)
                }
                Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)) => {
                    done(Recovered::Declined)
                }
                Ok(SendOutcomeOutput::Absent { .. }) if self.recording_absence => {
                    done(Recovered::Absent)
                }
                Ok(SendOutcomeOutput::Absent { .. } | SendOutcomeOutput::Ambiguous { .. }) => Err(
                    JournalError::internal("recover: evidence recorded as another outcome"),
                ),
                // Provable when the lookup started, not any more at the commit (a later
                // permit, or the provider's retention ran out meanwhile): nothing written.
                Err(JournalError::AbsenceNotProvable { .. }) if self.recording_absence => {
                    done(Recovered::NotFound)
                }
                Err(error) if lease_lost(&error) => done(Recovered::InProgress),
                // The command ended, or its attempt moved on, without the charge found.
                Err(JournalError::TerminalConflict | JournalError::AttemptMismatch)
                    if is_success(self.offered.as_ref()) =>
                {
                    let offered = self.offered.take();
                    self.late_charge(offered, Recovered::LateCharge)
                }
                Err(error) => Err(error),
            },
            RecoveryEvent::LateCharge(answer) => match answer? {
                LateChargeOutput::OwnCharge => done(Recovered::AlreadySettled),
                LateChargeOutput::Recorded { .. } => done(Recovered::LateCharge),
            },
        }
    }

    /// Records `evidence`, if it is a success, as a late charge; `otherwise` for
    /// anything else (a decline moved no money).
    fn late_charge(
        &mut self,
        evidence: Option<ProviderAnswer>,
        otherwise: Recovered,
    ) -> Result<RecoveryStep, JournalError> {
        match (evidence, self.attempt) {
            (Some(evidence), Some(attempt)) if is_success(Some(&evidence)) => {
                Ok(RecoveryStep::RecordLateCharge { attempt, evidence })
            }
            _ => done(otherwise),
        }
    }

    fn reconcile(
        &mut self,
        fence: FenceEpoch,
        evidence: ProviderAnswer,
    ) -> Result<RecoveryStep, JournalError> {
        let attempt = self.attempt.ok_or(JournalError::internal(
            "recover: evidence before the first read",
        ))?;
        self.recording_absence = evidence == ProviderAnswer::NotFound;
        self.offered = Some(evidence.clone());
        Ok(RecoveryStep::Reconcile {
            fence,
            attempt,
            evidence,
        })
    }

    fn status(&mut self, registered: Registered) -> Result<RecoveryStep, JournalError> {
        let Registered {
            status,
            plan,
            read_at,
            ..
        } = registered;
        if status.command.state != CommandState::Leased {
            return done(Recovered::AlreadySettled);
        }
        let Some(send) = status.send else {
            return done(Recovered::NothingToLookUp);
        };
        match send.state {
            AttemptState::Sending
            | AttemptState::Ambiguous
            | AttemptState::ReplayedUnknown
            | AttemptState::Indeterminate => {}
            AttemptState::Absent => return done(Recovered::NothingToLookUp),
            AttemptState::Succeeded | AttemptState::Declined => {
                return Err(JournalError::internal(
                    "recover: a closed attempt under a leased command",
                ));
            }
        }
        // Whether the job asks the plan's account, and whether its lookups see as far
        // back as the plan's do.
        let (account, covered) = match (&self.account, &plan) {
            (Some(account), Some(plan)) => {
                (plan.is_account(account), account.lookup_covers(plan.lookup))
            }
            _ => (None, false),
        };
        if account == Some(false) {
            return done(Recovered::OtherAccount);
        }
        self.attempt = Some(send.attempt);
        // The lookup starts after this read: its "not found" proves the absence only
        // if the absence was provable already, at the plan's account.
        self.lookup_proves_absence = account == Some(true)
            && covered
            && send
                .absence_provable_from
                .is_some_and(|from| read_at >= from);
        Ok(RecoveryStep::Lookup {
            attempt: send.attempt,
            key: send.key,
            deadline: LOOKUP_DEADLINE,
        })
    }
}

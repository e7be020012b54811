//! Recovery: settling a command whose send outcome is unknown from the provider's
//! evidence, by a job that knows the command by its key hash alone.
//!
//! The job holds no raw command, no caller and no plan parameters, so it can never
//! send: it only asks the provider what it holds for the attempt's key and records
//! that evidence under the same rules as `reconcile_send`. What it needs of the
//! command it reads from the journal's own records ([`RegisteredIdentity`]: the
//! registration root holds every field of the derived identity).
//!
//! **The recovery holder.** The job takes the command's lease like any holder: by
//! `acquire_lease`, which takes an expired lease over with the next fence (event
//! `lease_taken_over`) and answers busy while another holder's lease runs. Its
//! lease-owner fingerprint is [`recovery_owner`] of
//! the key hash and a fresh random lease id, framed under its own domain: it never
//! equals a client's, and two jobs never share one. Its fence excludes every other
//! holder (the client whose lease it took over, another job, a client that comes back)
//! exactly as it does between clients: every write of the send layer is checked
//! against the lifecycle's holder and fence in the commit that makes it. Its audit
//! trail is that takeover, then the `provider_send_reconciled_*` send event and, for a
//! success or a decline, the terminal transition: a recovery never writes an
//! `opened` or `resent` event.
//!
//! **Nothing written without evidence.** The job reads the send status and asks the
//! provider before it takes any lease: a lookup that fails, or a "not found" that
//! proves nothing yet, leaves the command exactly as it was (and listed). Only
//! evidence worth recording takes the lease. A success or a decline found at the
//! provider stays true whoever holds the lease, so it is recorded right after the
//! takeover; a "not found" is looked up once more under the lease, as `execute`
//! does, because an absence is only proven for an attempt nobody can re-send
//! meanwhile.
//!
//! | answer | next step |
//! |---|---|
//! | status: the command is terminal | done: already settled |
//! | status: no plan bound, or the attempt proven absent | done: nothing to look up |
//! | status: the attempt's outcome is unknown | look up its key (from the stored plan) |
//! | lookup: found, declined | take the lease, then reconcile with that evidence |
//! | lookup: not found, started at or after `absenceProvableFrom` | take the lease, then status and lookup again under it |
//! | lookup: not found, started before it (or never provable) | done: not found yet |
//! | lookup: unavailable | done: lookup unavailable |
//! | acquire: busy | done: in progress (someone holds it) |
//! | acquire: succeeded, failed | done: already settled |
//! | under the lease, less than [`MIN_SEND_DEADLINE`] left after [`SEND_MARGIN`] | done: lease too short |
//! | reconcile: terminal | done: succeeded, declined |
//! | reconcile: absent | done: absent (the next client call opens attempt n + 1) |
//! | reconcile: `absence_not_provable` | done: not found yet |
//! | reconcile: lease lost | done: in progress |
//!
//! Every other error ends the command's recovery with that error.

mod registered;
#[cfg(test)]
mod tests;

pub use registered::RegisteredIdentity;

use crate::digest::{Digest, frame_digest};
use crate::error::JournalError;
use crate::execute::LookupResult;
use crate::execute::protocol::{MIN_SEND_DEADLINE, SEND_MARGIN};
use crate::fence::FenceEpoch;
use crate::identity::LeaseId;
use crate::lease::{CommandState, LeaseOutput, TerminalOutput};
use crate::sends::{AttemptState, CommandStatus, SendEvidence, SendOutcomeOutput};
use crate::time::Timestamp;
use serde::Serialize;
use std::time::Duration;

/// The lease-owner fingerprint of a recovery job's lease `lease` on the command
/// `hash`. Framed under its own domain (`command-journal.recovery-owner`), so it never
/// equals the fingerprint of a client's lease
/// ([`CommandInput::lease_owner`](crate::identity::CommandInput::lease_owner)), and
/// derived from the key hash alone: a recovery job holds no raw command.
pub fn recovery_owner(hash: &Digest, lease: &LeaseId) -> Digest {
    frame_digest(
        "command-journal.recovery-owner",
        1,
        &[hash.as_str().as_bytes(), lease.0.as_bytes()],
    )
}

/// How the recovery of one command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovered {
    /// The provider held a successful charge for the key: recorded as the command's
    /// success with its result, which every later call replays.
    Succeeded,
    /// The provider held a final refusal for the key: the command failed for good.
    Declined,
    /// The provider proved it holds nothing for the key (after the settle window):
    /// recorded; the client's next call opens the next attempt under a new key.
    Absent,
    /// Someone settled it first (a returning client or another job).
    AlreadySettled,
    /// Another holder's lease runs: it is being worked on.
    InProgress,
    /// No attempt is open (nothing was sent, or the last attempt was proven absent):
    /// only the client, which holds the parameters, can go on.
    NothingToLookUp,
    /// The provider holds nothing for the key yet, but its absence is not provable
    /// (the settle window has not passed, or the key may be forgotten): left listed.
    NotFoundYet,
    /// The lookup failed or was inconclusive: nothing written, left listed.
    LookupUnavailable,
    /// Too little of the recovery's lease was left for a lookup: left listed.
    LeaseTooShort,
}

impl Recovered {
    /// The label of the `outcome` field and of the metrics: the serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Declined => "declined",
            Self::Absent => "absent",
            Self::AlreadySettled => "already_settled",
            Self::InProgress => "in_progress",
            Self::NothingToLookUp => "nothing_to_look_up",
            Self::NotFoundYet => "not_found_yet",
            Self::LookupUnavailable => "lookup_unavailable",
            Self::LeaseTooShort => "lease_too_short",
        }
    }

    /// Every outcome, in declaration order.
    pub const ALL: [Self; 9] = [
        Self::Succeeded,
        Self::Declined,
        Self::Absent,
        Self::AlreadySettled,
        Self::InProgress,
        Self::NothingToLookUp,
        Self::NotFoundYet,
        Self::LookupUnavailable,
        Self::LeaseTooShort,
    ];

    /// Whether the command left the pending list by this recovery (or before it):
    /// `false` for the outcomes that leave it listed.
    pub fn settled(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Declined | Self::Absent | Self::AlreadySettled
        )
    }
}

/// How long a lookup made before any lease is taken may take.
pub const LOOKUP_DEADLINE: Duration = Duration::from_secs(30);

/// The next thing the recovery driver does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryStep {
    /// `send_status`: the attempt, its state, its key, from when absence is provable.
    Status,
    /// The provider's lookup of `attempt`'s key.
    Lookup {
        /// The attempt looked up.
        attempt: i64,
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
        attempt: i64,
        /// What the provider showed.
        evidence: SendEvidence,
    },
    /// The answer.
    Done(Recovered),
}

/// What the step the driver performed answered.
#[derive(Debug)]
pub enum RecoveryEvent {
    /// `send_status` answered.
    Status(CommandStatus),
    /// The provider answered the lookup.
    LookedUp(LookupResult),
    /// `acquire_lease` answered.
    Acquired(LeaseOutput),
    /// `reconcile_send` answered.
    Reconciled(Result<SendOutcomeOutput, JournalError>),
}

/// The recovery's state between steps.
#[derive(Debug, Clone, Default)]
pub struct RecoveryProtocol {
    /// The recovery's lease, once taken: fence and expiry.
    lease: Option<(FenceEpoch, Timestamp)>,
    attempt: i64,
    /// The evidence found before the lease was taken.
    evidence: Option<SendEvidence>,
    /// Whether the lookup in flight started at or after the instant from which the
    /// attempt's absence is provable: only then may its "not found" be recorded.
    lookup_proves_absence: bool,
    steps: u32,
}

/// More steps than the longest path (status, lookup, acquire, status, lookup,
/// reconcile) takes.
const MAX_STEPS: u32 = 8;

fn done(recovered: Recovered) -> Result<RecoveryStep, JournalError> {
    Ok(RecoveryStep::Done(recovered))
}

fn lease_lost(error: &JournalError) -> bool {
    matches!(
        error,
        JournalError::LeaseExpired | JournalError::StaleFence | JournalError::LeaseNotHeld
    )
}

impl RecoveryProtocol {
    /// A new recovery of one command: its first step is [`RecoveryStep::Status`].
    pub fn new() -> (Self, RecoveryStep) {
        (Self::default(), RecoveryStep::Status)
    }

    /// The step after `event`, at the journal's time `now`.
    pub fn step(
        &mut self,
        event: RecoveryEvent,
        now: Timestamp,
    ) -> Result<RecoveryStep, JournalError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(JournalError::internal("recover: step bound exceeded"));
        }
        match event {
            RecoveryEvent::Status(status) => self.status(status, now),
            RecoveryEvent::LookedUp(result) => self.looked_up(result),
            RecoveryEvent::Acquired(lease) => match lease {
                LeaseOutput::Acquired {
                    fence_epoch,
                    lease_expires_at,
                } => {
                    self.lease = Some((fence_epoch, lease_expires_at));
                    match self.evidence.take() {
                        // An absence is looked up again under the lease.
                        Some(SendEvidence::NotFound) | None => Ok(RecoveryStep::Status),
                        Some(evidence) => Ok(RecoveryStep::Reconcile {
                            fence: fence_epoch,
                            attempt: self.attempt,
                            evidence,
                        }),
                    }
                }
                LeaseOutput::Busy => done(Recovered::InProgress),
                LeaseOutput::Succeeded | LeaseOutput::FailedFinal => {
                    done(Recovered::AlreadySettled)
                }
            },
            RecoveryEvent::Reconciled(answer) => match answer {
                Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) => {
                    done(Recovered::Succeeded)
                }
                Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)) => {
                    done(Recovered::Declined)
                }
                Ok(SendOutcomeOutput::Absent { .. }) => done(Recovered::Absent),
                Ok(SendOutcomeOutput::Ambiguous { .. }) => Err(JournalError::internal(
                    "recover: reconciliation left an attempt open",
                )),
                Err(JournalError::AbsenceNotProvable { .. }) => done(Recovered::NotFoundYet),
                Err(error) if lease_lost(&error) => done(Recovered::InProgress),
                Err(error) => Err(error),
            },
        }
    }

    fn status(
        &mut self,
        status: CommandStatus,
        now: Timestamp,
    ) -> Result<RecoveryStep, JournalError> {
        if status.command.state != CommandState::Leased {
            return done(Recovered::AlreadySettled);
        }
        let Some(send) = status.send else {
            return done(Recovered::NothingToLookUp);
        };
        match send.state {
            AttemptState::Sending | AttemptState::Ambiguous => {}
            AttemptState::Absent => return done(Recovered::NothingToLookUp),
            AttemptState::Succeeded | AttemptState::Declined => {
                return Err(JournalError::internal(
                    "recover: a closed attempt under a leased command",
                ));
            }
        }
        let deadline = match self.lease {
            None => LOOKUP_DEADLINE,
            Some((_, expires_at)) => {
                let deadline = now.until(expires_at).saturating_sub(SEND_MARGIN);
                if deadline < MIN_SEND_DEADLINE {
                    return done(Recovered::LeaseTooShort);
                }
                deadline
            }
        };
        self.attempt = send.attempt;
        // The lookup starts after this status read: its "not found" proves the
        // absence only if the absence was provable already.
        self.lookup_proves_absence = send.absence_provable_from.is_some_and(|from| now >= from);
        Ok(RecoveryStep::Lookup {
            attempt: send.attempt,
            key: send.key,
            deadline,
        })
    }

    fn looked_up(&mut self, result: LookupResult) -> Result<RecoveryStep, JournalError> {
        let evidence = match result {
            LookupResult::Found(envelope) => SendEvidence::SucceededWith(envelope),
            LookupResult::Declined => SendEvidence::Declined,
            LookupResult::NotFound if self.lookup_proves_absence => SendEvidence::NotFound,
            LookupResult::NotFound => return done(Recovered::NotFoundYet),
            LookupResult::Unavailable => return done(Recovered::LookupUnavailable),
        };
        match self.lease {
            // Evidence before any lease: take it, then record.
            None => {
                self.evidence = Some(evidence);
                Ok(RecoveryStep::Acquire)
            }
            Some((fence, _)) => Ok(RecoveryStep::Reconcile {
                fence,
                attempt: self.attempt,
                evidence,
            }),
        }
    }
}

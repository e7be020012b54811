//! Recovery: settling a command whose send outcome is unknown from the provider's
//! evidence, by a job that knows the command by its key hash alone.
//!
//! The job holds no raw command, no caller and no plan parameters, so it can never
//! send: it only asks the provider what it holds for the attempt's key and records
//! that evidence under the same rules as `reconcile_send`. What it needs of the
//! command it reads from the journal's own records ([`RegisteredIdentity`]: the
//! registration root holds every field of the derived identity, and the same batch
//! get answers the send status).
//!
//! **The recovery holder.** The job takes the command's lease like any holder: by
//! `acquire_lease`, which takes an expired lease over with the next fence (event
//! `lease_taken_over`) and answers busy while another holder's lease runs. Its
//! lease-owner fingerprint is [`recovery_owner`] of the key hash and a fresh random
//! lease id, framed under its own domain: it never equals a client's, and two jobs
//! never share one. Its fence excludes every other
//! holder (the client whose lease it took over, another job, a client that comes back)
//! exactly as it does between clients: every write of the send layer is checked
//! against the lifecycle's holder and fence in the commit that makes it. Its audit
//! trail is that takeover, then the `provider_send_reconciled_succeeded` or
//! `_declined` send event and the terminal transition, in one commit: a recovery never
//! writes an `opened`, `resent` or `reconciled_absent` event.
//!
//! **Nothing written without evidence.** The job reads the send status and asks the
//! provider before it takes any lease: a lookup that fails, or a "not found", leaves
//! the command exactly as it was (and listed). Only a charge or a decline found takes
//! the lease, and is recorded right after the takeover: it stays true whoever holds
//! the lease (a re-send with the same key answers the same object).
//!
//! **No absence.** The job never records an attempt absent, so it never lets a second
//! key be opened. An absence is proven only by a lookup at the provider account the
//! command's plan is bound to, and the job cannot prove which account it asks: the
//! stored plan keeps the account only inside its fingerprint, which needs the
//! parameters the job does not hold. A job deployed with another account would find
//! nothing for a key that holds a charge; recorded, that "absence" would let the
//! client's next call send attempt n + 1 under a new key and charge twice. A "not
//! found" therefore leaves the command listed; the client's next call, which holds the
//! plan (and is refused `plan_conflict` under another one), re-sends the same key
//! before the cutoff or proves the absence itself after it. A charge or a decline
//! needs no such proof: the key derives from the command key hash, so no other
//! command's request carries it, and an account that never received the key holds no
//! object for it.
//!
//! | answer | next step |
//! |---|---|
//! | status: the command is terminal | done: already settled |
//! | status: no plan bound, or the attempt proven absent | done: nothing to look up |
//! | status: the attempt's outcome is unknown | look up its key (from the stored plan) |
//! | lookup: found, declined | take the lease, then reconcile with that evidence |
//! | lookup: not found | done: not found (left listed) |
//! | lookup: unavailable | done: lookup unavailable (left listed) |
//! | acquire: busy | done: in progress (someone holds it) |
//! | acquire: succeeded, failed | done: already settled |
//! | reconcile: terminal | done: succeeded, declined |
//! | reconcile: lease lost | done: in progress |
//!
//! Every other error ends the command's recovery with that error.

mod registered;
#[cfg(test)]
mod tests;

pub use registered::{Registered, RegisteredIdentity};

use crate::digest::{Digest, frame_digest};
use crate::error::JournalError;
use crate::execute::LookupResult;
use crate::fence::FenceEpoch;
use crate::identity::LeaseId;
use crate::lease::{CommandState, LeaseOutput, TerminalOutput};
use crate::sends::{AttemptState, CommandStatus, SendEvidence, SendOutcomeOutput};
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
    /// Someone settled it first (a returning client or another job).
    AlreadySettled,
    /// Another holder's lease runs: it is being worked on.
    InProgress,
    /// No attempt is open (nothing was sent, or the last attempt was proven absent):
    /// only the client, which holds the parameters, can go on.
    NothingToLookUp,
    /// The provider holds nothing for the key: nothing written, left listed (an
    /// absence is recorded only by a call holding the plan).
    NotFound,
    /// The lookup failed or was inconclusive: nothing written, left listed.
    LookupUnavailable,
}

impl Recovered {
    /// The label of the `outcome` field and of the metrics: the serialized name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Declined => "declined",
            Self::AlreadySettled => "already_settled",
            Self::InProgress => "in_progress",
            Self::NothingToLookUp => "nothing_to_look_up",
            Self::NotFound => "not_found",
            Self::LookupUnavailable => "lookup_unavailable",
        }
    }

    /// Every outcome, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::Succeeded,
        Self::Declined,
        Self::AlreadySettled,
        Self::InProgress,
        Self::NothingToLookUp,
        Self::NotFound,
        Self::LookupUnavailable,
    ];

    /// Whether the command left the pending list by this recovery (or before it):
    /// `false` for the outcomes that leave it listed.
    pub fn settled(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Declined | Self::AlreadySettled
        )
    }
}

/// How long a lookup may take (it is made before any lease is taken).
pub const LOOKUP_DEADLINE: Duration = Duration::from_secs(30);

/// The next thing the recovery driver does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryStep {
    /// The registration and the send status ([`RegisteredIdentity`]): the current
    /// attempt, its state and its key.
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
    attempt: i64,
    /// The evidence found, until the lease to record it is taken.
    evidence: Option<SendEvidence>,
    steps: u32,
}

/// More steps than the only path (status, lookup, acquire, reconcile) takes.
const MAX_STEPS: u32 = 6;

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

    /// The step after `event`.
    pub fn step(&mut self, event: RecoveryEvent) -> Result<RecoveryStep, JournalError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(JournalError::internal("recover: step bound exceeded"));
        }
        match event {
            RecoveryEvent::Status(status) => self.status(status),
            RecoveryEvent::LookedUp(result) => {
                let evidence = match result {
                    LookupResult::Found(envelope) => SendEvidence::SucceededWith(envelope),
                    LookupResult::Declined => SendEvidence::Declined,
                    LookupResult::NotFound => return done(Recovered::NotFound),
                    LookupResult::Unavailable => return done(Recovered::LookupUnavailable),
                };
                self.evidence = Some(evidence);
                Ok(RecoveryStep::Acquire)
            }
            RecoveryEvent::Acquired(lease) => match lease {
                LeaseOutput::Acquired { fence_epoch, .. } => {
                    let evidence = self
                        .evidence
                        .take()
                        .ok_or(JournalError::internal("recover: a lease without evidence"))?;
                    Ok(RecoveryStep::Reconcile {
                        fence: fence_epoch,
                        attempt: self.attempt,
                        evidence,
                    })
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
                Ok(SendOutcomeOutput::Absent { .. } | SendOutcomeOutput::Ambiguous { .. }) => Err(
                    JournalError::internal("recover: a charge or a decline recorded as neither"),
                ),
                Err(error) if lease_lost(&error) => done(Recovered::InProgress),
                Err(error) => Err(error),
            },
        }
    }

    fn status(&mut self, status: CommandStatus) -> Result<RecoveryStep, JournalError> {
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
        self.attempt = send.attempt;
        Ok(RecoveryStep::Lookup {
            attempt: send.attempt,
            key: send.key,
            deadline: LOOKUP_DEADLINE,
        })
    }
}

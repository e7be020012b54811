//! The recovery of one command as a [`Program`] of the call machine: the protocol's
//! steps ([`super::RecoveryProtocol`]) turned into the transitions and lookups the
//! machine runs, under the job's own lease. Its first read is a tool's (no metric, not
//! kept); the acquisition reads what the reconciliation after it decides from, so that
//! the reconciliation is one commit planned from it (preconditions mode).

use super::Recovered;
use super::protocol::{RecoveryEvent as Event, RecoveryProtocol, RecoveryStep as Step};
use super::registered::{Registered, RegisteredIdentity};
use crate::answer::Closing;
use crate::call::{Answered, Labelled, LookupCall, Next, Program, Run};
use crate::digest::Digest;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::CommandCall;
use crate::lease::{Acquire, LeaseCall, LeaseOutput};
use crate::sends::ProviderAccount;
use crate::sends::SendOutcomeOutput;
use crate::sends::late::{LateChargeOutput, RecordLateCharge};
use crate::sends::load::first_read;
use crate::sends::record::{Mode, RecordAnswer};
use crate::time::Timestamp;
use crate::transaction::OperationName;

/// The transitions of one command's recovery.
pub enum RecoveryOp {
    /// The registration and the send status.
    Status(RegisteredIdentity),
    /// The job's lease.
    Acquire(Acquire),
    /// The reconciliation under it.
    Reconcile(Box<WithResult<RecordAnswer>>),
    /// A late charge's record.
    LateCharge(RecordLateCharge),
}

/// What a transition of a recovery answered.
#[derive(Debug)]
pub enum RecoveryAnswer {
    /// The registration and the send status.
    Status(Box<Registered>),
    /// The lease.
    Acquired(LeaseOutput),
    /// The recorded evidence.
    Reconciled(SendOutcomeOutput),
    /// The late charge recorded.
    LateCharge(LateChargeOutput),
}

crate::call::transitions!(RecoveryOp => RecoveryAnswer {
    Status => |registered| RecoveryAnswer::Status(Box::new(registered)),
    Acquire => RecoveryAnswer::Acquired,
    Reconcile => RecoveryAnswer::Reconciled,
    LateCharge => RecoveryAnswer::LateCharge,
});

impl Labelled for RecoveryAnswer {
    fn label(&self) -> &'static str {
        match self {
            // A tool's read: never recorded.
            Self::Status(_) => "read",
            Self::Acquired(lease) => lease.label(),
            Self::Reconciled(output) => output.label(),
            Self::LateCharge(output) => output.label(),
        }
    }
}

/// Which step's answer the program waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    Status,
    Lookup,
    Acquire,
    Reconcile,
    LateCharge,
}

/// The recovery of the command `hash` under the job's lease `owner`.
pub struct RecoveryProgram {
    hash: Digest,
    owner: Digest,
    identity: Option<CommandIdentity>,
    protocol: RecoveryProtocol,
    first: Option<Step>,
    waiting: Option<Waiting>,
}

impl RecoveryProgram {
    /// The recovery of `hash` by the lease holder `owner` (the job's recovery owner),
    /// whose lookups ask `account`.
    pub fn new(hash: Digest, owner: Digest, account: Option<ProviderAccount>) -> Self {
        let (protocol, first) = RecoveryProtocol::new(account);
        Self {
            hash,
            owner,
            identity: None,
            protocol,
            first: Some(first),
            waiting: None,
        }
    }

    fn call(&self, now: Timestamp) -> Result<LeaseCall, JournalError> {
        let identity = self.identity.clone().ok_or(JournalError::internal(
            "recover: a step before the first read",
        ))?;
        Ok(LeaseCall::new(identity, self.owner.clone(), now))
    }
}

impl Program for RecoveryProgram {
    type Op = RecoveryOp;
    type Output = Recovered;

    fn name(&self) -> Option<OperationName> {
        Some(OperationName::Recover)
    }

    fn remembers(&self) -> bool {
        true
    }

    fn next(
        &mut self,
        last: Answered<RecoveryOp>,
        now: Timestamp,
    ) -> Result<Next<RecoveryOp, Recovered>, JournalError> {
        let out_of_turn = || JournalError::internal("recover: an answer out of turn");
        let event = match (self.waiting.take(), last) {
            (None, Answered::Nothing) => None,
            (Some(Waiting::Status), Answered::Ran(ran)) => match ran? {
                RecoveryAnswer::Status(registered) => {
                    self.identity = Some(registered.identity.clone());
                    Some(Event::Status(registered))
                }
                _ => return Err(out_of_turn()),
            },
            (Some(Waiting::Lookup), Answered::LookedUp(answer)) => Some(Event::LookedUp(answer)),
            (Some(Waiting::Acquire), Answered::Ran(ran)) => match ran? {
                RecoveryAnswer::Acquired(lease) => Some(Event::Acquired(lease)),
                _ => return Err(out_of_turn()),
            },
            (Some(Waiting::Reconcile), Answered::Ran(ran)) => {
                Some(Event::Reconciled(ran.and_then(|answer| match answer {
                    RecoveryAnswer::Reconciled(output) => Ok(output),
                    _ => Err(out_of_turn()),
                })))
            }
            (Some(Waiting::LateCharge), Answered::Ran(ran)) => {
                Some(Event::LateCharge(ran.and_then(|answer| match answer {
                    RecoveryAnswer::LateCharge(output) => Ok(output),
                    _ => Err(out_of_turn()),
                })))
            }
            _ => return Err(out_of_turn()),
        };
        let step = match event {
            None => self
                .first
                .take()
                .ok_or(JournalError::internal("recover: began twice"))?,
            Some(event) => self.protocol.step(event)?,
        };
        let (waiting, next) = match step {
            Step::Done(recovered) => return Ok(Next::Done(recovered)),
            Step::Status => {
                let read = RegisteredIdentity::new(self.hash.clone(), now);
                (
                    Waiting::Status,
                    Next::Run(Run::op(RecoveryOp::Status(read)).tool()),
                )
            }
            Step::Lookup { key, deadline, .. } => {
                (Waiting::Lookup, Next::Lookup(LookupCall { key, deadline }))
            }
            Step::Acquire => {
                let call = self.call(now)?;
                let paths = first_read(call.command());
                // Recovery acquires only an expired lease: a takeover, which needs the
                // lock in transaction mode.
                let op = Acquire::new(call).expecting_takeover();
                let run = Run::op(RecoveryOp::Acquire(op)).reading(paths);
                (Waiting::Acquire, Next::Run(run))
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => {
                let call = self.call(now)?;
                let op = RecordAnswer::prepare(
                    call,
                    fence,
                    attempt,
                    &evidence,
                    None,
                    Mode::Reconciliation,
                )?;
                (
                    Waiting::Reconcile,
                    Next::Run(Run::op(RecoveryOp::Reconcile(Box::new(op)))),
                )
            }
            Step::RecordLateCharge { attempt, evidence } => {
                let identity = self.call(now)?.identity().clone();
                let (Closing::Succeeded(commitment), _) = evidence.closing(&identity) else {
                    return Err(JournalError::internal("recover: a late charge without one"));
                };
                let op =
                    RecordLateCharge::new(CommandCall::new(identity, now), attempt, commitment);
                let mut run = Run::op(RecoveryOp::LateCharge(op)).fresh();
                run.keep = false;
                (Waiting::LateCharge, Next::Run(run))
            }
        };
        self.waiting = Some(waiting);
        Ok(next)
    }
}

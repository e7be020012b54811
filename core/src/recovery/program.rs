//! The recovery of one command as a [`Program`] of the call machine: the settle program
//! (`crate::settle`) from a lookup, under a lease it takes itself, its answer told as
//! a [`Recovered`]. Its first read is a tool's (no metric, not kept); the acquisition
//! reads what the reconciliation after it decides from, so that the reconciliation is
//! one commit planned from it (preconditions mode). A lease it took and ends without
//! settling the command with (a "not found" that proves nothing under it, an absence
//! recorded, a customer's object that still waits or answered unknown) is released
//! before it answers (`release_lease`), whatever the release answers, unless the
//! journal is corrupt: the command's next caller takes it over at once.

use super::Recovered;
use crate::call::{Answered, Labelled, Next, Now, Program, Run};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::lease::{Release, ReleaseOutput};
use crate::sends::ProviderAccount;
use crate::settle::{Settle, SettleOp, SettleOutput, Settled, Source};
use crate::transaction::OperationName;

/// A transition of a recovery.
#[derive(Debug, Clone)]
pub enum RecoveryOp {
    /// A transition of the settle program.
    Settle(Box<SettleOp>),
    /// `release_lease` of the lease taken, before an answer that settled nothing.
    Release(Release),
}

/// What a transition of a recovery answered.
#[derive(Debug, Clone)]
pub enum RecoveryOutput {
    /// What the settle program's transition answered.
    Settle(SettleOutput),
    /// What the release answered.
    Released(ReleaseOutput),
}

crate::call::transitions!(RecoveryOp => RecoveryOutput {
    Settle => RecoveryOutput::Settle,
    Release => RecoveryOutput::Released,
});

impl Labelled for RecoveryOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Settle(output) => output.label(),
            Self::Released(output) => output.label(),
        }
    }
}

/// The recovery of the command `hash` under the job's lease `owner`.
#[derive(Debug, Clone)]
pub struct RecoveryProgram {
    settle: Settle,
    /// The answer once settled, while the release of the lease taken is in flight.
    releasing: Option<Recovered>,
}

type Then = Result<Next<RecoveryOp, Recovered>, JournalError>;

fn out_of_turn() -> JournalError {
    JournalError::internal("recover: an answer out of turn")
}

impl RecoveryProgram {
    /// The recovery of `hash` by the lease holder `owner` (the job's recovery owner),
    /// whose lookups ask `account`.
    pub fn new(hash: Digest, owner: Digest, account: Option<ProviderAccount>) -> Self {
        Self {
            settle: Settle::taking(hash, owner, account, Source::Lookup),
            releasing: None,
        }
    }

    /// The settle program settled `settled` at `now`: the release of the lease it
    /// took if it leaves the command to its next holder, else the answer.
    fn settled(&mut self, settled: Settled, now: Now) -> Then {
        let release = settled
            .leaves_lease()
            .then(|| self.settle.release_taken(now.at))
            .flatten();
        let recovered = recovered(settled)?;
        Ok(match release {
            Some(op) => {
                self.releasing = Some(recovered);
                let mut run = Run::op(RecoveryOp::Release(op)).fresh();
                run.keep = false;
                Next::Run(run)
            }
            None => Next::Done(recovered),
        })
    }
}

/// A settle program's answer, from a recovery's.
fn to_settle(last: Answered<RecoveryOp>) -> Result<Answered<SettleOp>, JournalError> {
    Ok(match last {
        Answered::Nothing => Answered::Nothing,
        Answered::Ran(Ok(RecoveryOutput::Settle(output))) => Answered::Ran(Ok(output)),
        Answered::Ran(Ok(RecoveryOutput::Released(_))) => return Err(out_of_turn()),
        Answered::Ran(Err(error)) => Answered::Ran(Err(error)),
        Answered::LookedUp(answer) => Answered::LookedUp(answer),
        Answered::Retrieved(answer) => Answered::Retrieved(answer),
        Answered::Sent(_) | Answered::Chained(..) => return Err(out_of_turn()),
    })
}

/// What a recovery tells of what the settle program settled.
fn recovered(settled: Settled) -> Result<Recovered, JournalError> {
    Ok(match settled {
        Settled::Succeeded(_) => Recovered::Succeeded,
        Settled::Declined => Recovered::Declined,
        Settled::Absent => Recovered::Absent,
        Settled::NotFound => Recovered::NotFound,
        Settled::Unavailable => Recovered::LookupUnavailable,
        Settled::InProgress => Recovered::InProgress,
        Settled::Ended(_) => Recovered::AlreadySettled,
        Settled::NothingOpen => Recovered::NothingToLookUp,
        Settled::OtherAccount => Recovered::OtherAccount,
        Settled::LateCharge(_) => Recovered::LateCharge,
        // The action is the customer's: a job hands it to no one.
        Settled::AwaitingCustomer(_) => Recovered::AwaitingCustomer,
        Settled::Open | Settled::LeaseEnding => {
            return Err(JournalError::internal(
                "recover: a sender's answer without a send",
            ));
        }
    })
}

impl Labelled for Recovered {
    fn label(&self) -> &'static str {
        self.as_str()
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

    fn next(&mut self, last: Answered<RecoveryOp>, now: Now) -> Then {
        if let Some(recovered) = self.releasing.take() {
            // The answer whatever the release answered, but a corrupt journal.
            return match last {
                Answered::Ran(Ok(RecoveryOutput::Released(_))) => Ok(Next::Done(recovered)),
                Answered::Ran(Err(error @ JournalError::JournalCorrupt { .. })) => Err(error),
                Answered::Ran(Err(_)) => Ok(Next::Done(recovered)),
                _ => Err(out_of_turn()),
            };
        }
        Ok(match self.settle.next(to_settle(last)?, now)? {
            Next::Done(settled) => return self.settled(settled, now),
            Next::Run(run) => Next::Run(run.map(|op| RecoveryOp::Settle(Box::new(op)))),
            Next::Lookup(request) => Next::Lookup(request),
            Next::Retrieve(request) => Next::Retrieve(request),
            Next::Send(_) => return Err(JournalError::internal("recover: a send")),
        })
    }
}

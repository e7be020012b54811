//! The recovery of one command as a [`Program`] of the call machine: the settle program
//! (`crate::settle`) from a lookup, under a lease it takes itself, its answer told as
//! a [`Recovered`]. Its first read is a tool's (no metric, not kept); the acquisition
//! reads what the reconciliation after it decides from, so that the reconciliation is
//! one commit planned from it (preconditions mode).

use super::Recovered;
use crate::call::{Answered, Labelled, Next, Now, Program};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::sends::ProviderAccount;
use crate::settle::{Settle, SettleOp, Settled, Source};
use crate::transaction::OperationName;

/// The recovery of the command `hash` under the job's lease `owner`.
#[derive(Debug, Clone)]
pub struct RecoveryProgram {
    settle: Settle,
}

impl RecoveryProgram {
    /// The recovery of `hash` by the lease holder `owner` (the job's recovery owner),
    /// whose lookups ask `account`.
    pub fn new(hash: Digest, owner: Digest, account: Option<ProviderAccount>) -> Self {
        Self {
            settle: Settle::taking(hash, owner, account, Source::Lookup),
        }
    }
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
    type Op = SettleOp;
    type Output = Recovered;

    fn name(&self) -> Option<OperationName> {
        Some(OperationName::Recover)
    }

    fn remembers(&self) -> bool {
        true
    }

    fn next(
        &mut self,
        last: Answered<SettleOp>,
        now: Now,
    ) -> Result<Next<SettleOp, Recovered>, JournalError> {
        Ok(match self.settle.next(last, now)? {
            Next::Done(settled) => Next::Done(recovered(settled)?),
            Next::Run(run) => Next::Run(run),
            Next::Lookup(request) => Next::Lookup(request),
            Next::Retrieve(request) => Next::Retrieve(request),
            Next::Send(_) => return Err(JournalError::internal("recover: a send")),
        })
    }
}

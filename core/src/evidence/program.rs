//! Recording one piece of evidence as a [`Program`] of the call machine: the key
//! index read (a tool's read: no metric, not kept), then the settle program from the
//! answer given, under a lease it takes itself as a recovery holder, its answer told
//! as an [`EvidenceOutcome`] (the table in [`crate::evidence`]). A lease it took and
//! ends without settling the command with (a read that proved nothing, a customer
//! who must still act) is released before it answers (`release_lease`), whatever the
//! release answers, unless the journal is corrupt.

use super::index_read::{KeyIndexRead, indexed_error};
use super::{Evidence, EvidenceOutcome};
use crate::call::{Answered, Labelled, Next, Now, Program, Run};
use crate::error::JournalError;
use crate::identity::LeaseId;
use crate::lease::{Release, ReleaseOutput};
use crate::recovery::owner::recovery_owner;
use crate::sends::ProviderAccount;
use crate::sends::key_index::KeyIndex;
use crate::settle::{Given, Settle, SettleOp, SettleOutput, Settled, Source};
use crate::transaction::OperationName;

/// The transitions of recording evidence.
#[derive(Debug, Clone)]
pub enum EvidenceOp {
    /// The key index read.
    Index(KeyIndexRead),
    /// A transition of the settle program.
    Settle(Box<SettleOp>),
    /// `release_lease` of the lease taken, before a non-settling answer.
    Release(Release),
}

/// What a transition of recording evidence answered.
#[derive(Debug, Clone, PartialEq)]
pub enum EvidenceOutput {
    /// The key's index document, if any.
    Index(Option<KeyIndex>),
    /// What the settle program's transition answered.
    Settle(SettleOutput),
    /// What the release answered.
    Released(ReleaseOutput),
}

crate::call::transitions!(EvidenceOp => EvidenceOutput {
    Index => EvidenceOutput::Index,
    Settle => EvidenceOutput::Settle,
    Release => EvidenceOutput::Released,
});

impl Labelled for EvidenceOutput {
    fn label(&self) -> &'static str {
        match self {
            // A tool's read: never recorded.
            Self::Index(_) => "read",
            Self::Settle(output) => output.label(),
            Self::Released(output) => output.label(),
        }
    }
}

/// Where the program stands.
#[derive(Debug, Clone)]
enum State {
    /// Nothing asked yet.
    New(Evidence),
    /// The index read is in flight.
    Indexing(Evidence),
    /// The settle program runs.
    Settling(Box<Settle>),
    /// The release of the lease taken is in flight; then the outcome.
    Releasing(EvidenceOutcome),
    /// The program answered.
    Done,
}

/// The recording of one piece of evidence by the lease holder of `lease` (a recovery
/// holder: its owner is the recovery owner of the command the index names), declaring
/// `account` (`None`: any).
#[derive(Debug, Clone)]
pub struct EvidenceProgram {
    lease: LeaseId,
    account: Option<ProviderAccount>,
    state: State,
}

type Then = Result<Next<EvidenceOp, EvidenceOutcome>, JournalError>;

fn out_of_turn() -> JournalError {
    JournalError::internal("evidence: an answer out of turn")
}

impl EvidenceProgram {
    /// Records `evidence` under a lease of `lease` it takes itself, declaring the
    /// provider account `account` its provider adapter is for (`None`: undeclared).
    pub fn new(evidence: Evidence, lease: LeaseId, account: Option<ProviderAccount>) -> Self {
        Self {
            lease,
            account,
            state: State::New(evidence),
        }
    }

    /// The index read answered `index`: unknown, or the settle program's first step.
    fn indexed(&mut self, evidence: Evidence, index: Option<KeyIndex>, now: Now) -> Then {
        let Some(index) = index else {
            return Ok(Next::Done(EvidenceOutcome::UnknownObject));
        };
        let owner = recovery_owner(&index.command_key_hash, &self.lease);
        let given = Given {
            key: evidence.key().to_owned(),
            answer: evidence.answer().clone(),
            indexed: Some(index.attempt),
            read_at: evidence.read_at(),
        };
        let settle = Settle::taking(
            index.command_key_hash,
            owner,
            self.account.clone(),
            Source::Given(given),
        );
        self.settling(Box::new(settle), Answered::Nothing, now)
    }

    /// The settle program's next step after `last`, or the outcome once it settled.
    fn settling(&mut self, mut settle: Box<Settle>, last: Answered<SettleOp>, now: Now) -> Then {
        let next = match settle.next(last, now).map_err(indexed_error)? {
            Next::Done(settled) => {
                let release = settled
                    .leaves_lease()
                    .then(|| settle.release_taken(now.at))
                    .flatten();
                let outcome = outcome(settled)?;
                return Ok(match release {
                    Some(op) => {
                        self.state = State::Releasing(outcome);
                        let mut run = Run::op(EvidenceOp::Release(op)).fresh();
                        run.keep = false;
                        Next::Run(run)
                    }
                    None => Next::Done(outcome),
                });
            }
            Next::Run(run) => Next::Run(run.map(|op| EvidenceOp::Settle(Box::new(op)))),
            Next::Lookup(_) | Next::Send(_) | Next::Retrieve(_) => {
                return Err(JournalError::internal(
                    "evidence: the provider asked for an answer given",
                ));
            }
        };
        self.state = State::Settling(settle);
        Ok(next)
    }
}

/// What recording evidence tells of what the settle program settled.
fn outcome(settled: Settled) -> Result<EvidenceOutcome, JournalError> {
    Ok(match settled {
        Settled::Succeeded(_) => EvidenceOutcome::Succeeded,
        Settled::Declined => EvidenceOutcome::Declined,
        Settled::LateCharge(_) => EvidenceOutcome::LateCharge,
        Settled::Ended(_) => EvidenceOutcome::AlreadySettled,
        Settled::NothingOpen => EvidenceOutcome::NothingOpen,
        Settled::InProgress => EvidenceOutcome::InProgress,
        Settled::NotFound => EvidenceOutcome::NotFound,
        Settled::Unavailable => EvidenceOutcome::Inconclusive,
        // The customer must (still) act: the object is open, nothing is written.
        Settled::AwaitingCustomer(_) => EvidenceOutcome::Inconclusive,
        Settled::OtherAccount => EvidenceOutcome::OtherAccount,
        Settled::Absent | Settled::Open | Settled::LeaseEnding => {
            return Err(JournalError::internal(
                "evidence: an absence or a sender's answer from an answer given",
            ));
        }
    })
}

/// A settle program's answer, from recording evidence's.
fn to_settle(last: Answered<EvidenceOp>) -> Result<Answered<SettleOp>, JournalError> {
    Ok(match last {
        Answered::Ran(Ok(EvidenceOutput::Settle(output))) => Answered::Ran(Ok(output)),
        Answered::Ran(Err(error)) => Answered::Ran(Err(error)),
        _ => return Err(out_of_turn()),
    })
}

impl Program for EvidenceProgram {
    type Op = EvidenceOp;
    type Output = EvidenceOutcome;

    fn name(&self) -> Option<OperationName> {
        Some(OperationName::RecordEvidence)
    }

    fn remembers(&self) -> bool {
        true
    }

    fn next(&mut self, last: Answered<EvidenceOp>, now: Now) -> Then {
        match (std::mem::replace(&mut self.state, State::Done), last) {
            (State::New(evidence), Answered::Nothing) => {
                if !evidence.journal_key() {
                    return Ok(Next::Done(EvidenceOutcome::UnknownObject));
                }
                let read = KeyIndexRead::new(evidence.key());
                self.state = State::Indexing(evidence);
                Ok(Next::Run(Run::op(EvidenceOp::Index(read)).tool()))
            }
            (State::Indexing(evidence), Answered::Ran(ran)) => match ran? {
                EvidenceOutput::Index(index) => self.indexed(evidence, index, now),
                EvidenceOutput::Settle(_) | EvidenceOutput::Released(_) => Err(out_of_turn()),
            },
            (State::Settling(settle), last) => self.settling(settle, to_settle(last)?, now),
            // The outcome whatever the release answered, but a corrupt journal.
            (State::Releasing(outcome), Answered::Ran(ran)) => match ran {
                Ok(EvidenceOutput::Released(_)) => Ok(Next::Done(outcome)),
                Err(error @ JournalError::JournalCorrupt { .. }) => Err(error),
                Err(_) => Ok(Next::Done(outcome)),
                Ok(_) => Err(out_of_turn()),
            },
            _ => Err(out_of_turn()),
        }
    }
}

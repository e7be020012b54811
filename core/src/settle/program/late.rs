//! The settle program's steps for a charge its command can no longer take: a success
//! the evidence carries, met by a command that ended (or whose attempt moved on)
//! without it, is recorded as a late charge (`record_late_charge`), never dropped.

use super::{Holder, Settle, State, Then, done, out_of_turn};
use crate::call::{Next, Now, Run};
use crate::error::JournalError;
use crate::lease::{CommandState, TerminalOutput};
use crate::sends::AttemptNumber;
use crate::sends::late::{LateChargeOutput, RecordLateCharge};
use crate::sends::provider::{Closing, ProviderAnswer};
use crate::settle::op::{SettleOp, SettleOutput};
use crate::settle::{Late, Settled};

impl Settle {
    /// The command ended (`ended`, as the lease taken to record `evidence` answered)
    /// before the evidence was recorded: a charge is recorded late (unless it is the
    /// command's own); anything else leaves the command as it ended.
    pub(super) fn ended(
        &mut self,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        ended: TerminalOutput,
        now: Now,
    ) -> Then {
        if evidence.charged() {
            return self.late(attempt, &evidence, Late::Ended(ended), now);
        }
        done(Settled::Ended(match ended {
            TerminalOutput::Succeeded => CommandState::Succeeded,
            TerminalOutput::FailedFinal => CommandState::FailedFinal,
        }))
    }

    /// Another holder's lease runs, `evidence` not recorded. The sender's own charge
    /// (a caller's: only the sender takes a lease again) is held by no one else, and
    /// the running holder never looks an earlier attempt up again: a charge for an
    /// attempt that moved on is recorded late; one for the attempt that holder settles
    /// is left to it.
    pub(super) fn busy(
        &mut self,
        attempt: AttemptNumber,
        evidence: ProviderAnswer,
        now: Now,
    ) -> Then {
        if evidence.charged() && matches!(self.holder, Holder::Caller { .. }) {
            return self.late(attempt, &evidence, Late::WhileRunning, now);
        }
        done(Settled::InProgress)
    }

    /// `record_late_charge` of the success `evidence` under `attempt`'s key: a call of
    /// its own, under no lease (its reason never changes once true), reading anew and
    /// keeping nothing it reads.
    pub(super) fn late(
        &mut self,
        attempt: AttemptNumber,
        evidence: &ProviderAnswer,
        late: Late,
        now: Now,
    ) -> Then {
        let call = self.call(now.at)?;
        let (Closing::Succeeded(commitment), _) = evidence.closing(call.identity()) else {
            return Err(JournalError::internal("settle: a late charge of no charge"));
        };
        let op = RecordLateCharge::new(call.command().clone(), attempt, commitment);
        let mut run = Run::op(SettleOp::LateCharge(op)).fresh();
        run.keep = false;
        self.go(State::LateCharging { late }, Next::Run(run))
    }

    /// What recording a late charge answered.
    pub(super) fn charged_late(
        &mut self,
        late: Late,
        result: Result<SettleOutput, JournalError>,
    ) -> Then {
        let ended = match late {
            Late::Ended(ended) => Some(ended),
            Late::Refused | Late::WhileRunning | Late::MovedOn => None,
        };
        let output = match result {
            // The attempt the running holder settles: its charge to record.
            Err(JournalError::AttemptMismatch) if late == Late::WhileRunning => {
                return done(Settled::InProgress);
            }
            result => result?,
        };
        match output {
            // The command's own charge after all: it ended with it.
            SettleOutput::LateCharge(LateChargeOutput::OwnCharge) => {
                done(Settled::Ended(CommandState::Succeeded))
            }
            SettleOutput::LateCharge(LateChargeOutput::Recorded { .. }) => {
                done(Settled::LateCharge(ended))
            }
            _ => Err(out_of_turn()),
        }
    }
}

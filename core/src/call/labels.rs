//! The outcome label of every answer: what the operator metrics count a transition
//! or a call as (`docs/metrics.md`, "outcome"), a fixed string from this code.

use super::io::Metric;
use crate::envelope::ResultEnvelope;
use crate::lease::{LeaseOutput, ReleaseOutput, StatusOutput, TerminalOutput};
use crate::ledger::{LedgerOutcome, LedgerReplay};
use crate::pending::PendingCommand;
use crate::registration::{RegistrationOutcome, RegistrationOutput};
use crate::sends::{BeginSendOutput, CommandStatus, SendOutcomeOutput};
use crate::start::StartOutput;
use crate::transaction::OperationName;

/// An answer's outcome label.
pub trait Labelled {
    /// The label: a fixed lower-case word.
    fn label(&self) -> &'static str;

    /// The metrics an answer of the transition `name` records: its label under
    /// `name`, unless the answer stands for more than one operation.
    fn record(&self, name: OperationName, into: &mut Vec<Metric>) {
        into.push(Metric {
            name,
            outcome: self.label(),
        });
    }
}

impl Labelled for RegistrationOutput {
    fn label(&self) -> &'static str {
        match self.outcome() {
            RegistrationOutcome::RegisteredNew => "registered_new",
            RegistrationOutcome::RegisteredExisting => "registered_existing",
        }
    }
}

impl Labelled for LeaseOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Acquired { fence_epoch, .. } if fence_epoch.get() > 1 => "recovered",
            Self::Acquired { .. } => "acquired",
            Self::Busy => "busy",
            Self::Succeeded | Self::FailedFinal => "replayed",
        }
    }
}

impl Labelled for ReleaseOutput {
    fn label(&self) -> &'static str {
        ReleaseOutput::label(*self)
    }
}

impl Labelled for StartOutput {
    fn label(&self) -> &'static str {
        self.lease.label()
    }
}

impl Labelled for TerminalOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::FailedFinal => "failed_final",
        }
    }
}

impl Labelled for StatusOutput {
    fn label(&self) -> &'static str {
        self.state.as_str()
    }
}

impl Labelled for CommandStatus {
    fn label(&self) -> &'static str {
        self.command.state.as_str()
    }
}

impl Labelled for BeginSendOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Permitted(permit) if permit.resend => "resent",
            Self::Permitted(_) => "permitted",
            Self::Terminal(_) => "replayed",
        }
    }
}

impl Labelled for SendOutcomeOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Terminal(outcome) => outcome.label(),
            Self::Ambiguous { .. } => "ambiguous",
            Self::AwaitingCustomer { .. } => "awaiting_customer",
            Self::Absent { .. } => "absent",
        }
    }
}

impl Labelled for Option<ResultEnvelope> {
    fn label(&self) -> &'static str {
        match self {
            Some(_) => "found",
            None => "none",
        }
    }
}

impl Labelled for Option<PendingCommand> {
    fn label(&self) -> &'static str {
        match self.as_ref().map(|p| p.unblocked_by) {
            None => "not_pending",
            Some(reason) => reason.as_str(),
        }
    }
}

impl Labelled for LedgerOutcome {
    fn label(&self) -> &'static str {
        self.outcome.as_str()
    }
}

impl Labelled for LedgerReplay {
    fn label(&self) -> &'static str {
        match self {
            Self::Replayed(outcome) => outcome.label(),
            Self::NotReserved { .. } => "not_reserved",
        }
    }
}

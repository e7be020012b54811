//! The transitions the settle program runs, and what they answer.

use super::registered::{Registered, RegisteredIdentity};
use crate::call::Labelled;
use crate::envelope::record::WithResult;
use crate::lease::{Acquire, LeaseOutput};
use crate::sends::late::{LateChargeOutput, RecordLateCharge};
use crate::sends::record::Record;
use crate::sends::status::SendStatusRead;
use crate::sends::{CommandStatus, SendOutcomeOutput};
use crate::start::Start;

/// A transition of the settle program.
#[derive(Debug, Clone)]
pub enum SettleOp {
    /// A caller's `send_status`, its plan checked first.
    Status(SendStatusRead),
    /// A job's first read of a command known by its key hash: the registration, the
    /// send status and the bound plan.
    Registered(RegisteredIdentity),
    /// A caller's lease taken again (`start`), to record the answer it holds.
    Start(Start),
    /// A job's lease (`acquire_lease`, a takeover).
    Acquire(Acquire),
    /// `record_send_outcome` or `reconcile_send`, with the envelope of a success.
    Record(Box<WithResult<Record>>),
    /// `record_late_charge`: a success the command ended, or its attempt moved on,
    /// without.
    LateCharge(RecordLateCharge),
}

/// What a transition of the settle program answered.
#[derive(Debug, Clone, PartialEq)]
pub enum SettleOutput {
    /// The caller's send status.
    Status(CommandStatus),
    /// The job's read.
    Registered(Box<Registered>),
    /// The lease taken (or why not).
    Leased(LeaseOutput),
    /// The answer recorded.
    Recorded(SendOutcomeOutput),
    /// The late charge recorded (or the command's own charge after all).
    LateCharge(LateChargeOutput),
}

crate::call::transitions!(SettleOp => SettleOutput {
    Status => SettleOutput::Status,
    Registered => |registered| SettleOutput::Registered(Box::new(registered)),
    Start => |started: crate::start::StartOutput| SettleOutput::Leased(started.lease),
    Acquire => SettleOutput::Leased,
    Record => SettleOutput::Recorded,
    LateCharge => SettleOutput::LateCharge,
});

impl Labelled for SettleOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Status(status) => status.label(),
            // A tool's read: never recorded.
            Self::Registered(_) => "read",
            Self::Leased(lease) => lease.label(),
            Self::Recorded(output) => output.label(),
            Self::LateCharge(output) => output.label(),
        }
    }
}

//! The journal operations of `Journal::execute`'s driver, as the model names them,
//! and the real prepared transitions they stand for: [`visit`] builds the transition
//! of one and hands it, with the first read the driver gives it, to a [`Visit`] (an
//! attempt on the store, a plan from what a call knows, a whole run).

use super::super::{at, call, hash, identity, owner};
use super::world::{KeyId, PlanChoice, micros, plan};
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::CommandIdentity;
use crate::lease::{CommandCall, LeaseCall, Release, ReleaseOutput};
use crate::sends::AttemptNumber;
use crate::sends::begin::BeginSend;
use crate::sends::late::{LateChargeOutput, RecordLateCharge};
use crate::sends::provider::Closing;
use crate::sends::record::Record;
use crate::sends::status::SendStatusRead;
use crate::sends::{BeginSendOutput, CommandStatus, SendOutcomeOutput};
use crate::start::{Start, StartOutput};
use crate::transaction::Transition;
use std::fmt::Debug;

/// Who performs a journal operation: the call's lease owner, its plan, and the
/// journal's time captured for it (the caller's own clock, seconds after `T0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Caller {
    pub owner: usize,
    pub plan: PlanChoice,
    pub now: i64,
}

impl Caller {
    pub(super) fn call(&self) -> LeaseCall {
        call(self.owner, micros(self.now))
    }

    /// A read's call: the owner is not consulted.
    fn reader(&self) -> CommandCall {
        CommandCall::new(identity(), at(micros(self.now)))
    }
}

/// What a record or a reconciliation carries: a success names the key whose charge
/// answered it (its result envelope is stored with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Carried {
    Succeeded(KeyId),
    Declined,
    Ambiguous,
    ReplayedUnknown,
    Absent,
    /// The customer must act (the sender's answer).
    AwaitingCustomer,
    /// The object closed with nothing charged (a read by id).
    Closed,
}

/// One journal operation of `Journal::execute`'s driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Op {
    /// `Journal::start` on its own read set: registration and acquisition (a second
    /// lease of a call, or any start in the atomic mode).
    Start,
    /// The first start of an `execute` call in preconditions mode, read on the
    /// `begin_send` read set (what the driver reads once the opening chain is refused).
    Open,
    /// `begin_send` under the fence.
    BeginSend { fence: FenceEpoch },
    /// `record_send_outcome`.
    Record {
        fence: FenceEpoch,
        attempt: AttemptNumber,
        carried: Carried,
    },
    /// `reconcile_send`.
    Reconcile {
        fence: FenceEpoch,
        attempt: AttemptNumber,
        carried: Carried,
    },
    /// `send_status_for`: the send state, the caller's plan checked first.
    Status,
    /// `Journal::result`.
    Result,
    /// `record_late_charge` of the charge under `key` for `attempt`.
    LateCharge { attempt: AttemptNumber, key: KeyId },
    /// `release_lease` of the fence, before a non-terminal answer.
    Release { fence: FenceEpoch },
}

impl Op {
    /// The fence a send-layer operation writes under.
    pub(super) fn fence(&self) -> Option<FenceEpoch> {
        match self {
            Self::BeginSend { fence }
            | Self::Record { fence, .. }
            | Self::Reconcile { fence, .. }
            | Self::Release { fence } => Some(*fence),
            Self::Start | Self::Open | Self::Status | Self::Result | Self::LateCharge { .. } => {
                None
            }
        }
    }

    /// `caller` without what the operation does not read, so that memo entries of
    /// callers it cannot tell apart are one.
    pub(super) fn reads_of(&self, caller: Caller) -> Caller {
        match self {
            Self::Start | Self::Open => Caller {
                plan: PlanChoice::Right,
                ..caller
            },
            Self::Status => Caller { owner: 0, ..caller },
            Self::Result | Self::LateCharge { .. } => Caller {
                owner: 0,
                plan: PlanChoice::Right,
                ..caller
            },
            Self::Release { .. } => Caller {
                plan: PlanChoice::Right,
                ..caller
            },
            Self::BeginSend { .. } | Self::Record { .. } | Self::Reconcile { .. } => caller,
        }
    }
}

/// What an operation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Output {
    Started(Result<StartOutput, JournalError>),
    /// A new command's opening chain: its start and the permit after it.
    Opened(StartOutput, BeginSendOutput),
    BeganSend(Result<BeginSendOutput, JournalError>),
    Outcome(Result<SendOutcomeOutput, JournalError>),
    Status(Result<CommandStatus, JournalError>),
    Result(Result<Option<ResultEnvelope>, JournalError>),
    LateCharge(Result<LateChargeOutput, JournalError>),
    Released(Result<ReleaseOutput, JournalError>),
}

impl Output {
    /// Whether the operation answered (the driver keeps what it left known only then).
    pub(super) fn is_ok(&self) -> bool {
        match self {
            Self::Opened(..) => true,
            Self::Started(r) => r.is_ok(),
            Self::BeganSend(r) => r.is_ok(),
            Self::Outcome(r) => r.is_ok(),
            Self::Status(r) => r.is_ok(),
            Self::Result(r) => r.is_ok(),
            Self::LateCharge(r) => r.is_ok(),
            Self::Released(r) => r.is_ok(),
        }
    }
}

/// Something done with one prepared transition: `paths` is the first read the driver
/// gives it, `wrap` turns its answer into the model's.
pub(super) trait Visit {
    type Out;
    fn visit<T>(
        self,
        op: &T,
        paths: Vec<String>,
        wrap: fn(Result<T::Output, JournalError>) -> Output,
    ) -> Self::Out
    where
        T: Transition + Debug,
        T::Output: Debug + PartialEq;
}

/// `op` for `caller` as the driver prepares it, handed to `visitor`.
pub(super) fn visit<V: Visit>(caller: Caller, op: Op, visitor: V) -> V::Out {
    let plan = plan(caller.plan).clone();
    let now = at(micros(caller.now));
    let outcome = |r: Result<SendOutcomeOutput, JournalError>| Output::Outcome(r);
    match op {
        Op::Start | Op::Open => {
            let start = Start::new(identity(), owner(caller.owner), now);
            let paths = match op {
                Op::Open => {
                    crate::execute::opening::Opening::new(start.clone(), caller.call(), plan)
                        .paths()
                }
                _ => start.paths(),
            };
            visitor.visit(&start, paths, Output::Started)
        }
        Op::BeginSend { fence } => {
            let op = BeginSend::new(caller.call(), fence, plan);
            let paths = op.paths();
            visitor.visit(&op, paths, Output::BeganSend)
        }
        Op::Record {
            fence,
            attempt,
            carried,
        } => {
            let (finding, envelope) = finding(&identity(), carried);
            let op = Record::outcome(caller.call(), fence, attempt, finding, plan);
            match envelope {
                None => visitor.visit(&op, op.paths(), outcome),
                Some(envelope) => {
                    let op = WithResult::new(op, &hash(), now, &envelope);
                    visitor.visit(&op, op.paths(), outcome)
                }
            }
        }
        Op::Reconcile {
            fence,
            attempt,
            carried,
        } => {
            let (finding, envelope) = finding(&identity(), carried);
            let op = Record::reconciliation(caller.call(), fence, attempt, finding, plan);
            match envelope {
                None => visitor.visit(&op, op.paths(), outcome),
                Some(envelope) => {
                    let op = WithResult::new(op, &hash(), now, &envelope);
                    visitor.visit(&op, op.paths(), outcome)
                }
            }
        }
        Op::Status => {
            let op = SendStatusRead::new(caller.reader()).for_plan(&plan);
            visitor.visit(&op, op.paths(), Output::Status)
        }
        Op::Result => {
            let op = ResultRead::new(caller.reader());
            visitor.visit(&op, op.paths(), Output::Result)
        }
        Op::LateCharge { attempt, key } => {
            let commitment = identity().terminal_commitment(&key.envelope().reference());
            let op = RecordLateCharge::new(caller.reader(), attempt, commitment);
            visitor.visit(&op, op.paths(), Output::LateCharge)
        }
        Op::Release { fence } => {
            let op = Release::new(caller.call(), fence);
            visitor.visit(&op, op.paths(), Output::Released)
        }
    }
}

/// The finding `carried` records, and the envelope stored with a success.
fn finding(identity: &CommandIdentity, carried: Carried) -> (Closing, Option<ResultEnvelope>) {
    match carried {
        Carried::Succeeded(key) => {
            let envelope = key.envelope();
            let commitment = identity.terminal_commitment(&envelope.reference());
            (Closing::Succeeded(commitment), Some(envelope))
        }
        Carried::Declined => (Closing::Declined, None),
        Carried::Ambiguous => (Closing::Ambiguous, None),
        Carried::ReplayedUnknown => (Closing::ReplayedUnknown, None),
        Carried::Absent => (Closing::Absent, None),
        Carried::AwaitingCustomer => (Closing::AwaitingCustomer, None),
        Carried::Closed => (Closing::Closed, None),
    }
}

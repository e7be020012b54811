//! A worker: a sequence of `execute` calls, each the real [`ExecuteProgram`] the call
//! machine runs, fed every answer as the machine feeds it ([`Program::next`]): the
//! program says what the call does next, and the model performs it (`steps`, `driver`).
//! The program is cloned with the state; a call is hashed by a fingerprint of where
//! the program stands and what it asked for.

use super::super::{at, identity, owner};
use super::memory::{Flight, Memory};
use super::ops::{Carried, Op};
use super::provider::Heard;
use super::world::{KeyId, PlanChoice, micros, plan, seconds};
use crate::call::{Answered, Concurrency, Labelled, Next, Now, Program};
use crate::error::JournalError;
use crate::execute::program::{ExecuteOp, ExecuteProgram};
use crate::lease::LeaseOutput;
use crate::sends::provider::{Closing, ProviderAnswer};
use crate::sends::record::Mode;
use crate::sends::{BeginSendOutput, SendPermit};
use crate::settle::SettleOp;
use crate::start::StartOutput;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// What the program asked for next, as the model performs it: a journal operation
/// (and whether the call keeps what it leaves known), a lookup of a key, or a read of
/// its object by id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Asked {
    Op(Op, bool),
    Lookup(String),
    Retrieve {
        key: String,
        replayable: bool,
        cancel: bool,
    },
}

/// Where a call stands between actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Phase {
    /// The program's next step is due.
    Ready,
    /// The request with `key` is on the wire; the driver waits for the answer until
    /// `deadline` (seconds); `heard`: what the provider processed it into, once it has.
    Sending {
        key: KeyId,
        deadline: i64,
        heard: Option<Heard>,
    },
    /// A journal operation's commit is in flight (`Call::flight`): it lands or is
    /// refused at a later action.
    Committing,
}

/// One `execute` call: its plan, its lease owner, the program and what it asked for
/// next; what the model needs of its past (its first start and when it was heard,
/// the last permit, the lease's end, the key whose success it heard last); in
/// preconditions mode also what its last operation left known and the commit it has
/// in flight.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub plan: PlanChoice,
    pub owner: usize,
    pub phase: Phase,
    /// What the call's last journal operation left known (the driver's `Memory`).
    pub memory: Option<Memory>,
    /// The commit in flight, while `phase` is `Committing`.
    pub flight: Option<Flight>,
    /// Whether a commit of this call landed.
    pub wrote: bool,
    program: ExecuteProgram,
    asked: Asked,
    /// The call's first start as answered, and the time it was heard at (seconds).
    started: Option<(StartOutput, i64)>,
    /// The permit the last answer gave, if it gave one.
    permit: Option<SendPermit>,
    /// The end of the lease the call holds (seconds), if it took one.
    lease_end: Option<i64>,
    /// Whether the program took an answer and went on (it is past its first start).
    answered: bool,
    /// The key of the last success the call heard, from a send or a lookup.
    held: Option<KeyId>,
    /// Whether the last answer was the provider's success to the call's send.
    holding: bool,
    /// Whether the provider read the call's object by id (an observation for the
    /// model's examples: the call's answer after it, its lease released first, is
    /// the action handed again; not part of the call's key).
    retrieved: bool,
    fingerprint: u64,
}

impl Call {
    fn key(&self) -> impl Eq + Hash + '_ {
        let state = (self.plan, self.owner, self.phase, self.fingerprint);
        (state, &self.memory, &self.flight, self.wrote)
    }
}

impl Hash for Call {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialEq for Call {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Call {}

/// A worker's turn at the current instant. Journal operations at one instant are
/// serialized by the lease, and the provider's actions commute with them, so the model
/// lets one worker run its steps at an instant without another worker's or the
/// provider's actions in between, until it waits for the provider, ends, or yields (it
/// then acts again only after the clock has moved). The time between any two steps of
/// a call is still free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(super) enum Turn {
    /// May act at this instant.
    #[default]
    Idle,
    /// Acting: no other worker and no provider action until it stops.
    Running,
    /// Done for this instant; acts again once the clock moves.
    Yielded,
}

/// A worker: how many calls it started, its turn, and the call running; and what its
/// last action did, for a counterexample's trace (not part of the state).
#[derive(Debug, Clone, Default)]
pub(super) struct Worker {
    pub calls: u8,
    pub turn: Turn,
    pub call: Option<Call>,
    pub did: String,
}

impl Hash for Worker {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.calls, self.turn, &self.call).hash(state);
    }
}

impl PartialEq for Worker {
    fn eq(&self, other: &Self) -> bool {
        (self.calls, self.turn, &self.call) == (other.calls, other.turn, &other.call)
    }
}

impl Eq for Worker {}

/// The model's operation for the transition the program asked to run: its first start
/// is `open` (the opening chain, in preconditions mode with plans) or a start.
pub(super) fn op_of(op: &ExecuteOp, open: bool) -> Op {
    match op {
        ExecuteOp::Start(_) if open => Op::Open,
        ExecuteOp::Start(_) | ExecuteOp::Settle(SettleOp::Start(_)) => Op::Start,
        ExecuteOp::BeginSend(begin) => Op::BeginSend {
            fence: begin.fence(),
        },
        ExecuteOp::Settle(SettleOp::Status(_)) => Op::Status,
        ExecuteOp::Result(_) => Op::Result,
        ExecuteOp::Settle(SettleOp::Record(record)) => {
            let (inner, envelope) = record.parts();
            let (fence, attempt, finding, mode) = inner.parts();
            let carried = match (finding, envelope) {
                (Closing::Succeeded(_), Some(envelope)) => {
                    Carried::Succeeded(KeyId::of_envelope(envelope))
                }
                (Closing::Declined, _) => Carried::Declined,
                (Closing::Ambiguous, _) => Carried::Ambiguous,
                (Closing::ReplayedUnknown, _) => Carried::ReplayedUnknown,
                (Closing::Absent, _) => Carried::Absent,
                (Closing::Succeeded(_), None) => panic!("a success without its result"),
                // The model's provider answers a stored 5xx's sender with a timeout.
                (Closing::Indeterminate, _) => panic!("the model hears no fresh 500"),
                (Closing::AwaitingCustomer, _) => Carried::AwaitingCustomer,
                (Closing::Closed, _) => Carried::Closed,
            };
            match mode {
                Mode::Outcome => Op::Record {
                    fence,
                    attempt,
                    carried,
                },
                Mode::Reconciliation => Op::Reconcile {
                    fence,
                    attempt,
                    carried,
                },
            }
        }
        ExecuteOp::Settle(SettleOp::LateCharge(late)) => {
            let (attempt, commitment) = late.parts();
            Op::LateCharge {
                attempt,
                key: KeyId::of_commitment(commitment),
            }
        }
        ExecuteOp::Release(release) => Op::Release {
            fence: release.fence(),
        },
        other => panic!("the model runs execute in preconditions mode, not {other:?}"),
    }
}

/// What the program did after an answer: asked for a step, sent, or ended.
pub(super) enum Fed {
    /// Asked for a journal operation, a lookup or a read by id (now `Call::asked`).
    Asked,
    /// Sent `key` under the permit just given.
    Sent(String),
    /// Ended with its execution (its label).
    Done(&'static str),
}

impl Call {
    /// A new call of `plan` by lease owner `owner`, begun at `now` (seconds): its
    /// first step is its start (`open`: the opening chain of preconditions mode).
    pub(super) fn new(choice: PlanChoice, holder: usize, now: i64, open: bool) -> Self {
        let mode = Concurrency::Preconditions;
        let mut program =
            ExecuteProgram::new(identity(), owner(holder), plan(choice).clone(), mode, open)
                .expect("a model plan");
        let first = match program.next(Answered::Nothing, Now::unstepped(at(micros(now)))) {
            Ok(Next::Run(run)) => Asked::Op(op_of(&run.op, open), run.keep),
            other => panic!("a call begins with its start: {other:?}"),
        };
        let mut call = Self {
            plan: choice,
            owner: holder,
            phase: Phase::Ready,
            memory: None,
            flight: None,
            wrote: false,
            program,
            asked: first,
            started: None,
            answered: false,
            permit: None,
            lease_end: None,
            held: None,
            holding: false,
            retrieved: false,
            fingerprint: 0,
        };
        call.fingerprint = call.fingerprint();
        call
    }

    /// The fingerprint of where the program stands and what it asked for, and of the
    /// key whose result the call holds.
    fn fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        (format!("{:?} {:?}", self.program, self.asked), self.held).hash(&mut hasher);
        hasher.finish()
    }

    /// What the program asked for next.
    pub(super) fn asked(&self) -> &Asked {
        &self.asked
    }

    /// Whether the call has had no answer it went on from yet (its next step is its
    /// first start).
    pub(super) fn is_new(&self) -> bool {
        !self.answered
    }

    /// Gives the program `answer` at `now` (seconds), as the call machine does: what
    /// it did, or the error it ended with.
    pub(super) fn feed(
        &mut self,
        answer: Answered<ExecuteOp>,
        now: i64,
    ) -> Result<Fed, JournalError> {
        self.note(&answer, now);
        let fed = match self.program.next(answer, Now::unstepped(at(micros(now))))? {
            Next::Done(executed) => return Ok(Fed::Done(executed.label())),
            Next::Run(run) => {
                self.asked = Asked::Op(op_of(&run.op, false), run.keep);
                Fed::Asked
            }
            Next::Lookup(request) => {
                self.asked = Asked::Lookup(request.key);
                Fed::Asked
            }
            Next::Send(request) => Fed::Sent(request.key),
            Next::Retrieve(request) => {
                self.asked = Asked::Retrieve {
                    key: request.key,
                    replayable: request.replayable,
                    cancel: request.cancel,
                };
                Fed::Asked
            }
        };
        self.answered = true;
        self.fingerprint = self.fingerprint();
        self.phase = Phase::Ready;
        Ok(fed)
    }

    /// What the model keeps of `answer`, heard at `now`.
    fn note(&mut self, answer: &Answered<ExecuteOp>, now: i64) {
        use crate::execute::program::ExecuteOutput as O;
        use crate::settle::SettleOutput as S;
        let lease_end = |lease: &LeaseOutput| match lease {
            LeaseOutput::Acquired {
                lease_expires_at, ..
            } => Some(seconds(*lease_expires_at)),
            _ => None,
        };
        self.permit = None;
        self.holding = false;
        self.retrieved |= matches!(answer, Answered::Retrieved(_));
        match answer {
            Answered::Ran(Ok(O::Started(started)))
            | Answered::Ran(Ok(O::Opened(started, _)))
            | Answered::Chained(O::Started(started), _) => {
                self.started = Some((*started, now));
                self.lease_end = lease_end(&started.lease).or(self.lease_end);
            }
            Answered::Ran(Ok(O::Settle(S::Leased(lease)))) => {
                self.lease_end = lease_end(lease).or(self.lease_end);
            }
            Answered::Sent(ProviderAnswer::Succeeded(envelope)) => {
                self.held = Some(KeyId::of_envelope(envelope));
                self.holding = true;
            }
            Answered::LookedUp(ProviderAnswer::Succeeded(envelope))
            | Answered::Retrieved(ProviderAnswer::Succeeded(envelope)) => {
                self.held = Some(KeyId::of_envelope(envelope));
            }
            _ => {}
        }
        self.permit = match answer {
            Answered::Ran(Ok(O::BeganSend(BeginSendOutput::Permitted(permit))))
            | Answered::Chained(_, O::BeganSend(BeginSendOutput::Permitted(permit))) => {
                Some(permit.clone())
            }
            _ => None,
        };
    }

    /// Whether the provider read the call's object by id.
    pub(super) fn retrieved(&self) -> bool {
        self.retrieved
    }

    /// The permit the last answer gave, if it gave one.
    pub(super) fn permit(&self) -> Option<&SendPermit> {
        self.permit.as_ref()
    }

    /// The end of the lease the call holds (seconds), if it took one.
    pub(super) fn lease_end(&self) -> Option<i64> {
        self.lease_end
    }

    /// Whether the call's next step records a provider's answer or a lookup's
    /// evidence.
    pub(super) fn holds_evidence(&self) -> bool {
        matches!(
            self.asked,
            Asked::Op(Op::Record { .. } | Op::Reconcile { .. }, _)
        )
    }

    /// Whether the call holds a provider's success it has not had recorded.
    pub(super) fn holds_success(&self) -> bool {
        self.holding
    }

    /// `execute` without the rule `EvidenceAfterCutoff`, where recording a success was
    /// refused past the cutoff: it dropped the answer and read the send status under
    /// the same lease. The program is rebuilt as if `begin_send` had answered
    /// `send_cutoff_passed` under that lease: the same lease, no answer held, the
    /// status read next.
    pub(super) fn drop_answer(&mut self, now: i64) {
        let (started, heard) = self.started.expect("a call that sent was started");
        let mut program = ExecuteProgram::new(
            identity(),
            owner(self.owner),
            plan(self.plan).clone(),
            Concurrency::Preconditions,
            true,
        )
        .expect("a model plan");
        let heard_at = Now::unstepped(at(micros(heard)));
        program.next(Answered::Nothing, heard_at).expect("begins");
        let started = Answered::Ran(Ok(crate::execute::program::ExecuteOutput::Started(started)));
        program.next(started, heard_at).expect("a permit asked");
        let refused = Answered::Ran(Err(JournalError::SendCutoffPassed));
        match program.next(refused, Now::unstepped(at(micros(now)))) {
            Ok(Next::Run(run)) => self.asked = Asked::Op(op_of(&run.op, false), run.keep),
            other => panic!("the status read follows: {other:?}"),
        }
        self.program = program;
        self.memory = None;
        self.holding = false;
        self.fingerprint = self.fingerprint();
        self.phase = Phase::Ready;
    }
}

/// The driver's send deadline (on the sender's clock, `skew` seconds ahead of the
/// global one) and the request's settle deadline (on the global clock) under `permit`:
/// the answer must arrive before the lease's end less the margin, and the provider
/// settles the request at the latest a settle window after the lease's end.
pub(super) fn deadlines(permit: &SendPermit, margin: i64, settle: i64, skew: i64) -> (i64, i64) {
    let lease_end = seconds(permit.lease_expires_at);
    (lease_end - margin, lease_end - skew + settle)
}

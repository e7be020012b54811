//! What a call does, step by step: a [`Program`] names each transition to run and each
//! provider call to make, from the answers of the ones before. [`Single`] is the
//! program of one transition; `execute` and recovery have programs of their own
//! (`crate::execute::program`, `crate::recovery::program`).

use super::io::Now;
use crate::error::JournalError;
use crate::sends::provider::{LookupRequest, ProviderAnswer, RetrieveRequest, SendRequest};
use crate::transaction::{OperationName, Transition};

/// What the step before answered.
pub enum Answered<Op: Transition> {
    /// Nothing yet: the call begins.
    Nothing,
    /// The transition answered (or failed with this error).
    Ran(Result<Op::Output, JournalError>),
    /// The transition and the one [`Program::chained`] gave after it, committed
    /// together, answered these.
    Chained(Op::Output, Op::Output),
    /// The provider answered the send.
    Sent(ProviderAnswer),
    /// The provider answered the lookup.
    LookedUp(ProviderAnswer),
    /// The provider answered the retrieve by id.
    Retrieved(ProviderAnswer),
}

/// A transition to run, and how.
#[derive(Debug, Clone)]
pub struct Run<Op> {
    /// The prepared transition (its time captured).
    pub op: Op,
    /// Its first read, when more than its own paths: what the steps after it will
    /// decide from (the call keeps it known).
    pub first_read: Option<Vec<String>>,
    /// Forget what the call knows before it: it reads.
    pub fresh: bool,
    /// Answer it from what the call knows, with no I/O, when it observes there.
    pub observe: bool,
    /// Whether its metric is recorded (a tool's own transition's is not).
    pub record: bool,
    /// Whether what it leaves known is kept for the steps after it.
    pub keep: bool,
}

impl<Op> Run<Op> {
    /// `op`, reading its own paths, recorded, keeping what it leaves known.
    pub fn op(op: Op) -> Self {
        Self {
            op,
            first_read: None,
            fresh: false,
            observe: false,
            record: true,
            keep: true,
        }
    }

    /// The same run, its first read `paths`.
    pub fn reading(mut self, paths: Vec<String>) -> Self {
        self.first_read = Some(paths);
        self
    }

    /// The same run, forgetting what the call knew.
    pub fn fresh(mut self) -> Self {
        self.fresh = true;
        self
    }

    /// The same run, answered from what the call knows when it observes there.
    pub fn observing(mut self) -> Self {
        self.observe = true;
        self
    }

    /// The same run, recording no metric and keeping nothing it learns.
    pub fn tool(mut self) -> Self {
        self.record = false;
        self.keep = false;
        self
    }

    /// The same run of `wrap(op)`: a program's transition run as one of the program
    /// that holds it.
    pub fn map<B>(self, wrap: impl FnOnce(Op) -> B) -> Run<B> {
        Run {
            op: wrap(self.op),
            first_read: self.first_read,
            fresh: self.fresh,
            observe: self.observe,
            record: self.record,
            keep: self.keep,
        }
    }
}

/// The program's next step.
#[derive(Debug, Clone)]
pub enum Next<Op, O> {
    /// Run a transition.
    Run(Run<Op>),
    /// Call the provider's send.
    Send(SendRequest),
    /// Call the provider's lookup.
    Lookup(LookupRequest),
    /// Call the provider's retrieve by id.
    Retrieve(RetrieveRequest),
    /// The call's answer.
    Done(O),
}

/// A call's steps: pure, fed every answer and the journal's time (its timestamp, and
/// the call's time on the driver's monotonic clock).
pub trait Program {
    /// The transitions the call runs (an enum of them for a program of several).
    type Op: Transition;
    /// The call's answer.
    type Output;

    /// The call's own name when it is more than its transitions (`execute`,
    /// `recover`): its span and metric. `None`: the call is its one transition.
    fn name(&self) -> Option<OperationName> {
        None
    }

    /// Whether what each transition leaves known is kept for the next one, which may
    /// then be planned from it (preconditions mode) or answered from it.
    fn remembers(&self) -> bool {
        false
    }

    /// The step after `last`, at the journal's time `now`.
    fn next(
        &mut self,
        last: Answered<Self::Op>,
        now: Now,
    ) -> Result<Next<Self::Op, Self::Output>, JournalError>;

    /// The transition the program runs right after `first` answers `output` at `now`
    /// (the time `first` captured), when it would run one at once: the machine then
    /// decides both together and commits them as one. `None` by default.
    fn chained(
        &self,
        _first: &Self::Op,
        _output: &<Self::Op as Transition>::Output,
        _now: Now,
    ) -> Option<Self::Op> {
        None
    }
}

/// The program of one transition: run it, answer what it answers.
pub struct Single<T> {
    op: Option<T>,
    records: bool,
}

impl<T> Single<T> {
    /// One run of `op`, counted in the metrics under its name.
    pub fn new(op: T) -> Self {
        Self {
            op: Some(op),
            records: true,
        }
    }

    /// One run of `op`, counted in no operation metric (a tool's own transition).
    pub fn unrecorded(op: T) -> Self {
        Self {
            op: Some(op),
            records: false,
        }
    }
}

impl<T: Transition> Program for Single<T> {
    type Op = T;
    type Output = T::Output;

    fn next(&mut self, last: Answered<T>, _now: Now) -> Result<Next<T, T::Output>, JournalError> {
        match last {
            Answered::Nothing => match self.op.take() {
                Some(op) => Ok(Next::Run(match self.records {
                    true => Run::op(op),
                    false => Run::op(op).tool(),
                })),
                None => Err(JournalError::internal(
                    "call: a single transition ran twice",
                )),
            },
            Answered::Ran(result) => result.map(Next::Done),
            Answered::Chained(..)
            | Answered::Sent(_)
            | Answered::LookedUp(_)
            | Answered::Retrieved(_) => Err(JournalError::internal(
                "call: a single transition answered out of turn",
            )),
        }
    }
}

/// Implements [`Transition`] for a program's enum of transitions: each variant holds
/// one, whose answer the given function wraps into the enum of answers. Every method
/// of the trait is delegated here, so that one the trait gains is delegated for every
/// program at once (a default left in place would silently change how a program's
/// transitions run).
macro_rules! transitions {
    ($op:ident => $answer:ident { $($variant:ident => $wrap:expr),+ $(,)? }) => {
        impl $crate::transaction::Transition for $op {
            type Output = $answer;

            fn paths(&self) -> Vec<String> {
                match self {
                    $(Self::$variant(op) => op.paths(),)+
                }
            }

            fn decide(
                &self,
                snapshot: &$crate::transaction::Snapshot,
            ) -> $crate::transaction::Decision<$answer> {
                match self {
                    $(Self::$variant(op) => op.decide(snapshot).map($wrap),)+
                }
            }

            fn name(&self) -> $crate::transaction::OperationName {
                match self {
                    $(Self::$variant(op) => op.name(),)+
                }
            }

            fn blind_create(&self) -> bool {
                match self {
                    $(Self::$variant(op) => op.blind_create(),)+
                }
            }

            fn first_read_unlocked(&self) -> bool {
                match self {
                    $(Self::$variant(op) => op.first_read_unlocked(),)+
                }
            }
        }
    };
}
pub(crate) use transitions;

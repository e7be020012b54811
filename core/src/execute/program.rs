//! `execute` as a [`Program`] of the call machine: the protocol's steps
//! ([`super::protocol`]) turned into the transitions and provider calls the machine
//! runs. What each transition leaves known goes to the next (but the status read's and
//! a second start's: those keep nothing): in preconditions mode a new command's lease
//! and permit are one blind commit (the permit chained after the start), its outcome
//! one commit planned from the state that commit left, and a replay's result is
//! answered from the read its start made; in transaction mode the start and its
//! permit are one transaction over one read ([`super::opening`]).

use super::Execution;
use super::opening::Opening;
use super::protocol::{Event, Protocol, Step};
use crate::answer::ProviderAnswer;
use crate::call::{
    Answered, Concurrency, Labelled, LookupCall, Metric, Next, Now, Program, Run, SendCall,
};
use crate::digest::Digest;
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::envelope::record::WithResult;
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::{CommandCall, LeaseCall};
use crate::sends::begin::BeginSend;
use crate::sends::load::first_read;
use crate::sends::plan::ProviderPlan;
use crate::sends::record::{Mode, RecordAnswer};
use crate::sends::status::SendStatusRead;
use crate::sends::{BeginSendOutput, CommandStatus, SendOutcomeOutput};
use crate::start::{Start, StartOutput};
use crate::then::Second;
use crate::time::Timestamp;
use crate::transaction::OperationName;

/// The transitions of an `execute` call.
pub enum ExecuteOp {
    /// The call's start.
    Start(Start),
    /// Its first start and the permit after it, as one transaction.
    Opening(Box<Opening>),
    /// `begin_send`.
    BeginSend(BeginSend),
    /// `record_send_outcome` or `reconcile_send`.
    Record(WithResult<RecordAnswer>),
    /// `send_status`.
    Status(SendStatusRead),
    /// `result`.
    Result(ResultRead),
}

/// What a transition of an `execute` call answered.
#[derive(Debug)]
pub enum ExecuteAnswer {
    /// The start's lease.
    Started(StartOutput),
    /// The opening's lease, and the permit decided with it, if the protocol asked for
    /// one.
    Opened(StartOutput, Second<BeginSend>),
    /// The permit.
    BeganSend(BeginSendOutput),
    /// The recorded answer.
    Recorded(SendOutcomeOutput),
    /// The send status.
    Status(CommandStatus),
    /// The stored result.
    Result(Option<ResultEnvelope>),
}

crate::call::transitions!(ExecuteOp => ExecuteAnswer {
    Start => ExecuteAnswer::Started,
    Opening => |(started, began)| ExecuteAnswer::Opened(started, began),
    BeginSend => ExecuteAnswer::BeganSend,
    Record => ExecuteAnswer::Recorded,
    Status => ExecuteAnswer::Status,
    Result => ExecuteAnswer::Result,
});

impl Labelled for ExecuteAnswer {
    fn label(&self) -> &'static str {
        match self {
            Self::Started(output) | Self::Opened(output, _) => output.label(),
            Self::BeganSend(output) => output.label(),
            Self::Recorded(output) => output.label(),
            Self::Status(output) => output.label(),
            Self::Result(output) => output.label(),
        }
    }

    /// An opening records its start and, when it decided one, its permit.
    fn record(&self, name: OperationName, into: &mut Vec<Metric>) {
        into.push(Metric {
            name,
            outcome: self.label(),
        });
        if let Self::Opened(_, Some(began)) = self {
            into.push(Metric {
                name: OperationName::BeginSend,
                outcome: match began {
                    Ok(output) => output.label(),
                    Err(error) => error.code(),
                },
            });
        }
    }
}

/// Which step's answer the program waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    Start,
    BeginSend,
    Send,
    Record,
    Status,
    Lookup,
    Reconcile,
    Result,
}

/// One `execute` call: the holder, the plan, the protocol.
pub struct ExecuteProgram {
    identity: CommandIdentity,
    owner: Digest,
    plan: ProviderPlan,
    parameters: serde_json::Value,
    protocol: Protocol,
    first: Option<Step>,
    opened: bool,
    /// The clocks read when the start in flight (or last) captured its time: the
    /// protocol hears its lease at that reading, as the lease was decided and its
    /// expiry set, never later (a step back of the trusted clock while the lease is
    /// taken would lengthen what is left of it).
    opened_at: Option<Now>,
    /// Whether the start in flight is the call's first, which a permit may follow in
    /// one commit.
    chaining: bool,
    waiting: Option<Waiting>,
    concurrency: Concurrency,
    fast_paths: bool,
}

impl ExecuteProgram {
    /// The call of `identity` by the lease holder `owner` with `plan`, run in
    /// `concurrency` mode (`fast_paths` off: the read-and-decide path only).
    pub fn new(
        identity: CommandIdentity,
        owner: Digest,
        plan: ProviderPlan,
        concurrency: Concurrency,
        fast_paths: bool,
    ) -> Result<Self, JournalError> {
        let parameters = serde_json::from_str(plan.canonical_parameters())
            .map_err(|_| JournalError::internal("execute: plan parameters"))?;
        let (protocol, first) = Protocol::new();
        Ok(Self {
            identity,
            owner,
            plan,
            parameters,
            protocol,
            first: Some(first),
            opened: false,
            opened_at: None,
            chaining: false,
            waiting: None,
            concurrency,
            fast_paths,
        })
    }

    fn call(&self, now: Timestamp) -> LeaseCall {
        LeaseCall::new(self.identity.clone(), self.owner.clone(), now)
    }

    /// The protocol's event for what the step it waited for answered; `None` at the
    /// call's beginning.
    fn event(&mut self, last: Answered<ExecuteOp>) -> Result<Option<Event>, JournalError> {
        use ExecuteAnswer as A;
        let out_of_turn = || JournalError::internal("execute: an answer out of turn");
        let event = match (self.waiting.take(), last) {
            (None, Answered::Nothing) => return Ok(None),
            (Some(Waiting::Start), Answered::Ran(Ok(A::Started(started)))) => {
                Event::Started(started.lease)
            }
            (Some(Waiting::Start), Answered::Ran(Ok(A::Opened(started, None)))) => {
                Event::Started(started.lease)
            }
            (Some(Waiting::Start), Answered::Ran(Ok(A::Opened(started, Some(began))))) => {
                self.permitted(started, began)?
            }
            (Some(Waiting::Start), Answered::Chained(A::Started(started), A::BeganSend(began))) => {
                self.permitted(started, Ok(began))?
            }
            (Some(Waiting::BeginSend), Answered::Ran(ran)) => {
                Event::BeganSend(ran.and_then(|answer| match answer {
                    A::BeganSend(began) => Ok(began),
                    _ => Err(out_of_turn()),
                }))
            }
            (Some(Waiting::Record), Answered::Ran(ran)) => Event::Recorded(recorded(ran)),
            (Some(Waiting::Reconcile), Answered::Ran(ran)) => Event::Reconciled(recorded(ran)),
            (Some(Waiting::Status), Answered::Ran(ran)) => match ran? {
                A::Status(status) => Event::Status(status.send),
                _ => return Err(out_of_turn()),
            },
            (Some(Waiting::Result), Answered::Ran(ran)) => match ran? {
                A::Result(result) => Event::Fetched(result),
                _ => return Err(out_of_turn()),
            },
            (Some(Waiting::Start), Answered::Ran(Err(error))) => return Err(error),
            (Some(Waiting::Send), Answered::Sent(answer)) => Event::Sent(answer),
            (Some(Waiting::Lookup), Answered::LookedUp(answer)) => Event::LookedUp(answer),
            _ => return Err(out_of_turn()),
        };
        Ok(Some(event))
    }

    /// The permit committed with the lease: the protocol hears the lease at the
    /// time both were decided (and must then ask for that permit), and the permit is
    /// the event that follows.
    fn permitted(
        &mut self,
        started: StartOutput,
        began: Result<BeginSendOutput, JournalError>,
    ) -> Result<Event, JournalError> {
        let at = self
            .opened_at
            .ok_or(JournalError::internal("execute: a permit before the start"))?;
        match self.protocol.step(Event::Started(started.lease), at)? {
            Step::BeginSend { .. } => Ok(Event::BeganSend(began)),
            _ => Err(JournalError::internal(
                "execute: a permit the protocol did not ask for",
            )),
        }
    }
}

/// A recording's answer as the protocol hears it.
fn recorded(ran: Result<ExecuteAnswer, JournalError>) -> Result<SendOutcomeOutput, JournalError> {
    match ran? {
        ExecuteAnswer::Recorded(output) => Ok(output),
        _ => Err(JournalError::internal("execute: an answer out of turn")),
    }
}

impl Program for ExecuteProgram {
    type Op = ExecuteOp;
    type Output = Execution;

    fn name(&self) -> Option<OperationName> {
        Some(OperationName::Execute)
    }

    fn remembers(&self) -> bool {
        true
    }

    fn parameters(&self) -> Option<&serde_json::Value> {
        Some(&self.parameters)
    }

    fn next(
        &mut self,
        last: Answered<ExecuteOp>,
        clocks: Now,
    ) -> Result<Next<ExecuteOp, Execution>, JournalError> {
        let now = clocks.at;
        let mut step = match self.event(last)? {
            None => self
                .first
                .take()
                .ok_or(JournalError::internal("execute: began twice"))?,
            Some(Event::Started(lease)) => {
                let at = self.opened_at.unwrap_or(clocks);
                self.protocol.step(Event::Started(lease), at)?
            }
            Some(event) => self.protocol.step(event, clocks)?,
        };
        loop {
            let prepared = |mode, fence, attempt, answer: &ProviderAnswer| {
                RecordAnswer::prepare(
                    self.call(now),
                    fence,
                    attempt,
                    answer,
                    Some(self.plan.clone()),
                    mode,
                )
            };
            let (waiting, next) = match step {
                Step::Done(execution) => return Ok(Next::Done(execution)),
                Step::Start if !self.opened => {
                    self.opened = true;
                    self.opened_at = Some(clocks);
                    self.chaining = true;
                    let call = self.call(now);
                    let start = Start::new(self.identity.clone(), self.owner.clone(), now);
                    let paths = first_read(call.command());
                    let op = match (self.concurrency, self.fast_paths) {
                        (Concurrency::Transaction, true) => ExecuteOp::Opening(Box::new(
                            Opening::new(start, call, self.plan.clone(), &self.protocol),
                        )),
                        _ => ExecuteOp::Start(start),
                    };
                    (Waiting::Start, Next::Run(Run::op(op).reading(paths)))
                }
                // A second lease, taken to record the answer this call holds: read
                // anew, and what it reads is not kept.
                Step::Start => {
                    self.opened_at = Some(clocks);
                    let start = Start::new(self.identity.clone(), self.owner.clone(), now);
                    let mut run = Run::op(ExecuteOp::Start(start)).fresh();
                    run.keep = false;
                    (Waiting::Start, Next::Run(run))
                }
                Step::BeginSend { fence } => {
                    let op = BeginSend::new(self.call(now), fence, self.plan.clone());
                    (
                        Waiting::BeginSend,
                        Next::Run(Run::op(ExecuteOp::BeginSend(op))),
                    )
                }
                Step::Send {
                    attempt,
                    resend,
                    key,
                    deadline,
                } => (
                    Waiting::Send,
                    Next::Send(SendCall {
                        key,
                        attempt,
                        resend,
                        deadline,
                    }),
                ),
                Step::Record {
                    fence,
                    attempt,
                    outcome,
                } => match prepared(Mode::Outcome, fence, attempt, &outcome) {
                    Ok(op) => (Waiting::Record, Next::Run(Run::op(ExecuteOp::Record(op)))),
                    Err(error) => {
                        step = self.protocol.step(Event::Recorded(Err(error)), clocks)?;
                        continue;
                    }
                },
                // A call of its own, as `send_status` is: what the call knows is neither
                // planned from nor replaced by it.
                Step::Status => {
                    let read = SendStatusRead::new(CommandCall::new(self.identity.clone(), now))
                        .for_plan(&self.plan);
                    let mut run = Run::op(ExecuteOp::Status(read));
                    run.keep = false;
                    (Waiting::Status, Next::Run(run))
                }
                Step::Lookup { key, deadline, .. } => {
                    (Waiting::Lookup, Next::Lookup(LookupCall { key, deadline }))
                }
                Step::Reconcile {
                    fence,
                    attempt,
                    evidence,
                } => match prepared(Mode::Reconciliation, fence, attempt, &evidence) {
                    Ok(op) => (
                        Waiting::Reconcile,
                        Next::Run(Run::op(ExecuteOp::Record(op))),
                    ),
                    Err(error) => {
                        step = self.protocol.step(Event::Reconciled(Err(error)), clocks)?;
                        continue;
                    }
                },
                Step::FetchResult => {
                    let read = ResultRead::new(CommandCall::new(self.identity.clone(), now));
                    let run = Run::op(ExecuteOp::Result(read)).observing();
                    (Waiting::Result, Next::Run(run))
                }
            };
            if waiting != Waiting::Start || !matches!(next, Next::Run(Run { fresh: false, .. })) {
                self.chaining = false;
            }
            self.waiting = Some(waiting);
            return Ok(next);
        }
    }

    /// After the call's first start (preconditions mode), the permit the protocol
    /// asks for after that lease, decided at the start's time.
    fn chained(&self, first: &ExecuteOp, output: &ExecuteAnswer, now: Now) -> Option<ExecuteOp> {
        let (ExecuteOp::Start(_), ExecuteAnswer::Started(started)) = (first, output) else {
            return None;
        };
        if self.waiting != Some(Waiting::Start) || !self.chaining {
            return None;
        }
        let mut probe = self.protocol.clone();
        match probe.step(Event::Started(started.lease), now) {
            Ok(Step::BeginSend { fence }) => Some(ExecuteOp::BeginSend(BeginSend::new(
                self.call(now.at),
                fence,
                self.plan.clone(),
            ))),
            _ => None,
        }
    }
}

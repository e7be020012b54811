//! `execute` as a [`Program`] of the call machine, its states an enum carrying their
//! data: the opening (a start, with the permit decided with it), the permit, the
//! send, then the settle program (`crate::settle`) with whatever the provider
//! answered, or with a lookup once the cutoff has passed, and the stored result.
//!
//! | state | answer | next |
//! |---|---|---|
//! | opening | acquired, enough lease left (the permit decided with it, when it was) | `begin_send` |
//! | | acquired, less than 1 s left after the 10 s margin | `RetryLater` (the lease's remaining time) |
//! | | busy | `InProgress` |
//! | | succeeded, failed | the stored result, `Declined` |
//! | permitting | permitted, enough lease left | send with the permit's key and the plan's parameters |
//! | | permitted, too little left | `RetryLater` (the permit stands: the next holder re-sends it) |
//! | | succeeded, failed | the stored result, `Declined` |
//! | | `send_cutoff_passed` | settle from a lookup, under the lease |
//! | | the lease lost | `InProgress` |
//! | sending | the provider's answer (or `Unknown` past the deadline) | settle from it, under the lease |
//! | settling | succeeded | the envelope settled, or the stored result |
//! | | declined | `Declined` |
//! | | absent, the first in this call | `begin_send` (the next attempt, its new key) |
//! | | open, or too little lease left | `RetryLater` (the lease's remaining time) |
//! | | not found, unavailable | `PendingReconciliation` |
//! | | in progress | `InProgress` |
//! | | ended | as a start that answered it |
//! | | a late charge recorded (a success this call held, which the command ended, or its attempt moved on, without) | as a start that answered how it ended; `InProgress` after a refused reconciliation |
//! | fetching | the stored result, or none | `Succeeded` with it, `SucceededWithoutResult` |
//!
//! The lease's remaining time is read on the trusted clock's two readings
//! (`crate::settle::Held`): the provider's deadline and the lookup's are the lesser,
//! so a wall clock stepped back after the lease was heard lengthens neither; every
//! `RetryLater` is the greater, so no caller is told to come back before the lease has
//! run out on either. A lease is heard at the reading its start captured, as its
//! expiry was set (never at a later poll: a step back of the trusted clock while it
//! was taken would lengthen what is left of it). A recording
//! of the provider's answer that fails because the call's deadline passed ends the
//! call with that error (`unavailable`), nothing written: the permit stands, and the
//! next call re-sends under the same key and records what the provider answers it.
//!
//! Every other error ends the call with that error. What each transition leaves known
//! goes to the next (but a status read's and a second start's, which keep nothing): in
//! preconditions mode a new command's lease and permit are one blind commit, its
//! outcome one commit planned from the state that commit left, and a replay's result is
//! answered from the read its start made; in transaction mode the start and its permit
//! are one transaction over one read ([`super::opening`]).

use super::opening::{AfterStart, Opening, Second, after_start};
use super::{Executed, Execution};
use crate::call::{Answered, Concurrency, Labelled, Metric, Next, Now, Program, Run};
use crate::digest::Digest;
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::{
    CommandCall, CommandState, LeaseCall, LeaseOutput, Release, ReleaseOutput, TerminalOutput,
};
use crate::sends::begin::BeginSend;
use crate::sends::plan::ProviderPlan;
use crate::sends::provider::SendRequest;
use crate::sends::{AttemptNumber, BeginSendOutput};
use crate::settle::{Held, Settle, SettleOp, SettleOutput, Settled, Source, lease_lost};
use crate::start::{Start, StartOutput};
use crate::time::Timestamp;
use crate::transaction::OperationName;

/// The transitions of an `execute` call.
#[derive(Debug, Clone)]
pub enum ExecuteOp {
    /// The call's first start (alone: its permit, if any, chained by the machine).
    Start(Start),
    /// Its first start and the permit after it, as one transaction.
    Opening(Box<Opening>),
    /// `begin_send`.
    BeginSend(BeginSend),
    /// A transition of the settle program.
    Settle(SettleOp),
    /// `result`.
    Result(ResultRead),
    /// `release_lease`, before a non-terminal answer ([`leave`]).
    Release(Release),
}

/// What a transition of an `execute` call answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteOutput {
    /// The start's lease.
    Started(StartOutput),
    /// The opening's lease, and the permit decided with it, if its lease let it send.
    Opened(StartOutput, Second<BeginSend>),
    /// The permit.
    BeganSend(BeginSendOutput),
    /// What the settle program's transition answered.
    Settle(SettleOutput),
    /// The stored result.
    Result(Option<ResultEnvelope>),
    /// What the release answered.
    Released(ReleaseOutput),
}

crate::call::transitions!(ExecuteOp => ExecuteOutput {
    Start => ExecuteOutput::Started,
    Opening => |(started, began)| ExecuteOutput::Opened(started, began),
    BeginSend => ExecuteOutput::BeganSend,
    Settle => ExecuteOutput::Settle,
    Result => ExecuteOutput::Result,
    Release => ExecuteOutput::Released,
});

impl Labelled for ExecuteOutput {
    fn label(&self) -> &'static str {
        match self {
            Self::Started(output) | Self::Opened(output, _) => output.label(),
            Self::BeganSend(output) => output.label(),
            Self::Settle(output) => output.label(),
            Self::Result(output) => output.label(),
            Self::Released(output) => output.label(),
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

/// A replay is labelled as its execution: the metric's outcomes do not change.
impl Labelled for Executed {
    fn label(&self) -> &'static str {
        self.execution.label()
    }
}

impl Labelled for Execution {
    fn label(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::SucceededWithoutResult => "succeeded_without_result",
            Self::Declined => "declined",
            Self::InProgress => "in_progress",
            Self::RetryLater { .. } => "retry_later",
            Self::PendingReconciliation => "pending_reconciliation",
            Self::CustomerMustAct(_) => "customer_must_act",
        }
    }
}

/// Which of the call's attempts: a recorded absence opens one more, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// The attempt the call found or opened first.
    First,
    /// The attempt opened after this call recorded the one before absent.
    AfterAbsence,
}

/// Where the call stands between steps.
#[derive(Debug, Clone)]
enum State {
    /// Not begun.
    New,
    /// The call's first start is in flight, with the permit decided with it when its
    /// lease lets it send, both decided at the reading `at`.
    Opening { opening: Box<Opening>, at: Now },
    /// `begin_send` under `lease` is in flight.
    Permitting { lease: Held, round: Round },
    /// The provider's send of `attempt` is in flight.
    Sending {
        lease: Held,
        round: Round,
        attempt: AttemptNumber,
        resend: bool,
    },
    /// The settle program runs under `lease`.
    Settling {
        lease: Held,
        round: Round,
        settle: Box<Settle>,
    },
    /// The stored result's read is in flight.
    Fetching,
    /// The release of the call's lease is in flight; `execution` is the answer after.
    Releasing { execution: Execution },
    /// The call answered.
    Done,
}

/// One `execute` call: the holder, the plan, and where the call stands. `Debug`
/// shows where it stands, never the plan's parameters.
#[derive(Clone)]
pub struct ExecuteProgram {
    identity: CommandIdentity,
    owner: Digest,
    plan: ProviderPlan,
    parameters: serde_json::Value,
    concurrency: Concurrency,
    fast_paths: bool,
    state: State,
    /// A start, a permit or a settling found the command ended by someone else: the
    /// call's terminal answer is one the journal had stored before it (a replay).
    stored_before: bool,
    /// What its release needs to know ([`leave`]).
    leaving: leave::Leaving,
}

impl std::fmt::Debug for ExecuteProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecuteProgram")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// What the call does then: its next step, or its answer.
type Then = Result<Next<ExecuteOp, Executed>, JournalError>;

fn out_of_turn() -> JournalError {
    JournalError::internal("execute: an answer out of turn")
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
        Ok(Self {
            identity,
            owner,
            plan,
            parameters,
            concurrency,
            fast_paths,
            state: State::New,
            stored_before: false,
            leaving: leave::Leaving::default(),
        })
    }

    fn call(&self, now: Timestamp) -> LeaseCall {
        LeaseCall::new(self.identity.clone(), self.owner.clone(), now)
    }

    fn go(&mut self, state: State, next: Next<ExecuteOp, Executed>) -> Then {
        self.state = state;
        Ok(next)
    }

    /// The call's answer: a replay exactly when it is a terminal outcome the call
    /// found stored rather than recorded.
    fn done(&mut self, execution: Execution) -> Then {
        let replayed = self.stored_before
            && matches!(
                execution,
                Execution::Succeeded(_) | Execution::SucceededWithoutResult | Execution::Declined
            );
        self.go(
            State::Done,
            Next::Done(Executed {
                execution,
                replayed,
            }),
        )
    }

    /// The call's first start, read on the set `begin_send` reads: in transaction
    /// mode the opening as one transaction; otherwise the start alone, its permit
    /// chained by the machine in preconditions mode ([`Program::chained`]).
    fn open(&mut self, now: Now) -> Then {
        let start = Start::new(self.identity.clone(), self.owner.clone(), now.at);
        let opening = Opening::new(start, self.call(now.at), self.plan.clone());
        let paths = opening.paths();
        let op = match (self.concurrency, self.fast_paths) {
            (Concurrency::Transaction, true) => ExecuteOp::Opening(Box::new(opening.clone())),
            _ => ExecuteOp::Start(opening.start()),
        };
        self.go(
            State::Opening {
                opening: Box::new(opening),
                at: now,
            },
            Next::Run(Run::op(op).reading(paths)),
        )
    }

    /// What follows a start, made at the reading `at`, that answered `started`, at
    /// `now`: its lease is heard at `at`, as its expiry was set.
    fn started(&mut self, started: StartOutput, at: Now, now: Now) -> Then {
        self.stored_before |= matches!(
            started.lease,
            LeaseOutput::Succeeded | LeaseOutput::FailedFinal
        );
        match (
            after_start(started.lease, at, now),
            Held::of(started.lease, at),
        ) {
            (AfterStart::Permit(lease), _) => self.permit(lease, Round::First, now),
            (AfterStart::Fetch, _) => self.fetch(now),
            // Acquired with too little lease left to send: given up at once.
            (AfterStart::Answer(execution), Some(lease)) => self.leave(lease, execution, now),
            (AfterStart::Answer(execution), None) => self.done(execution),
        }
    }

    /// `begin_send` under `lease`.
    fn permit(&mut self, lease: Held, round: Round, now: Now) -> Then {
        let op = BeginSend::new(self.call(now.at), lease.fence, self.plan.clone());
        self.go(
            State::Permitting { lease, round },
            Next::Run(Run::op(ExecuteOp::BeginSend(op))),
        )
    }

    /// What `begin_send` under `lease` answered.
    fn began(
        &mut self,
        lease: Held,
        round: Round,
        began: Result<BeginSendOutput, JournalError>,
        now: Now,
    ) -> Then {
        match began {
            Ok(BeginSendOutput::Permitted(permit)) => match lease.deadline(now) {
                Some(deadline) => self.go(
                    State::Sending {
                        lease,
                        round,
                        attempt: permit.attempt,
                        resend: permit.resend,
                    },
                    Next::Send(SendRequest {
                        key: permit.provider_idempotency_key,
                        parameters: self.parameters.clone(),
                        deadline,
                        attempt: permit.attempt,
                        resend: permit.resend,
                        act_by: permit.act_by,
                    }),
                ),
                // The permit stands: the next holder re-sends it with the same key.
                None => self.leave(
                    lease,
                    Execution::RetryLater {
                        after: lease.retry_after(now),
                    },
                    now,
                ),
            },
            Ok(BeginSendOutput::Terminal(TerminalOutput::Succeeded)) => {
                self.stored_before = true;
                self.fetch(now)
            }
            Ok(BeginSendOutput::Terminal(TerminalOutput::FailedFinal)) => {
                self.stored_before = true;
                self.done(Execution::Declined)
            }
            // Nothing may be sent any more: the provider is asked instead.
            Err(JournalError::SendCutoffPassed) => self.settle(lease, round, Source::Lookup, now),
            // The last sender's request may still be on its way: retry once it cannot.
            Err(JournalError::ResendNotYet { from }) => self.leave_until(lease, from, now),
            Err(error) if lease_lost(&error) => self.done(Execution::InProgress),
            Err(error) => Err(error),
        }
    }

    /// The settle program from `source` under `lease`.
    fn settle(&mut self, lease: Held, round: Round, source: Source, now: Now) -> Then {
        let settle = Settle::under(
            self.identity.clone(),
            self.owner.clone(),
            self.plan.clone(),
            lease,
            source,
        );
        self.settling(lease, round, Box::new(settle), Answered::Nothing, now)
    }

    /// The settle program's next step after `last`, or, once it has settled, the
    /// call's.
    fn settling(
        &mut self,
        lease: Held,
        round: Round,
        mut settle: Box<Settle>,
        last: Answered<SettleOp>,
        now: Now,
    ) -> Then {
        let next = match settle.next(last, now)? {
            Next::Done(settled) => {
                self.leaving.retaken = settle.lease_taken().map(|taken| taken.fence);
                return self.settled(lease, round, settled, now);
            }
            Next::Run(run) => Next::Run(run.map(ExecuteOp::Settle)),
            Next::Lookup(request) => Next::Lookup(request),
            Next::Retrieve(request) => Next::Retrieve(request),
            Next::Send(_) => return Err(JournalError::internal("execute: settling sent")),
        };
        self.go(
            State::Settling {
                lease,
                round,
                settle,
            },
            next,
        )
    }

    /// What the settle program under `lease` settled.
    fn settled(&mut self, lease: Held, round: Round, settled: Settled, now: Now) -> Then {
        self.stored_before |= matches!(
            settled,
            Settled::Ended(CommandState::Succeeded | CommandState::FailedFinal)
                | Settled::LateCharge(Some(_))
        );
        match settled {
            Settled::Succeeded(Some(envelope)) => self.done(Execution::Succeeded(envelope)),
            Settled::Succeeded(None) | Settled::Ended(CommandState::Succeeded) => self.fetch(now),
            Settled::Declined | Settled::Ended(CommandState::FailedFinal) => {
                self.done(Execution::Declined)
            }
            Settled::Absent => match round {
                // The next attempt, under its new key.
                Round::First => self.permit(lease, Round::AfterAbsence, now),
                Round::AfterAbsence => Err(JournalError::internal(
                    "execute: a second absence in one call",
                )),
            },
            Settled::Open | Settled::LeaseEnding => self.leave(
                lease,
                Execution::RetryLater {
                    after: lease.retry_after(now),
                },
                now,
            ),
            // The action goes to the caller only; the next call reads the provider's
            // object (the attempt is never re-sent blindly).
            Settled::AwaitingCustomer(action) => {
                self.leave(lease, Execution::CustomerMustAct(action), now)
            }
            Settled::NotFound | Settled::Unavailable => {
                self.leave(lease, Execution::PendingReconciliation, now)
            }
            Settled::InProgress => self.done(Execution::InProgress),
            // A charge this call held, recorded late: the command's own answer, as a
            // start would have answered it, or, refused by the reconciliation, in
            // progress.
            Settled::LateCharge(Some(TerminalOutput::Succeeded)) => self.fetch(now),
            Settled::LateCharge(Some(TerminalOutput::FailedFinal)) => {
                self.done(Execution::Declined)
            }
            Settled::LateCharge(None) => self.done(Execution::InProgress),
            Settled::Ended(CommandState::Registered | CommandState::Leased)
            | Settled::NothingOpen
            | Settled::OtherAccount => Err(JournalError::internal(
                "execute: a job's answer under a held lease",
            )),
        }
    }

    /// `result`, answered from what the call knows when its read holds it.
    fn fetch(&mut self, now: Now) -> Then {
        let read = ResultRead::new(CommandCall::new(self.identity.clone(), now.at));
        let run = Run::op(ExecuteOp::Result(read)).observing();
        self.go(State::Fetching, Next::Run(run))
    }
}

/// A settle program's answer, from an `execute` call's.
fn to_settle(last: Answered<ExecuteOp>) -> Result<Answered<SettleOp>, JournalError> {
    Ok(match last {
        Answered::Ran(Ok(ExecuteOutput::Settle(output))) => Answered::Ran(Ok(output)),
        Answered::Ran(Err(error)) => Answered::Ran(Err(error)),
        Answered::LookedUp(answer) => Answered::LookedUp(answer),
        Answered::Retrieved(answer) => Answered::Retrieved(answer),
        Answered::Nothing | Answered::Ran(Ok(_)) | Answered::Chained(..) | Answered::Sent(_) => {
            return Err(out_of_turn());
        }
    })
}

impl Program for ExecuteProgram {
    type Op = ExecuteOp;
    type Output = Executed;

    fn name(&self) -> Option<OperationName> {
        Some(OperationName::Execute)
    }

    fn remembers(&self) -> bool {
        true
    }

    fn next(&mut self, last: Answered<ExecuteOp>, now: Now) -> Then {
        use ExecuteOutput as O;
        match (std::mem::replace(&mut self.state, State::Done), last) {
            (State::New, Answered::Nothing) => self.open(now),
            (State::Opening { at, .. }, Answered::Ran(ran)) => match ran? {
                O::Started(started) | O::Opened(started, None) => self.started(started, at, now),
                // The permit decided with the lease: the call goes on from it.
                O::Opened(started, Some(began)) => self.opened(started, at, began, now),
                _ => Err(out_of_turn()),
            },
            (
                State::Opening { at, .. },
                Answered::Chained(O::Started(started), O::BeganSend(began)),
            ) => self.opened(started, at, Ok(began), now),
            (State::Permitting { lease, round }, Answered::Ran(ran)) => {
                let began = ran.and_then(|output| match output {
                    O::BeganSend(began) => Ok(began),
                    _ => Err(out_of_turn()),
                });
                self.began(lease, round, began, now)
            }
            (
                State::Sending {
                    lease,
                    round,
                    attempt,
                    resend,
                },
                Answered::Sent(answer),
            ) => {
                let source = Source::Sent {
                    attempt,
                    answer,
                    resend,
                };
                self.settle(lease, round, source, now)
            }
            (
                State::Settling {
                    lease,
                    round,
                    settle,
                },
                last,
            ) => self.settling(lease, round, settle, to_settle(last)?, now),
            (State::Releasing { execution }, Answered::Ran(ran)) => self.left(execution, ran),
            (State::Fetching, Answered::Ran(ran)) => match ran? {
                O::Result(Some(envelope)) => self.done(Execution::Succeeded(envelope)),
                O::Result(None) => self.done(Execution::SucceededWithoutResult),
                _ => Err(out_of_turn()),
            },
            _ => Err(out_of_turn()),
        }
    }

    /// After the call's first start (preconditions mode), the permit its lease lets it
    /// take, decided at the start's time by the opening's one rule.
    fn chained(&self, first: &ExecuteOp, output: &ExecuteOutput, _now: Now) -> Option<ExecuteOp> {
        match (&self.state, first, output) {
            (
                State::Opening { opening, .. },
                ExecuteOp::Start(_),
                ExecuteOutput::Started(started),
            ) => opening.permit(started).map(ExecuteOp::BeginSend),
            _ => None,
        }
    }
}

impl ExecuteProgram {
    /// The opening, decided at the reading `at`, answered `started` with the permit
    /// `began` decided with it: the lease is heard at the time both were decided, and
    /// the permit's deadline measured from then.
    fn opened(
        &mut self,
        started: StartOutput,
        at: Now,
        began: Result<BeginSendOutput, JournalError>,
        now: Now,
    ) -> Then {
        let lease = Held::of(started.lease, at)
            .ok_or(JournalError::internal("execute: a permit without a lease"))?;
        self.began(lease, Round::First, began, now)
    }
}

mod leave;
#[cfg(test)]
mod tests;

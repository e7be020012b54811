//! One call of the journal as a sans-I/O machine: every operation, `execute` and the
//! recovery of one command run through [`Call`], and the library's gRPC driver and
//! the tests' in-memory store drive the same machine.
//!
//! A call is a [`Program`] (what to do, step by step: [`Single`] for one transition,
//! `execute`'s and recovery's programs for more) run by the machine, which owns how
//! each transition reaches the documents:
//!
//! | the transition | the machine asks for |
//! |---|---|
//! | answers from what the call knows, and its answer there is final (a stored result) | nothing: the answer |
//! | plannable from what the call knows (preconditions mode) | one commit under the known update times ([`crate::known::plan`]) |
//! | a new command's creation, chained with the transition the program runs after it (preconditions mode) | one blind commit of both ([`crate::known::chain`]) |
//! | a creation that opts in (preconditions mode) | one blind commit ([`crate::transaction::blind`]) |
//! | anything else, or a fast path refused | read and decide ([`crate::attempt`]), and commit; a transition the program runs right after a mutation is decided over the same read and committed with it |
//!
//! Every commit proves what its decision assumed ([`crate::proof`]). A refused fast
//! path wrote nothing and spends no attempt; every other failed attempt is retried
//! until the budget of attempts that could have written is spent. The driver is
//! told what to do ([`Io`]) and answers what happened ([`Input`]); it owns the clock,
//! the backoff's randomness, timeouts and deadlines, spans and metrics, and never
//! decides.
//!
//! ```text
//! let mut call = Call::new(program, options);
//! loop {
//!     match call.poll(clock.now()) {
//!         Io::Read { .. } => call.handle(Input::Read(read(..).await)),
//!         Io::Commit { .. } => call.handle(Input::Committed(commit(..).await)),
//!         Io::Done(answer) => return answer,
//!         // Began, Ended, Rollback, Retry, Send, Lookup likewise
//!     }
//! }
//! ```

mod io;
mod labels;
mod program;
mod run;
#[cfg(test)]
mod tests;

pub use io::{
    CommitKind, Concurrency, Consistency, Input, Io, Metric, ReadAnswer, RetryCause, RpcFailure,
    TransactionId,
};
pub use labels::Labelled;
pub(crate) use program::transitions;
pub(crate) use program::{Answered, Next, Run};
pub use program::{Program, Single};

use crate::error::JournalError;
use crate::known::{self, Known};
use crate::time::Timestamp;
use crate::transaction::{OperationName, Transition, blind};
use run::{Fast, Running, Step};
use std::collections::VecDeque;
use std::num::NonZeroU32;

/// How a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallOptions {
    /// The concurrency mode.
    pub concurrency: Concurrency,
    /// Attempts per transition that could have written.
    pub attempts: NonZeroU32,
    /// Whether the fast paths are taken (blind creations, commits planned or chained
    /// from what the call knows, answers from it). Always, but for a test that holds
    /// them to the read-and-decide path.
    pub fast_paths: bool,
}

impl Default for CallOptions {
    fn default() -> Self {
        Self {
            concurrency: Concurrency::Preconditions,
            attempts: NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
            fast_paths: true,
        }
    }
}

/// A transition running, with how its end is recorded.
struct Current<Op: Transition, V> {
    running: Running<Op, V>,
    /// The chained transition's name, when one was planned with it.
    chained: Option<OperationName>,
    record: bool,
    keep: bool,
}

enum State<Op: Transition, V> {
    /// Ask the program for its next step, with what the last one answered.
    Ask(Answered<Op>),
    /// A transition runs.
    Running(Box<Current<Op, V>>),
    /// The provider's send or lookup is in flight.
    Provider,
    /// The answer was given.
    Finished,
}

/// One call: a [`Program`] and the machine that runs its transitions.
pub struct Call<P: Program, V> {
    program: P,
    options: CallOptions,
    /// What the call's own last read or commit left known (programs that remember).
    known: Option<Known<V>>,
    state: State<P::Op, V>,
    /// Steps to hand out before anything else.
    queue: VecDeque<Io<P::Output, V>>,
    /// Whether the call's own span began (programs with a name).
    began: bool,
}

impl<P, V> Call<P, V>
where
    P: Program,
    P::Output: Labelled,
    <P::Op as Transition>::Output: Labelled,
    V: Clone,
{
    /// A call of `program`.
    pub fn new(program: P, options: CallOptions) -> Self {
        Self {
            program,
            options,
            known: None,
            state: State::Ask(Answered::Nothing),
            queue: VecDeque::new(),
            began: false,
        }
    }

    /// The program.
    pub fn program(&self) -> &P {
        &self.program
    }

    /// Whether what transitions leave known is kept: the program remembers and the
    /// fast paths are on.
    fn remembers(&self) -> bool {
        self.program.remembers() && self.options.fast_paths
    }

    /// What to do next, at the journal's time `now` (used only when the program takes
    /// its next step: a transition captures it, a program decides with it). After an
    /// I/O step (read, commit, rollback, retry, send, lookup) the driver answers with
    /// [`Call::handle`] before polling again; after a notification it polls again.
    pub fn poll(&mut self, now: Timestamp) -> Io<P::Output, V> {
        loop {
            if let Some(io) = self.queue.pop_front() {
                return io;
            }
            if !self.began {
                self.began = true;
                if let Some(name) = self.program.name() {
                    return Io::Began(name);
                }
            }
            match std::mem::replace(&mut self.state, State::Finished) {
                State::Ask(answered) => match self.program.next(answered, now) {
                    Err(error) => self.done(Err(error)),
                    Ok(Next::Done(output)) => self.done(Ok(output)),
                    Ok(Next::Send(send)) => {
                        self.state = State::Provider;
                        return Io::Send(send);
                    }
                    Ok(Next::Lookup(lookup)) => {
                        self.state = State::Provider;
                        return Io::Lookup(lookup);
                    }
                    Ok(Next::Run(run)) => self.begin(run, now),
                },
                State::Running(current) => {
                    // Polled while its I/O is outstanding: the driver broke the
                    // contract.
                    self.state = State::Running(current);
                    return Io::Done(Err(JournalError::internal(
                        "call: polled before the last step was answered",
                    )));
                }
                State::Provider => {
                    self.state = State::Provider;
                    return Io::Done(Err(JournalError::internal(
                        "call: polled before the provider answered",
                    )));
                }
                State::Finished => {
                    return Io::Done(Err(JournalError::internal("call: polled after its answer")));
                }
            }
        }
    }

    /// What the last I/O step answered.
    pub fn handle(&mut self, input: Input<V>) {
        match (std::mem::replace(&mut self.state, State::Finished), input) {
            (State::Provider, Input::Sent(answer)) => {
                self.state = State::Ask(Answered::Sent(answer));
            }
            (State::Provider, Input::LookedUp(answer)) => {
                self.state = State::Ask(Answered::LookedUp(answer));
            }
            (State::Running(mut current), input) => {
                let step = current.running.handle(input);
                self.after(current, step);
            }
            (_, _) => self.done(Err(JournalError::internal("call: an answer to no step"))),
        }
    }

    /// The call's answer, after its own end when it has a name.
    fn done(&mut self, result: Result<P::Output, JournalError>) {
        self.state = State::Finished;
        if let Some(name) = self.program.name() {
            let outcome = match &result {
                Ok(output) => output.label(),
                Err(error) => error.code(),
            };
            self.queue.push_back(Io::Ended {
                attempts: 0,
                error: result.as_ref().err().cloned(),
                recorded: vec![Metric { name, outcome }],
            });
        }
        self.queue.push_back(Io::Done(result));
    }

    /// Starts a transition's run: its answer from what the call knows, its fast
    /// path, or its first read.
    fn begin(&mut self, run: Run<P::Op>, now: Timestamp) {
        let remembers = self.remembers();
        if run.fresh {
            self.known = None;
        }
        if run.observe
            && remembers
            && let Some(output) = self.known.as_ref().and_then(|k| known::observe(&run.op, k))
        {
            self.state = State::Ask(Answered::Ran(Ok(output)));
            return;
        }
        let paths = run.first_read.unwrap_or_else(|| run.op.paths());
        let known = match run.keep {
            true => self.known.take(),
            false => None,
        };
        let mut chained = None;
        let fast = match (self.options.fast_paths, self.options.concurrency) {
            (true, Concurrency::Preconditions) => {
                let planned = match (&known, remembers) {
                    (Some(known), true) => known::plan(&run.op, known).map(Fast::Planned),
                    _ => None,
                };
                let planned = planned.or_else(|| match remembers {
                    true => {
                        let program = &self.program;
                        let mut second = None;
                        let plan = known::chain(&run.op, &paths, |out| {
                            let op = program.chained(&run.op, out, now)?;
                            second = Some(op.name());
                            Some(op)
                        });
                        chained = plan.as_ref().and(second);
                        plan.map(Fast::Chained)
                    }
                    false => None,
                });
                planned.or_else(|| {
                    blind::plan(&run.op, &paths)
                        .map(|plan| Fast::Blind(known::blind_commit(plan, &paths)))
                })
            }
            // Transaction mode: a creation takes no lock, so an opting-in
            // transition's blind creation is tried first here too.
            (true, Concurrency::Transaction) => blind::plan(&run.op, &paths)
                .map(|plan| Fast::Blind(known::blind_commit(plan, &paths))),
            (false, _) => None,
        };
        // Transaction mode: an opting-in transition's first read-and-decide attempt
        // takes no lock either.
        let unlocked = self.options.fast_paths
            && self.options.concurrency == Concurrency::Transaction
            && run.op.first_read_unlocked();
        let name = run.op.name();
        let mut running = Running::new(
            run.op,
            paths,
            fast,
            self.options.concurrency,
            self.options.attempts,
            remembers && run.keep,
        )
        .unlocked(unlocked);
        self.queue.push_back(Io::Began(name));
        let step = running.start();
        let current = Box::new(Current {
            running,
            chained,
            record: run.record,
            keep: run.keep,
        });
        self.after(current, step);
    }

    /// Hands out what the run asks for next, or ends it.
    fn after(&mut self, current: Box<Current<P::Op, V>>, step: Step<P::Output, P::Op, V>) {
        match step {
            Step::Io(io) => {
                self.queue.push_back(io);
                self.state = State::Running(current);
            }
            Step::Finished {
                answered,
                known,
                attempts,
            } => {
                let name = current.running.op.name();
                let mut recorded = Vec::new();
                if current.record {
                    match &answered {
                        Answered::Ran(Ok(output)) => output.record(name, &mut recorded),
                        Answered::Chained(first, second) => {
                            first.record(name, &mut recorded);
                            if let Some(chained) = current.chained {
                                second.record(chained, &mut recorded);
                            }
                        }
                        Answered::Ran(Err(error)) => recorded.push(Metric {
                            name,
                            outcome: error.code(),
                        }),
                        Answered::Nothing | Answered::Sent(_) | Answered::LookedUp(_) => {}
                    }
                }
                let error = match &answered {
                    Answered::Ran(Err(error)) => Some(*error),
                    _ => None,
                };
                self.queue.push_back(Io::Ended {
                    attempts,
                    error,
                    recorded,
                });
                if current.keep && self.remembers() {
                    self.known = known;
                }
                self.state = State::Ask(answered);
            }
        }
    }
}

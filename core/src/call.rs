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
//! told what to do ([`Io`]) and answers what happened ([`Input`]); it owns the clocks
//! (read at every poll, [`Now`]), the backoff's randomness, each RPC's timeout, spans
//! and metrics, and never decides.
//!
//! The call's deadline ([`CallOptions::deadline`]) is the machine's, on the driver's
//! monotonic clock from the call's first poll: once it has passed, no attempt begins
//! (the transition ends `unavailable`, `deadline: true`, that attempt not counted), no
//! follow-up read, commit or backoff of a running attempt is asked for (a transaction
//! it holds is rolled back first), and no provider call starts (the call ends
//! `unavailable`); a provider call that starts before it is given at most what is
//! left of it. The driver cuts each RPC and each backoff at the same deadline.
//!
//! ```text
//! let mut call = Call::new(program, options);
//! let began = Instant::now();
//! loop {
//!     let (at, steady) = (clock.now(), clock.steady());
//!     match call.poll(Now { at, steady, elapsed: began.elapsed() }) {
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
mod quiet;
mod run;
#[cfg(test)]
mod tests;

pub use io::{
    CommitKind, Concurrency, Consistency, Input, Io, Metric, Now, ReadAnswer, RetryCause,
    RpcFailure, TransactionId,
};
pub use labels::Labelled;
pub(crate) use program::transitions;
pub(crate) use program::{Answered, Next, Run};
pub use program::{Program, Single};
pub use quiet::{Quiet, Untold};

use crate::attempt::Twice;
use crate::error::JournalError;
use crate::known::{self, Known};
use crate::transaction::{OperationName, Transition, blind};
use run::{Fast, Running, Step};
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::time::Duration;

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
    /// The longest the whole call may run, on the driver's monotonic clock from its
    /// first poll (`None`: only the attempts bound it). Past it no attempt begins, no
    /// running attempt asks for more than the rollback of its transaction, and no
    /// provider call starts; a provider call is given at most what is left of it.
    pub deadline: Option<Duration>,
}

impl Default for CallOptions {
    fn default() -> Self {
        Self {
            concurrency: Concurrency::Preconditions,
            attempts: NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
            fast_paths: true,
            deadline: None,
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
    /// Strict mode's second `decide`, for every attempt of the call (the test store).
    strict: Option<Twice<P::Op>>,
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
            strict: None,
        }
    }

    /// The same call with every read-and-decide attempt in the attempt machine's
    /// strict mode: `decide` asked twice on every snapshot, and a `decide` that breaks
    /// a rule of the attempt panics with the rule's name (the test store and the fuzz
    /// targets; never the library's driver).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn strict(mut self) -> Self
    where
        <P::Op as Transition>::Output: std::fmt::Debug + PartialEq,
    {
        self.strict = Some(crate::attempt::strictly());
        self
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

    /// What to do next, at the journal's time `now`: its timestamp is used when the
    /// program takes its next step (a transition captures it, a program decides with
    /// it), its elapsed time against the call's deadline and the deadlines a program
    /// derives from its lease. After an I/O step (read, commit, rollback, retry, send,
    /// lookup) the driver answers with [`Call::handle`] before polling again; after a
    /// notification it polls again.
    pub fn poll(&mut self, now: Now) -> Io<P::Output, V> {
        loop {
            if let Some(io) = self.queue.pop_front() {
                match self.expired(&io, now.elapsed) {
                    // The deadline passed: the step is not asked for, its run ends.
                    Some(passed) => self.handle(passed),
                    None => return io,
                }
                continue;
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
                    Ok(Next::Send(mut send)) => match self.left(now.elapsed, send.deadline) {
                        Some(deadline) => {
                            send.deadline = deadline;
                            self.state = State::Provider;
                            return Io::Send(send);
                        }
                        None => self.done(Err(JournalError::unavailable(None, 0, true))),
                    },
                    Ok(Next::Lookup(mut lookup)) => match self.left(now.elapsed, lookup.deadline) {
                        Some(deadline) => {
                            lookup.deadline = deadline;
                            self.state = State::Provider;
                            return Io::Lookup(lookup);
                        }
                        None => self.done(Err(JournalError::unavailable(None, 0, true))),
                    },
                    Ok(Next::Retrieve(mut retrieve)) => {
                        match self.left(now.elapsed, retrieve.deadline) {
                            Some(deadline) => {
                                retrieve.deadline = deadline;
                                self.state = State::Provider;
                                return Io::Retrieve(retrieve);
                            }
                            None => self.done(Err(JournalError::unavailable(None, 0, true))),
                        }
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
            (State::Provider, Input::Retrieved(answer)) => {
                self.state = State::Ask(Answered::Retrieved(answer));
            }
            (State::Running(mut current), input) => {
                let step = current.running.handle(input);
                self.after(current, step);
            }
            (_, _) => self.done(Err(JournalError::internal("call: an answer to no step"))),
        }
    }

    /// Whether the call's deadline has passed at `elapsed`.
    fn past(&self, elapsed: Duration) -> bool {
        self.options.deadline.is_some_and(|d| elapsed >= d)
    }

    /// A provider call's `deadline` cut to what is left of the call's at `elapsed`;
    /// `None` once nothing is left.
    fn left(&self, elapsed: Duration, deadline: Duration) -> Option<Duration> {
        match self.options.deadline {
            None => Some(deadline),
            Some(d) => Some(
                d.checked_sub(elapsed)
                    .filter(|l| !l.is_zero())?
                    .min(deadline),
            ),
        }
    }

    /// What a running transition hears instead of `io` when the call's deadline has
    /// passed at `elapsed`: the first read or fast commit of an attempt is not sent
    /// (not an attempt); a follow-up read, a decided commit or a backoff ends the run
    /// (its transaction rolled back first). A rollback is always asked for.
    fn expired(&self, io: &Io<P::Output, V>, elapsed: Duration) -> Option<Input<V>> {
        if !self.past(elapsed) {
            return None;
        }
        match io {
            Io::Read {
                kind: crate::attempt::ReadKind::First,
                ..
            }
            | Io::Commit {
                kind: CommitKind::Blind | CommitKind::Planned,
                ..
            } => Some(Input::DeadlinePassedBeforeAttempt),
            Io::Read { .. } | Io::Commit { .. } | Io::Retry { .. } => Some(Input::DeadlinePassed),
            Io::Began(_)
            | Io::Ended { .. }
            | Io::Rollback(_)
            | Io::Send(_)
            | Io::Lookup(_)
            | Io::Retrieve(_)
            | Io::Done(_) => None,
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
    fn begin(&mut self, run: Run<P::Op>, now: Now) {
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
        .unlocked(unlocked)
        .strict(self.strict);
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
                        Answered::Nothing
                        | Answered::Sent(_)
                        | Answered::LookedUp(_)
                        | Answered::Retrieved(_) => {}
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

//! The call machine driven over the in-memory store, as the library's gRPC driver
//! (`src/runner/driver.rs`) drives it over Firestore: the same [`Call::poll`] and
//! [`Call::handle`], every read at the store as it stands (one state, so every read
//! is repeatable), every commit under its preconditions, a transaction an id of its
//! own, a rollback and a backoff's wait answered at once.
//!
//! [`Driven`] is one call driven a step at a time; it is the only loop of the test
//! support. [`Store::call`] runs one to its answer with a hook that sees each step
//! first and may answer it instead (a fault, a lost answer, a write by someone else;
//! the provider's calls are the hook's to answer), and the store's helpers
//! (`core/src/testing/run.rs`) run each operation through one, or interleave several.

use super::store::Store;
use crate::call::{
    Call, CallOptions, CommitKind, Consistency, Input, Io, Labelled, Metric, Now, Program,
    RetryCause, RpcFailure, TransactionId,
};
use crate::error::{GrpcCode, JournalError};
use crate::sends::provider::ProviderAnswer;
use crate::time::Timestamp;
use crate::transaction::Transition;

/// What one call did, step by step.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CallTrace {
    /// Each I/O step's name, in order: `read`, `read_in`, `begin`, `commit`,
    /// `blind`, `planned`, `rollback`, `retry`, `wait_now`, `send`, `lookup`.
    pub steps: Vec<&'static str>,
    /// Every metric the call recorded.
    pub metrics: Vec<Metric>,
    /// The transitions begun, by name.
    pub began: Vec<&'static str>,
}

impl CallTrace {
    /// The RPCs among the steps (reads, commits and rollbacks).
    pub fn rpcs(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| !matches!(**s, "retry" | "wait_now" | "send" | "lookup"))
            .count()
    }
}

/// One call of `P` driven over the store a step at a time: [`Driven::poll`] for its
/// next I/O step, [`Driven::perform`] for what the store answers to it, and
/// [`Driven::handle`] to hand the answer back.
pub(crate) struct Driven<P: Program> {
    call: Call<P, u64>,
    trace: CallTrace,
    /// Transactions opened so far: the next one's id.
    transactions: u8,
}

impl<P> Driven<P>
where
    P: Program,
    P::Output: Labelled,
    <P::Op as Transition>::Output: Labelled,
{
    /// A call of `program`, not yet polled.
    pub(crate) fn new(program: P, options: CallOptions) -> Self {
        Self {
            call: Call::new(program, options),
            trace: CallTrace::default(),
            transactions: 0,
        }
    }

    /// The same call, every attempt in the attempt machine's strict mode (`decide`
    /// asked twice on every snapshot; a rule of the attempt broken panics).
    pub(crate) fn strict(mut self) -> Self
    where
        <P::Op as Transition>::Output: std::fmt::Debug + PartialEq,
    {
        self.call = self.call.strict();
        self
    }

    /// The call's next I/O step, or its answer ([`Io::Done`]), the driver's clocks read
    /// from `clocks` at every poll as the library's driver reads them. The
    /// notifications in between ([`Io::Began`], [`Io::Ended`]) go to the trace.
    pub(crate) fn poll(&mut self, clocks: &mut impl FnMut() -> Now) -> Io<P::Output, u64> {
        loop {
            let io = self.call.poll(clocks());
            let step = match &io {
                Io::Done(_) => return io,
                Io::Began(name) => {
                    self.trace.began.push(name.as_str());
                    continue;
                }
                Io::Ended { recorded, .. } => {
                    self.trace.metrics.extend(recorded.iter().copied());
                    continue;
                }
                Io::Read { consistency, .. } => match consistency {
                    Consistency::Begin { .. } => "begin",
                    Consistency::In(_) => "read_in",
                    Consistency::Latest | Consistency::At(_) => "read",
                },
                Io::Commit { kind, .. } => match kind {
                    CommitKind::Decided => "commit",
                    CommitKind::Blind => "blind",
                    CommitKind::Planned => "planned",
                },
                Io::Rollback(_) => "rollback",
                Io::Retry {
                    immediate: true, ..
                } => "wait_now",
                Io::Retry { .. } => "retry",
                Io::Send(_) => "send",
                Io::Lookup(_) => "lookup",
                Io::Retrieve(_) => "retrieve",
            };
            self.trace.steps.push(step);
            return io;
        }
    }

    /// What `store` answers to the I/O step `io`: a read of the store as it stands
    /// (opening a transaction when asked to), a commit under its preconditions (a lost
    /// one refused as Firestore refuses it, nothing written), a rollback sent, a wait
    /// waited, a provider that answers nothing in time (`Unknown`).
    pub(crate) fn perform(&mut self, store: &mut Store, io: &Io<P::Output, u64>) -> Input<u64> {
        match io {
            Io::Read {
                paths, consistency, ..
            } => {
                let transaction = match consistency {
                    Consistency::Begin { .. } => {
                        self.transactions = self.transactions.wrapping_add(1);
                        Some(TransactionId(vec![self.transactions]))
                    }
                    _ => None,
                };
                Input::Read(Ok(store.read(paths, transaction)))
            }
            Io::Commit { writes, .. } => match store.commit_guarded(writes) {
                Some(results) => Input::Committed(Ok(results)),
                None => Input::Committed(Err(RpcFailure::Retry {
                    code: GrpcCode::FailedPrecondition,
                    cause: RetryCause::PreconditionLost,
                })),
            },
            Io::Rollback(_) => Input::RolledBack,
            Io::Retry { .. } => Input::Waited,
            Io::Send(_) => Input::Sent(ProviderAnswer::Unknown),
            Io::Lookup(_) => Input::LookedUp(ProviderAnswer::Unknown),
            Io::Retrieve(_) => Input::Retrieved(ProviderAnswer::Unknown),
            Io::Began(_) | Io::Ended { .. } | Io::Done(_) => {
                unreachable!("a notification or an answer is not an I/O step")
            }
        }
    }

    /// Hands the answer to the last I/O step back to the call.
    pub(crate) fn handle(&mut self, input: Input<u64>) {
        self.call.handle(input);
    }

    /// What the call did so far.
    pub(crate) fn trace(self) -> CallTrace {
        self.trace
    }
}

impl Store {
    /// Runs `program` to its answer through the call machine at the journal's time
    /// `now`. `hook` sees every I/O step first, with the store, and may answer it
    /// (`Some`); a send or lookup it leaves unanswered is `Unknown`.
    pub fn call<P>(
        &mut self,
        program: P,
        options: CallOptions,
        now: Timestamp,
        hook: impl FnMut(&mut Store, &Io<P::Output, u64>) -> Option<Input<u64>>,
    ) -> (Result<P::Output, JournalError>, CallTrace)
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
    {
        self.call_with_clock(program, options, || now, hook)
    }

    /// [`Store::call`] with the journal's time read from `clock` at every poll, as
    /// the library's driver reads its clock; a clock that never steps back: its steady
    /// time and the call's elapsed time are the time since its first reading (none
    /// while it reads earlier).
    pub fn call_with_clock<P>(
        &mut self,
        program: P,
        options: CallOptions,
        mut clock: impl FnMut() -> Timestamp,
        hook: impl FnMut(&mut Store, &Io<P::Output, u64>) -> Option<Input<u64>>,
    ) -> (Result<P::Output, JournalError>, CallTrace)
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
    {
        let mut first = None;
        let clocks = move || {
            let at = clock();
            let since = first.get_or_insert(at).until(at);
            Now {
                at,
                steady: since,
                elapsed: since,
            }
        };
        self.call_with_clocks(program, options, clocks, hook)
    }

    /// [`Store::call`] with every reading of the driver from `clocks` at every poll:
    /// the journal's time and, apart from it, its steady time and the call's elapsed
    /// time (a wall clock that steps, a call that takes time).
    pub fn call_with_clocks<P>(
        &mut self,
        program: P,
        options: CallOptions,
        mut clocks: impl FnMut() -> Now,
        mut hook: impl FnMut(&mut Store, &Io<P::Output, u64>) -> Option<Input<u64>>,
    ) -> (Result<P::Output, JournalError>, CallTrace)
    where
        P: Program,
        P::Output: Labelled,
        <P::Op as Transition>::Output: Labelled,
    {
        let mut driven = Driven::new(program, options);
        loop {
            let io = driven.poll(&mut clocks);
            if let Io::Done(result) = io {
                return (result, driven.trace());
            }
            let input = match hook(self, &io) {
                Some(input) => input,
                None => driven.perform(self, &io),
            };
            driven.handle(input);
        }
    }
}

//! The store's helpers for the tests of each `decide` and for the fuzz targets: every
//! operation runs through the call machine ([`crate::call::Call`]), polled and
//! handled by the one driver of the test support (`core/src/testing/call.rs`, the
//! same steps the library's driver performs), in preconditions mode with the fast
//! path a call of one transition takes in production (its blind creation) and the
//! production's retry budget. No helper reads, decides or commits on its own; a test
//! that pins the machine's own steps, injects faults or runs a program of several
//! transitions drives [`Store::call`] instead.
//!
//! Where the tests need more than production asks, the helpers add it around the
//! machine, never beside it:
//!
//! - **Strict.** Every call runs in the attempt machine's strict mode (a switch of
//!   the call machine for the test store, `Call::strict`): `decide` is asked twice on
//!   every snapshot and must answer the same, and where the runner would fail closed
//!   (an unguarded replacement, follow-up reads that do not end) or retry until it
//!   gives up (a create of a document read present), the test panics with the rule's
//!   name: a bug in `decide`.
//! - **Uncontended.** [`Store::run`] and [`Store::answer`] run one call to its answer;
//!   nothing else writes in between, so a decided commit that loses a precondition
//!   panics (`an uncontended commit failed`). A blind creation that lands is checked
//!   against what a read-and-decide attempt takes on the same state (it must be the
//!   same mutation and answer); a refused one falls back to reading, as the machine
//!   decides.
//! - **A race.** [`Store::race`] interleaves one call per operation step by step:
//!   each is driven up to its first commit on the same state (a blind creation asks
//!   for its commit at once), then the commits land in order, and each call whose
//!   commit lost a precondition goes on as the machine decides (a refused blind
//!   creation reads at once, a lost decided commit waits its backoff and reads
//!   again) to its answer before the next commit lands.
//! - **An attempt held back.** [`Store::attempt`] and [`Store::attempt_reading`] drive
//!   a call with the fast paths off over a copy of the store to its answer: its reads,
//!   the commit it asked for (landed on the copy only) and its answer are the
//!   [`Decided`] attempt; [`Store::commit`] later performs that commit on the store
//!   itself as the driver would, so that a test can let another writer in between.
//!   Nothing of the store changes until then.
//! - **The fuzz targets** (`core/src/fuzzing/documents.rs`, which `fuzz/` runs) take
//!   each operation's decision with [`Store::attempt`], check every document it
//!   would write against its own codec, and land it with [`Store::commit`]: the same
//!   calls, in the same strict mode.

use super::call::Driven;
use super::store::Store;
use crate::attempt::{GuardedWrite, ReadKind};
use crate::call::{
    Answered, CallOptions, CommitKind, Input, Io, Next, Now, Program, Quiet, Run, Single, Untold,
};
use crate::error::JournalError;
use crate::known::Known;
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition, Write};
use std::collections::HashMap;
use std::fmt::Debug;

/// What running an operation to completion did.
#[derive(Debug)]
pub struct Ran<O> {
    /// The operation's answer.
    pub result: Result<O, JournalError>,
    /// The writes committed (empty unless the decision was a mutation), the proofs
    /// of a decided commit included, the absence guards of a blind one left out.
    pub writes: Vec<Write>,
    /// The follow-up reads `decide` asked for in the attempt that answered, in order.
    pub follow_ups: Vec<Vec<String>>,
    /// Whether the operation committed a blind creation, reading nothing.
    pub blind: bool,
}

impl<O> Ran<O> {
    /// Reads of the run: none for a blind creation, else the first and its follow-ups.
    pub fn reads(&self) -> usize {
        if self.blind {
            0
        } else {
            1 + self.follow_ups.len()
        }
    }
}

/// One attempt's reads and its final decision (never `Read`), not yet committed.
#[derive(Debug)]
pub struct Decided<O> {
    /// What `decide` concluded once every follow-up read was served.
    pub decision: Decision<O>,
    /// The follow-up reads `decide` asked for, in order.
    pub follow_ups: Vec<Vec<String>>,
    /// The commit the call asked for (empty unless the decision is a mutation).
    guarded: Vec<GuardedWrite<u64>>,
    /// Every document the attempt read, as the runner keeps it known.
    read: Known<u64>,
}

impl<O> Decided<O> {
    /// Reads of the attempt: the first and its follow-ups.
    pub fn reads(&self) -> usize {
        1 + self.follow_ups.len()
    }

    /// The mutation's writes, each under the precondition the attempt machine gave it
    /// (none unless the decision is a mutation).
    pub fn guarded(&self) -> Vec<GuardedWrite<u64>> {
        self.guarded.clone()
    }

    /// What the attempt read, as the runner knows it once the attempt is over (before
    /// its commit; [`Known::committed`] with [`Store::commit_guarded`]'s results after).
    pub fn known(&self) -> &Known<u64> {
        &self.read
    }
}

impl Store {
    /// Runs `op` to completion against this store, uncontended, through the call
    /// machine: its blind creation when it makes one and every path it reads is
    /// absent, otherwise one read-and-decide attempt and its commit.
    pub fn run<T>(&mut self, op: &T) -> Ran<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        Operation::new(op).until_answer(self)
    }

    /// The answer of [`Store::run`].
    pub fn answer<T>(&mut self, op: &T) -> Result<T::Output, JournalError>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        self.run(op).result
    }

    /// A race: one call per op, each driven up to its first commit on the same state
    /// (a blind creation's commit is its first step), then the commits land in order
    /// and each call whose commit lost a precondition goes on to its answer as the
    /// machine decides (reading and deciding again). The final answers, in the order
    /// of `ops`.
    pub fn race<T>(&mut self, ops: &[T]) -> Vec<Result<T::Output, JournalError>>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let mut calls: Vec<Operation<'_, T>> = ops.iter().map(Operation::new).collect();
        let parked: Vec<_> = calls
            .iter_mut()
            .map(|call| call.until_commit(self))
            .collect();
        let mut results = Vec::with_capacity(ops.len());
        for (mut call, parked) in calls.into_iter().zip(parked) {
            let result = match parked {
                Parked::Answered(result) => result.map(|answer| answer.0),
                Parked::Commit(io) => {
                    call.step(self, &io, true);
                    call.until_answer(self).result
                }
            };
            results.push(result);
        }
        results
    }

    /// One attempt at the store's current state: a call of `op` with the fast paths
    /// off, in strict mode, driven over a copy of the store to its answer. Nothing is
    /// written here; see [`Store::commit`].
    pub fn attempt<T>(&self, op: &T) -> Decided<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        self.attempt_reading(op, op.paths())
    }

    /// [`Store::attempt`] whose first read is `paths` (the operation's own and any
    /// more its caller decides from), as the call machine reads for a run with a
    /// wider first read.
    pub fn attempt_reading<T>(&self, op: &T, paths: Vec<String>) -> Decided<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let program = Reading(Some(Run::op(Quiet(op)).reading(paths)));
        let options = CallOptions {
            fast_paths: false,
            ..CallOptions::default()
        };
        let mut driven = Driven::new(program, options).strict();
        let mut copy = self.clone();
        let (mut read, mut follow_ups, mut guarded) = (Vec::new(), Vec::new(), Vec::new());
        let result = loop {
            let io = driven.poll(&mut any_time);
            match &io {
                Io::Done(_) => {}
                Io::Read { paths, kind, .. } => {
                    if *kind == ReadKind::FollowUp {
                        follow_ups.push(paths.clone());
                    }
                    read.extend(paths.iter().cloned());
                }
                Io::Commit { writes, .. } => guarded.clone_from(writes),
                _ => panic!("an attempt of one transition asked for {io:?}"),
            }
            if let Io::Done(result) = io {
                break result;
            }
            let input = driven.perform(&mut copy, &io);
            if let Input::Committed(landed) = &input {
                assert!(landed.is_ok(), "an uncontended commit failed");
            }
            driven.handle(input);
        };
        let decision = match (result, guarded.is_empty()) {
            (Ok(Untold(output)), true) => Decision::Observe(output),
            (Ok(Untold(output)), false) => {
                Decision::Mutate(guarded.iter().map(|w| w.write.clone()).collect(), output)
            }
            (Err(error), true) => Decision::Reject(error),
            (Err(error), false) => panic!("a commit that landed answered {error:?}"),
        };
        Decided {
            decision,
            follow_ups,
            guarded,
            read: self.known_after_reading(&read),
        }
    }

    /// Commits `attempt`'s mutation on this store, as the driver commits what the
    /// call asked for: atomically, under the machine's preconditions; false, with
    /// nothing written, when another writer broke one since the attempt read. An
    /// attempt that does not mutate has nothing to commit (true).
    pub fn commit<O>(&mut self, attempt: &Decided<O>) -> bool {
        self.commit_guarded(&attempt.guarded).is_some()
    }

    /// What an attempt that read `paths` at the store as it stands knows: each
    /// document read present with its version and write times, the rest read absent
    /// (the attempt machine's read state, as the store answered it).
    fn known_after_reading(&self, paths: &[String]) -> Known<u64> {
        let found = self.read(paths, None).found;
        let mut snapshot = Snapshot::default();
        let mut versions = HashMap::new();
        for path in paths {
            let doc = found.get(path).map(|read| {
                versions.insert(path.clone(), read.version);
                if let Some(stamps) = read.stamps {
                    snapshot.stamps.insert(path.clone(), stamps);
                }
                read.fields.clone()
            });
            snapshot.docs.insert(path.clone(), doc);
        }
        Known::read(snapshot, &versions)
    }
}

/// One operation's call, driven over the store by the helpers: what its last attempt
/// read and what its commit wrote, checked as it goes.
struct Operation<'a, T: Transition> {
    op: &'a T,
    driven: Driven<Single<Quiet<&'a T>>>,
    follow_ups: Vec<Vec<String>>,
    writes: Vec<Write>,
    blind: bool,
    /// What reading and deciding took on the state a blind creation landed on.
    reading: Option<Decision<T::Output>>,
}

/// Where a call of a race stopped before any commit landed.
enum Parked<O> {
    /// At its first commit, not yet performed.
    Commit(Io<Untold<O>, u64>),
    /// At its answer, having committed nothing.
    Answered(Result<Untold<O>, JournalError>),
}

impl<'a, T> Operation<'a, T>
where
    T: Transition,
    T::Output: Debug + PartialEq,
{
    /// A strict call of `op` alone, with the production's options.
    fn new(op: &'a T) -> Self {
        Self {
            op,
            driven: Driven::new(Single::new(Quiet(op)), CallOptions::default()).strict(),
            follow_ups: Vec::new(),
            writes: Vec::new(),
            blind: false,
            reading: None,
        }
    }

    /// Drives the call until it asks for its first commit, or answers.
    fn until_commit(&mut self, store: &mut Store) -> Parked<T::Output> {
        loop {
            match self.driven.poll(&mut any_time) {
                io @ Io::Commit { .. } => return Parked::Commit(io),
                Io::Done(result) => return Parked::Answered(result),
                io => self.step(store, &io, false),
            }
        }
    }

    /// Drives the call to its answer, nothing else writing.
    fn until_answer(mut self, store: &mut Store) -> Ran<T::Output> {
        let result = loop {
            match self.driven.poll(&mut any_time) {
                Io::Done(result) => break result.map(|answer| answer.0),
                io => self.step(store, &io, false),
            }
        };
        if self.blind {
            let reading = self.reading.take();
            let same = match (&reading, &result) {
                (Some(Decision::Mutate(writes, answer)), Ok(output)) => {
                    *writes == self.writes && answer == output
                }
                _ => false,
            };
            assert!(
                same,
                "a blind creation must commit what reading and deciding would: {reading:?}"
            );
        }
        Ran {
            result,
            writes: self.writes,
            follow_ups: self.follow_ups,
            blind: self.blind,
        }
    }

    /// Performs the I/O step `io` on `store` and hands its answer back; a decided
    /// commit may lose a precondition only when `contended`.
    fn step(&mut self, store: &mut Store, io: &Io<Untold<T::Output>, u64>, contended: bool) {
        match io {
            Io::Read {
                kind: ReadKind::First,
                ..
            } => self.follow_ups.clear(),
            Io::Read {
                kind: ReadKind::FollowUp,
                paths,
                ..
            } => self.follow_ups.push(paths.clone()),
            Io::Commit {
                kind: CommitKind::Blind,
                ..
            } => self.reading = Some(store.attempt(self.op).decision),
            _ => {}
        }
        let input = self.driven.perform(store, io);
        if let (Io::Commit { writes, kind, .. }, Input::Committed(landed)) = (io, &input) {
            let blind = *kind == CommitKind::Blind;
            match landed {
                Ok(_) => {
                    self.blind = blind;
                    self.writes = writes
                        .iter()
                        .filter(|w| !(blind && matches!(w.write, Write::AssertAbsent { .. })))
                        .map(|w| w.write.clone())
                        .collect();
                }
                Err(_) => assert!(blind || contended, "an uncontended commit failed"),
            }
        }
        self.driven.handle(input);
    }
}

/// The driver's clocks for a call of one prepared transition: its program never
/// reads the time (the transition captured its own), so any time does, and a clock
/// that stands still keeps every duration the call measures at zero.
fn any_time() -> Now {
    Now {
        at: Timestamp::from_micros(0).unwrap_or_else(|| unreachable!("the epoch is in range")),
        steady: std::time::Duration::ZERO,
        elapsed: std::time::Duration::ZERO,
    }
}

/// The program of one transition run with a first read of its own: [`Single`]'s
/// steps, its run given.
struct Reading<Op>(Option<Run<Op>>);

impl<Op: Transition> Program for Reading<Op> {
    type Op = Op;
    type Output = Op::Output;

    fn next(
        &mut self,
        last: Answered<Op>,
        _now: Now,
    ) -> Result<Next<Op, Op::Output>, JournalError> {
        match (last, self.0.take()) {
            (Answered::Nothing, Some(run)) => Ok(Next::Run(run)),
            (Answered::Ran(result), None) => result.map(Next::Done),
            _ => Err(JournalError::internal(
                "store: a transition answered out of turn",
            )),
        }
    }
}

//! An in-memory documents root that runs a [`Transition`] the way the runner does:
//! through the runner's own attempt machine (`core/src/attempt.rs`), in its strict
//! mode, so every test of a `decide` here exercises the read, follow-up, confirmation
//! and precondition logic production runs.
//!
//! The rules it enforces are the machine's, the call machine's (`core/src/call/run.rs`) and the
//! transition contract's (`core/src/transaction.rs`):
//!
//! - An attempt reads the operation's paths, then at most
//!   [`MAX_FOLLOW_UP_READS`](crate::transaction::MAX_FOLLOW_UP_READS) follow-up reads,
//!   each asking only for paths not read yet. Every read of an attempt is at one read
//!   time: the store as it stood when the attempt began (so a corrupt-looking read is
//!   confirmed by an identical re-read, as the runner confirms one).
//! - `decide` is asked twice on every snapshot and must answer the same.
//! - A mutation writes only paths the attempt read, each at most once: `Create`
//!   where the document was read absent, `Replace` where it was read present.
//! - A commit is atomic and carries the machine's preconditions, checked against the
//!   store as it stands at commit time: a created document must still not exist
//!   (`exists: false`), a replaced one must still have the update time that was read.
//!   A commit that loses a precondition writes nothing. Every write of a commit gets
//!   the one commit time.
//! - An operation that makes a blind plan (`core/src/transaction/blind.rs`) first commits
//!   it without reading: its creations and absence guards hold only where every path
//!   it reads is absent, and then it writes exactly what the read-and-decide attempt
//!   would (checked). Otherwise nothing is written and it reads and decides.
//!
//! Where the runner fails closed (an unguarded replacement, follow-up reads that do
//! not end) or would retry until it gives up (a create of a document read present),
//! the strict machine panics with the rule's name: in a test or a fuzz target it is a
//! bug in `decide`. Documents put in place with [`Store::insert`], [`Store::get_mut`]
//! or [`Store::remove`] stand for another writer (seeded state, corruption) and get a
//! new update time of their own.

use crate::attempt::{Action, Attempt as Machine, Found, GuardedWrite, Precondition, ReadKind};
use crate::call::{ReadAnswer, TransactionId};
use crate::document::fields::FieldMap;
use crate::error::JournalError;
use crate::known::Known;
use crate::transaction::blind::{self, BlindPlan};
use crate::transaction::{CommitStamps, CommitTime, Decision, Snapshot, Transition, Write};
use std::collections::BTreeMap;

/// One document of the store, as [`Store::documents`] answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDocument {
    /// Its path below the database's documents (`checkoutRequests/{hash}`, …).
    pub path: String,
    /// Its fields.
    pub fields: FieldMap,
    /// Its logical create time (seconds).
    pub create_time: u64,
    /// Its logical update time (seconds).
    pub update_time: u64,
}
use std::fmt::Debug;
use std::ops::Index;

/// A stored document, the logical time of the write that created it and of the write
/// that left it there.
#[derive(Debug, Clone, PartialEq)]
struct Stored {
    fields: FieldMap,
    create_time: u64,
    update_time: u64,
}

/// An in-memory documents root: path (relative to the documents root) to document.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    docs: BTreeMap<String, Stored>,
    /// The last commit or outside write; update times are drawn from it.
    clock: u64,
}

/// One attempt's reads and its final decision (never `Read`), not yet committed.
#[derive(Debug)]
pub struct Decided<O> {
    /// What `decide` concluded once every follow-up read was served.
    pub decision: Decision<O>,
    /// The follow-up reads `decide` asked for, in order.
    pub follow_ups: Vec<Vec<String>>,
    /// The precondition of each write of a mutation, on the update time read.
    preconditions: Vec<(String, Precondition<u64>)>,
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
        let Decision::Mutate(writes, _) = &self.decision else {
            return Vec::new();
        };
        let preconditions = self.preconditions.iter().map(|(_, p)| p.clone());
        let guard = |(write, precondition)| GuardedWrite {
            write,
            precondition,
        };
        writes
            .iter()
            .cloned()
            .zip(preconditions)
            .map(guard)
            .collect()
    }

    /// What the attempt read, as the runner knows it once the attempt is over (before
    /// its commit; [`Known::committed`] with [`Store::commit_guarded`]'s results after).
    pub fn known(&self) -> &Known<u64> {
        &self.read
    }
}

/// The update time each write of a commit left (with its comparable form), as
/// Firestore's write results give it: `None` for an absence guard.
pub type WriteResults = Vec<Option<(u64, CommitTime)>>;

/// A logical time in comparable form.
fn logical(t: u64) -> CommitTime {
    (i64::try_from(t).unwrap_or(i64::MAX), 0)
}

/// What running an operation to completion did.
#[derive(Debug)]
pub struct Ran<O> {
    /// The operation's answer.
    pub result: Result<O, JournalError>,
    /// The writes committed (empty unless the decision was a mutation).
    pub writes: Vec<Write>,
    /// The follow-up reads `decide` asked for, in order.
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

impl Store {
    /// An empty documents root.
    pub fn new() -> Self {
        Self::default()
    }

    /// The document at `path`.
    pub fn get(&self, path: &str) -> Option<&FieldMap> {
        self.docs.get(path).map(|stored| &stored.fields)
    }

    /// The logical time of the write that left the document at `path` (a commit's,
    /// shared by every write of it, or an outside write's).
    pub fn update_time(&self, path: &str) -> Option<u64> {
        self.docs.get(path).map(|stored| stored.update_time)
    }

    /// Whether a document exists at `path`.
    pub fn contains_key(&self, path: &str) -> bool {
        self.docs.contains_key(path)
    }

    /// Puts a document in place outside any operation (seeded state, an import, a
    /// corruption), as another writer would; returns the document it replaced.
    pub fn insert(&mut self, path: impl Into<String>, fields: FieldMap) -> Option<FieldMap> {
        self.clock += 1;
        let path = path.into();
        let create_time = self.docs.get(&path).map_or(self.clock, |s| s.create_time);
        let stored = Stored {
            fields,
            create_time,
            update_time: self.clock,
        };
        self.docs.insert(path, stored).map(|old| old.fields)
    }

    /// Puts documents in place together, as one commit of another writer would (one
    /// new update time shared by all): a forger writing a consistent batch.
    pub fn insert_together(&mut self, docs: impl IntoIterator<Item = (String, FieldMap)>) {
        self.clock += 1;
        for (path, fields) in docs {
            let create_time = self.docs.get(&path).map_or(self.clock, |s| s.create_time);
            let stored = Stored {
                fields,
                create_time,
                update_time: self.clock,
            };
            self.docs.insert(path, stored);
        }
    }

    /// Every document as Firestore would answer it: its path under the database's
    /// documents, its fields, and the logical write times as `createTime` and
    /// `updateTime` (seconds), in path order.
    pub fn documents(&self) -> Vec<StoredDocument> {
        self.docs
            .iter()
            .map(|(path, stored)| StoredDocument {
                path: path.clone(),
                fields: stored.fields.clone(),
                create_time: stored.create_time,
                update_time: stored.update_time,
            })
            .collect()
    }

    /// Edits a document in place and keeps its write times, as a forger who could set
    /// Firestore's commit times would: what the content checks alone must catch.
    pub fn forge(&mut self, path: &str) -> Option<&mut FieldMap> {
        self.docs.get_mut(path).map(|stored| &mut stored.fields)
    }

    /// The logical times of the writes that created the document at `path` and that
    /// last changed it, as Firestore's `createTime` and `updateTime` (one per commit).
    pub fn written(&self, path: &str) -> Option<(u64, u64)> {
        self.docs
            .get(path)
            .map(|stored| (stored.create_time, stored.update_time))
    }

    /// Edits a document in place outside any operation, as another writer would.
    pub fn get_mut(&mut self, path: &str) -> Option<&mut FieldMap> {
        self.clock += 1;
        let clock = self.clock;
        self.docs.get_mut(path).map(|stored| {
            stored.update_time = clock;
            &mut stored.fields
        })
    }

    /// Deletes a document outside any operation; returns it.
    pub fn remove(&mut self, path: &str) -> Option<FieldMap> {
        self.docs.remove(path).map(|stored| stored.fields)
    }

    /// Every stored path, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.docs.keys()
    }

    /// Every stored document, in path order.
    pub fn values(&self) -> impl Iterator<Item = &FieldMap> {
        self.docs.values().map(|stored| &stored.fields)
    }

    /// Every stored path and document, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &FieldMap)> {
        self.docs
            .iter()
            .map(|(path, stored)| (path, &stored.fields))
    }

    /// How many documents are stored.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether no document is stored.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// How many documents are stored under `collection`.
    pub fn count(&self, collection: &str) -> usize {
        let prefix = format!("{collection}/");
        self.docs.keys().filter(|p| p.starts_with(&prefix)).count()
    }

    /// A snapshot of `paths` as they stand, for calling `decide` directly.
    pub fn snapshot(&self, paths: &[String]) -> Snapshot {
        Snapshot::new(paths.iter().map(|p| (p.clone(), self.get(p).cloned())))
    }

    /// One attempt at the store's current state: drives the runner's attempt machine
    /// (`core/src/attempt.rs`, strict: `decide` asked twice on every snapshot) over
    /// the store's documents, every read at the store as it stands. Nothing is
    /// written; see [`Store::commit`].
    pub fn attempt<T>(&self, op: &T) -> Decided<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        self.attempt_reading(op, op.paths())
    }

    /// [`Store::attempt`] whose first read is `paths` (the operation's own and any
    /// more its caller decides from), as the call machine reads for a run with a wider first read.
    pub fn attempt_reading<T>(&self, op: &T, paths: Vec<String>) -> Decided<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let mut machine = Machine::strict(op, paths);
        let mut step = machine.start();
        let mut follow_ups = Vec::new();
        loop {
            let (decision, preconditions) = match step {
                Action::Read { paths, kind } => {
                    if kind == ReadKind::FollowUp {
                        follow_ups.push(paths.clone());
                    }
                    let found = paths
                        .into_iter()
                        .filter_map(|path| {
                            let stored = self.docs.get(&path)?;
                            let found = Found {
                                fields: stored.fields.clone(),
                                version: Some(stored.update_time),
                                stamps: Some(CommitStamps {
                                    created: logical(stored.create_time),
                                    updated: logical(stored.update_time),
                                }),
                            };
                            Some((path, found))
                        })
                        .collect();
                    // One state for the whole attempt: every read is repeatable.
                    step = machine.read(op, found, true);
                    continue;
                }
                Action::Done(output) => (Decision::Observe(output), Vec::new()),
                Action::Fail(error) => (Decision::Reject(error), Vec::new()),
                Action::Commit { writes, output } => {
                    let (writes, preconditions) = writes
                        .into_iter()
                        .map(|guarded| {
                            let path = guarded.write.path().to_owned();
                            (guarded.write, (path, guarded.precondition))
                        })
                        .unzip();
                    (Decision::Mutate(writes, output), preconditions)
                }
            };
            let (snapshot, versions) = machine.read_state();
            return Decided {
                decision,
                follow_ups,
                preconditions,
                read: Known::read(snapshot.clone(), versions),
            };
        }
    }

    /// Commits `attempt`'s mutation atomically under the runner's preconditions;
    /// false, with nothing written, when another writer broke one since the attempt
    /// read. An attempt that does not mutate has nothing to commit (true).
    pub fn commit<O>(&mut self, attempt: &Decided<O>) -> bool {
        self.commit_guarded(&attempt.guarded()).is_some()
    }

    /// What a read of `paths` answers at the store as it stands: every document found,
    /// with its update time as its version and its write times as its stamps, at read
    /// time `0`, in `transaction` when the read opened one.
    pub(crate) fn read(
        &self,
        paths: &[String],
        transaction: Option<TransactionId>,
    ) -> ReadAnswer<u64> {
        let found = paths
            .iter()
            .filter_map(|path| {
                let stored = self.docs.get(path)?;
                let found = Found {
                    fields: stored.fields.clone(),
                    version: Some(stored.update_time),
                    stamps: Some(CommitStamps {
                        created: logical(stored.create_time),
                        updated: logical(stored.update_time),
                    }),
                };
                Some((path.clone(), found))
            })
            .collect();
        ReadAnswer {
            found,
            read_time: Some(0),
            transaction,
        }
    }

    /// Commits `writes` atomically, each under its precondition checked against the
    /// store as it stands: the update time each write left, or `None`, with nothing
    /// written, when a precondition does not hold.
    pub fn commit_guarded(&mut self, writes: &[GuardedWrite<u64>]) -> Option<WriteResults> {
        let holds = writes.iter().all(|guarded| {
            let stored = self.docs.get(guarded.write.path());
            match &guarded.precondition {
                Precondition::Absent => stored.is_none(),
                Precondition::UpdatedAt(read) => stored.map(|s| s.update_time) == Some(*read),
            }
        });
        if !holds {
            return None;
        }
        if writes.is_empty() {
            return Some(Vec::new());
        }
        self.clock += 1;
        let mut results = Vec::with_capacity(writes.len());
        for guarded in writes {
            // An unchanged guard is sent as the rewrite it is (`src/runner/firestore.rs`),
            // and answered, as every write but a delete, with the update time it left.
            let (Write::Create { path, fields }
            | Write::Replace { path, fields }
            | Write::AssertUnchanged { path, fields }) = &guarded.write
            else {
                results.push(None);
                continue;
            };
            // As Firestore does, a write that changes nothing keeps the update time.
            let old = self.docs.get(path);
            let create_time = old.map_or(self.clock, |s| s.create_time);
            let update_time = match old {
                Some(old) if &old.fields == fields => old.update_time,
                _ => self.clock,
            };
            let stored = Stored {
                fields: fields.clone(),
                create_time,
                update_time,
            };
            self.docs.insert(path.clone(), stored);
            results.push(Some((update_time, logical(update_time))));
        }
        Some(results)
    }

    /// The same documents with every logical time `t` as `time(t)` (which must keep
    /// their order), the clock at the latest of them: a store that behaves the same.
    pub fn renumbered(&self, time: impl Fn(u64) -> u64) -> Self {
        let docs: BTreeMap<String, Stored> = self
            .docs
            .iter()
            .map(|(path, stored)| {
                let stored = Stored {
                    fields: stored.fields.clone(),
                    create_time: time(stored.create_time),
                    update_time: time(stored.update_time),
                };
                (path.clone(), stored)
            })
            .collect();
        let clock = docs.values().map(|s| s.update_time).max().unwrap_or(0);
        Self { docs, clock }
    }

    /// Commits a blind creation when every path it creates or guards is absent (one
    /// commit time for all its creations); false, with nothing written, otherwise.
    fn commit_blind<O>(&mut self, plan: &BlindPlan<O>) -> bool {
        let created = plan.creates.iter().map(Write::path);
        if created
            .chain(plan.guards.iter().map(String::as_str))
            .any(|path| self.docs.contains_key(path))
        {
            return false;
        }
        self.clock += 1;
        for write in &plan.creates {
            let Some(fields) = write.fields() else {
                continue;
            };
            let stored = Stored {
                fields: fields.clone(),
                create_time: self.clock,
                update_time: self.clock,
            };
            self.docs.insert(write.path().to_owned(), stored);
        }
        true
    }

    /// Tries `op`'s blind creation, as the runner does before any read; the answer
    /// when it committed. A committed plan must be exactly the decision the
    /// read-and-decide attempt takes on the same state.
    fn run_blind<T>(&mut self, op: &T) -> Option<Ran<T::Output>>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let plan = blind::plan(op, &op.paths())?;
        let reading = self.attempt(op);
        if !self.commit_blind(&plan) {
            return None;
        }
        let decision = Decision::Mutate(plan.creates, plan.output);
        assert_eq!(
            reading.decision, decision,
            "a blind creation must commit what reading and deciding would"
        );
        let Decision::Mutate(writes, output) = decision else {
            unreachable!("built as a mutation just above")
        };
        Some(Ran {
            result: Ok(output),
            writes,
            follow_ups: Vec::new(),
            blind: true,
        })
    }

    /// Runs `op` to completion against this store, uncontended: its blind creation
    /// when it makes one and every path it reads is absent, otherwise one attempt and
    /// its commit, which cannot lose a precondition.
    pub fn run<T>(&mut self, op: &T) -> Ran<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        if let Some(ran) = self.run_blind(op) {
            return ran;
        }
        self.run_reading(op)
    }

    /// [`Store::run`] without the blind creation: read, decide, commit.
    fn run_reading<T>(&mut self, op: &T) -> Ran<T::Output>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let attempt = self.attempt(op);
        assert!(self.commit(&attempt), "an uncontended commit failed");
        let follow_ups = attempt.follow_ups;
        let (result, writes) = match attempt.decision {
            Decision::Observe(output) => (Ok(output), Vec::new()),
            Decision::Reject(error) => (Err(error), Vec::new()),
            Decision::Mutate(writes, output) => (Ok(output), writes),
            Decision::Read(_) => unreachable!("an attempt serves its follow-up reads"),
        };
        Ran {
            result,
            writes,
            follow_ups,
            blind: false,
        }
    }

    /// The answer of [`Store::run`].
    pub fn answer<T>(&mut self, op: &T) -> Result<T::Output, JournalError>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        self.run(op).result
    }

    /// A race: every op decides on the same state (or plans its blind creation),
    /// then the commits land in order and each op whose commit lost a precondition
    /// reads and decides again, as the runner retries it. The final answers, in the
    /// order of `ops`.
    pub fn race<T>(&mut self, ops: &[T]) -> Vec<Result<T::Output, JournalError>>
    where
        T: Transition,
        T::Output: Debug + PartialEq,
    {
        let attempts: Vec<Decided<T::Output>> = ops.iter().map(|op| self.attempt(op)).collect();
        let plans: Vec<_> = ops.iter().map(|op| blind::plan(op, &op.paths())).collect();
        let mut results = Vec::new();
        for ((op, attempt), plan) in ops.iter().zip(attempts).zip(plans) {
            let result = if let Some(plan) = plan {
                if self.commit_blind(&plan) {
                    Ok(plan.output)
                } else {
                    self.run_reading(op).result
                }
            } else if self.commit(&attempt) {
                match attempt.decision {
                    Decision::Observe(output) | Decision::Mutate(_, output) => Ok(output),
                    Decision::Reject(error) => Err(error),
                    Decision::Read(_) => unreachable!("an attempt serves its follow-up reads"),
                }
            } else {
                self.run_reading(op).result
            };
            results.push(result);
        }
        results
    }
}

impl<Q: AsRef<str> + ?Sized> Index<&Q> for Store {
    type Output = FieldMap;

    /// The document at `path`; panics when there is none.
    fn index(&self, path: &Q) -> &FieldMap {
        let path = path.as_ref();
        match self.get(path) {
            Some(fields) => fields,
            None => panic!("no document at {path}"),
        }
    }
}

#[cfg(test)]
mod tests;

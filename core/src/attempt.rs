//! The attempt machine: one read-and-decide attempt of a [`Transition`], without I/O.
//!
//! The call machine (`core/src/call/run.rs`) drives it, whoever drives the call: the
//! library's gRPC driver (`src/runner/driver.rs`) and the in-memory test store
//! (`core/src/testing/`) alike. [`Attempt::start`] answers the first [`Action`];
//! every batch of documents read goes back in through [`Attempt::read`], which
//! answers the next one: read these paths, commit these writes under these
//! preconditions, done with this output, or fail with this error. The machine holds
//! the attempt's rules:
//!
//! | decision of `decide` | step |
//! |---|---|
//! | `Read(paths)`, within [`MAX_FOLLOW_UP_READS`] | read the paths not read yet ([`ReadKind::FollowUp`]) |
//! | `Read(paths)`, over the bound or nothing new | fail closed: `journal_corrupt` |
//! | `Reject(journal_corrupt)`, first time, read repeatable | re-read everything read ([`ReadKind::Confirm`]) |
//! | `Reject(error)` | fail with `error` |
//! | `Observe(output)` | done with `output` |
//! | `Mutate(writes, output)` | commit `writes`, each [`GuardedWrite`] by its precondition |
//! | `Mutate` replacing a document not read present | fail closed: `journal_corrupt` |
//!
//! A BatchGet of the emulator is not always a snapshot: a read torn across two commits
//! looks corrupt, so a `journal_corrupt` decision stands only once a re-read at the
//! first read's time (or inside the transaction) confirms it. In strict mode (the
//! attempt of a call made strict, as the test store's and the fuzz targets' calls
//! are: `Attempt::checked`) `decide` is asked twice on every snapshot and must
//! answer the same, and every rule a `decide` can break (follow-ups, creating only
//! what was read absent, replacing only what was read present, writing a path once)
//! panics with its name instead.

use crate::document::fields::FieldMap;
use crate::error::JournalError;
use crate::transaction::{
    CommitStamps, Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition, Write,
};
use std::collections::{HashMap, HashSet};

/// A document as read: its fields and the version (update time) a replacement of it
/// must still find.
#[derive(Debug, Clone, PartialEq)]
pub struct Found<V> {
    /// The document.
    pub fields: FieldMap,
    /// Its update time, as the reader knows it.
    pub version: Option<V>,
    /// Its create and update times in comparable form, where the reader knows them.
    pub stamps: Option<CommitStamps>,
}

/// Why the machine asks for a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// The operation's own paths, first in the attempt.
    First,
    /// Paths `decide` asked for, at the first read's time.
    FollowUp,
    /// Everything read so far, again, to confirm a corrupt-looking read.
    Confirm,
}

/// The precondition a write is committed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition<V> {
    /// The document does not exist (`exists: false`): a `Create` or an `AssertAbsent`.
    Absent,
    /// The document still has the update time read: a `Replace` or an
    /// `AssertUnchanged`.
    UpdatedAt(V),
}

/// A write and the precondition it is committed under.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardedWrite<V> {
    /// The write.
    pub write: Write,
    /// What must hold at commit time for the commit to apply.
    pub precondition: Precondition<V>,
}

/// What the driver does next.
#[derive(Debug, PartialEq)]
pub(crate) enum Action<O, V> {
    /// Read these paths (documents root relative) and answer with [`Attempt::read`].
    Read {
        /// The paths, none of them read yet in this round.
        paths: Vec<String>,
        /// Why they are read.
        kind: ReadKind,
    },
    /// Commit these writes atomically, each under its precondition; once the commit
    /// lands, the operation answers `output`. The attempt is over.
    Commit {
        /// The writes, in `decide`'s order.
        writes: Vec<GuardedWrite<V>>,
        /// The answer once committed.
        output: O,
    },
    /// Nothing to write: the operation answers this. The attempt is over.
    Done(O),
    /// The operation fails with this error, nothing written. The attempt is over.
    Fail(JournalError),
}

/// Asks `decide` a second time on the same snapshot and compares (strict mode).
pub(crate) type Twice<T> = fn(&T, &Snapshot, &Decision<<T as Transition>::Output>);

/// One attempt of an operation, from its first read to its last step.
pub(crate) struct Attempt<T: Transition, V> {
    /// Every document read so far (`None`: read absent).
    snapshot: Snapshot,
    /// The versions of the documents read present.
    versions: HashMap<String, Option<V>>,
    /// The paths of the read in flight.
    asked: Vec<String>,
    /// Follow-up reads `decide` asked for.
    follow_ups: usize,
    /// Whether the read in flight (or done) confirms a corrupt-looking one.
    confirming: bool,
    /// The paths `decide` itself read: the operation's paths and its follow-ups.
    decided_on: Vec<String>,
    /// Whether the commit is inside a read-write transaction that holds what it read,
    /// so that it needs no proof of the documents it read and does not write.
    transactional: bool,
    /// Whether the commit also guards every document `decide` read absent and does
    /// not write ([`Attempt::proving_absences`]).
    guards_absences: bool,
    /// Strict mode's second `decide`.
    twice: Option<Twice<T>>,
}

impl<T: Transition, V: Clone> Attempt<T, V> {
    /// An attempt of `op`, whose first read is `paths` (its [`Transition::paths`], or
    /// more): any of the operation's own paths that `paths` leaves out is read too,
    /// since a path it decides from but never read would look absent and go
    /// unproven. Every later step is given the same `op`.
    pub(crate) fn new(op: &T, mut paths: Vec<String>) -> Self {
        let own = op.paths();
        for path in &own {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        Self {
            snapshot: Snapshot::default(),
            versions: HashMap::new(),
            asked: paths,
            follow_ups: 0,
            confirming: false,
            decided_on: own,
            transactional: false,
            guards_absences: false,
            twice: None,
        }
    }

    /// The same attempt, committed inside a read-write transaction that holds every
    /// document it read: its commit carries no proof of the documents read and not
    /// written ([`crate::proof`]), since the transaction itself proves them.
    pub(crate) fn in_transaction(mut self) -> Self {
        self.transactional = true;
        self
    }

    /// The same attempt, read and committed without a transaction, whose commit also
    /// guards absent every document `decide` read absent and does not write
    /// ([`crate::proof::with_absence_guards`]): where every write of that commit is
    /// then under `exists: false`, it proves the whole snapshot decided on, as a
    /// transaction's locks would (transaction mode's unlocked first attempt).
    pub(crate) fn proving_absences(mut self) -> Self {
        self.transactional = false;
        self.guards_absences = true;
        self
    }

    /// The same attempt, in strict mode when `twice` is given (`strictly`'s check):
    /// what a call made strict passes on to each of its attempts.
    pub(crate) fn checked(mut self, twice: Option<Twice<T>>) -> Self {
        self.twice = twice;
        self
    }

    /// The first step: the read of the operation's paths.
    pub(crate) fn start(&self) -> Action<T::Output, V> {
        Action::Read {
            paths: self.asked.clone(),
            kind: ReadKind::First,
        }
    }

    /// The documents found among the paths of the last [`Action::Read`] (a path without
    /// one was read absent); `repeatable` when they can be read again as they stood
    /// (at the first read's time or inside the transaction). The next step.
    pub(crate) fn read(
        &mut self,
        op: &T,
        mut found: HashMap<String, Found<V>>,
        repeatable: bool,
    ) -> Action<T::Output, V> {
        for path in std::mem::take(&mut self.asked) {
            let doc = found.remove(&path).map(|read| {
                self.versions.insert(path.clone(), read.version);
                match read.stamps {
                    Some(stamps) => self.snapshot.stamps.insert(path.clone(), stamps),
                    None => self.snapshot.stamps.remove(&path),
                };
                read.fields
            });
            self.snapshot.docs.insert(path, doc);
        }
        let decision = op.decide(&self.snapshot);
        if let Some(twice) = self.twice {
            twice(op, &self.snapshot, &decision);
        }
        match decision {
            Decision::Observe(output) => Action::Done(output),
            Decision::Reject(JournalError::JournalCorrupt { .. })
                if !self.confirming && repeatable =>
            {
                self.confirming = true;
                self.versions.clear();
                self.snapshot.stamps.clear();
                let mut paths: Vec<String> = std::mem::take(&mut self.snapshot.docs)
                    .into_keys()
                    .collect();
                paths.sort_unstable();
                self.asked = paths.clone();
                Action::Read {
                    paths,
                    kind: ReadKind::Confirm,
                }
            }
            Decision::Reject(error) => Action::Fail(error),
            Decision::Mutate(writes, output) => {
                if self.twice.is_some() {
                    assert_guarded(&self.snapshot, &writes);
                }
                let writes = if self.transactional {
                    writes
                } else {
                    let read = self.decided_on.iter().map(String::as_str);
                    let writes = crate::proof::with_proofs(read.clone(), &self.snapshot, writes);
                    if self.guards_absences {
                        crate::proof::with_absence_guards(read, &self.snapshot, writes)
                    } else {
                        writes
                    }
                };
                match writes
                    .into_iter()
                    .map(|write| self.guard(write))
                    .collect::<Option<Vec<_>>>()
                {
                    Some(writes) => Action::Commit { writes, output },
                    // Replacing a document the attempt did not read is a bug in decide:
                    // refuse rather than write without a precondition.
                    None => Action::Fail(JournalError::corrupt("unguarded replacement")),
                }
            }
            Decision::Read(more) => {
                if self.twice.is_some() {
                    assert_follow_up(self.follow_ups, &self.snapshot, &more);
                }
                self.follow_ups += 1;
                for path in &more {
                    if !self.decided_on.contains(path) {
                        self.decided_on.push(path.clone());
                    }
                }
                let paths: Vec<String> = more
                    .into_iter()
                    .filter(|path| !self.snapshot.was_read(path))
                    .collect();
                if paths.is_empty() || self.follow_ups > MAX_FOLLOW_UP_READS {
                    // decide kept asking for more (or for what it already had): a bug,
                    // fail closed.
                    return Action::Fail(JournalError::corrupt("unbounded follow-up reads"));
                }
                self.asked = paths.clone();
                Action::Read {
                    paths,
                    kind: ReadKind::FollowUp,
                }
            }
        }
    }

    /// Every document this attempt read (`None`: read absent) and the update time of
    /// each read present: what the journal knows once the attempt is over.
    pub(crate) fn read_state(&self) -> (&Snapshot, &HashMap<String, Option<V>>) {
        (&self.snapshot, &self.versions)
    }

    /// `write` with its precondition on the state read; `None` for a replacement of a
    /// document not read present.
    fn guard(&self, write: Write) -> Option<GuardedWrite<V>> {
        let precondition = match &write {
            Write::Create { .. } | Write::AssertAbsent { .. } => Precondition::Absent,
            Write::Replace { path, .. } | Write::AssertUnchanged { path, .. } => {
                match self.versions.get(path) {
                    Some(Some(version)) => Precondition::UpdatedAt(version.clone()),
                    _ => return None,
                }
            }
        };
        Some(GuardedWrite {
            write,
            precondition,
        })
    }
}

#[cfg(test)]
impl<T, V: Clone> Attempt<T, V>
where
    T: Transition,
    T::Output: std::fmt::Debug + PartialEq,
{
    /// An attempt in strict mode: `decide` is asked twice on every snapshot, and a
    /// `decide` that breaks a rule of the attempt panics with the rule's name.
    pub(crate) fn strict(op: &T, paths: Vec<String>) -> Self {
        Self::new(op, paths).checked(Some(strictly()))
    }
}

/// Strict mode's second `decide`: it must answer the same on the same snapshot.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn strictly<T>() -> Twice<T>
where
    T: Transition,
    T::Output: std::fmt::Debug + PartialEq,
{
    |op, snapshot, decision| {
        assert_eq!(
            &op.decide(snapshot),
            decision,
            "decide must answer the same twice on one snapshot"
        );
    }
}

/// Strict mode: a follow-up read within the bound, asking for something new.
fn assert_follow_up(served: usize, snapshot: &Snapshot, more: &[String]) {
    assert!(
        served < MAX_FOLLOW_UP_READS,
        "more than {MAX_FOLLOW_UP_READS} follow-up reads: {more:?}"
    );
    assert!(
        !more.is_empty() && more.iter().all(|path| !snapshot.was_read(path)),
        "a follow-up read must ask for something new: {more:?}"
    );
}

/// Strict mode: every write targets a path the attempt read, in the state its
/// precondition will require, and no path is written twice in one commit.
fn assert_guarded(snapshot: &Snapshot, writes: &[Write]) {
    let mut written = HashSet::new();
    for write in writes {
        let read = snapshot.docs.get(write.path());
        match write {
            Write::Create { path, .. } => assert!(
                matches!(read, Some(None)),
                "created {path} without reading its absence"
            ),
            Write::AssertAbsent { path } => assert!(
                matches!(read, Some(None)),
                "asserted the absence of {path} without reading it absent"
            ),
            Write::Replace { path, .. } => assert!(
                matches!(read, Some(Some(_))),
                "replaced {path} without reading it"
            ),
            Write::AssertUnchanged { path, .. } => assert!(
                matches!(read, Some(Some(_))),
                "asserted {path} unchanged without reading it"
            ),
        }
        let path = write.path();
        assert!(written.insert(path), "{path} written twice in one commit");
    }
}

#[cfg(test)]
mod tests;

//! Deciding without reading: the state the journal knows because it just read or
//! wrote it, and the commits planned from that state (preconditions mode).
//!
//! After a commit Firestore acknowledged, the journal knows each document that commit
//! wrote (its fields, and its update time from the commit's write results), each one
//! the commit proved absent, and each one the read before it returned. An operation
//! whose every read is known can decide from that state instead of reading it:
//! [`plan`] asks its pure `decide` over exactly the paths it would read and keeps the
//! decision only when it is a mutation. The commit then proves the state the decision
//! assumed for each document it writes: `exists: false` for a `Create` or an
//! `AssertAbsent`, the known update time for a `Replace`. A document read but not
//! written is immutable, or changes only together with a document the decision
//! writes (the runner's contract, `crate::transaction`), so the commit lands exactly
//! when a read just before it would have led to the same decision, with the same
//! writes and answer. Any refusal (a race, a takeover, a lost response, a state other
//! than the one known) writes nothing, and the runner falls back to reading.
//!
//! [`chain`] plans two transitions as one blind commit: a new command's start and the
//! first transition after it, decided over the all-absent state and then over the
//! state the first one's creations leave, exactly as two sequential commits at the
//! same captured time would write them. [`observe`] answers a read-only operation
//! from the known state of its own call.

use crate::attempt::{GuardedWrite, Precondition};
use crate::transaction::blind::{self, BlindPlan};
use crate::transaction::{
    CommitStamps, CommitTime, Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition, Write,
};
use std::collections::HashMap;

/// Documents whose state the journal knows: present with their fields, update time
/// and commit times, or absent. A path not held is unknown.
#[derive(Debug, Clone, PartialEq)]
pub struct Known<V> {
    state: Snapshot,
    versions: HashMap<String, V>,
}

impl<V> Default for Known<V> {
    fn default() -> Self {
        Self {
            state: Snapshot::default(),
            versions: HashMap::new(),
        }
    }
}

/// A commit planned without a read of its own: its guarded writes, the answer once
/// it lands, and the known state it was planned from.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned<O, V> {
    /// The writes, each under the precondition that proves what the decision assumed.
    pub writes: Vec<GuardedWrite<V>>,
    /// The answer once the commit lands.
    pub output: O,
    /// The state the plan assumed; [`Known::committed`] turns it into the state after.
    pub base: Known<V>,
}

impl<V: Clone> Known<V> {
    /// Every path in `paths` known absent (what a blind creation proves).
    pub fn absent(paths: impl IntoIterator<Item = String>) -> Self {
        Self {
            state: Snapshot::new(paths.into_iter().map(|path| (path, None))),
            versions: HashMap::new(),
        }
    }

    /// What one read answered: its snapshot and the update time of each document
    /// read present (a document without one is known, but cannot be replaced).
    pub fn read(snapshot: Snapshot, versions: &HashMap<String, Option<V>>) -> Self {
        let versions = versions
            .iter()
            .filter_map(|(path, version)| Some((path.clone(), version.clone()?)))
            .collect();
        Self {
            state: snapshot,
            versions,
        }
    }

    /// Whether the state of `path` is known.
    pub fn knows(&self, path: &str) -> bool {
        self.state.was_read(path)
    }

    /// The known state as a snapshot of every known path.
    pub fn snapshot(&self) -> &Snapshot {
        &self.state
    }

    /// The state after a commit of `writes` landed: `results[i]` is the update time
    /// Firestore answered for `writes[i]` (with its comparable form), `None` where it
    /// gave none, which makes that document unknown.
    pub fn committed(mut self, writes: &[Write], results: &[Option<(V, CommitTime)>]) -> Self {
        for (index, write) in writes.iter().enumerate() {
            let path = write.path().to_owned();
            match (write, results.get(index).cloned().flatten()) {
                (Write::AssertAbsent { .. }, _) => {
                    self.versions.remove(&path);
                    self.state.stamps.remove(&path);
                    self.state.docs.insert(path, None);
                }
                (Write::Create { fields, .. }, Some((version, time))) => {
                    self.versions.insert(path.clone(), version);
                    self.state.stamps.insert(
                        path.clone(),
                        CommitStamps {
                            created: time,
                            updated: time,
                        },
                    );
                    self.state.docs.insert(path, Some(fields.clone()));
                }
                (
                    Write::Replace { fields, .. } | Write::AssertUnchanged { fields, .. },
                    Some((version, time)),
                ) => {
                    self.versions.insert(path.clone(), version);
                    match self.state.stamps.get(&path).copied() {
                        Some(before) => {
                            self.state.stamps.insert(
                                path.clone(),
                                CommitStamps {
                                    created: before.created,
                                    updated: time,
                                },
                            );
                        }
                        None => {
                            self.state.stamps.remove(&path);
                        }
                    }
                    self.state.docs.insert(path, Some(fields.clone()));
                }
                (
                    Write::Create { .. } | Write::Replace { .. } | Write::AssertUnchanged { .. },
                    None,
                ) => {
                    self.versions.remove(&path);
                    self.state.stamps.remove(&path);
                    self.state.docs.remove(&path);
                }
            }
        }
        self
    }

    /// The snapshot a read of `paths` would answer, if every one is known.
    fn view(&self, paths: &[String], into: &mut Snapshot) -> bool {
        for path in paths {
            let Some(doc) = self.state.docs.get(path) else {
                return false;
            };
            into.docs.insert(path.clone(), doc.clone());
            if let Some(stamps) = self.state.stamps(path) {
                into.stamps.insert(path.clone(), stamps);
            }
        }
        true
    }

    /// `op`'s decision over the known state, reading (from it) exactly what the
    /// runner would read: its paths, then each follow-up, all of them known. Answers
    /// the decision, the view it was taken from and the paths read, in read order.
    fn decide<T: Transition>(&self, op: &T) -> Option<Decided<T::Output>> {
        let mut view = Snapshot::default();
        let mut read = op.paths();
        if !self.view(&read, &mut view) {
            return None;
        }
        let mut follow_ups = 0;
        loop {
            match op.decide(&view) {
                Decision::Read(more) => {
                    follow_ups += 1;
                    let fresh: Vec<String> =
                        more.into_iter().filter(|p| !view.was_read(p)).collect();
                    if fresh.is_empty()
                        || follow_ups > MAX_FOLLOW_UP_READS
                        || !self.view(&fresh, &mut view)
                    {
                        return None;
                    }
                    read.extend(fresh);
                }
                decision => return Some((decision, view, read)),
            }
        }
    }
}

/// The commit of `op`'s decision over `known`, when every document it reads is known
/// and the decision is a mutation whose every write's precondition can be stated from
/// the known state; `None` otherwise (the runner reads instead).
pub fn plan<T: Transition, V: Clone>(op: &T, known: &Known<V>) -> Option<Planned<T::Output, V>> {
    let (decision, view, read) = known.decide(op)?;
    let Decision::Mutate(writes, output) = decision else {
        return None;
    };
    let writes = crate::proof::with_proofs(read.iter().map(String::as_str), &view, writes);
    let mut guarded = Vec::with_capacity(writes.len());
    let mut written = std::collections::HashSet::new();
    for write in writes {
        if !written.insert(write.path().to_owned()) {
            return None;
        }
        let precondition = match (&write, view.docs.get(write.path())) {
            (Write::Create { .. } | Write::AssertAbsent { .. }, Some(None)) => Precondition::Absent,
            (Write::Replace { path, .. } | Write::AssertUnchanged { path, .. }, Some(Some(_))) => {
                Precondition::UpdatedAt(known.versions.get(path)?.clone())
            }
            _ => return None,
        };
        guarded.push(GuardedWrite {
            write,
            precondition,
        });
    }
    Some(Planned {
        writes: guarded,
        output,
        base: known.clone(),
    })
}

/// The answer of a read-only `op` from `known`, when every document it reads is
/// known and it decides to observe.
pub fn observe<T: Transition, V: Clone>(op: &T, known: &Known<V>) -> Option<T::Output> {
    match known.decide(op)? {
        (Decision::Observe(output), _, _) => Some(output),
        _ => None,
    }
}

/// A blind creation as a planned commit: its creations and absence guards, each
/// under `exists: false`, over the all-absent state of `paths`.
pub fn blind_commit<O, V: Clone>(plan: BlindPlan<O>, paths: &[String]) -> Planned<O, V> {
    let guards = plan
        .guards
        .into_iter()
        .map(|path| Write::AssertAbsent { path });
    let writes = plan
        .creates
        .into_iter()
        .chain(guards)
        .map(|write| GuardedWrite {
            write,
            precondition: Precondition::Absent,
        })
        .collect();
    Planned {
        writes,
        output: plan.output,
        base: Known::absent(paths.iter().cloned()),
    }
}

/// A decision over the known state: the decision, the view it read and the paths it
/// read, in order.
type Decided<O> = (Decision<O>, Snapshot, Vec<String>);

/// The plan of two chained transitions: their two answers in one commit.
pub type Chained<A, B, V> = Planned<(<A as Transition>::Output, <B as Transition>::Output), V>;

/// `first`'s blind creation over `paths` (which must hold every path `first` reads)
/// and the transition `then` builds from its answer, as one blind commit: `then`
/// decides over the state `first`'s creations leave, its replacements of those
/// documents become their creations, its other writes creations of paths in `paths`
/// known absent, and every path of `paths` not created is proven absent. `None` when
/// `first` makes no blind plan, `then` declines (answers `None`), reads or writes
/// outside `paths`, or decides anything but such a mutation.
pub fn chain<A, B, V, F>(first: &A, paths: &[String], then: F) -> Option<Chained<A, B, V>>
where
    A: Transition,
    B: Transition,
    V: Clone,
    F: FnOnce(&A::Output) -> Option<B>,
{
    if !first.paths().iter().all(|p| paths.contains(p)) {
        return None;
    }
    let plan = blind::plan(first, paths)?;
    let second = then(&plan.output)?;
    let mut creates = plan.creates;
    let mut after = Known::<V>::absent(paths.iter().cloned());
    for write in &creates {
        if let Write::Create { path, fields } = write {
            after.state.docs.insert(path.clone(), Some(fields.clone()));
        }
    }
    let (decision, view, _) = after.decide(&second)?;
    let Decision::Mutate(writes, second_output) = decision else {
        return None;
    };
    for write in writes {
        let created = creates.iter().position(|c| c.path() == write.path());
        match (write, created) {
            (Write::Replace { path, fields }, Some(index)) => {
                creates[index] = Write::Create { path, fields };
            }
            (Write::Create { path, fields }, None)
                if matches!(view.docs.get(&path), Some(None)) =>
            {
                creates.push(Write::Create { path, fields });
            }
            (Write::AssertAbsent { path }, None) if matches!(view.docs.get(&path), Some(None)) => {}
            _ => return None,
        }
    }
    let guards = paths
        .iter()
        .filter(|path| !creates.iter().any(|c| c.path() == path.as_str()))
        .cloned()
        .collect();
    Some(blind_commit(
        BlindPlan {
            creates,
            guards,
            output: (plan.output, second_output),
        },
        paths,
    ))
}

#[cfg(test)]
mod tests;

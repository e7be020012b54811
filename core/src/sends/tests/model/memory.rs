//! What one `execute` call knows of the journal between its operations (the
//! call machine's known state in preconditions mode, `core/src/call.rs`), and the commit it has
//! in flight: decided at one action, landed or refused at a later one.

use super::canon::{Ranks, hash_known, known_times};
use super::journal::Writes;
use super::ops::{Caller, Op, Output};
use crate::attempt::{GuardedWrite, Precondition};
use crate::known::Known;
use crate::testing::WriteResults;
use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The state a call's own last read or commit left known, fingerprinted.
#[derive(Debug, Clone)]
pub(super) struct Memory {
    known: Arc<Known<u64>>,
    fingerprint: u64,
}

impl Hash for Memory {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl PartialEq for Memory {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
    }
}

impl Eq for Memory {}

/// Known states a thread keeps to share them, before it starts again.
const INTERNED: usize = 100_000;

thread_local! {
    /// Every known state met, by fingerprint: many states of the checker know the same,
    /// and share one copy.
    static KNOWNS: RefCell<HashMap<u64, Arc<Known<u64>>>> = RefCell::new(HashMap::new());
}

impl Memory {
    pub(super) fn new(known: Known<u64>) -> Self {
        let mut hasher = DefaultHasher::new();
        hash_known(&known, &mut hasher);
        let fingerprint = hasher.finish();
        let known = KNOWNS.with(|interned| {
            let mut interned = interned.borrow_mut();
            if interned.len() >= INTERNED {
                interned.clear();
            }
            interned
                .entry(fingerprint)
                .or_insert_with(|| Arc::new(known))
                .clone()
        });
        Self { known, fingerprint }
    }

    pub(super) fn known(&self) -> &Known<u64> {
        &self.known
    }

    pub(super) fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// What is known once `writes` landed with `results` (`Known::committed`).
    pub(super) fn committed(&self, writes: &[GuardedWrite<u64>], results: &WriteResults) -> Self {
        let writes: Vec<_> = writes.iter().map(|w| w.write.clone()).collect();
        Self::new(Known::clone(&self.known).committed(&writes, results))
    }

    /// The write times it holds.
    pub(super) fn times(&self, into: &mut Vec<u64>) {
        known_times(&self.known, into);
    }

    pub(super) fn renumbered(&self, ranks: &Ranks) -> Self {
        if ranks.keeps(&self.known) {
            return self.clone();
        }
        Self::new(ranks.known(&self.known))
    }
}

/// How a commit in flight was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Source {
    /// From what the call knew (`known::plan`, or `known::chain` for an opening),
    /// without a read.
    Planned,
    /// By a read just before (the read path of preconditions mode).
    Read,
}

/// A commit sent and not yet landed or refused: the operation it commits, how it was
/// decided, its guarded writes and the answer once it lands. Hashed by what decides
/// all of them: the operation, its caller and the state the decision assumed.
#[derive(Debug, Clone)]
pub(super) struct Flight {
    pub caller: Caller,
    pub op: Op,
    pub source: Source,
    /// Whether the call keeps what the operation leaves known.
    pub remember: bool,
    pub writes: Writes,
    pub output: Output,
    /// What the decision assumed: what the call knew, or what its read returned.
    pub base: Memory,
}

impl Hash for Flight {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.caller, self.op, self.source, self.remember, &self.base).hash(state);
    }
}

impl PartialEq for Flight {
    fn eq(&self, other: &Self) -> bool {
        (self.caller, self.op, self.source, self.remember, &self.base)
            == (
                other.caller,
                other.op,
                other.source,
                other.remember,
                &other.base,
            )
    }
}

impl Eq for Flight {}

impl Flight {
    /// The write times it holds: the state assumed, and the update times its
    /// preconditions name (the same).
    pub(super) fn times(&self, into: &mut Vec<u64>) {
        self.base.times(into);
        for write in self.writes.iter() {
            if let Precondition::UpdatedAt(t) = write.precondition {
                into.push(t);
            }
        }
    }

    pub(super) fn renumbered(&self, ranks: &Ranks) -> Self {
        let kept = self.writes.iter().all(|w| match w.precondition {
            Precondition::Absent => true,
            Precondition::UpdatedAt(t) => ranks.map(t) == t,
        });
        if kept && ranks.keeps(self.base.known()) {
            return self.clone();
        }
        let writes = self
            .writes
            .iter()
            .map(|write| GuardedWrite {
                write: write.write.clone(),
                precondition: match write.precondition {
                    Precondition::Absent => Precondition::Absent,
                    Precondition::UpdatedAt(t) => Precondition::UpdatedAt(ranks.map(t)),
                },
            })
            .collect();
        Self {
            writes: Arc::new(writes),
            base: self.base.renumbered(ranks),
            output: self.output.clone(),
            ..*self
        }
    }
}

//! The journal of the model: the in-memory [`Store`] running the real operations, as
//! `Journal::execute`'s driver calls them, with a fingerprint of its documents so
//! that the checker can tell states apart.
//!
//! An operation is performed in the steps production takes in preconditions mode:
//! an [`attempt`](Journal::attempt) reads and decides (writing nothing), its
//! [`commit`](Journal::commit) lands later under the attempt machine's
//! preconditions, or not at all; a [`plan`] decides from what a call knows and
//! [`chain`] opens a new command, both without a read. [`run`](Journal::run) is the
//! whole read-decide-commit of one operation at one instant: the atomic mode, and
//! the runner's fallback after a refused commit.
//!
//! Many states of the system share one journal state, and the checker asks the same
//! operation of it again and again: each attempt, run, plan, opening and landing is
//! memoized per thread (up to a bound), keyed by the journal's fingerprint (or what
//! the call knows), the operation, its caller, its time and the rules reverted. The
//! store is shared (`Arc`) between states.

use super::super::{at, hash, identity, owner};
use super::canon::{Ranks, hash_fields};
use super::memory::{Flight, Memory};
use super::ops::{Caller, Op, Output, Visit, visit};
use super::world::{micros, plan as provider_plan};
use crate::attempt::GuardedWrite;
use crate::document::lifecycle::{self, Lifecycle};
use crate::error::JournalError;
use crate::execute::opening::Opening;
use crate::fence::FenceEpoch;
use crate::known::{self, Known};
use crate::sends::reverted::reverted_bits;
use crate::start::{Start, StartOutput};
use crate::testing::{Store, WriteResults};
use crate::transaction::{Decision, Transition, Write};
use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The journal's documents and their fingerprint.
#[derive(Clone)]
pub(super) struct Journal {
    store: Arc<Store>,
    fingerprint: u64,
}

impl Hash for Journal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.fingerprint.hash(state);
    }
}

impl PartialEq for Journal {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
    }
}

impl Eq for Journal {}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Journal({} documents)", self.store.len())
    }
}

impl Default for Journal {
    fn default() -> Self {
        Self::new(Store::new())
    }
}

/// What a read-and-decide attempt decided.
#[derive(Debug, Clone)]
pub(super) enum Decided {
    /// Nothing to commit: the answer (an observation or a refusal).
    Answer(Output),
    /// A mutation: its writes under the attempt machine's preconditions, and the
    /// answer once they land.
    Commit(Writes, Output),
}

/// The guarded writes of a commit, shared between the states that hold them.
pub(super) type Writes = Arc<Vec<GuardedWrite<u64>>>;

/// An attempt's decision and what it read.
#[derive(Debug, Clone)]
pub(super) struct Attempted {
    pub decided: Decided,
    pub read: Memory,
}

/// What a commit in flight met: landed (and how it compares), or refused and read
/// and decided again; the answer, and what the call knows after it.
#[derive(Debug, Clone)]
pub(super) struct Landing {
    pub landed: Option<Landed>,
    /// Whether the journal changed (a refused commit's read path may write).
    pub wrote: bool,
    pub output: Output,
    pub memory: Memory,
}

/// A landed commit's checks.
#[derive(Debug, Clone, Copy)]
pub(super) struct Landed {
    /// The lifecycle's fence as it landed.
    pub fence: Option<FenceEpoch>,
    /// It wrote the send layer under another fence.
    pub stale: bool,
    /// A read at that moment would have decided otherwise.
    pub unlike: bool,
}

type MemoKey = (u64, u16, Caller, Op);
/// A landing's memo key: the journal's fingerprint, the rules reverted, the flight's.
type LandingKey = (u64, u16, u64);
type Chain = Option<(Writes, Output, Memory)>;

thread_local! {
    static ATTEMPTS: RefCell<HashMap<MemoKey, Attempted>> = RefCell::new(HashMap::new());
    static RUNS: RefCell<HashMap<MemoKey, (Journal, Output, Memory)>> =
        RefCell::new(HashMap::new());
    static PLANS: RefCell<HashMap<MemoKey, Option<(Writes, Output)>>> =
        RefCell::new(HashMap::new());
    static CHAINS: RefCell<HashMap<(u16, Caller), Chain>> = RefCell::new(HashMap::new());
    static LANDINGS: RefCell<HashMap<LandingKey, (Journal, Landing)>> =
        RefCell::new(HashMap::new());
}

/// Entries a memo keeps before it starts again: a bound on the memory it takes.
const MEMO_ENTRIES: usize = 200_000;

type Memo<K, V> = std::thread::LocalKey<RefCell<HashMap<K, V>>>;

/// Keeps `value` for `key` in `memo`, emptied first once full.
fn remember<K: Eq + Hash, V>(memo: &'static Memo<K, V>, key: K, value: V) {
    memo.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(key, value);
    });
}

/// The plain writes of guarded ones.
pub(super) fn plain(writes: &[GuardedWrite<u64>]) -> Vec<Write> {
    writes.iter().map(|w| w.write.clone()).collect()
}

/// An attempt on a store.
struct AttemptOn<'a>(&'a Store);

impl Visit for AttemptOn<'_> {
    type Out = Attempted;

    fn visit<T>(
        self,
        op: &T,
        paths: Vec<String>,
        wrap: fn(Result<T::Output, JournalError>) -> Output,
    ) -> Attempted
    where
        T: Transition + fmt::Debug,
        T::Output: fmt::Debug + PartialEq,
    {
        let attempt = self.0.attempt_reading(op, paths);
        let guarded = Arc::new(attempt.guarded());
        let read = Memory::new(attempt.known().clone());
        let decided = match attempt.decision {
            Decision::Observe(output) => Decided::Answer(wrap(Ok(output))),
            Decision::Reject(error) => Decided::Answer(wrap(Err(error))),
            Decision::Mutate(_, output) => Decided::Commit(guarded, wrap(Ok(output))),
            Decision::Read(_) => unreachable!("an attempt serves its follow-up reads"),
        };
        Attempted { decided, read }
    }
}

/// A plan from what a call knows.
struct PlanFrom<'a>(&'a Known<u64>);

impl Visit for PlanFrom<'_> {
    type Out = Option<(Writes, Output)>;

    fn visit<T>(
        self,
        op: &T,
        _paths: Vec<String>,
        wrap: fn(Result<T::Output, JournalError>) -> Output,
    ) -> Self::Out
    where
        T: Transition + fmt::Debug,
        T::Output: fmt::Debug + PartialEq,
    {
        let planned = known::plan(op, self.0)?;
        Some((Arc::new(planned.writes), wrap(Ok(planned.output))))
    }
}

/// `op`'s commit for `caller` planned from what `memory` knows (`known::plan`), as
/// `Memory` plans it: `None` when it decides anything but a mutation from it.
pub(super) fn plan(caller: Caller, op: Op, memory: &Memory) -> Option<(Writes, Output)> {
    let key = (memory.fingerprint(), reverted_bits(), caller, op);
    if let Some(planned) = PLANS.with(|memo| memo.borrow().get(&key).cloned()) {
        return planned;
    }
    let planned = visit(caller, op, PlanFrom(memory.known()));
    remember(&PLANS, key, planned.clone());
    planned
}

/// A new command's opening for `caller`, as `execute`'s `open` plans it: the start
/// and the `begin_send` its lease lets it take (the opening's rule), one blind commit
/// (`known::chain`); its writes, answer and the state it assumed.
pub(super) fn chain(caller: Caller) -> Chain {
    let key = (reverted_bits(), caller);
    if let Some(opening) = CHAINS.with(|memo| memo.borrow().get(&key).cloned()) {
        return opening;
    }
    let opening = open(caller);
    remember(&CHAINS, key, opening.clone());
    opening
}

fn open(caller: Caller) -> Chain {
    let now = at(micros(caller.now));
    let call = caller.call();
    let start = Start::new(identity(), owner(caller.owner), now);
    let plan = provider_plan(caller.plan).clone();
    // The opening's one rule: the permit its lease lets it take.
    let opening = Opening::new(start.clone(), call, plan);
    let paths = opening.paths();
    let planned =
        known::chain::<_, _, u64, _>(&start, &paths, |out: &StartOutput| opening.permit(out))?;
    let (started, began) = planned.output;
    let output = Output::Opened(started, began);
    Some((Arc::new(planned.writes), output, Memory::new(planned.base)))
}

impl Journal {
    fn new(store: Store) -> Self {
        Self {
            fingerprint: fingerprint(&store),
            store: Arc::new(store),
        }
    }

    /// Reads and decides `op` for `caller` on the journal as it stands, writing
    /// nothing.
    pub(super) fn attempt(&self, caller: Caller, op: Op) -> Attempted {
        let key = (self.fingerprint, reverted_bits(), op.reads_of(caller), op);
        if let Some(attempted) = ATTEMPTS.with(|memo| memo.borrow().get(&key).cloned()) {
            return attempted;
        }
        let attempted = visit(caller, op, AttemptOn(&self.store));
        remember(&ATTEMPTS, key, attempted.clone());
        attempted
    }

    /// Reads, decides and commits `op` for `caller` at once: its answer and what it
    /// left known (the read, and the commit's writes with their update times).
    pub(super) fn run(&mut self, caller: Caller, op: Op) -> (Output, Memory) {
        let key = (self.fingerprint, reverted_bits(), op.reads_of(caller), op);
        if let Some((after, output, known)) = RUNS.with(|memo| memo.borrow().get(&key).cloned()) {
            *self = after;
            return (output, known);
        }
        let Attempted { decided, read } = self.attempt(caller, op);
        let (output, known) = match decided {
            Decided::Answer(output) => (output, read),
            Decided::Commit(writes, output) => {
                let results = self.commit(&writes).expect("an uncontended commit lands");
                (output, read.committed(&writes, &results))
            }
        };
        let entry = (self.clone(), output.clone(), known.clone());
        remember(&RUNS, key, entry);
        (output, known)
    }

    /// Commits `writes` under their preconditions, checked against the journal as it
    /// stands: the update time each left, or `None` with nothing written.
    pub(super) fn commit(&mut self, writes: &[GuardedWrite<u64>]) -> Option<WriteResults> {
        let mut store = Store::clone(&self.store);
        let results = store.commit_guarded(writes)?;
        *self = Self::new(store);
        Some(results)
    }

    /// `flight` reaches the journal: it lands when its preconditions hold, checked
    /// against a read at that moment; otherwise the runner reads and decides again.
    pub(super) fn land(&mut self, flight: &Flight) -> Landing {
        let mut hasher = DefaultHasher::new();
        flight.hash(&mut hasher);
        let key = (self.fingerprint, reverted_bits(), hasher.finish());
        if let Some((after, landing)) = LANDINGS.with(|memo| memo.borrow().get(&key).cloned()) {
            *self = after;
            return landing;
        }
        let before = self.clone();
        let landing = match self.commit(&flight.writes) {
            Some(results) => {
                let fence = before.fence();
                let stale = flight.op.fence().is_some_and(|f| fence != Some(f));
                let output = &flight.output;
                let alike = before.decides_alike(flight.caller, flight.op, &flight.writes, output);
                Landing {
                    landed: Some(Landed {
                        fence,
                        stale,
                        unlike: !alike,
                    }),
                    wrote: true,
                    output: flight.output.clone(),
                    memory: flight.base.committed(&flight.writes, &results),
                }
            }
            None => {
                let (output, memory) = self.run(flight.caller, flight.op);
                Landing {
                    landed: None,
                    wrote: *self != before,
                    output,
                    memory,
                }
            }
        };
        let entry = (self.clone(), landing.clone());
        remember(&LANDINGS, key, entry);
        landing
    }

    /// Whether landing `writes` answering `output` now is what reading and deciding
    /// `op` for `caller` now would do: the same writes and the same answer (for an
    /// opening chain: the same documents and answers as its start and `begin_send`
    /// read, decided and committed one after the other).
    pub(super) fn decides_alike(
        &self,
        caller: Caller,
        op: Op,
        writes: &[GuardedWrite<u64>],
        output: &Output,
    ) -> bool {
        if let Output::Opened(..) = output {
            return self.opens_alike(caller, writes, output);
        }
        match self.attempt(caller, op).decided {
            Decided::Commit(fresh, answer) => plain(&fresh) == plain(writes) && answer == *output,
            Decided::Answer(_) => false,
        }
    }

    fn opens_alike(&self, caller: Caller, writes: &[GuardedWrite<u64>], output: &Output) -> bool {
        let mut read = self.clone();
        let (Output::Started(Ok(started)), _) = read.run(caller, Op::Open) else {
            return false;
        };
        let call = caller.call();
        let start = Start::new(identity(), owner(caller.owner), at(micros(caller.now)));
        let plan = provider_plan(caller.plan).clone();
        let Some(permit) = Opening::new(start, call, plan).permit(&started) else {
            return false;
        };
        let (began, _) = read.run(
            caller,
            Op::BeginSend {
                fence: permit.fence(),
            },
        );
        let Output::BeganSend(Ok(began)) = began else {
            return false;
        };
        let mut planned = self.clone();
        planned.commit(writes).is_some()
            && Output::Opened(started, began) == *output
            && documents(&planned.store) == documents(&read.store)
    }

    /// The lifecycle's fence, if there is a readable lifecycle.
    pub(super) fn fence(&self) -> Option<FenceEpoch> {
        let stored = self.store.get(&lifecycle::path(&hash()))?;
        Lifecycle::parse(&hash(), stored)
            .ok()
            .map(|lifecycle| lifecycle.fence_epoch)
    }

    /// Every write time the documents carry.
    pub(super) fn times(&self, into: &mut Vec<u64>) {
        for path in self.store.keys() {
            let (created, updated) = self.store.written(path).expect("a stored document");
            into.extend([created, updated]);
        }
    }

    /// The journal with its write times renumbered by `ranks`.
    pub(super) fn renumbered(&self, ranks: &Ranks) -> Self {
        let mut times = Vec::new();
        self.times(&mut times);
        if times.iter().all(|t| ranks.map(*t) == *t) {
            return self.clone();
        }
        Self::new(self.store.renumbered(|t| ranks.map(t)))
    }
}

/// The documents of `store`, without their write times.
fn documents(store: &Store) -> Vec<(&String, &crate::document::fields::FieldMap)> {
    store.iter().collect()
}

/// A fingerprint of the documents and their write times (canonical once renumbered,
/// `canon`).
fn fingerprint(store: &Store) -> u64 {
    let mut hasher = DefaultHasher::new();
    for (path, fields) in store.iter() {
        (path, store.written(path)).hash(&mut hasher);
        hash_fields(fields, &mut hasher);
    }
    hasher.finish()
}

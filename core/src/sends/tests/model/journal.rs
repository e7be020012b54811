//! The journal of the model: the in-memory [`Store`] running the real operations, as
//! `Journal::execute`'s driver calls them, with a canonical fingerprint of its
//! documents so that the checker can tell states apart.
//!
//! Many states of the system share one journal state, and the checker asks the same
//! operation of it again and again: each operation's answer and the store it leaves are
//! memoized per thread, keyed by the journal's fingerprint, the operation, its caller,
//! its time and the rules reverted. The store is shared (`Arc`) between states.

use super::super::{at, call, hash, identity, owner};
use super::world::{KeyId, PlanChoice, micros, plan};
use crate::answer::Closing;
use crate::document::fields::FieldMap;
use crate::document::value::{Value, ValueType};
use crate::envelope::ResultEnvelope;
use crate::envelope::read::ResultRead;
use crate::envelope::record::{MarksResult, WithResult};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::CommandIdentity;
use crate::lease::{CommandCall, LeaseCall, LeaseOutput};
use crate::sends::begin::BeginSend;
use crate::sends::record::RecordAnswer;
use crate::sends::reverted::{Rule, reverted};
use crate::sends::status::SendStatusRead;
use crate::sends::{BeginSendOutput, SendOutcomeOutput, SendStatus};
use crate::start::Start;
use crate::testing::Store;
use crate::time::Timestamp;
use crate::transaction::Transition;
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
        let store = Store::new();
        Self {
            fingerprint: fingerprint(&store),
            store: Arc::new(store),
        }
    }
}

/// Who performs a journal operation: the call's lease owner, its plan, and the
/// journal's time (seconds after `T0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Caller {
    pub owner: usize,
    pub plan: PlanChoice,
    pub now: i64,
}

impl Caller {
    fn call(&self) -> LeaseCall {
        call(self.owner, micros(self.now))
    }

    /// A read's call: the owner is not consulted.
    fn reader(&self) -> CommandCall {
        CommandCall::new(identity(), at(micros(self.now)))
    }
}

/// What a record or a reconciliation carries: a success names the key whose charge
/// answered it (its result envelope is stored with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Carried {
    Succeeded(KeyId),
    Declined,
    Ambiguous,
    Absent,
}

/// One journal operation of `Journal::execute`'s driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Op {
    /// `Journal::start`: registration and acquisition.
    Start,
    /// `begin_send` under the fence.
    BeginSend { fence: i64 },
    /// `record_send_outcome`.
    Record {
        fence: i64,
        attempt: i64,
        carried: Carried,
    },
    /// `reconcile_send`.
    Reconcile {
        fence: i64,
        attempt: i64,
        carried: Carried,
    },
    /// `send_status_for`: the send state, the caller's plan checked first.
    Status,
    /// `Journal::result`.
    Result,
}

/// What an operation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Output {
    Started(Result<LeaseOutput, JournalError>),
    BeganSend(Result<BeginSendOutput, JournalError>),
    Outcome(Result<SendOutcomeOutput, JournalError>),
    Status(Result<Option<SendStatus>, JournalError>),
    Result(Result<Option<ResultEnvelope>, JournalError>),
}

type MemoKey = (u64, u8, Caller, Op);

thread_local! {
    static MEMO: RefCell<HashMap<MemoKey, (Journal, Output)>> = RefCell::new(HashMap::new());
}

/// The rules reverted on this thread, as bits.
fn reverted_bits() -> u8 {
    let rules = [
        Rule::SenderSettled,
        Rule::KeyRetained,
        Rule::EvidenceAfterCutoff,
        Rule::PlanFirst,
    ];
    rules
        .into_iter()
        .filter(|rule| reverted(*rule))
        .fold(0, |bits, rule| bits | rule as u8)
}

impl Journal {
    /// Performs `op` for `caller`: its answer; the journal moves to the state it left.
    fn perform(&mut self, caller: Caller, op: Op) -> Output {
        // What the operation does not read does not tell memo entries apart.
        let caller = match op {
            Op::Start => Caller {
                plan: PlanChoice::Right,
                ..caller
            },
            Op::Status => Caller { owner: 0, ..caller },
            Op::Result => Caller {
                owner: 0,
                plan: PlanChoice::Right,
                ..caller
            },
            Op::BeginSend { .. } | Op::Record { .. } | Op::Reconcile { .. } => caller,
        };
        let key = (self.fingerprint, reverted_bits(), caller, op);
        if let Some((after, output)) = MEMO.with(|memo| memo.borrow().get(&key).cloned()) {
            *self = after;
            return output;
        }
        let mut store = Store::clone(&self.store);
        let (output, wrote) = run_op(&mut store, caller, op);
        if wrote {
            *self = Self {
                fingerprint: fingerprint(&store),
                store: Arc::new(store),
            };
        }
        MEMO.with(|memo| {
            memo.borrow_mut()
                .insert(key, (self.clone(), output.clone()))
        });
        output
    }

    /// `Journal::start`: the lease answer.
    pub(super) fn start(&mut self, caller: Caller) -> Result<LeaseOutput, JournalError> {
        match self.perform(caller, Op::Start) {
            Output::Started(answer) => answer,
            other => mismatch(other),
        }
    }

    /// `begin_send` under `fence`.
    pub(super) fn begin_send(
        &mut self,
        caller: Caller,
        fence: i64,
    ) -> Result<BeginSendOutput, JournalError> {
        match self.perform(caller, Op::BeginSend { fence }) {
            Output::BeganSend(answer) => answer,
            other => mismatch(other),
        }
    }

    /// `record_send_outcome` or `reconcile_send` (`op`).
    pub(super) fn outcome(
        &mut self,
        caller: Caller,
        op: Op,
    ) -> Result<SendOutcomeOutput, JournalError> {
        match self.perform(caller, op) {
            Output::Outcome(answer) => answer,
            other => mismatch(other),
        }
    }

    /// `send_status_for`: the send state, the caller's plan checked first.
    pub(super) fn status(&mut self, caller: Caller) -> Result<Option<SendStatus>, JournalError> {
        match self.perform(caller, Op::Status) {
            Output::Status(answer) => answer,
            other => mismatch(other),
        }
    }

    /// `Journal::result`.
    pub(super) fn result(
        &mut self,
        caller: Caller,
    ) -> Result<Option<ResultEnvelope>, JournalError> {
        match self.perform(caller, Op::Result) {
            Output::Result(answer) => answer,
            other => mismatch(other),
        }
    }
}

fn mismatch<T>(output: Output) -> T {
    panic!("an operation answered another operation's output: {output:?}")
}

/// Runs `op` on `store`: its answer, and whether it wrote.
fn run<T>(store: &mut Store, op: &T) -> (Result<T::Output, JournalError>, bool)
where
    T: Transition,
    T::Output: fmt::Debug + PartialEq,
{
    let ran = store.run(op);
    (ran.result, !ran.writes.is_empty())
}

/// Runs `op` on `store`, as the driver builds it: its answer, and whether it wrote.
fn run_op(store: &mut Store, caller: Caller, op: Op) -> (Output, bool) {
    let plan = plan(caller.plan).clone();
    let now = at(micros(caller.now));
    match op {
        Op::Start => {
            let start = Start::new(identity(), owner(caller.owner), now);
            let (answer, wrote) = run(store, &start);
            (Output::Started(answer.map(|started| started.lease)), wrote)
        }
        Op::BeginSend { fence } => {
            let (answer, wrote) = run(
                store,
                &BeginSend::new(caller.call(), FenceEpoch::stored(fence), plan),
            );
            (Output::BeganSend(answer), wrote)
        }
        Op::Record {
            fence,
            attempt,
            carried,
        } => {
            let (finding, envelope) = finding(&identity(), carried);
            let op = RecordAnswer::outcome(
                caller.call(),
                FenceEpoch::stored(fence),
                attempt,
                finding,
                plan,
            );
            outcome(store, op, envelope, now)
        }
        Op::Reconcile {
            fence,
            attempt,
            carried,
        } => {
            let (finding, envelope) = finding(&identity(), carried);
            let op = RecordAnswer::reconciliation(
                caller.call(),
                FenceEpoch::stored(fence),
                attempt,
                finding,
                plan,
            );
            outcome(store, op, envelope, now)
        }
        Op::Status => {
            let op = SendStatusRead::new(caller.reader()).for_plan(&plan);
            let (answer, wrote) = run(store, &op);
            (Output::Status(answer.map(|status| status.send)), wrote)
        }
        Op::Result => {
            let (answer, wrote) = run(store, &ResultRead::new(caller.reader()));
            (Output::Result(answer), wrote)
        }
    }
}

/// Runs a record or a reconciliation; with a success, wrapped as the driver does to
/// store its result envelope in the same commit.
fn outcome<T>(
    store: &mut Store,
    op: T,
    envelope: Option<ResultEnvelope>,
    now: Timestamp,
) -> (Output, bool)
where
    T: Transition<Output = SendOutcomeOutput> + MarksResult,
{
    let (answer, wrote) = match envelope {
        None => run(store, &op),
        Some(envelope) => run(store, &WithResult::new(op, &hash(), now, &envelope)),
    };
    (Output::Outcome(answer), wrote)
}

/// The finding `carried` records, and the envelope stored with a success.
fn finding(identity: &CommandIdentity, carried: Carried) -> (Closing, Option<ResultEnvelope>) {
    match carried {
        Carried::Succeeded(key) => {
            let envelope = key.envelope();
            let commitment = identity.terminal_commitment(&envelope.reference());
            (Closing::Succeeded(commitment), Some(envelope))
        }
        Carried::Declined => (Closing::Declined, None),
        Carried::Ambiguous => (Closing::Ambiguous, None),
        Carried::Absent => (Closing::Absent, None),
    }
}

/// A fingerprint of the documents that does not depend on the store's logical write
/// clock, only on the order of write times: two stores that differ only in how many
/// commits happened before behave the same (the operations compare write times for
/// equality only), and must count as one state.
fn fingerprint(store: &Store) -> u64 {
    let written = |path: &str| store.written(path).expect("a stored document");
    let mut times: Vec<u64> = store
        .keys()
        .flat_map(|path| {
            let (created, updated) = written(path);
            [created, updated]
        })
        .collect();
    times.sort_unstable();
    times.dedup();
    let rank = |t: u64| times.binary_search(&t).expect("a write time");
    let mut hasher = DefaultHasher::new();
    for (path, fields) in store.iter() {
        let (created, updated) = written(path);
        (path, rank(created), rank(updated)).hash(&mut hasher);
        hash_fields(fields, &mut hasher);
    }
    hasher.finish()
}

/// Hashes a field map in key order (its own iteration order is not canonical).
fn hash_fields(fields: &FieldMap, hasher: &mut DefaultHasher) {
    let mut names: Vec<&String> = fields.keys().collect();
    names.sort();
    names.len().hash(hasher);
    for name in names {
        name.hash(hasher);
        hash_value(&fields[name], hasher);
    }
}

fn hash_value(value: &Value, hasher: &mut DefaultHasher) {
    match &value.value_type {
        Some(ValueType::MapValue(map)) => {
            "map".hash(hasher);
            hash_fields(&map.fields, hasher);
        }
        Some(ValueType::ArrayValue(array)) => {
            ("array", array.values.len()).hash(hasher);
            for item in &array.values {
                hash_value(item, hasher);
            }
        }
        other => format!("{other:?}").hash(hasher),
    }
}

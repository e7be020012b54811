//! The model's state, actions and properties (the table in the module's doc), as a
//! `stateright` [`Model`].

use super::journal::Journal;
use super::provider::Provider;
use super::worker::{Asked, Phase, Turn, Worker};
use super::world::{INSTANTS, KeyId, PlanChoice, WIDE, with_final_state};
use crate::sends::AttemptNumber;
use crate::sends::reverted::{Rule, with_reverted};
use stateright::{Model, Property};
use std::hash::Hash;

/// How `execute`'s journal operations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Each operation reads, decides and commits in one action: what transaction
    /// mode guarantees, and what the model checked before it modelled planned commits.
    Atomic,
    /// Preconditions mode. With `plans`, as `execute` runs it: a call keeps what its
    /// last read or commit left known and plans its next commit from it
    /// (`known::plan`, and `known::chain` for a new command's opening); the plan and
    /// its commit are two actions, and a refused commit reads and decides again at
    /// once. Without, every operation takes the read path (as any caller but
    /// `execute` does). With `split_reads`, a read path's read (and decision) and its
    /// commit are two actions too.
    Preconditions { plans: bool, split_reads: bool },
}

impl Mode {
    /// Preconditions mode as `execute` runs it: planned commits, and read paths whose
    /// read and commit are two actions.
    pub(super) const PRODUCTION: Self = Self::Preconditions {
        plans: true,
        split_reads: true,
    };

    /// The mode `CJ_MODEL_MODE` names (`atomic`, `planned`, `split`, `reads`), or
    /// `default`.
    fn from_env(default: Self) -> Self {
        let (plans, split_reads) = match std::env::var("CJ_MODEL_MODE").as_deref() {
            Err(_) => return default,
            Ok("split") => (true, true),
            Ok("planned") => (true, false),
            Ok("reads") => (false, true),
            Ok("atomic") => return Self::Atomic,
            Ok(other) => panic!("CJ_MODEL_MODE: atomic, planned, split or reads, not {other:?}"),
        };
        Self::Preconditions { plans, split_reads }
    }
}

/// The bounds of one check.
#[derive(Debug, Clone)]
pub(super) struct Bounds {
    /// Workers (the last may carry the other plan, see `misconfigured`).
    pub workers: usize,
    /// `execute` calls all workers start together.
    pub calls: u8,
    /// The clock's instants, seconds after `T0`, increasing.
    pub instants: Vec<i64>,
    /// Whether the last worker's calls may carry the other plan.
    pub misconfigured: bool,
    /// Each worker's clock, seconds ahead of the global instant (a worker not listed:
    /// none).
    pub skews: Vec<i64>,
    /// How journal operations run.
    pub mode: Mode,
    /// Whether the provider may store a 5xx for a new key (and replay it), as Stripe
    /// does (`provider`).
    pub stored_errors: bool,
    /// Whether a new key's request leaves an object that waits for the customer, who
    /// may pay it, fail it, or never act (`customer`).
    pub customer: bool,
    /// Whether the plans' lookup is `final_state` (Stripe's: no lookup proves an
    /// absence) rather than `key_store`.
    pub final_state: bool,
}

impl Bounds {
    /// The default check: two workers (the second sometimes misconfigured), three
    /// calls in all, the instants of `world::INSTANTS`, one clock, the production
    /// mode. `CJ_MODEL_WORKERS`, `CJ_MODEL_CALLS`, `CJ_MODEL_INSTANTS` (`wide`, or
    /// seconds after `T0` separated by commas), `CJ_MODEL_SKEW` (each worker's clock
    /// offset in seconds, separated by commas) and `CJ_MODEL_MODE` (`atomic`,
    /// `planned`, `split`, `reads`) change them (`emulator-tests/RELIABILITY.md`).
    pub(super) fn from_env() -> Self {
        Self::from_env_with(Mode::PRODUCTION, &[])
    }

    /// [`Bounds::from_env`] in `mode` and with the clocks skewed by `skews`, unless
    /// `CJ_MODEL_MODE` or `CJ_MODEL_SKEW` says otherwise.
    pub(super) fn from_env_with(mode: Mode, skews: &[i64]) -> Self {
        let read = |name: &str, default: usize| {
            std::env::var(name)
                .ok()
                .map(|text| text.parse().expect("a whole number"))
                .unwrap_or(default)
        };
        let instants = match std::env::var("CJ_MODEL_INSTANTS").as_deref() {
            Err(_) => INSTANTS.to_vec(),
            Ok("wide") => WIDE.to_vec(),
            Ok(list) => list
                .split(',')
                .map(|t| t.trim().parse().expect("seconds after T0"))
                .collect(),
        };
        assert!(
            instants.is_sorted() && instants.first() == Some(&0),
            "instants from 0"
        );
        let skews = match std::env::var("CJ_MODEL_SKEW") {
            Err(_) => skews.to_vec(),
            Ok(list) => list
                .split(',')
                .map(|s| s.trim().parse().expect("seconds of clock offset"))
                .collect(),
        };
        Self {
            workers: read("CJ_MODEL_WORKERS", 2),
            calls: u8::try_from(read("CJ_MODEL_CALLS", 3)).expect("a small number of calls"),
            instants,
            misconfigured: true,
            skews,
            mode: Mode::from_env(mode),
            stored_errors: std::env::var("CJ_MODEL_STORED_ERRORS").is_ok_and(|v| v == "1"),
            customer: false,
            final_state: false,
        }
    }

    /// Worker `w`'s clock offset (seconds).
    pub(super) fn skew(&self, w: usize) -> i64 {
        self.skews.get(w).copied().unwrap_or(0)
    }

    /// The latest clock's offset.
    pub(super) fn max_skew(&self) -> i64 {
        (0..self.workers).map(|w| self.skew(w)).max().unwrap_or(0)
    }

    /// Worker `w`'s time at the instant of index `clock` (seconds after `T0`).
    pub(super) fn now(&self, clock: usize, w: usize) -> i64 {
        self.instants[clock] + self.skew(w)
    }

    /// The plans worker `w`'s calls may carry.
    fn plans(&self, w: usize) -> &'static [PlanChoice] {
        if self.misconfigured && w + 1 == self.workers && self.workers > 1 {
            &[PlanChoice::Right, PlanChoice::Other]
        } else {
            &[PlanChoice::Right]
        }
    }
}

/// Facts a property needs that the documents and the ledger do not keep. Only the
/// facts an `always` property refutes tell states apart: a state reached both with
/// and without a fact a `sometimes` property looks for behaves the same from there,
/// and one path that saw the fact is the example.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Seen {
    /// The journal refused to record a provider's success or decline that its sender
    /// presented while the lease that permitted the send was active.
    pub refused_answer: bool,
    /// A permit for attempt 2 was issued (attempt 1 was recorded absent).
    pub second_attempt: bool,
    /// The command ended succeeded through a record or a reconciliation.
    pub succeeded: bool,
    /// An operation or the protocol failed closed (`journal_corrupt`), internally, or
    /// saw the clock go back: never in a run of the real protocol.
    pub broken: bool,
    /// A write of the send layer under fence f landed while the lifecycle was at
    /// another fence.
    pub stale_write: bool,
    /// A planned commit, or a read path's commit, landed where reading and deciding
    /// at that moment would have decided otherwise.
    pub unlike_read: bool,
    /// A planned commit landed.
    pub planned_landed: bool,
    /// A planned commit was refused (and the call read and decided instead).
    pub planned_refused: bool,
    /// A sender heard the provider replay a stored 5xx.
    pub replayed_unknown: bool,
    /// The provider rolled a stored 5xx that charged nothing forward.
    pub rolled_forward: bool,
    /// A late charge was recorded (a charge its command ended without).
    pub late_charge: bool,
    /// A request under a new key was sent while an object of another key could still
    /// be paid.
    pub new_key_beside_open: bool,
    /// The command ended a final failure on a `Closed` object (nothing charged).
    pub closed: bool,
    /// A call answered "the customer must act".
    pub handed: bool,
    /// A call answered "the customer must act" from a read by id (a return, a second
    /// tab).
    pub handed_again: bool,
    /// The command ended a final failure on a refusal.
    pub declined: bool,
}

impl Seen {
    /// What an `always` property refutes.
    fn refuted(&self) -> [bool; 7] {
        [
            self.refused_answer,
            self.broken,
            self.stale_write,
            self.unlike_read,
            self.late_charge,
            self.new_key_beside_open,
            self.closed,
        ]
    }
}

impl Hash for Seen {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.refuted().hash(state);
    }
}

impl PartialEq for Seen {
    fn eq(&self, other: &Self) -> bool {
        self.refuted() == other.refuted()
    }
}

impl Eq for Seen {}

/// The whole system at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct State {
    /// Index into the bounds' instants.
    pub clock: usize,
    pub journal: Journal,
    pub provider: Provider,
    pub workers: Vec<Worker>,
    pub seen: Seen,
}

/// One transition of the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Action {
    Call(usize, PlanChoice),
    Step(usize),
    Answer(usize),
    Timeout(usize),
    Crash(usize),
    Process(usize),
    /// The provider processes request `i` into a stored 5xx, charging first when
    /// `true`.
    StoreError(usize, bool),
    Drop(usize),
    /// The provider rolls a stored 5xx that charged nothing forward: the charge now.
    RollForward(KeyId),
    CatchUp(KeyId),
    /// The customer pays object `i` (`customer`).
    Pay(usize),
    /// The customer fails object `i`'s challenge.
    Fail(usize),
    /// Worker `w`'s read by id is made, and its answer lost.
    Lost(usize),
    Yield(usize),
    /// Worker `w`'s commit in flight lands, or is refused.
    Commit(usize),
    Tick,
}

impl Action {
    /// The worker acting, for a worker's action.
    pub(super) fn worker(&self) -> Option<usize> {
        match self {
            Self::Call(w, _)
            | Self::Step(w)
            | Self::Answer(w)
            | Self::Timeout(w)
            | Self::Crash(w)
            | Self::Yield(w)
            | Self::Lost(w)
            | Self::Commit(w) => Some(*w),
            Self::Pay(_)
            | Self::Fail(_)
            | Self::Process(_)
            | Self::StoreError(..)
            | Self::Drop(_)
            | Self::RollForward(_)
            | Self::CatchUp(_)
            | Self::Tick => None,
        }
    }
}

/// The model: its bounds and the rules reverted in every transition.
pub(super) struct SendModel {
    pub bounds: Bounds,
    pub reverted: Vec<Rule>,
}

impl Model for SendModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            clock: 0,
            journal: Journal::default(),
            provider: Provider::new(self.bounds.customer),
            workers: vec![Worker::default(); self.bounds.workers],
            seen: Seen::default(),
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        let running = state.running();
        for (w, worker) in state.workers.iter().enumerate() {
            if running.is_none_or(|r| r == w) {
                self.worker_actions(state, w, worker, actions);
            }
        }
        if running.is_some() {
            return;
        }
        let now = self.bounds.instants[state.clock];
        for (i, request) in state.provider.wire().iter().enumerate() {
            actions.push(Action::Process(i));
            if self.bounds.stored_errors && !state.provider.retains(request.key, now) {
                actions.push(Action::StoreError(i, true));
                actions.push(Action::StoreError(i, false));
            }
            actions.push(Action::Drop(i));
        }
        if self.bounds.stored_errors {
            actions.extend(state.provider.unrolled().map(Action::RollForward));
        }
        actions.extend(state.provider.lagging().map(Action::CatchUp));
        for i in state.provider.open() {
            actions.extend([Action::Pay(i), Action::Fail(i)]);
        }
        let next = self.bounds.instants.get(state.clock + 1);
        if next.is_some_and(|t| state.provider.settled_before(*t)) {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        with_final_state(self.bounds.final_state, || {
            with_reverted(&self.reverted, || state.apply(action, &self.bounds))
        });
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("at most one charge", |_, s: &State| {
                s.provider.charges() <= 1
            }),
            Property::always("an answer under its lease is recorded", |_, s: &State| {
                !s.seen.refused_answer
            }),
            Property::always("a refused answer is never charged twice", |_, s: &State| {
                !(s.seen.refused_answer && s.provider.charges() > 1)
            }),
            Property::always("nothing fails closed", |_, s: &State| !s.seen.broken),
            Property::always("no charge is recorded late", |_, s: &State| {
                !s.seen.late_charge
            }),
            Property::always("no write under a superseded fence", |_, s: &State| {
                !s.seen.stale_write
            }),
            Property::always(
                "every commit lands as a fresh read decides",
                |_, s: &State| !s.seen.unlike_read,
            ),
            Property::always(
                "never a new key while an earlier object could still be paid",
                |_, s: &State| !s.seen.new_key_beside_open,
            ),
            Property::always(
                "a closed object ends the command with nothing charged",
                |_, s: &State| !(s.seen.closed && s.provider.charges() > 0),
            ),
            Property::sometimes("the customer is handed the action", |_, s: &State| {
                s.seen.handed
            }),
            Property::sometimes("the customer is handed the action again", |_, s: &State| {
                s.seen.handed_again
            }),
            Property::sometimes("a paid object settles the command", |_, s: &State| {
                s.seen.succeeded && s.provider.customer
            }),
            Property::sometimes("a failed challenge ends declined", |_, s: &State| {
                s.seen.declined && s.provider.customer
            }),
            Property::sometimes("an abandoned object ends closed", |_, s: &State| {
                s.seen.closed
            }),
            Property::sometimes("a planned commit lands", |_, s: &State| {
                s.seen.planned_landed
            }),
            Property::sometimes("a planned commit is refused", |_, s: &State| {
                s.seen.planned_refused
            }),
            Property::sometimes("a charge", |_, s: &State| s.provider.charges() == 1),
            Property::sometimes("a second attempt", |_, s: &State| s.seen.second_attempt),
            Property::sometimes("a second attempt charged", |_, s: &State| {
                s.provider
                    .charges_of(KeyId::new(PlanChoice::Right, second()))
                    == 1
            }),
            Property::sometimes("the command succeeded", |_, s: &State| s.seen.succeeded),
            Property::sometimes("a replayed unknown recorded", |_, s: &State| {
                s.seen.replayed_unknown
            }),
            Property::sometimes("a charge behind a stored 5xx settles", |_, s: &State| {
                s.seen.succeeded
                    && s.provider
                        .stored_error(KeyId::new(PlanChoice::Right, AttemptNumber::FIRST))
                        == Some(true)
            }),
            Property::sometimes(
                "a charge rolled forward after a stored 5xx settles",
                |_, s: &State| s.seen.succeeded && s.seen.rolled_forward,
            ),
            Property::sometimes(
                "attempt 2 charged after a stored 5xx without a charge",
                |_, s: &State| {
                    s.provider
                        .stored_error(KeyId::new(PlanChoice::Right, AttemptNumber::FIRST))
                        == Some(false)
                        && s.provider
                            .charges_of(KeyId::new(PlanChoice::Right, second()))
                            == 1
                },
            ),
        ]
    }
}

impl SendModel {
    fn worker_actions(&self, state: &State, w: usize, worker: &Worker, out: &mut Vec<Action>) {
        if worker.turn == Turn::Yielded {
            return;
        }
        let Some(call) = &worker.call else {
            if state.calls() < self.bounds.calls {
                out.extend(self.bounds.plans(w).iter().map(|p| Action::Call(w, *p)));
            }
            return;
        };
        match call.phase {
            Phase::Ready => {
                out.push(Action::Step(w));
                if matches!(call.asked(), Asked::Retrieve { .. }) {
                    out.push(Action::Lost(w));
                }
                // A call pauses (time passes) or dies only holding an answer or a
                // lookup's evidence it has not had recorded: elsewhere a pause is a
                // later call, and a crash a call that ended (a crash mid-send is a
                // timeout, then a crash).
                if call.holds_evidence() {
                    out.push(Action::Crash(w));
                    if worker.turn == Turn::Running {
                        out.push(Action::Yield(w));
                    }
                }
            }
            Phase::Sending {
                deadline, heard, ..
            } => {
                if heard.is_some() && self.bounds.now(state.clock, w) < deadline {
                    out.push(Action::Answer(w));
                }
                out.push(Action::Timeout(w));
            }
            Phase::Committing => out.push(Action::Commit(w)),
        }
    }
}

/// Attempt 2, the first a proven absence opens.
fn second() -> AttemptNumber {
    AttemptNumber::new(2).expect("attempt 2")
}

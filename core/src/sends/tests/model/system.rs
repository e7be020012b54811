//! The model's state, actions and properties (the table in the module's doc), as a
//! `stateright` [`Model`].

use super::super::identity;
use super::journal::{Caller, Carried, Journal, Op};
use super::provider::Provider;
use super::worker::{Answer, Call, Phase, Turn, Worker, deadlines};
use super::world::{INSTANTS, KeyId, PlanChoice, SEND_MARGIN, SETTLE, WIDE, plan};
use crate::answer::ProviderAnswer;
use crate::error::JournalError;
use crate::execute::protocol::Step;
use crate::lease::TerminalOutput;
use crate::sends::plan::attempt_key;
use crate::sends::reverted::{Rule, reverted, with_reverted};
use crate::sends::{BeginSendOutput, SendOutcomeOutput};
use stateright::{Model, Property};

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
}

impl Bounds {
    /// The default check: two workers (the second sometimes misconfigured), three
    /// calls in all, the instants of `world::INSTANTS`. `CJ_MODEL_WORKERS`, `CJ_MODEL_CALLS` and
    /// `CJ_MODEL_INSTANTS` (`wide`, or seconds after `T0` separated by commas) change
    /// them (`emulator-tests/RELIABILITY.md`).
    pub(super) fn from_env() -> Self {
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
        Self {
            workers: read("CJ_MODEL_WORKERS", 2),
            calls: u8::try_from(read("CJ_MODEL_CALLS", 3)).expect("a small number of calls"),
            instants,
            misconfigured: true,
        }
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

/// Facts a property needs that the documents and the ledger do not keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
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
}

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
    Drop(usize),
    CatchUp(KeyId),
    Yield(usize),
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
            | Self::Yield(w) => Some(*w),
            Self::Process(_) | Self::Drop(_) | Self::CatchUp(_) | Self::Tick => None,
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
            provider: Provider::default(),
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
        for (i, _) in state.provider.wire().iter().enumerate() {
            actions.push(Action::Process(i));
            actions.push(Action::Drop(i));
        }
        actions.extend(state.provider.lagging().map(Action::CatchUp));
        let next = self.bounds.instants.get(state.clock + 1);
        if next.is_some_and(|t| state.provider.settled_before(*t)) {
            actions.push(Action::Tick);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        let now = self.bounds.instants[state.clock];
        with_reverted(&self.reverted, || state.apply(action, now));
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
            Property::sometimes("a charge", |_, s: &State| s.provider.charges() == 1),
            Property::sometimes("a second attempt", |_, s: &State| s.seen.second_attempt),
            Property::sometimes("a second attempt charged", |_, s: &State| {
                s.provider.charges_of(KeyId::new(PlanChoice::Right, 2)) == 1
            }),
            Property::sometimes("the command succeeded", |_, s: &State| s.seen.succeeded),
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
                deadline, answered, ..
            } => {
                if answered && self.bounds.instants[state.clock] < deadline {
                    out.push(Action::Answer(w));
                }
                out.push(Action::Timeout(w));
            }
        }
    }
}

impl State {
    fn call(&self, w: usize) -> &Call {
        self.workers[w].call.as_ref().expect("a running call")
    }

    fn call_mut(&mut self, w: usize) -> &mut Call {
        self.workers[w].call.as_mut().expect("a running call")
    }

    /// Applies `action` at `now` (seconds), under the rules reverted by the caller.
    fn apply(&mut self, action: Action, now: i64) {
        match action {
            Action::Call(w, choice) => self.start_call(w, choice, now),
            Action::Step(w) => self.step(w, now),
            Action::Answer(w) => {
                let Phase::Sending { key, .. } = self.call(w).phase else {
                    panic!("an answer to a worker that is not sending");
                };
                self.feed(w, Answer::Sent(Some(key)), now);
            }
            Action::Timeout(w) => {
                self.provider.orphan(w);
                self.feed(w, Answer::Sent(None), now);
            }
            Action::Crash(w) => self.end(w, "crashed"),
            Action::Process(i) => {
                if let Some(w) = self.provider.process(i, now)
                    && let Phase::Sending { answered, .. } = &mut self.call_mut(w).phase
                {
                    *answered = true;
                }
            }
            Action::Drop(i) => self.provider.lose(i),
            Action::CatchUp(key) => self.provider.catch_up(key),
            Action::Yield(w) => {
                self.workers[w].turn = Turn::Yielded;
                self.workers[w].did = "pauses until the clock moves".into();
            }
            Action::Tick => {
                self.clock += 1;
                for worker in &mut self.workers {
                    worker.turn = Turn::Idle;
                }
            }
        }
        if let Some(w) = action.worker()
            && self.workers[w].turn != Turn::Yielded
        {
            let ready = self.workers[w]
                .call
                .as_ref()
                .is_some_and(|call| call.phase == Phase::Ready);
            self.workers[w].turn = if ready { Turn::Running } else { Turn::Idle };
        }
    }

    /// What `action` did, read from the state it led to (this one): for a
    /// counterexample's trace.
    pub(super) fn note(&self, action: &Action) -> String {
        match action {
            Action::Process(_) | Action::Drop(_) => {
                format!("charges {}", self.provider.charges())
            }
            _ => action
                .worker()
                .map(|w| self.workers[w].did.clone())
                .unwrap_or_default(),
        }
    }

    /// Calls started by all workers.
    fn calls(&self) -> u8 {
        self.workers.iter().map(|w| w.calls).sum()
    }

    /// The worker running at this instant, if any.
    fn running(&self) -> Option<usize> {
        self.workers.iter().position(|w| w.turn == Turn::Running)
    }

    /// Worker `w` starts an `execute` call with a fresh lease id (two per worker,
    /// alternating) and performs its `start`. A call that finds the lease busy changes
    /// nothing and is not counted.
    fn start_call(&mut self, w: usize, choice: PlanChoice, now: i64) {
        let before = self.journal.clone();
        let worker = &mut self.workers[w];
        worker.calls += 1;
        let owner = 2 * w + usize::from(worker.calls % 2);
        worker.call = Some(Call::new(choice, owner));
        self.step(w, now);
        if self.workers[w].call.is_none() && self.journal == before {
            self.workers[w].calls -= 1;
        }
    }

    /// The call of worker `w` ends (done, an error, or a crash).
    fn end(&mut self, w: usize, why: &str) {
        self.provider.orphan(w);
        self.workers[w].call = None;
        self.workers[w].did = format!("{why}: the call ends");
    }

    /// Performs worker `w`'s next step, as `Journal::execute`'s driver does.
    fn step(&mut self, w: usize, now: i64) {
        let call = self.call(w);
        let choice = call.plan;
        let caller = Caller {
            owner: call.owner,
            plan: choice,
            now,
        };
        let answer = match call.step().clone() {
            Step::Start => self.journal.start(caller).map(Answer::Started),
            Step::BeginSend { fence } => Ok(Answer::BeganSend(
                self.journal.begin_send(caller, fence.get()),
            )),
            Step::Record {
                fence,
                attempt,
                outcome,
            } => Ok(Answer::Recorded(self.record(
                w,
                caller,
                fence.get(),
                attempt,
                outcome,
            ))),
            Step::Status => self.journal.status(caller).map(Answer::Status),
            Step::Lookup { attempt, key, .. } => Ok(self.lookup(choice, attempt, &key, now)),
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => Ok(Answer::Reconciled(self.reconcile(
                caller,
                fence.get(),
                attempt,
                evidence,
            ))),
            Step::FetchResult => {
                // The call ends with the stored result: nothing after it to model.
                let read = self.journal.result(caller);
                self.note_error(read.as_ref().err());
                return self.end(w, "result read");
            }
            step @ (Step::Send { .. } | Step::Done(_)) => {
                panic!("the driver sends at once and ends a done call: {step:?}")
            }
        };
        match answer {
            Ok(answer) => self.feed(w, answer, now),
            // The driver's `?`: the call ends with the error.
            Err(error) => {
                self.note_error(Some(&error));
                self.end(w, error.code());
            }
        }
    }

    /// `record_send_outcome` of the provider's answer, noting a success or decline
    /// refused while the sender's lease is active.
    fn record(
        &mut self,
        w: usize,
        caller: Caller,
        fence: i64,
        attempt: i64,
        outcome: ProviderAnswer,
    ) -> Result<SendOutcomeOutput, JournalError> {
        let carried = match outcome {
            ProviderAnswer::Succeeded(envelope) => {
                Carried::Succeeded(KeyId::of_envelope(&envelope))
            }
            ProviderAnswer::Declined => Carried::Declined,
            ProviderAnswer::Unknown => Carried::Ambiguous,
            ProviderAnswer::SucceededWithReference(_) | ProviderAnswer::NotFound => {
                panic!("the protocol records a success's envelope, a decline or an unknown")
            }
        };
        let op = Op::Record {
            fence,
            attempt,
            carried,
        };
        let active = self.call(w).lease_end().is_some_and(|end| caller.now < end);
        let recorded = self.journal.outcome(caller, op);
        let evidence = carried != Carried::Ambiguous;
        if evidence && active && recorded.is_err() {
            self.seen.refused_answer = true;
        }
        self.note_success(&recorded);
        recorded
    }

    /// `reconcile_send` of the evidence the protocol holds.
    fn reconcile(
        &mut self,
        caller: Caller,
        fence: i64,
        attempt: i64,
        evidence: ProviderAnswer,
    ) -> Result<SendOutcomeOutput, JournalError> {
        let carried = match evidence {
            ProviderAnswer::Succeeded(envelope) => {
                Carried::Succeeded(KeyId::of_envelope(&envelope))
            }
            ProviderAnswer::Declined => Carried::Declined,
            ProviderAnswer::NotFound => Carried::Absent,
            ProviderAnswer::SucceededWithReference(_) | ProviderAnswer::Unknown => {
                panic!("the protocol reconciles a success's envelope, a decline or an absence")
            }
        };
        let op = Op::Reconcile {
            fence,
            attempt,
            carried,
        };
        let reconciled = self.journal.outcome(caller, op);
        self.note_success(&reconciled);
        reconciled
    }

    /// Notes an error that no run of the real protocol answers.
    fn note_error(&mut self, error: Option<&JournalError>) {
        let broken = |e: &JournalError| {
            matches!(
                e.code(),
                "journal_corrupt" | "internal" | "clock_regression"
            )
        };
        if error.is_some_and(broken) {
            self.seen.broken = true;
        }
    }

    /// Notes a command that ended succeeded.
    fn note_success(&mut self, answer: &Result<SendOutcomeOutput, JournalError>) {
        if let Ok(SendOutcomeOutput::Terminal(TerminalOutput::Succeeded)) = answer {
            self.seen.succeeded = true;
        }
    }

    /// The provider's lookup. The key is the one the status derived from the stored
    /// plan; with `PlanFirst` reverted, the old driver's: derived from the call's own
    /// plan, whichever plan is stored.
    fn lookup(&self, choice: PlanChoice, attempt: i64, key: &str, now: i64) -> Answer {
        let key = if reverted(Rule::PlanFirst) {
            KeyId::of(&attempt_key(&identity(), plan(choice).operation(), attempt))
        } else {
            KeyId::of(key)
        };
        Answer::LookedUp(self.provider.lookup(key, now).then_some(key))
    }

    /// Gives worker `w`'s protocol `answer`, and performs a permitted send at once.
    fn feed(&mut self, w: usize, answer: Answer, now: i64) {
        let old_driver = reverted(Rule::EvidenceAfterCutoff)
            && self.call(w).holds_success()
            && answer == Answer::Recorded(Err(JournalError::SendCutoffPassed));
        if old_driver {
            self.call_mut(w).drop_answer(now);
            self.workers[w].did =
                "record: send_cutoff_passed; the old driver drops the answer".into();
            return;
        }
        let did = answer.summary();
        self.note_error(answer.error());
        if let Answer::BeganSend(Ok(BeginSendOutput::Permitted(permit))) = &answer
            && permit.attempt == 2
        {
            self.seen.second_attempt = true;
        }
        self.workers[w].did = did.clone();
        match self.call_mut(w).feed(answer, now) {
            Ok(None) => self.end(w, &did),
            Ok(Some(Step::Send { key, .. })) => self.put_on_wire(w, &key),
            Ok(Some(_)) => {}
            Err(error) => {
                self.note_error(Some(&error));
                self.end(w, &format!("{did}; {}", error.code()));
            }
        }
    }

    /// Worker `w` sends `key` under the permit it was just given.
    fn put_on_wire(&mut self, w: usize, key: &str) {
        let call = self.call(w);
        let permit = call.permit().expect("a send follows a permit");
        let (deadline, settle_by) = deadlines(permit, SEND_MARGIN, SETTLE);
        let key = KeyId::of(key);
        self.provider.send(key, settle_by, w);
        self.workers[w].did = format!("{}; sends {key:?}", self.workers[w].did);
        self.call_mut(w).phase = Phase::Sending {
            key,
            deadline,
            answered: false,
        };
    }
}

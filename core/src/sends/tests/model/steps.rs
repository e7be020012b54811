//! The transitions of the model's state: each action of the table in the module's
//! doc, and the driver's steps that are no journal operation (lookups, sends, the
//! protocol's answers); the journal operations themselves are in `driver`.

use super::super::identity;
use super::canon::Ranks;
use super::ops::{Caller, Carried, Op, Output};
use super::provider::Heard;
use super::system::{Action, Bounds, Mode, State};
use super::worker::{Answer, Call, Phase, Turn, deadlines};
use super::world::{KeyId, PlanChoice, SEND_MARGIN, SETTLE, plan};
use crate::answer::ProviderAnswer;
use crate::error::JournalError;
use crate::execute::protocol::Step;
use crate::lease::TerminalOutput;
use crate::sends::AttemptNumber;
use crate::sends::plan::attempt_key;
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{BeginSendOutput, LateChargeOutput, SendOutcomeOutput};

impl State {
    pub(super) fn call(&self, w: usize) -> &Call {
        self.workers[w].call.as_ref().expect("a running call")
    }

    pub(super) fn call_mut(&mut self, w: usize) -> &mut Call {
        self.workers[w].call.as_mut().expect("a running call")
    }

    /// Applies `action`, under the rules reverted by the caller.
    pub(super) fn apply(&mut self, action: Action, bounds: &Bounds) {
        let global = bounds.instants[self.clock];
        match action {
            Action::Call(w, choice) => self.start_call(w, choice, bounds),
            Action::Step(w) => self.step(w, bounds),
            Action::Answer(w) => {
                let Phase::Sending { key, replayed, .. } = self.call(w).phase else {
                    panic!("an answer to a worker that is not sending");
                };
                if replayed {
                    self.seen.replayed_unknown = true;
                    self.feed(w, Answer::SentReplayed, bounds);
                } else {
                    self.feed(w, Answer::Sent(Some(key)), bounds);
                }
            }
            Action::Timeout(w) => {
                self.provider.orphan(w);
                self.feed(w, Answer::Sent(None), bounds);
            }
            Action::Crash(w) => self.end(w, "crashed"),
            Action::Commit(w) => self.land(w, bounds),
            Action::Process(i) => {
                if let Some((w, heard)) = self.provider.process(i, global)
                    && let Phase::Sending {
                        answered, replayed, ..
                    } = &mut self.call_mut(w).phase
                {
                    match heard {
                        Heard::Success => *answered = true,
                        Heard::ReplayedUnknown => *replayed = true,
                    }
                }
            }
            Action::StoreError(i, charged) => self.provider.store_error(i, global, charged),
            Action::Drop(i) => self.provider.lose(i),
            Action::RollForward(key) => {
                self.seen.rolled_forward = true;
                self.provider.roll_forward(key, global, SETTLE);
            }
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
        self.canonicalize();
    }

    /// Renumbers every write time (the journal's, and those the calls know) to its
    /// rank (`canon`).
    fn canonicalize(&mut self) {
        let mut times = Vec::new();
        self.journal.times(&mut times);
        for call in self.workers.iter().filter_map(|w| w.call.as_ref()) {
            if let Some(memory) = &call.memory {
                memory.times(&mut times);
            }
            if let Some(flight) = &call.flight {
                flight.times(&mut times);
            }
        }
        let Some(ranks) = Ranks::of(times) else {
            return;
        };
        self.journal = self.journal.renumbered(&ranks);
        for call in self.workers.iter_mut().filter_map(|w| w.call.as_mut()) {
            call.memory = call.memory.as_ref().map(|m| m.renumbered(&ranks));
            call.flight = call.flight.as_ref().map(|f| f.renumbered(&ranks));
        }
    }

    /// What `action` did, read from the state it led to (this one): for a
    /// counterexample's trace.
    pub(super) fn note(&self, action: &Action) -> String {
        match action {
            Action::Process(_)
            | Action::StoreError(..)
            | Action::Drop(_)
            | Action::RollForward(_) => {
                format!("charges {}", self.provider.charges())
            }
            _ => action
                .worker()
                .map(|w| self.workers[w].did.clone())
                .unwrap_or_default(),
        }
    }

    /// Calls started by all workers.
    pub(super) fn calls(&self) -> u8 {
        self.workers.iter().map(|w| w.calls).sum()
    }

    /// The worker running at this instant, if any.
    pub(super) fn running(&self) -> Option<usize> {
        self.workers.iter().position(|w| w.turn == Turn::Running)
    }

    /// Worker `w` starts an `execute` call with a fresh lease id (two per worker,
    /// alternating) and performs its `start`.
    fn start_call(&mut self, w: usize, choice: PlanChoice, bounds: &Bounds) {
        let worker = &mut self.workers[w];
        worker.calls += 1;
        let owner = 2 * w + usize::from(worker.calls % 2);
        worker.call = Some(Call::new(choice, owner));
        self.step(w, bounds);
    }

    /// The call of worker `w` ends (done, an error, or a crash). A call that ends at
    /// its first start having written nothing (the lease was busy) is not counted.
    pub(super) fn end(&mut self, w: usize, why: &str) {
        self.provider.orphan(w);
        let call = self.workers[w].call.take().expect("a running call");
        if call.is_new() && !call.wrote {
            self.workers[w].calls -= 1;
        }
        self.workers[w].did = format!("{why}: the call ends");
    }

    /// The caller of worker `w`'s next journal operation: its time now.
    pub(super) fn caller(&self, w: usize, bounds: &Bounds) -> Caller {
        let call = self.call(w);
        Caller {
            owner: call.owner,
            plan: call.plan,
            now: bounds.now(self.clock, w),
        }
    }

    /// Performs worker `w`'s next step, as `Journal::execute`'s driver does.
    fn step(&mut self, w: usize, bounds: &Bounds) {
        let call = self.call(w);
        let choice = call.plan;
        match call.step().clone() {
            Step::Start => {
                // The first start opens the call (its read is kept known); a second
                // lease is taken by a plain start, which keeps nothing.
                let first = call.is_new();
                let open = first && matches!(bounds.mode, Mode::Preconditions { plans: true, .. });
                let op = if open { Op::Open } else { Op::Start };
                self.operate(w, bounds, op, first);
            }
            Step::BeginSend { fence } => {
                let op = Op::BeginSend { fence };
                self.operate(w, bounds, op, true);
            }
            Step::Record {
                fence,
                attempt,
                outcome,
            } => {
                let carried = match outcome {
                    ProviderAnswer::Succeeded(envelope) => {
                        Carried::Succeeded(KeyId::of_envelope(&envelope))
                    }
                    ProviderAnswer::Declined => Carried::Declined,
                    ProviderAnswer::Unknown => Carried::Ambiguous,
                    ProviderAnswer::ReplayedUnknown => Carried::ReplayedUnknown,
                    // The model's provider answers a stored 5xx's sender with a timeout.
                    ProviderAnswer::SucceededWithReference(_)
                    | ProviderAnswer::NotFound
                    | ProviderAnswer::Indeterminate => {
                        panic!("the protocol records a success's envelope, a decline or an unknown")
                    }
                };
                let op = Op::Record {
                    fence,
                    attempt,
                    carried,
                };
                self.operate(w, bounds, op, true);
            }
            Step::Reconcile {
                fence,
                attempt,
                evidence,
            } => {
                let carried = match evidence {
                    ProviderAnswer::Succeeded(envelope) => {
                        Carried::Succeeded(KeyId::of_envelope(&envelope))
                    }
                    ProviderAnswer::Declined => Carried::Declined,
                    ProviderAnswer::NotFound => Carried::Absent,
                    ProviderAnswer::SucceededWithReference(_)
                    | ProviderAnswer::Unknown
                    | ProviderAnswer::ReplayedUnknown
                    | ProviderAnswer::Indeterminate => {
                        panic!(
                            "the protocol reconciles a success's envelope, a decline or an absence"
                        )
                    }
                };
                let op = Op::Reconcile {
                    fence,
                    attempt,
                    carried,
                };
                self.operate(w, bounds, op, true);
            }
            // Reads of their own: nothing to plan, and nothing kept known.
            Step::Status => {
                let caller = self.caller(w, bounds);
                let (output, _) = self.journal.run(caller, Op::Status);
                self.answered(w, caller, Op::Status, output, bounds);
            }
            Step::FetchResult => {
                let caller = self.caller(w, bounds);
                let (output, _) = self.journal.run(caller, Op::Result);
                self.answered(w, caller, Op::Result, output, bounds);
            }
            Step::RecordLateCharge { attempt, evidence } => {
                let ProviderAnswer::Succeeded(envelope) = evidence else {
                    panic!("the protocol records a late charge of a success's envelope")
                };
                let op = Op::LateCharge {
                    attempt,
                    key: KeyId::of_envelope(&envelope),
                };
                let caller = self.caller(w, bounds);
                let (output, _) = self.journal.run(caller, op);
                self.answered(w, caller, op, output, bounds);
            }
            Step::Lookup { attempt, key, .. } => {
                let global = bounds.instants[self.clock];
                let answer = self.lookup(choice, attempt, &key, global);
                self.feed(w, answer, bounds);
            }
            step @ (Step::Send { .. } | Step::Done(_)) => {
                panic!("the driver sends at once and ends a done call: {step:?}")
            }
        }
    }

    /// Gives worker `w`'s protocol `output`, the answer of `op` for `caller`, as the
    /// driver does; a record's answer is checked first (a success or decline refused
    /// while its sender's lease runs on every clock).
    pub(super) fn answered(
        &mut self,
        w: usize,
        caller: Caller,
        op: Op,
        output: Output,
        bounds: &Bounds,
    ) {
        let answer = match output {
            Output::Opened(lease, began) => {
                // The permit was committed with the lease: the protocol asks for it
                // after that lease, at the opening's captured time.
                self.feed_at(w, Answer::Started(lease), caller.now, bounds);
                let asks = self.workers[w]
                    .call
                    .as_ref()
                    .is_some_and(|call| matches!(call.step(), Step::BeginSend { .. }));
                assert!(asks, "a permit the protocol did not ask for");
                Answer::BeganSend(Ok(began))
            }
            Output::Started(Ok(lease)) => Answer::Started(lease),
            Output::BeganSend(answer) => Answer::BeganSend(answer),
            Output::Outcome(answer) => {
                self.note_success(&answer);
                match op {
                    Op::Record { carried, .. } => {
                        // Presented now: the answer comes as the commit reaches the
                        // journal.
                        let latest = bounds.instants[self.clock] + bounds.max_skew();
                        let active = self.call(w).lease_end().is_some_and(|end| latest < end);
                        let evidence =
                            !matches!(carried, Carried::Ambiguous | Carried::ReplayedUnknown);
                        if evidence && active && answer.is_err() {
                            self.seen.refused_answer = true;
                        }
                        Answer::Recorded(answer)
                    }
                    _ => Answer::Reconciled(answer),
                }
            }
            Output::Status(Ok(send)) => Answer::Status(send),
            Output::LateCharge(answer) => {
                if matches!(answer, Ok(LateChargeOutput::Recorded { .. })) {
                    self.seen.late_charge = true;
                }
                Answer::LateCharge(answer)
            }
            Output::Result(read) => {
                // The call ends with the stored result: nothing after it to model.
                self.note_error(read.as_ref().err());
                return self.end(w, "result read");
            }
            // The driver's `?`: the call ends with the error.
            Output::Started(Err(error)) | Output::Status(Err(error)) => {
                self.note_error(Some(&error));
                return self.end(w, error.code());
            }
        };
        self.feed(w, answer, bounds);
    }

    /// Notes an error that no run of the real protocol answers.
    pub(super) fn note_error(&mut self, error: Option<&JournalError>) {
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
    fn lookup(&self, choice: PlanChoice, attempt: AttemptNumber, key: &str, now: i64) -> Answer {
        let key = if reverted(Rule::PlanFirst) {
            KeyId::of(&attempt_key(&identity(), plan(choice).operation(), attempt))
        } else {
            KeyId::of(key)
        };
        Answer::LookedUp(self.provider.lookup(key, now).then_some(key))
    }

    /// Gives worker `w`'s protocol `answer` at its time now.
    fn feed(&mut self, w: usize, answer: Answer, bounds: &Bounds) {
        let now = bounds.now(self.clock, w);
        self.feed_at(w, answer, now, bounds);
    }

    /// Gives worker `w`'s protocol `answer` at `now` (its clock), and performs a
    /// permitted send at once.
    fn feed_at(&mut self, w: usize, answer: Answer, now: i64, bounds: &Bounds) {
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
            Ok(Some(Step::Send { key, .. })) => self.put_on_wire(w, &key, bounds),
            Ok(Some(_)) => {}
            Err(error) => {
                self.note_error(Some(&error));
                self.end(w, &format!("{did}; {}", error.code()));
            }
        }
    }

    /// Worker `w` sends `key` under the permit it was just given.
    fn put_on_wire(&mut self, w: usize, key: &str, bounds: &Bounds) {
        let call = self.call(w);
        let permit = call.permit().expect("a send follows a permit");
        let (deadline, settle_by) = deadlines(permit, SEND_MARGIN, SETTLE, bounds.skew(w));
        let key = KeyId::of(key);
        self.provider.send(key, settle_by, w);
        self.workers[w].did = format!("{}; sends {key:?}", self.workers[w].did);
        self.call_mut(w).phase = Phase::Sending {
            key,
            deadline,
            answered: false,
            replayed: false,
        };
    }
}

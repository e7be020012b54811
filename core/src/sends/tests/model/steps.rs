//! The transitions of the model's state: each action of the table in the module's
//! doc, and the driver's steps that are no journal operation (lookups, sends, the
//! program's answers); the journal operations themselves are in `driver`.

use super::super::identity;
use super::canon::Ranks;
use super::objects::{self, Found};
use super::ops::{Caller, Carried, Op, Output};
use super::provider::Heard;
use super::system::{Action, Bounds, Mode, State};
use super::worker::{Asked, Call, Fed, Phase, Turn, deadlines};
use super::world::{KeyId, PlanChoice, SEND_MARGIN, SETTLE, plan};
use crate::call::Answered;
use crate::error::JournalError;
use crate::execute::program::{ExecuteOp, ExecuteOutput};
use crate::lease::{LeaseOutput, TerminalOutput};
use crate::sends::plan::attempt_key;
use crate::sends::provider::ProviderAnswer;
use crate::sends::reverted::{Rule, reverted};
use crate::sends::{BeginSendOutput, LateChargeOutput, SendOutcomeOutput};
use crate::settle::SettleOutput;

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
                let Phase::Sending {
                    key,
                    heard: Some(heard),
                    ..
                } = self.call(w).phase
                else {
                    panic!("an answer to a worker that is not sending");
                };
                let (answer, did) = match heard {
                    Heard::ReplayedUnknown => {
                        self.seen.replayed_unknown = true;
                        let did = "the provider's answer: a stored 5xx, replayed".to_owned();
                        (ProviderAnswer::ReplayedUnknown, did)
                    }
                    Heard::Success => {
                        let did = format!("the provider's answer: success ({key:?})");
                        (ProviderAnswer::Succeeded(key.envelope()), did)
                    }
                    Heard::CustomerMustAct => {
                        let did = format!("the provider's answer: the customer must act ({key:?})");
                        (ProviderAnswer::CustomerMustAct(objects::action()), did)
                    }
                };
                self.feed(w, Answered::Sent(answer), did, bounds);
            }
            Action::Timeout(w) => {
                self.provider.orphan(w);
                let unknown = Answered::Sent(ProviderAnswer::Unknown);
                self.feed(w, unknown, "no answer (timeout)".into(), bounds);
            }
            Action::Crash(w) => self.end(w, "crashed"),
            Action::Commit(w) => self.land(w, bounds),
            Action::Process(i) => {
                let open = self.provider.open().next().is_some();
                let made = self.provider.objects.len();
                if let Some((w, heard)) = self.provider.process(i, global)
                    && let Phase::Sending { heard: slot, .. } = &mut self.call_mut(w).phase
                {
                    *slot = Some(heard);
                }
                self.seen.new_key_beside_open |= open && self.provider.objects.len() > made;
            }
            Action::Pay(i) => self.provider.pay(i),
            Action::Fail(i) => self.provider.fail(i),
            Action::Lost(w) => self.retrieve(w, true, bounds),
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
            | Action::Pay(_)
            | Action::Fail(_)
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
        let now = bounds.now(self.clock, w);
        let open = matches!(bounds.mode, Mode::Preconditions { plans: true, .. });
        worker.call = Some(Call::new(choice, owner, now, open));
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

    /// Performs worker `w`'s next step, the one its program asked for, as
    /// `Journal::execute`'s driver does.
    fn step(&mut self, w: usize, bounds: &Bounds) {
        let call = self.call(w);
        let choice = call.plan;
        match call.asked().clone() {
            // Reads (and a late charge) of their own: nothing to plan, and nothing kept
            // known.
            Asked::Op(
                op @ (Op::Status | Op::Result | Op::LateCharge { .. } | Op::Release { .. }),
                _,
            ) => {
                let caller = self.caller(w, bounds);
                let (output, _) = self.journal.run(caller, op);
                self.answered(w, op, output, bounds);
            }
            Asked::Op(op, remember) => self.operate(w, bounds, op, remember),
            Asked::Lookup(key) => {
                let global = bounds.instants[self.clock];
                let (answer, did) = self.lookup(choice, &key, global);
                self.feed(w, Answered::LookedUp(answer), did, bounds);
            }
            Asked::Retrieve { .. } => self.retrieve(w, false, bounds),
        }
    }

    /// Worker `w`'s read by id of the object its program asked for, at the global
    /// instant; `lost`: made, but its answer lost on the way back.
    fn retrieve(&mut self, w: usize, lost: bool, bounds: &Bounds) {
        let Asked::Retrieve {
            key,
            replayable,
            cancel,
        } = self.call(w).asked().clone()
        else {
            panic!("a read by id the program did not ask for");
        };
        let global = bounds.instants[self.clock];
        let key = KeyId::of(&key);
        let (open, made) = (
            self.provider.open().next().is_some(),
            self.provider.objects.len(),
        );
        // A re-send of a forgotten key is a new request, processed now.
        let answer = self
            .provider
            .retrieve(key, replayable, cancel, global, global + SETTLE);
        self.seen.new_key_beside_open |= open && self.provider.objects.len() > made;
        let how = match (replayable, cancel) {
            (true, true) => " (replayable, cancel)",
            (true, false) => " (replayable)",
            (false, true) => " (cancel)",
            (false, false) => "",
        };
        let heard = match &answer {
            ProviderAnswer::CustomerMustAct(_) => "the customer must act".to_owned(),
            other => format!("{other:?}").to_lowercase(),
        };
        let (answer, did) = match lost {
            true => (
                ProviderAnswer::Unknown,
                format!("retrieve{how}: {heard}, lost"),
            ),
            false => (answer, format!("retrieve{how}: {heard}")),
        };
        self.feed(w, Answered::Retrieved(answer), did, bounds);
    }

    /// Gives worker `w`'s program `output`, the answer of `op`, as the
    /// call machine does; a record's answer is checked first (a success or decline
    /// refused while its sender's lease runs on every clock).
    pub(super) fn answered(&mut self, w: usize, op: Op, output: Output, bounds: &Bounds) {
        let first = self.call(w).is_new();
        let (answer, did) = match output {
            // The permit was committed with the lease: the program goes on from it.
            Output::Opened(started, began) => {
                let did = format!(
                    "{}; {}",
                    lease_summary(&started.lease),
                    begin_summary(&Ok(began.clone()))
                );
                let answer = Answered::Chained(
                    ExecuteOutput::Started(started),
                    ExecuteOutput::BeganSend(began),
                );
                (answer, did)
            }
            Output::Started(Ok(started)) => {
                let did = lease_summary(&started.lease);
                let answer = match first {
                    true => ExecuteOutput::Started(started),
                    // A second lease, taken by the settle program.
                    false => ExecuteOutput::Settle(SettleOutput::Leased(started.lease)),
                };
                (Answered::Ran(Ok(answer)), did)
            }
            Output::BeganSend(began) => {
                if let Ok(BeginSendOutput::Permitted(permit)) = &began
                    && permit.attempt == 2
                {
                    self.seen.second_attempt = true;
                }
                let did = begin_summary(&began);
                (Answered::Ran(began.map(ExecuteOutput::BeganSend)), did)
            }
            Output::Outcome(answer) => {
                self.note_success(&answer);
                self.note_failure(op, &answer);
                let did = match op {
                    Op::Record { carried, .. } => {
                        // Presented now: the answer comes as the commit reaches the
                        // journal.
                        let latest = bounds.instants[self.clock] + bounds.max_skew();
                        let active = self.call(w).lease_end().is_some_and(|end| latest < end);
                        let evidence = !matches!(
                            carried,
                            Carried::Ambiguous
                                | Carried::ReplayedUnknown
                                | Carried::AwaitingCustomer
                        );
                        if evidence && active && answer.is_err() {
                            self.seen.refused_answer = true;
                        }
                        format!("record: {}", outcome_summary(&answer))
                    }
                    _ => format!("reconcile: {}", outcome_summary(&answer)),
                };
                let recorded =
                    answer.map(|output| ExecuteOutput::Settle(SettleOutput::Recorded(output)));
                (Answered::Ran(recorded), did)
            }
            Output::Status(Ok(status)) => {
                let did = match &status.send {
                    Some(send) => format!(
                        "status: attempt {} {} needsReconciliation {}",
                        send.attempt,
                        send.state.as_str(),
                        send.needs_reconciliation
                    ),
                    None => "status: no send".to_owned(),
                };
                let answer = ExecuteOutput::Settle(SettleOutput::Status(status));
                (Answered::Ran(Ok(answer)), did)
            }
            Output::LateCharge(answer) => {
                if matches!(answer, Ok(LateChargeOutput::Recorded { .. })) {
                    self.seen.late_charge = true;
                }
                let did = match &answer {
                    Ok(output) => format!("late charge: {}", output.label()),
                    Err(error) => format!("late charge: {}", error.code()),
                };
                let charged =
                    answer.map(|output| ExecuteOutput::Settle(SettleOutput::LateCharge(output)));
                (Answered::Ran(charged), did)
            }
            Output::Released(answer) => {
                let did = match &answer {
                    Ok(output) => format!("release: {}", output.label()),
                    Err(error) => format!("release: {}", error.code()),
                };
                (Answered::Ran(answer.map(ExecuteOutput::Released)), did)
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
        let refused = matches!(
            (op, &answer),
            (
                Op::Record { .. },
                Answered::Ran(Err(JournalError::SendCutoffPassed))
            )
        );
        self.feed_refusable(w, answer, did, refused, bounds);
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

    /// Notes a command that ended a final failure on a refusal or a closed object.
    fn note_failure(&mut self, op: Op, answer: &Result<SendOutcomeOutput, JournalError>) {
        let Ok(SendOutcomeOutput::Terminal(TerminalOutput::FailedFinal)) = answer else {
            return;
        };
        match op {
            Op::Reconcile {
                carried: Carried::Closed,
                ..
            } => self.seen.closed = true,
            Op::Record {
                carried: Carried::Declined,
                ..
            }
            | Op::Reconcile {
                carried: Carried::Declined,
                ..
            } => self.seen.declined = true,
            _ => {}
        }
    }

    /// The provider's lookup, and what it did. The key is the one the status derived
    /// from the stored plan; with `PlanFirst` reverted, the old driver's: derived from
    /// the call's own plan, whichever plan is stored.
    fn lookup(&self, choice: PlanChoice, key: &str, now: i64) -> (ProviderAnswer, String) {
        let asked = KeyId::of(key);
        let key = if reverted(Rule::PlanFirst) {
            KeyId::of(&attempt_key(
                &identity(),
                plan(choice).operation(),
                asked.attempt,
            ))
        } else {
            asked
        };
        match self.provider.lookup(key, now) {
            Found::Charge => {
                let did = format!("lookup: found ({key:?})");
                (ProviderAnswer::Succeeded(key.envelope()), did)
            }
            Found::Refusal => (
                ProviderAnswer::Declined,
                format!("lookup: refused ({key:?})"),
            ),
            Found::Pending => (
                ProviderAnswer::Unknown,
                format!("lookup: pending ({key:?})"),
            ),
            Found::Nothing => (ProviderAnswer::NotFound, "lookup: not found".to_owned()),
        }
    }

    /// Gives worker `w`'s program `answer` at its time now; `did`: what it was.
    fn feed(&mut self, w: usize, answer: Answered<ExecuteOp>, did: String, bounds: &Bounds) {
        self.feed_refusable(w, answer, did, false, bounds);
    }

    /// Gives worker `w`'s program `answer` at its time now, and performs a permitted
    /// send at once; `refused`: the answer is the refusal of a record past the cutoff.
    fn feed_refusable(
        &mut self,
        w: usize,
        answer: Answered<ExecuteOp>,
        did: String,
        refused: bool,
        bounds: &Bounds,
    ) {
        let now = bounds.now(self.clock, w);
        if refused && reverted(Rule::EvidenceAfterCutoff) && self.call(w).holds_success() {
            self.call_mut(w).drop_answer(now);
            self.workers[w].did =
                "record: send_cutoff_passed; the old driver drops the answer".into();
            return;
        }
        if let Answered::Ran(Err(error)) = &answer {
            self.note_error(Some(error));
        }
        self.workers[w].did = did.clone();
        match self.call_mut(w).feed(answer, now) {
            Ok(Fed::Done(execution)) => {
                let handed = execution == "customer_must_act";
                let retrieved = self.call(w).retrieved();
                self.seen.handed |= handed;
                self.seen.handed_again |= handed && retrieved;
                self.end(w, &did);
            }
            Ok(Fed::Sent(key)) => self.put_on_wire(w, &key, bounds),
            Ok(Fed::Asked) => {}
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
        self.seen.new_key_beside_open |= self.provider.open_beside(key);
        self.provider.send(key, settle_by, w);
        self.workers[w].did = format!("{}; sends {key:?}", self.workers[w].did);
        self.call_mut(w).phase = Phase::Sending {
            key,
            deadline,
            heard: None,
        };
    }
}

/// A lease's answer, for a counterexample's trace.
fn lease_summary(lease: &LeaseOutput) -> String {
    match lease {
        LeaseOutput::Acquired { fence_epoch, .. } => {
            format!("start: acquired fence {}", fence_epoch.get())
        }
        lease => format!("start: {}", lease.outcome()),
    }
}

/// A permit's answer, for a counterexample's trace.
fn begin_summary(began: &Result<BeginSendOutput, JournalError>) -> String {
    match began {
        Ok(BeginSendOutput::Permitted(p)) => {
            format!(
                "begin_send: permit attempt {} resend {}",
                p.attempt, p.resend
            )
        }
        Ok(BeginSendOutput::Terminal(t)) => format!("begin_send: {t:?}").to_lowercase(),
        Err(error) => format!("begin_send: {}", error.code()),
    }
}

/// A record's or a reconciliation's answer, for a counterexample's trace.
fn outcome_summary(answer: &Result<SendOutcomeOutput, JournalError>) -> String {
    match answer {
        Ok(SendOutcomeOutput::Terminal(t)) => format!("{t:?}").to_lowercase(),
        Ok(SendOutcomeOutput::Ambiguous { attempt }) => format!("ambiguous {attempt}"),
        Ok(SendOutcomeOutput::Absent { attempt }) => format!("absent {attempt}"),
        Ok(SendOutcomeOutput::AwaitingCustomer { attempt }) => {
            format!("awaiting_customer {attempt}")
        }
        Err(error) => error.code().to_owned(),
    }
}

//! The driver: generations of commands, rounds of concurrent `execute` calls driven
//! until each answered or crashed, the provider's moods, and the clock's jumps.

use super::plans::{Command, Variant, command};
use super::provider::{Msg, Parked, SimProvider};
use super::replays::ReplayTally;
use super::world::World;
use super::{COMMANDS_AT_ONCE, LEASE, RECOVERY_PERCENT, SECOND, SETTLE, WORKERS, lock};
use command_journal::identity::OperationSlug;
use command_journal::{Execution, Journal, JournalError};
use futures::FutureExt;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub(super) struct Live {
    pub(super) worker: usize,
    pub(super) command: usize,
    pub(super) variant: Variant,
    pub(super) handle: JoinHandle<()>,
    pub(super) resumed: Arc<AtomicI64>,
}

/// How cooperative the provider is in one generation (percent weights).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mood {
    /// Weight of a truthful answer to a send (against 50 for the others).
    pub(super) truth: u32,
    /// Percent of lookups answered unavailable.
    pub(super) unavailable: u32,
    /// Percent of unanswered sends whose request is lost on the way.
    pub(super) lost: u32,
    /// Percent of clock jumps that are long (the settle window, rarely 15 minutes).
    pub(super) far: u32,
}

/// A provider answering most sends, an unreliable one, and an outage (sends time out
/// and are lost on the way; lookups mostly unavailable) under which commands reach
/// their cutoff and their key's retention. Moods change now and then, and often in
/// the last minutes before a command's cutoff.
pub(super) const MOODS: [(u32, Mood); 3] = [
    (
        35,
        Mood {
            truth: 50,
            unavailable: 10,
            lost: 10,
            far: 10,
        },
    ),
    (
        35,
        Mood {
            truth: 20,
            unavailable: 30,
            lost: 30,
            far: 20,
        },
    ),
    (
        30,
        Mood {
            truth: 0,
            unavailable: 50,
            lost: 100,
            far: 40,
        },
    ),
];

#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) calls: u64,
    pub(super) drain_calls: u64,
    pub(super) rounds: u64,
    pub(super) generations: u64,
    pub(super) answers: BTreeMap<&'static str, u64>,
    pub(super) lost_answers: u64,
    pub(super) gave_up: u64,
    pub(super) send_timeouts: u64,
    pub(super) lookup_timeouts: u64,
    pub(super) lookups_unavailable: u64,
    pub(super) lookups_answered_stale: u64,
    /// Stale "not found" answers whose evaluation preceded a settle bound of one of the
    /// command's requests that the answer follows: the race a lookup's own duration
    /// opens against the settle window.
    pub(super) stale_not_found_across_settle: u64,
    pub(super) race_jumps: u64,
    pub(super) crashes_parked: u64,
    pub(super) crashes_running: u64,
    pub(super) jumps: u64,
    pub(super) targeted_jumps: u64,
    pub(super) mid_flight_jumps: u64,
    pub(super) plan_conflicts: u64,
    pub(super) wrong_plan_bound: u64,
    pub(super) succeeded: u64,
    pub(super) failed: u64,
    pub(super) pending_forgotten: u64,
    pub(super) pending_forgotten_charged: u64,
    /// Left open before the key's retention: an indeterminate attempt, waiting for evidence.
    pub(super) pending_indeterminate: u64,
    pub(super) never_sent: u64,
    pub(super) max_attempt: i64,
    pub(super) commands_with_attempt_2: u64,
    /// Recovery jobs spawned, and how the commands they handled ended.
    pub(super) recoveries: u64,
    pub(super) recovered: BTreeMap<&'static str, u64>,
    /// What became of the commands whose key's stored 5xx a sender heard replayed.
    pub(super) replays: ReplayTally,
}

pub(super) struct Run {
    pub(super) journal: Journal,
    pub(super) world: Arc<Mutex<World>>,
    pub(super) rng: fastrand::Rng,
    pub(super) commands: Vec<Command>,
    pub(super) tx: mpsc::UnboundedSender<Msg>,
    pub(super) rx: mpsc::UnboundedReceiver<Msg>,
    pub(super) next_call: u64,
    pub(super) mood: Mood,
    pub(super) tally: Tally,
}

pub(super) fn kind(result: &Result<Execution, JournalError>) -> &'static str {
    match result {
        Ok(Execution::Succeeded(_)) => "succeeded",
        Ok(Execution::SucceededWithoutResult) => "succeeded_without_result",
        Ok(Execution::Declined) => "declined",
        Ok(Execution::InProgress) => "in_progress",
        Ok(Execution::RetryLater { .. }) => "retry_later",
        Ok(Execution::PendingReconciliation) => "pending_reconciliation",
        Ok(Execution::CustomerMustAct(_)) => "customer_must_act",
        Err(JournalError::PlanConflict) => "plan_conflict",
        Err(_) => "error",
    }
}

impl Run {
    pub(super) fn now(&self) -> i64 {
        lock(&self.world).now()
    }

    pub(super) fn note(&self, command: Option<usize>, text: String) {
        lock(&self.world).note(command, text);
    }

    pub(super) fn violation(&self, command: usize, what: &str) -> ! {
        lock(&self.world).violation(command, what)
    }

    pub(super) fn new_generation(&mut self) -> Vec<usize> {
        let first = self.commands.len() as u64;
        for n in first..first + COMMANDS_AT_ONCE {
            self.commands.push(command(n));
        }
        self.tally.generations += 1;
        let generation: Vec<usize> = (first as usize..self.commands.len()).collect();
        self.note(None, format!("generation of c{generation:?}"));
        self.change_mood();
        generation
    }

    /// A mood for the provider (an outage begins or ends, ...).
    pub(super) fn change_mood(&mut self) {
        let mut roll = self.rng.u32(..100);
        for (weight, mood) in MOODS {
            self.mood = mood;
            if roll < weight {
                break;
            }
            roll -= weight;
        }
        lock(&self.world).lost = self.mood.lost;
        self.note(None, format!("provider mood {:?}", self.mood));
    }

    pub(super) fn provider(
        &self,
        call: u64,
        command: usize,
        variant: Variant,
        queued: bool,
    ) -> SimProvider {
        let cmd = &self.commands[command];
        let operation = OperationSlug::parse(variant.operation()).expect("slug");
        let now = self.now();
        SimProvider {
            world: self.world.clone(),
            tx: queued.then(|| self.tx.clone()),
            call,
            command,
            variant,
            first_key: cmd.input.identity().provider_idempotency_key(&operation),
            parameters: cmd.parameters.clone(),
            spawned_at: now,
            resumed: Arc::new(AtomicI64::new(now)),
            keys: None,
        }
    }

    pub(super) fn spawn(&mut self, worker: usize, command: usize, variant: Variant) -> (u64, Live) {
        let call = self.next_call;
        self.next_call += 1;
        self.tally.calls += 1;
        let provider = self.provider(call, command, variant, true);
        let resumed = provider.resumed.clone();
        let plan = variant.plan(&self.commands[command].parameters);
        let (journal, input, tx) = (
            self.journal.clone(),
            self.commands[command].input.clone(),
            self.tx.clone(),
        );
        self.note(
            Some(command),
            format!("call#{call} w{worker} {variant:?}: execute"),
        );
        let handle = tokio::spawn(async move {
            let run = AssertUnwindSafe(journal.execute(&input, &plan, &provider));
            let message = match run.catch_unwind().await {
                Ok(result) => Msg::Done { call, result },
                Err(panic) => Msg::Panicked(panic),
            };
            let _ = tx.send(message);
        });
        let live = Live {
            worker,
            command,
            variant,
            handle,
            resumed,
        };
        (call, live)
    }

    /// A clock jump of a random kind.
    pub(super) fn jump(&mut self, generation: &[usize], why: &str) {
        let unsettled: Vec<usize> = generation
            .iter()
            .copied()
            .filter(|&c| self.commands[c].terminal.is_none())
            .collect();
        let now = self.now();
        let far = self.mood.far;
        let roll = self.rng.u32(..100);
        let near = (roll - far.min(roll)) * 100 / (100 - far);
        let step = match roll {
            _ if roll < far / 8 => 900 * SECOND,
            _ if roll < far => SETTLE * SECOND,
            _ if near < 25 => self.rng.i64(1..=45) * SECOND,
            _ if near < 50 => (LEASE + 1) * SECOND,
            _ => {
                let mut world = lock(&self.world);
                let before_cutoff = world.before_cutoff(&unsettled);
                let before_provable = world.before_provable(&unsettled);
                let instants = world.instants(&unsettled);
                drop(world);
                match (near, before_cutoff, before_provable, instants.first()) {
                    // To the last minutes before a command's cutoff: a re-send there
                    // makes the lookups after the cutoff race the settle window. Often
                    // an outage ends there.
                    (50..62, Some(at), _, _) => {
                        self.tally.targeted_jumps += 1;
                        if self.rng.bool() {
                            self.change_mood();
                        }
                        at - now
                    }
                    // Past the cutoff, to less than a lookup's deadline before such a
                    // re-send's settle bound.
                    (62..74, _, Some(at), _) => {
                        self.tally.targeted_jumps += 1;
                        at - now
                    }
                    // One of the nearest few boundaries: they are met in order.
                    (_, _, _, Some(_)) => {
                        self.tally.targeted_jumps += 1;
                        instants[self.rng.usize(..instants.len().min(4))] - now
                    }
                    _ => (LEASE + 1) * SECOND,
                }
            }
        };
        self.tally.jumps += 1;
        lock(&self.world).advance(step, why);
    }

    /// One round: up to six concurrent `execute` calls, driven until each answered or
    /// crashed.
    pub(super) async fn round(&mut self, generation: &[usize]) {
        self.tally.rounds += 1;
        let unsettled: Vec<usize> = generation
            .iter()
            .copied()
            .filter(|&c| self.commands[c].terminal.is_none())
            .collect();
        let mut live: BTreeMap<u64, Live> = BTreeMap::new();
        for worker in 0..WORKERS {
            if self.rng.u32(..100) < 10 {
                continue;
            }
            let command = if !unsettled.is_empty() && self.rng.u32(..100) < 70 {
                unsettled[self.rng.usize(..unsettled.len())]
            } else {
                generation[self.rng.usize(..generation.len())]
            };
            // A misconfigured deployment: mostly once the command's plan is bound,
            // rarely the first to send it.
            let sent = lock(&self.world).by_command.contains_key(&command);
            let variant = match self.rng.u32(..1000) {
                0..30 if sent || self.rng.u32(..6) == 0 => Variant::OtherAccount,
                30..60 if sent || self.rng.u32(..6) == 0 => Variant::OtherOperation,
                _ => Variant::Right,
            };
            let (call, l) = self.spawn(worker, command, variant);
            live.insert(call, l);
        }
        if self.rng.u32(..100) < RECOVERY_PERCENT {
            let (call, l) = self.spawn_recovery(generation);
            live.insert(call, l);
        }
        let mut parked: BTreeMap<u64, Parked> = BTreeMap::new();
        while !live.is_empty() {
            if parked.len() == live.len() {
                self.read_replays().await;
                self.quiescent(generation, &mut live, &mut parked);
                continue;
            }
            match self.rx.recv().await.expect("the driver holds a sender") {
                Msg::Parked { call, parked: p } => {
                    if live.contains_key(&call) {
                        parked.insert(call, p);
                        self.mid_flight(&mut live, &parked);
                    }
                }
                Msg::Done { call, result } => {
                    if let Some(l) = live.remove(&call) {
                        parked.remove(&call);
                        if let Err(error) = &result
                            && *error != JournalError::PlanConflict
                        {
                            self.diagnose(call, l.command, *error).await;
                        }
                        self.observe(call, l.worker, (l.command, l.variant), result);
                    }
                }
                Msg::Recovered { call, result } => {
                    if live.remove(&call).is_some() {
                        parked.remove(&call);
                        self.observe_recovery(call, result).await;
                    }
                }
                Msg::Panicked(panic) => std::panic::resume_unwind(panic),
            }
        }
        self.read_replays().await;
    }

    /// An error `execute` should never answer: before failing, what the journal holds
    /// (its status read again, and `verify`), to tell a torn read from stored damage.
    pub(super) async fn diagnose(&mut self, call: u64, c: usize, error: JournalError) -> ! {
        let input = self.commands[c].input.clone();
        let status = self.journal.send_status(&input).await;
        let report = command_journal::verify(self.journal.connection(), &mut |_| {}).await;
        let verdict = match &report {
            Ok(report) if report.clean => "verify: clean".to_owned(),
            Ok(report) => format!("verify: {:?}", report.findings),
            Err(error) => format!("verify failed: {error:?}"),
        };
        self.violation(
            c,
            &format!("call#{call}: execute failed: {error:?}; read again: {status:?}; {verdict}"),
        )
    }

    /// Rarely, while other calls are inside the journal: a clock jump, or a crash of a
    /// call mid-operation.
    pub(super) fn mid_flight(
        &mut self,
        live: &mut BTreeMap<u64, Live>,
        parked: &BTreeMap<u64, Parked>,
    ) {
        if parked.len() == live.len() {
            return;
        }
        let roll = self.rng.u32(..1000);
        if roll < 20 {
            let step = if self.rng.bool() {
                self.rng.i64(1..=45)
            } else {
                LEASE + 1
            };
            self.tally.mid_flight_jumps += 1;
            lock(&self.world).advance(step * SECOND, "mid-flight jump");
        } else if roll < 30 {
            let running: Vec<u64> = live
                .keys()
                .copied()
                .filter(|call| !parked.contains_key(call))
                .collect();
            let call = running[self.rng.usize(..running.len())];
            let l = live.remove(&call).expect("live");
            l.handle.abort();
            self.tally.crashes_running += 1;
            self.note(
                Some(l.command),
                format!("call#{call} w{} crashed inside the journal", l.worker),
            );
        }
    }

    /// Every live call is parked at the provider: maybe a clock jump, the provider
    /// works, then each parked call is answered, crashed or left waiting (at least one
    /// is not left waiting).
    pub(super) fn quiescent(
        &mut self,
        generation: &[usize],
        live: &mut BTreeMap<u64, Live>,
        parked: &mut BTreeMap<u64, Parked>,
    ) {
        if self.rng.u32(..100) < 25 {
            self.jump(generation, "calls in flight");
        } else if self.rng.u32(..100) < 40 {
            self.race_jump(parked);
        }
        lock(&self.world).work();
        let ids: Vec<u64> = parked.keys().copied().collect();
        let mut resolved = false;
        for (i, call) in ids.iter().enumerate() {
            let must = !resolved && i + 1 == ids.len();
            let p = parked.remove(call).expect("parked");
            match self.answer(*call, p, must, live) {
                Some(p) => {
                    parked.insert(*call, p);
                }
                None => resolved = true,
            }
        }
    }

    /// While lookups are in flight: a jump (within their deadline) to just past a settle
    /// bound of a request of their command.
    pub(super) fn race_jump(&mut self, parked: &BTreeMap<u64, Parked>) {
        let mut world = lock(&self.world);
        let now = world.now();
        let mut instants = Vec::new();
        for p in parked.values() {
            if let Parked::Lookup {
                command,
                deadline_at,
                ..
            } = p
            {
                instants.extend(world.settle_bounds(*command, now, *deadline_at));
            }
        }
        if instants.is_empty() {
            return;
        }
        let at = instants[self.rng.usize(..instants.len())];
        self.tally.race_jumps += 1;
        world.advance(at - now, "lookups in flight");
    }
}

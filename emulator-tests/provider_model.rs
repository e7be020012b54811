//! A seeded randomized model check of `Journal::execute` against a simulated payment
//! provider whose own ledger is the oracle (issue 34, deliverable 5).
//!
//! Six workers call `execute` on a few commands at a time through a provider that
//! behaves as the plan's contract allows and no better:
//!
//! - it deduplicates by key like a real provider (per account: the same key gives the
//!   same charge or decline while it remembers the key) and forgets a key
//!   `keyRetentionSeconds` (3,600 s; the cutoff is at 2,700 s) after it first saw it: a
//!   lookup then answers "none", and a new request with the key would charge again;
//! - it processes a request when it likes: at once, after it answered (a lost answer),
//!   after the sender gave up or crashed (a queue of accepted, unprocessed requests a
//!   later step processes), or never (lost on the way); a request reaching it at or
//!   after the end of the lease it was permitted under is never processed;
//! - its lookup answers from an index that lags: a charge becomes visible some time
//!   after it was made, but always by the contract's bound, the end of the lease
//!   under which the request could be sent plus `lookupSettleSeconds` (300 s). Before
//!   the clock passes that bound, the provider processes the request or drops it for
//!   good. A lookup is evaluated when it arrives or when it is answered, and answered
//!   within its deadline or not at all (the caller's timeout: unavailable);
//! - it is sometimes reached with a misconfigured plan (another account or another
//!   operation, as a bad deploy of `PROVIDER_*` gives).
//!
//! In three rounds of ten a recovery job (`Journal::recover`) runs beside the workers:
//! it lists the pending commands of every generation and looks up each open attempt's
//! key through the same provider (its lookups parked and answered like the workers',
//! its run crashed like theirs), and what it settles is checked against the ledger as
//! a client's answer is. It is deployed like a worker: mostly with the service's
//! account, declared (its "not found" may record an absence, which lets the next
//! worker open attempt n + 1 under the oracle's watch), sometimes with a stale
//! deployment's account, declared (it must leave the other account's commands alone),
//! sometimes declaring none. It must never send, never fail, and never look up a key of
//! no command.
//!
//! The test decides every answer: a send or lookup parks until the driver, once every
//! running call is parked or done, answers it (the truth, a lost answer, a timeout),
//! crashes its worker (the `execute` future is dropped mid-call), or lets it wait while
//! the manual clock jumps (a second to 45 s, a lease, the settle window, 15 min, or to
//! an instant next to a lease end, a settle bound, a cutoff or a key's retention).
//! Rarely, the clock jumps or a worker crashes while other calls are in the journal.
//! After each generation of commands a drain, with the provider answering everything
//! at once, drives every command as far as it can go. No sleeps: nothing waits for
//! time, only for the calls it drives.
//!
//! Oracle: the provider's ledger. At most one charge per command, ever, over every key
//! and account the command's requests used; no attempt n + 1 is sent while the
//! provider holds an outcome for attempt n or may still process a request of it; every
//! `Succeeded` answer and every stored result is the command's one charge; every
//! `Declined` answer is a command the provider declined and never charged;
//! `plan_conflict` only for a plan other than the bound one; after the drain every
//! command is terminal as the ledger says, or its `send_status` explains why not (the
//! outcome is unknown past the cutoff and the key may have been forgotten: it waits for
//! evidence or an operator). `verify` is clean at the end.
//!
//! - `cargo test --all-features --test emulator provider_model` runs the short form
//!   (240 `execute` calls, about 10 s in a debug build; the `emulator-transaction`
//!   binary runs 60 in transaction mode, where contention makes each call slower).
//! - `CJ_LONG=1 cargo test --release --all-features --test emulator provider_model --
//!   --nocapture` runs 25,000 calls and prints a summary; the long form is four seeds
//!   of it, 100,000 calls (`emulator-tests/RELIABILITY.md` gives the loop and figures).
//! - `CJ_OPERATIONS=<n>` runs at least `n` calls; `CJ_RANDOM_SEED=<n>` replays a seed; a
//!   failing run prints its seed and the violating command's history;
//!   `CJ_MODEL_TRACE=1` prints every generation's history.
//!
//! The seed fixes the driver's and the provider's choices for the same sequence of
//! events; the emulator's interleaving of concurrent calls is not fixed, so a replay
//! makes the same choices only as long as it sees the same events.

use super::support;
use chrono::{DateTime, TimeDelta};
use command_journal::identity::OperationSlug;
use command_journal::recovery::{LOOKUP_DEADLINE, RecoverOptions, Recovered, Recovery};
use command_journal::sends::{CommandStatus, ProviderLookup};
use command_journal::time::ManualClock;
use command_journal::{
    Clock, CommandInput, CommandRequest, Execution, Journal, JournalError, Provider,
    ProviderAccount, ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope,
    SendRequest, Timestamp,
};
use command_journal_core::sends::plan::attempt_key;
use futures::FutureExt;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

const WORKERS: usize = 6;
/// Percent of rounds that also run a recovery job beside the workers.
const RECOVERY_PERCENT: u32 = 30;
const COMMANDS_AT_ONCE: u64 = 4;
const ROUNDS_PER_GENERATION: u64 = 50;
/// Rounds a generation runs at least, terminal or not (replays, late processing).
const MIN_ROUNDS: u64 = 4;
const SHORT_CALLS: u64 = 240;
/// The short form in transaction mode, where six workers on a few commands hold each
/// other's locks and every ABORTED backs off about a second.
const SHORT_CALLS_TRANSACTION: u64 = 60;
const LONG_CALLS: u64 = 25_000;
const DEFAULT_SEED: u64 = 102;
const SECOND: i64 = 1_000_000;
/// The plan's key retention: the cutoff is at 2,700 s, the key forgotten at 3,600 s.
const RETENTION: i64 = 3_600;
const CUTOFF: i64 = 2_700;
/// The plan's `lookupSettleSeconds` (the default).
const SETTLE: i64 = 300;
const LEASE: i64 = 60;
/// `execute` keeps this much of the lease after a send's deadline (its `SEND_MARGIN`).
const MARGIN: i64 = 10;
/// Percent of newly processed keys the provider declines.
const DECLINE_PERCENT: u32 = 8;

/// Prints the seed if the test panics, so the run can be replayed.
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "provider model check failed; replay with CJ_RANDOM_SEED={}",
                self.0
            );
        }
    }
}

fn seed() -> u64 {
    match std::env::var("CJ_RANDOM_SEED") {
        Ok(text) => text.trim().parse().expect("CJ_RANDOM_SEED is a u64"),
        Err(_) => DEFAULT_SEED,
    }
}

fn target_calls() -> u64 {
    if let Some(n) = std::env::var("CJ_OPERATIONS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
    {
        return n;
    }
    match (std::env::var("CJ_LONG").as_deref(), support::mode()) {
        (Ok("1"), _) => LONG_CALLS,
        (_, command_journal::Concurrency::Transaction) => SHORT_CALLS_TRANSACTION,
        _ => SHORT_CALLS,
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).expect("a duration in range")
}

fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The last characters of a key: enough to tell keys apart in a history.
fn short(key: &str) -> &str {
    &key[key.len().saturating_sub(8)..]
}

// ---------------------------------------------------------------------------------
// plans and commands
// ---------------------------------------------------------------------------------

/// The plan a worker was deployed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Variant {
    Right,
    /// `PROVIDER_ACCOUNT` of another deployment: the same keys in another account.
    OtherAccount,
    /// Another operation: other keys.
    OtherOperation,
}

const VARIANTS: [Variant; 3] = [
    Variant::Right,
    Variant::OtherAccount,
    Variant::OtherOperation,
];

impl Variant {
    fn account(self) -> &'static str {
        match self {
            Self::OtherAccount => "acct_stale",
            _ => "acct_model",
        }
    }

    fn operation(self) -> &'static str {
        match self {
            Self::OtherOperation => "charge_legacy",
            _ => "charge",
        }
    }

    /// The account a recovery job of this deployment declares.
    fn provider_account(self) -> ProviderAccount {
        ProviderAccount::new("simpay", self.account(), "test").expect("valid account")
    }

    fn plan(self, parameters: &Value) -> ProviderPlan {
        ProviderPlan::new(ProviderPlanRequest {
            provider: "simpay",
            account: self.account(),
            mode: "test",
            api_version: "2026-01-01",
            operation: self.operation(),
            endpoint: "POST /v1/charges",
            parameters,
            key_retention_seconds: RETENTION,
        })
        .expect("valid plan")
        .with_lookup(ProviderLookup::KeyStore, SETTLE)
        .expect("a settle window that fits the retention")
    }
}

struct Command {
    input: CommandInput,
    parameters: Value,
    /// Every answer a caller was given: call, plan, answer.
    answers: Vec<(u64, Variant, Result<Execution, JournalError>)>,
    /// The first terminal answer (`Succeeded` or `Declined`).
    terminal: Option<Execution>,
}

fn command(n: u64) -> Command {
    let id = support::uuid(0x34, n);
    let payload = json!({"order": n});
    let input = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "service",
        caller_id: "provider_model",
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("valid command");
    let amount = 1_000 + i64::try_from(n).expect("small");
    Command {
        input,
        parameters: json!({"amount": amount, "currency": "eur"}),
        answers: Vec::new(),
        terminal: None,
    }
}

// ---------------------------------------------------------------------------------
// the provider's world: requests, key store, lookup index, ledger
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The charge at this index of the ledger.
    Charged(usize),
    Declined,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Accepted, not processed yet: processed or dropped before the clock passes
    /// `latest`.
    Pending,
    Processed(Outcome),
    /// Never processed (lost on the way, or sent after its lease).
    Dropped,
}

struct Request {
    command: usize,
    variant: Variant,
    account: &'static str,
    key: String,
    attempt: i64,
    sent_at: i64,
    /// The contract's bound: the end of the lease it could be sent under, plus the
    /// settle window. Processed and visible to lookups by then, or never processed.
    latest: i64,
    state: State,
    /// The sender was answered or crashed: processing now is "late".
    sender_left: bool,
}

/// What the provider's key store holds for `(account, key)`.
struct Entry {
    outcome: Outcome,
    /// From when a lookup sees it (the index lags).
    visible_at: i64,
    /// From when the provider has forgotten the key.
    forget_at: i64,
}

struct Charge {
    account: &'static str,
    key: String,
    envelope: ResultEnvelope,
}

#[derive(Debug, Default)]
struct ProviderTally {
    sends: u64,
    resends: u64,
    sends_attempt_2_plus: u64,
    processed: u64,
    processed_late: u64,
    deduplicated: u64,
    dropped: u64,
    sent_after_lease: u64,
    forced: u64,
    charges: u64,
    declines: u64,
    reprocessed_forgotten: u64,
    lookups: u64,
    lookups_not_visible_yet: u64,
    lookups_forgotten: u64,
    /// Requests sent in the last six minutes before their attempt's cutoff.
    sends_near_cutoff: u64,
    /// Lookups made while a settle bound of one of the command's requests is ahead.
    lookups_before_settle: u64,
}

struct World {
    clock: Arc<ManualClock>,
    origin: i64,
    rng: fastrand::Rng,
    requests: Vec<Request>,
    pending: BTreeSet<usize>,
    by_command: HashMap<usize, Vec<usize>>,
    entries: HashMap<(&'static str, String), Entry>,
    first_seen: HashMap<(&'static str, String), i64>,
    /// Every key the provider saw, and the command whose request carried it.
    key_owner: HashMap<String, usize>,
    /// (command, operation, attempt) -> the one key it was sent with.
    attempt_keys: HashMap<(usize, &'static str, i64), String>,
    charges: Vec<Charge>,
    charge_of: HashMap<usize, usize>,
    declined: BTreeSet<usize>,
    /// This generation's history: `[cN]` lines of command N, `[clock]` lines.
    log: Vec<String>,
    /// Percent of requests lost on the way (the generation's mood).
    lost: u32,
    tally: ProviderTally,
}

impl World {
    fn new(clock: Arc<ManualClock>, seed: u64) -> Self {
        let origin = Timestamp::from_datetime(clock.now())
            .expect("in range")
            .micros();
        Self {
            clock,
            origin,
            rng: fastrand::Rng::with_seed(seed ^ 0x0070_726f_7669_6465),
            requests: Vec::new(),
            pending: BTreeSet::new(),
            by_command: HashMap::new(),
            entries: HashMap::new(),
            first_seen: HashMap::new(),
            key_owner: HashMap::new(),
            attempt_keys: HashMap::new(),
            charges: Vec::new(),
            charge_of: HashMap::new(),
            declined: BTreeSet::new(),
            log: Vec::new(),
            lost: 20,
            tally: ProviderTally::default(),
        }
    }

    fn now(&self) -> i64 {
        Timestamp::from_datetime(self.clock.now())
            .expect("in range")
            .micros()
    }

    /// `t` as seconds from the run's start.
    fn at(&self, t: i64) -> String {
        format!("+{:.3}s", (t - self.origin) as f64 / SECOND as f64)
    }

    fn note(&mut self, command: Option<usize>, text: String) {
        let tag = match command {
            Some(c) => format!("[c{c}]"),
            None => "[clock]".to_owned(),
        };
        let line = format!("t={} {tag} {text}", self.at(self.now()));
        self.log.push(line);
    }

    fn history(&self, command: usize) -> String {
        let tag = format!("[c{command}]");
        self.log
            .iter()
            .filter(|line| line.contains(&tag) || line.contains("[clock]"))
            .map(|line| format!("  {line}\n"))
            .collect()
    }

    fn violation(&self, command: usize, what: &str) -> ! {
        panic!(
            "INVARIANT VIOLATED for command c{command}: {what}\nits history (clock lines \
             included; times from the run's start):\n{}",
            self.history(command)
        )
    }

    /// A request arrives (`send` was called): checked, then queued, unprocessed.
    fn receive(&mut self, p: &SimProvider, request: &SendRequest<'_>) -> usize {
        let now = self.now();
        let command = p.command;
        let deadline = micros(request.deadline);
        let operation = p.variant.operation();
        let key = request.key.to_owned();
        if request.parameters != &p.parameters {
            self.violation(command, "a send with other parameters than the plan's");
        }
        if !(SECOND..=(LEASE - MARGIN) * SECOND).contains(&deadline) {
            self.violation(command, &format!("a send deadline of {deadline} µs"));
        }
        let seen = self.key_owner.contains_key(&key);
        let owner = *self.key_owner.entry(key.clone()).or_insert(command);
        if owner != command {
            self.violation(
                command,
                &format!("key …{} also sent for c{owner}", short(&key)),
            );
        }
        let known = self
            .attempt_keys
            .entry((command, operation, request.attempt))
            .or_insert_with(|| key.clone())
            .clone();
        if known != key {
            self.violation(command, "two keys for one attempt");
        }
        let first_key_ok = if request.attempt == 1 {
            key == p.first_key
        } else {
            key != p.first_key && key.starts_with("cj1-")
        };
        // A re-send may be the first request the provider sees with its key (the
        // earlier sender crashed between permit and send); a first send may not follow
        // one it saw.
        if !first_key_ok || (!request.resend && seen) {
            self.violation(
                command,
                &format!(
                    "attempt {} sent with key …{} resend={}",
                    request.attempt,
                    short(&key),
                    request.resend
                ),
            );
        }
        if request.attempt >= 2 {
            self.tally.sends_attempt_2_plus += 1;
            self.check_earlier_attempts(command, request.attempt);
        }
        // The permit's lease ends `MARGIN` after the deadline, counted from the step
        // that computed it, which ran no earlier than the call last resumed.
        let lease_end = p.resumed.load(Ordering::SeqCst) + deadline + MARGIN * SECOND;
        let state = if now >= lease_end {
            self.tally.sent_after_lease += 1;
            State::Dropped
        } else {
            State::Pending
        };
        let id = self.requests.len();
        self.requests.push(Request {
            command,
            variant: p.variant,
            account: p.variant.account(),
            key: key.clone(),
            attempt: request.attempt,
            sent_at: now,
            latest: lease_end + SETTLE * SECOND,
            state,
            sender_left: false,
        });
        if state == State::Pending {
            self.pending.insert(id);
        }
        self.by_command.entry(command).or_default().push(id);
        self.first_seen
            .entry((p.variant.account(), key.clone()))
            .or_insert(now);
        self.tally.sends += 1;
        let first = self.first_seen[&(p.variant.account(), key.clone())];
        let near_cutoff = now >= first + (CUTOFF - LEASE - SETTLE) * SECOND;
        if near_cutoff {
            self.tally.sends_near_cutoff += 1;
        }
        if request.resend {
            self.tally.resends += 1;
        }
        let text = format!(
            "call#{} {:?}: request #{id} attempt {} key …{} resend={} deadline {}s, lease \
             end {} (must be visible by {}){}",
            p.call,
            p.variant,
            request.attempt,
            short(&key),
            request.resend,
            deadline / SECOND,
            self.at(lease_end),
            self.at(lease_end + SETTLE * SECOND),
            match (state, near_cutoff) {
                (State::Dropped, _) => ", sent after its lease: never processed",
                (_, true) => ", NEAR ITS CUTOFF",
                _ => "",
            }
        );
        self.note(Some(command), text);
        id
    }

    /// Attempt `attempt` is being sent: the provider holds no outcome for an earlier
    /// attempt of the command and will never process one of its requests.
    fn check_earlier_attempts(&self, command: usize, attempt: i64) {
        for &id in self.by_command.get(&command).into_iter().flatten() {
            let r = &self.requests[id];
            if r.attempt >= attempt {
                continue;
            }
            match r.state {
                State::Pending => self.violation(
                    command,
                    &format!(
                        "attempt {attempt} sent while request #{id} of attempt {} may still \
                         be processed (until {})",
                        r.attempt,
                        self.at(r.latest)
                    ),
                ),
                State::Processed(outcome) => self.violation(
                    command,
                    &format!(
                        "attempt {attempt} sent although the provider holds {outcome:?} for \
                         attempt {} (request #{id})",
                        r.attempt
                    ),
                ),
                State::Dropped => {}
            }
        }
    }

    /// Processes request `id` now, if it is still pending: the same outcome as the
    /// key's while the provider remembers it, else a new charge or decline.
    fn process(&mut self, id: usize) {
        if self.requests[id].state != State::Pending {
            return;
        }
        self.pending.remove(&id);
        let now = self.now();
        let r = &self.requests[id];
        let (command, account, key, latest, sent_at, late) = (
            r.command,
            r.account,
            r.key.clone(),
            r.latest,
            r.sent_at,
            r.sender_left,
        );
        let slot = (account, key.clone());
        let remembered = self
            .entries
            .get(&slot)
            .filter(|entry| now < entry.forget_at)
            .map(|entry| entry.outcome);
        let outcome = match remembered {
            Some(outcome) => {
                self.tally.deduplicated += 1;
                self.note(
                    Some(command),
                    format!("request #{id} processed: key known, {outcome:?} again"),
                );
                outcome
            }
            None => {
                let first = if self.entries.contains_key(&slot) {
                    // The key was forgotten: it counts from this request.
                    self.tally.reprocessed_forgotten += 1;
                    self.first_seen.insert(slot.clone(), sent_at);
                    sent_at
                } else {
                    self.first_seen.get(&slot).copied().unwrap_or(sent_at)
                };
                let outcome = if self.rng.u32(..100) < DECLINE_PERCENT {
                    self.declined.insert(command);
                    self.tally.declines += 1;
                    Outcome::Declined
                } else {
                    if let Some(&earlier) = self.charge_of.get(&command) {
                        let c = &self.charges[earlier];
                        self.violation(
                            command,
                            &format!(
                                "SECOND CHARGE: request #{id} (key …{} in {account}) charges \
                                 again; the command's charge ch_{earlier} was made under key \
                                 …{} in {}",
                                short(&key),
                                short(&c.key),
                                c.account
                            ),
                        );
                    }
                    let index = self.charges.len();
                    let envelope = ResultEnvelope::new(&json!({
                        "id": format!("ch_{index}"),
                        "object": "charge",
                        "account": account,
                        "amount": 1_000 + command as i64,
                        "currency": "eur",
                        "status": "succeeded",
                        "metadata": {"journal_key": key},
                    }))
                    .expect("a valid envelope");
                    self.charges.push(Charge {
                        account,
                        key: key.clone(),
                        envelope,
                    });
                    self.charge_of.insert(command, index);
                    self.tally.charges += 1;
                    Outcome::Charged(index)
                };
                let visible_at = match self.rng.u32(..10) {
                    0..4 => now,
                    4..7 => latest,
                    _ => self.rng.i64(now..=latest),
                };
                self.entries.insert(
                    slot,
                    Entry {
                        outcome,
                        visible_at,
                        forget_at: first + RETENTION * SECOND,
                    },
                );
                let text = format!(
                    "request #{id} processed{}: {outcome:?}, visible to lookups at {}, key \
                     forgotten at {}",
                    if late { " after its sender left" } else { "" },
                    self.at(visible_at),
                    self.at(first + RETENTION * SECOND)
                );
                self.note(Some(command), text);
                outcome
            }
        };
        self.tally.processed += 1;
        if late {
            self.tally.processed_late += 1;
        }
        self.requests[id].state = State::Processed(outcome);
    }

    fn drop_request(&mut self, id: usize) {
        if self.requests[id].state == State::Pending {
            self.pending.remove(&id);
            self.requests[id].state = State::Dropped;
            self.tally.dropped += 1;
            let command = self.requests[id].command;
            self.note(
                Some(command),
                format!("request #{id} dropped: never processed"),
            );
        }
    }

    /// What the provider answers the sender of `id` now.
    fn answer_of(&self, id: usize) -> ProviderAnswer {
        match self.requests[id].state {
            State::Processed(Outcome::Charged(index)) => {
                ProviderAnswer::Succeeded(self.charges[index].envelope.clone())
            }
            State::Processed(Outcome::Declined) => ProviderAnswer::Declined,
            State::Pending | State::Dropped => ProviderAnswer::Unknown,
        }
    }

    fn sender_left(&mut self, id: usize) {
        self.requests[id].sender_left = true;
    }

    /// The lookup of `key` in `account`, evaluated now.
    fn lookup(&mut self, command: usize, account: &'static str, key: &str) -> ProviderAnswer {
        let now = self.now();
        self.tally.lookups += 1;
        if self.settles_between(command, now, i64::MAX) {
            self.tally.lookups_before_settle += 1;
        }
        let (answer, why) = match self.entries.get(&(account, key.to_owned())) {
            Some(entry) if now >= entry.forget_at => {
                self.tally.lookups_forgotten += 1;
                (ProviderAnswer::NotFound, "the key was forgotten")
            }
            Some(entry) if now < entry.visible_at => {
                self.tally.lookups_not_visible_yet += 1;
                (ProviderAnswer::NotFound, "not visible yet")
            }
            Some(entry) => match entry.outcome {
                Outcome::Charged(index) => (
                    ProviderAnswer::Succeeded(self.charges[index].envelope.clone()),
                    "visible",
                ),
                Outcome::Declined => (ProviderAnswer::Declined, "visible"),
            },
            None => (ProviderAnswer::NotFound, "no entry"),
        };
        if let Some(&owner) = self.key_owner.get(key)
            && owner != command
        {
            self.violation(command, &format!("looked up c{owner}'s key"));
        }
        let text = format!(
            "lookup of key …{} in {account} evaluated: {} ({why})",
            short(key),
            lookup_text(&answer)
        );
        self.note(Some(command), text);
        answer
    }

    /// Moves the clock forward by `delta` µs. First every pending request whose
    /// contract bound falls within the jump is processed (charged or declined, and
    /// visible by its bound) or dropped for good.
    fn advance(&mut self, delta: i64, why: &str) {
        let target = self.now() + delta;
        let due: Vec<usize> = self
            .pending
            .iter()
            .copied()
            .filter(|&id| self.requests[id].latest <= target)
            .collect();
        for id in due {
            self.tally.forced += 1;
            if self.rng.u32(..100) >= self.lost {
                self.process(id);
            } else {
                self.drop_request(id);
            }
        }
        self.clock.advance(TimeDelta::microseconds(delta));
        let text = format!("{why}: clock +{:.3}s", delta as f64 / SECOND as f64);
        self.note(None, text);
    }

    /// The provider works through its queue: some pending requests are processed now,
    /// or lost.
    fn work(&mut self) {
        let ids: Vec<usize> = self.pending.iter().copied().collect();
        for id in ids {
            if self.rng.u32(..100) < 20 {
                if self.rng.u32(..100) >= self.lost {
                    self.process(id);
                } else {
                    self.drop_request(id);
                }
            }
        }
    }

    /// Every pending request processed or dropped (the drain).
    fn settle_all(&mut self) {
        let ids: Vec<usize> = self.pending.iter().copied().collect();
        for id in ids {
            if self.rng.u32(..100) >= self.lost {
                self.process(id);
            } else {
                self.drop_request(id);
            }
        }
    }

    /// Instants in `(now, until)` at or just past a settle bound of one of `command`'s
    /// requests (its `latest`, or its permit time plus a lease and the settle window).
    fn settle_bounds(&self, command: usize, now: i64, until: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for &id in self.by_command.get(&command).into_iter().flatten() {
            let r = &self.requests[id];
            let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
            out.extend([r.latest, r.latest + SECOND, provable, provable + SECOND]);
        }
        out.retain(|&t| now < t && t < until);
        out
    }

    /// Whether a settle bound of one of `command`'s requests lies in `(from, to]`.
    fn settles_between(&self, command: usize, from: i64, to: i64) -> bool {
        self.by_command
            .get(&command)
            .into_iter()
            .flatten()
            .any(|&id| {
                let r = &self.requests[id];
                let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
                (from < r.latest && r.latest <= to) || (from < provable && provable <= to)
            })
    }

    /// For a command whose newest request was sent less than a lease and the settle
    /// window before its attempt's cutoff, an instant after that cutoff 1 to 45 s
    /// before the request's settle bound, if one is still ahead.
    fn before_provable(&mut self, commands: &[usize]) -> Option<i64> {
        let now = self.now();
        let mut best: Option<i64> = None;
        for c in commands {
            let Some(&id) = self.by_command.get(c).and_then(|ids| ids.last()) else {
                continue;
            };
            let r = &self.requests[id];
            let cutoff = self.first_seen[&(r.account, r.key.clone())] + CUTOFF * SECOND;
            let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
            let at = provable - self.rng.i64(1..=45) * SECOND;
            if at > now && at >= cutoff {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        best
    }

    /// The nearest instant in the last six minutes before the cutoff of a command's
    /// newest attempt, if one is still ahead.
    fn before_cutoff(&mut self, commands: &[usize]) -> Option<i64> {
        let now = self.now();
        let mut best: Option<i64> = None;
        for c in commands {
            let Some(&id) = self.by_command.get(c).and_then(|ids| ids.last()) else {
                continue;
            };
            let r = &self.requests[id];
            let cutoff = self.first_seen[&(r.account, r.key.clone())] + CUTOFF * SECOND;
            let at = cutoff - self.rng.i64(1..=360) * SECOND;
            if at > now {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        best
    }

    /// Instants ahead next to the boundaries of `commands` (those not known terminal),
    /// in order: lease ends, settle bounds, cutoffs (and the last minutes before one,
    /// where a re-send makes a lookup race its settle window), key retention.
    fn instants(&mut self, commands: &[usize]) -> Vec<i64> {
        let now = self.now();
        let mut out = Vec::new();
        for c in commands {
            let ids = self.by_command.get(c).cloned().unwrap_or_default();
            for &id in ids.iter().rev().take(4) {
                let r = &self.requests[id];
                let lease_end = r.latest - SETTLE * SECOND;
                let first = self.first_seen[&(r.account, r.key.clone())];
                let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
                let (early, before_provable) = (self.rng.i64(1..=360), self.rng.i64(1..=45));
                out.extend([
                    lease_end,
                    lease_end + SECOND,
                    r.latest - SECOND,
                    r.latest,
                    r.latest + SECOND,
                    provable - before_provable * SECOND,
                    provable,
                    first + (CUTOFF - early) * SECOND,
                    first + CUTOFF * SECOND - 1,
                    first + CUTOFF * SECOND,
                    first + RETENTION * SECOND - SECOND,
                    first + RETENTION * SECOND,
                ]);
            }
        }
        out.retain(|&t| t > now);
        out.sort_unstable();
        out.dedup();
        out
    }
}

fn lookup_text(answer: &ProviderAnswer) -> &'static str {
    match answer {
        ProviderAnswer::Succeeded(_) => "Found",
        ProviderAnswer::Declined => "Declined",
        ProviderAnswer::NotFound => "NotFound",
        ProviderAnswer::Unknown | ProviderAnswer::ReplayedUnknown => "Unavailable",
        ProviderAnswer::SucceededWithReference(_) => "FoundWithReference",
    }
}

fn send_text(answer: &ProviderAnswer) -> &'static str {
    match answer {
        ProviderAnswer::Succeeded(_) => "Succeeded",
        ProviderAnswer::Declined => "Declined",
        ProviderAnswer::Unknown => "Ambiguous",
        ProviderAnswer::ReplayedUnknown => "ReplayedUnknown",
        ProviderAnswer::NotFound => "NotFound",
        ProviderAnswer::SucceededWithReference(_) => "SucceededWithReference",
    }
}

// ---------------------------------------------------------------------------------
// the provider one call talks to
// ---------------------------------------------------------------------------------

enum Msg {
    Parked {
        call: u64,
        parked: Parked,
    },
    Done {
        call: u64,
        result: Result<Execution, JournalError>,
    },
    /// A recovery job ended.
    Recovered {
        call: u64,
        result: Result<Recovery, JournalError>,
    },
    Panicked(Box<dyn std::any::Any + Send>),
}

enum Parked {
    Send {
        request: usize,
        deadline_at: i64,
        reply: oneshot::Sender<ProviderAnswer>,
    },
    Lookup {
        /// The command whose key is looked up (a recovery job looks up many).
        command: usize,
        account: &'static str,
        key: String,
        truth: ProviderAnswer,
        evaluated_at: i64,
        deadline_at: i64,
        reply: oneshot::Sender<ProviderAnswer>,
    },
}

struct SimProvider {
    world: Arc<Mutex<World>>,
    /// `None`: the drain's provider, which answers every call at once, truthfully.
    tx: Option<mpsc::UnboundedSender<Msg>>,
    call: u64,
    command: usize,
    variant: Variant,
    first_key: String,
    parameters: Value,
    /// When the call was spawned: its lease was acquired no earlier.
    spawned_at: i64,
    /// When the call last resumed (spawned, or answered by the driver).
    resumed: Arc<AtomicI64>,
    /// A recovery job's provider: the command of every key it may look up. A job never
    /// sends.
    keys: Option<Arc<HashMap<String, usize>>>,
}

impl Provider for SimProvider {
    async fn send(&self, request: SendRequest<'_>) -> ProviderAnswer {
        if self.keys.is_some() {
            lock(&self.world).violation(self.command, "a recovery job sent");
        }
        let (id, deadline_at) = {
            let mut world = lock(&self.world);
            let id = world.receive(self, &request);
            (id, world.now() + micros(request.deadline))
        };
        let Some(tx) = &self.tx else {
            let mut world = lock(&self.world);
            world.process(id);
            world.sender_left(id);
            return world.answer_of(id);
        };
        let (reply, answer) = oneshot::channel();
        let parked = Parked::Send {
            request: id,
            deadline_at,
            reply,
        };
        let call = self.call;
        if tx.send(Msg::Parked { call, parked }).is_err() {
            return ProviderAnswer::Unknown;
        }
        answer.await.unwrap_or(ProviderAnswer::Unknown)
    }

    async fn lookup(&self, key: &str) -> ProviderAnswer {
        let account = self.variant.account();
        let command = match &self.keys {
            None => self.command,
            Some(keys) => match keys.get(key) {
                Some(&command) => command,
                None => lock(&self.world)
                    .violation(self.command, "a recovery job asked a key of no command"),
            },
        };
        let (truth, evaluated_at) = {
            let mut world = lock(&self.world);
            (world.lookup(command, account, key), world.now())
        };
        let Some(tx) = &self.tx else {
            return truth;
        };
        let (reply, answer) = oneshot::channel();
        // The lookup's deadline ends 10 s before the call's lease, acquired no
        // earlier than the call was spawned; a recovery job's lookups (before any
        // lease) wait `LOOKUP_DEADLINE`.
        let deadline_at = if self.keys.is_some() {
            evaluated_at + micros(LOOKUP_DEADLINE)
        } else {
            self.spawned_at + (LEASE - MARGIN) * SECOND
        };
        let parked = Parked::Lookup {
            command,
            account,
            key: key.to_owned(),
            truth,
            evaluated_at,
            deadline_at,
            reply,
        };
        let call = self.call;
        if tx.send(Msg::Parked { call, parked }).is_err() {
            return ProviderAnswer::Unknown;
        }
        answer.await.unwrap_or(ProviderAnswer::Unknown)
    }
}

// ---------------------------------------------------------------------------------
// the driver
// ---------------------------------------------------------------------------------

struct Live {
    worker: usize,
    command: usize,
    variant: Variant,
    handle: JoinHandle<()>,
    resumed: Arc<AtomicI64>,
}

/// How cooperative the provider is in one generation (percent weights).
#[derive(Debug, Clone, Copy)]
struct Mood {
    /// Weight of a truthful answer to a send (against 50 for the others).
    truth: u32,
    /// Percent of lookups answered unavailable.
    unavailable: u32,
    /// Percent of unanswered sends whose request is lost on the way.
    lost: u32,
    /// Percent of clock jumps that are long (the settle window, rarely 15 minutes).
    far: u32,
}

/// A provider answering most sends, an unreliable one, and an outage (sends time out
/// and are lost on the way; lookups mostly unavailable) under which commands reach
/// their cutoff and their key's retention. Moods change now and then, and often in
/// the last minutes before a command's cutoff.
const MOODS: [(u32, Mood); 3] = [
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
struct Tally {
    calls: u64,
    drain_calls: u64,
    rounds: u64,
    generations: u64,
    answers: BTreeMap<&'static str, u64>,
    lost_answers: u64,
    gave_up: u64,
    send_timeouts: u64,
    lookup_timeouts: u64,
    lookups_unavailable: u64,
    lookups_answered_stale: u64,
    /// Stale "not found" answers whose evaluation preceded a settle bound of one of the
    /// command's requests that the answer follows: the race a lookup's own duration
    /// opens against the settle window.
    stale_not_found_across_settle: u64,
    race_jumps: u64,
    crashes_parked: u64,
    crashes_running: u64,
    jumps: u64,
    targeted_jumps: u64,
    mid_flight_jumps: u64,
    plan_conflicts: u64,
    wrong_plan_bound: u64,
    succeeded: u64,
    failed: u64,
    pending_forgotten: u64,
    pending_forgotten_charged: u64,
    never_sent: u64,
    max_attempt: i64,
    commands_with_attempt_2: u64,
    /// Recovery jobs spawned, and how the commands they handled ended.
    recoveries: u64,
    recovered: BTreeMap<&'static str, u64>,
}

struct Run {
    journal: Journal,
    world: Arc<Mutex<World>>,
    rng: fastrand::Rng,
    commands: Vec<Command>,
    tx: mpsc::UnboundedSender<Msg>,
    rx: mpsc::UnboundedReceiver<Msg>,
    next_call: u64,
    mood: Mood,
    tally: Tally,
}

fn kind(result: &Result<Execution, JournalError>) -> &'static str {
    match result {
        Ok(Execution::Succeeded(_)) => "succeeded",
        Ok(Execution::SucceededWithoutResult) => "succeeded_without_result",
        Ok(Execution::Declined) => "declined",
        Ok(Execution::InProgress) => "in_progress",
        Ok(Execution::RetryLater { .. }) => "retry_later",
        Ok(Execution::PendingReconciliation) => "pending_reconciliation",
        Err(JournalError::PlanConflict) => "plan_conflict",
        Err(_) => "error",
    }
}

impl Run {
    fn now(&self) -> i64 {
        lock(&self.world).now()
    }

    fn note(&self, command: Option<usize>, text: String) {
        lock(&self.world).note(command, text);
    }

    fn violation(&self, command: usize, what: &str) -> ! {
        lock(&self.world).violation(command, what)
    }

    fn new_generation(&mut self) -> Vec<usize> {
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
    fn change_mood(&mut self) {
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

    fn provider(&self, call: u64, command: usize, variant: Variant, queued: bool) -> SimProvider {
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

    /// A recovery job (`Journal::recover`) as one more call of the round: it lists the
    /// pending commands of every generation and looks up each open attempt's key.
    fn spawn_recovery(&mut self, generation: &[usize]) -> (u64, Live) {
        let call = self.next_call;
        self.next_call += 1;
        self.tally.recoveries += 1;
        let mut keys = HashMap::new();
        for (c, cmd) in self.commands.iter().enumerate() {
            let identity = cmd.input.identity();
            for variant in VARIANTS {
                let operation = OperationSlug::parse(variant.operation()).expect("slug");
                for attempt in 1..=16 {
                    keys.insert(attempt_key(&identity, &operation, attempt), c);
                }
            }
        }
        let command = generation[0];
        // The job's deployment: mostly the service's, declaring its account (its "not
        // found" may record an absence); sometimes a stale deployment's, declaring
        // that account (it must leave every command bound to the right one alone);
        // sometimes one declaring no account (it records no absence).
        let (variant, declared) = match self.rng.u32(..10) {
            0 => (Variant::OtherAccount, true),
            1 => (Variant::Right, false),
            _ => (Variant::Right, true),
        };
        let mut provider = self.provider(call, command, variant, true);
        provider.keys = Some(Arc::new(keys));
        let resumed = provider.resumed.clone();
        let (journal, tx) = (self.journal.clone(), self.tx.clone());
        self.note(
            None,
            format!("call#{call} recovery job {variant:?} declared {declared}"),
        );
        let options = RecoverOptions {
            per_second: None,
            account: declared.then(|| variant.provider_account()),
            ..RecoverOptions::default()
        };
        let handle = tokio::spawn(async move {
            let run = AssertUnwindSafe(journal.recover(&provider, &options, |_| {}));
            let message = match run.catch_unwind().await {
                Ok(result) => Msg::Recovered { call, result },
                Err(panic) => Msg::Panicked(panic),
            };
            let _ = tx.send(message);
        });
        let live = Live {
            worker: WORKERS,
            command,
            variant,
            handle,
            resumed,
        };
        (call, live)
    }

    /// What a recovery job settled, checked against the provider's ledger as an
    /// answer to a client is: a success is the command's one charge (its stored result
    /// read back), a decline a command the provider declined and never charged.
    async fn observe_recovery(&mut self, call: u64, result: Result<Recovery, JournalError>) {
        let report = match result {
            Ok(report) => report,
            Err(error) => self.violation(
                self.commands.len() - 1,
                &format!("call#{call}: recover failed: {error:?}"),
            ),
        };
        for done in report.commands {
            let Some(c) = self
                .commands
                .iter()
                .position(|cmd| cmd.input.identity().command_key_hash() == &done.command_key_hash)
            else {
                self.violation(0, "a recovery job handled a command of no generation");
            };
            let outcome = match done.outcome {
                Ok(outcome) => outcome,
                Err(error) => self.diagnose(call, c, error).await,
            };
            *self.tally.recovered.entry(outcome.as_str()).or_default() += 1;
            self.note(
                Some(c),
                format!("call#{call} recovery: {}", outcome.as_str()),
            );
            let answer = match outcome {
                Recovered::Succeeded => {
                    let input = self.commands[c].input.clone();
                    match self.journal.result(&input).await {
                        Ok(Some(envelope)) => Execution::Succeeded(envelope),
                        other => self.violation(
                            c,
                            &format!("a recovered success without its result: {other:?}"),
                        ),
                    }
                }
                Recovered::Declined => Execution::Declined,
                _ => continue,
            };
            self.check_answer(c, &Ok(answer));
        }
    }

    fn spawn(&mut self, worker: usize, command: usize, variant: Variant) -> (u64, Live) {
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
    fn jump(&mut self, generation: &[usize], why: &str) {
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
    async fn round(&mut self, generation: &[usize]) {
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
    }

    /// An error `execute` should never answer: before failing, what the journal holds
    /// (its status read again, and `verify`), to tell a torn read from stored damage.
    async fn diagnose(&mut self, call: u64, c: usize, error: JournalError) -> ! {
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
    fn mid_flight(&mut self, live: &mut BTreeMap<u64, Live>, parked: &BTreeMap<u64, Parked>) {
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
    fn quiescent(
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
    fn race_jump(&mut self, parked: &BTreeMap<u64, Parked>) {
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

    /// Answers (or crashes) one parked call; `Some` when it is left waiting.
    fn answer(
        &mut self,
        call: u64,
        parked: Parked,
        must: bool,
        live: &mut BTreeMap<u64, Live>,
    ) -> Option<Parked> {
        let command = live[&call].command;
        match parked {
            Parked::Send {
                request,
                deadline_at,
                reply,
            } => {
                // 0 the truth, 1 a lost answer (processed, answered ambiguous), 2 no
                // answer yet (the sender gives up), 3 a crash, 4 wait; weights: the
                // mood's truth, 15 scaled down by the mood's losses, 15, 8, 12.
                let (truth, lost) = (self.mood.truth, 15 * (100 - self.mood.lost) / 100);
                let roll = self.rng.u32(..truth + lost + 35);
                let choice = match (roll.checked_sub(truth), roll.checked_sub(truth + lost)) {
                    (None, _) => 0,
                    (Some(_), None) => 1,
                    (_, Some(0..15)) => 2,
                    (_, Some(15..23)) => 3,
                    (_, Some(_)) => 4,
                };
                if choice == 4 && !must {
                    return Some(Parked::Send {
                        request,
                        deadline_at,
                        reply,
                    });
                }
                // One call at least is answered: the last may not wait.
                let choice = if choice == 4 { 2 } else { choice };
                let mut world = lock(&self.world);
                let now = world.now();
                if choice == 3 {
                    world.sender_left(request);
                    world.note(
                        Some(command),
                        format!("call#{call} crashed while sending request #{request}"),
                    );
                    if self.rng.u32(..100) < self.mood.lost.max(50) {
                        // Before the request left the process, or lost on the way.
                        world.drop_request(request);
                    }
                    drop(world);
                    self.tally.crashes_parked += 1;
                    live.remove(&call).expect("live").handle.abort();
                    return None;
                }
                let timed_out = now >= deadline_at;
                let (answer, how) = match choice {
                    1 => {
                        world.process(request);
                        self.tally.lost_answers += 1;
                        (ProviderAnswer::Unknown, "answer lost")
                    }
                    2 => {
                        if self.rng.u32(..100) < self.mood.lost {
                            world.drop_request(request);
                        }
                        self.tally.gave_up += 1;
                        (
                            ProviderAnswer::Unknown,
                            "no answer yet: the sender gives up",
                        )
                    }
                    _ => {
                        world.process(request);
                        if timed_out {
                            self.tally.send_timeouts += 1;
                            (ProviderAnswer::Unknown, "past the deadline: timed out")
                        } else {
                            (world.answer_of(request), "answered")
                        }
                    }
                };
                world.sender_left(request);
                world.note(
                    Some(command),
                    format!(
                        "call#{call} request #{request}: {how}: {}",
                        send_text(&answer)
                    ),
                );
                drop(world);
                live[&call].resumed.store(now, Ordering::SeqCst);
                let _ = reply.send(answer);
                None
            }
            Parked::Lookup {
                command,
                account,
                key,
                truth,
                evaluated_at,
                deadline_at,
                reply,
            } => {
                let unavailable = self.mood.unavailable;
                let roll = self.rng.u32(..100);
                let wait = roll >= 88;
                if wait && !must {
                    return Some(Parked::Lookup {
                        command,
                        account,
                        key,
                        truth,
                        evaluated_at,
                        deadline_at,
                        reply,
                    });
                }
                if (80..88).contains(&roll) {
                    self.tally.crashes_parked += 1;
                    self.note(
                        Some(command),
                        format!("call#{call} crashed while looking up"),
                    );
                    live.remove(&call).expect("live").handle.abort();
                    return None;
                }
                let mut world = lock(&self.world);
                let now = world.now();
                let answer = if now >= deadline_at {
                    self.tally.lookup_timeouts += 1;
                    ProviderAnswer::Unknown
                } else if roll < unavailable.min(80) {
                    self.tally.lookups_unavailable += 1;
                    ProviderAnswer::Unknown
                } else if self.rng.bool() {
                    // Evaluated when it arrived (a slow response).
                    self.tally.lookups_answered_stale += 1;
                    if truth == ProviderAnswer::NotFound
                        && world.settles_between(command, evaluated_at, now)
                    {
                        self.tally.stale_not_found_across_settle += 1;
                    }
                    truth
                } else {
                    world.lookup(command, account, &key)
                };
                world.note(
                    Some(command),
                    format!("call#{call} lookup answered: {}", lookup_text(&answer)),
                );
                drop(world);
                live[&call].resumed.store(now, Ordering::SeqCst);
                let _ = reply.send(answer);
                None
            }
        }
    }

    /// One answer a caller was given, checked against the provider's ledger.
    fn observe(
        &mut self,
        call: u64,
        worker: usize,
        (c, variant): (usize, Variant),
        result: Result<Execution, JournalError>,
    ) {
        *self.tally.answers.entry(kind(&result)).or_default() += 1;
        let text = match &result {
            Ok(Execution::RetryLater { after }) => format!("retry_later {}s", after.as_secs()),
            Err(error) if kind(&result) == "error" => format!("error {error:?}"),
            _ => kind(&result).to_owned(),
        };
        self.note(Some(c), format!("call#{call} w{worker} answered {text}"));
        self.check_answer(c, &result);
        self.commands[c].answers.push((call, variant, result));
    }

    fn check_answer(&mut self, c: usize, result: &Result<Execution, JournalError>) {
        let (charge, declined) = {
            let world = lock(&self.world);
            let charge = world
                .charge_of
                .get(&c)
                .map(|&i| world.charges[i].envelope.clone());
            (charge, world.declined.contains(&c))
        };
        match result {
            Ok(Execution::Succeeded(envelope)) => {
                if charge.as_ref() != Some(envelope) {
                    self.violation(c, "answered a success that is not the command's charge");
                }
            }
            Ok(Execution::Declined) => {
                if charge.is_some() || !declined {
                    self.violation(c, "answered declined, but the ledger disagrees");
                }
            }
            Ok(Execution::SucceededWithoutResult) => {
                self.violation(c, "succeeded without a result: every success stores one");
            }
            Ok(Execution::RetryLater { after }) => {
                if *after > Duration::from_secs(LEASE as u64) {
                    self.violation(c, "retry later beyond a lease");
                }
            }
            Ok(Execution::InProgress | Execution::PendingReconciliation) => {}
            Err(JournalError::PlanConflict) => self.tally.plan_conflicts += 1,
            Err(error) => self.violation(c, &format!("execute failed: {error:?}")),
        }
        if let Ok(terminal @ (Execution::Succeeded(_) | Execution::Declined)) = result {
            let first = self.commands[c]
                .terminal
                .get_or_insert_with(|| terminal.clone());
            if first != terminal {
                let what = "two different terminal answers";
                self.violation(c, what);
            }
        }
    }

    /// The plan variant whose fingerprint `c`'s status shows.
    fn bound(&self, c: usize, fingerprint: &str) -> Variant {
        let cmd = &self.commands[c];
        let identity = cmd.input.identity();
        VARIANTS
            .into_iter()
            .find(|v| v.plan(&cmd.parameters).fingerprint(&identity).as_str() == fingerprint)
            .unwrap_or_else(|| self.violation(c, "a bound plan no worker has"))
    }

    /// The provider turns reliable (every pending request processed or dropped, every
    /// call answered at once and truthfully) and each command of the generation is
    /// driven, with its bound plan, as far as it goes: terminal, or waiting for
    /// evidence once its key may be forgotten.
    async fn drain(&mut self, generation: &[usize]) {
        lock(&self.world).settle_all();
        self.note(
            None,
            "drain: the provider answers everything now".to_owned(),
        );
        for &c in generation {
            for _ in 0..24 {
                let status = match self.journal.send_status(&self.commands[c].input).await {
                    Ok(status) => status,
                    Err(JournalError::NotRegistered) => {
                        let variant = Variant::Right;
                        self.drain_call(c, variant).await;
                        continue;
                    }
                    Err(error) => self.violation(c, &format!("status failed: {error:?}")),
                };
                if status.command.state.is_terminal() {
                    break;
                }
                let variant = match &status.send {
                    Some(send) => self.bound(c, send.plan_fingerprint.as_str()),
                    None => Variant::Right,
                };
                match self.drain_call(c, variant).await {
                    Execution::Succeeded(_) | Execution::Declined => {}
                    Execution::InProgress | Execution::RetryLater { .. } => {
                        lock(&self.world).advance((LEASE + 1) * SECOND, "drain: past a lease");
                    }
                    Execution::PendingReconciliation => {
                        let status = self
                            .journal
                            .send_status(&self.commands[c].input)
                            .await
                            .expect("status");
                        let send = status.send.expect("a send state");
                        let now = self.now();
                        match send.absence_provable_from {
                            None => break,
                            Some(from) => {
                                let wait = (from.micros() - now).max(SECOND);
                                lock(&self.world).advance(wait, "drain: to the provable instant");
                            }
                        }
                    }
                    Execution::SucceededWithoutResult => unreachable!("checked"),
                }
            }
        }
    }

    async fn drain_call(&mut self, c: usize, variant: Variant) -> Execution {
        let call = self.next_call;
        self.next_call += 1;
        self.tally.drain_calls += 1;
        let provider = self.provider(call, c, variant, false);
        let plan = variant.plan(&self.commands[c].parameters);
        let input = self.commands[c].input.clone();
        self.note(Some(c), format!("call#{call} drain {variant:?}: execute"));
        let result = self.journal.execute(&input, &plan, &provider).await;
        self.observe(call, WORKERS, (c, variant), result.clone());
        match result {
            Ok(execution) => execution,
            Err(error) => self.violation(c, &format!("the drain's execute failed: {error:?}")),
        }
    }

    /// The checks of [`Self::check_generation`] on one command against the ledger;
    /// the charge a succeeded command's stored result must equal.
    fn judge(
        &mut self,
        c: usize,
        status: &CommandStatus,
        bound: Option<Variant>,
        now: i64,
    ) -> Option<ResultEnvelope> {
        let terminal_state = status.command.state.is_terminal();
        let world = lock(&self.world);
        let charge = world.charge_of.get(&c).map(|&i| &world.charges[i]);
        let requests: Vec<&Request> = world
            .by_command
            .get(&c)
            .into_iter()
            .flatten()
            .map(|&id| &world.requests[id])
            .collect();
        let mut succeeded_with = None;
        match (&status.send, bound) {
            (Some(send), Some(variant)) => {
                if variant != Variant::Right {
                    self.tally.wrong_plan_bound += 1;
                }
                self.tally.max_attempt = self.tally.max_attempt.max(send.attempt);
                if send.attempt >= 2 {
                    self.tally.commands_with_attempt_2 += 1;
                }
                for r in &requests {
                    if r.variant != variant || r.attempt > send.attempt {
                        world.violation(c, "a request under another plan or a later attempt");
                    }
                    if r.attempt < send.attempt && matches!(r.state, State::Processed(_)) {
                        world.violation(
                            c,
                            "an attempt recorded absent holds an outcome at the provider",
                        );
                    }
                    if r.state == State::Pending {
                        world.violation(c, "a request still pending after the drain");
                    }
                }
                let key = world
                    .attempt_keys
                    .get(&(c, variant.operation(), send.attempt))
                    .cloned();
                match status.command.state.as_str() {
                    "succeeded" => {
                        self.tally.succeeded += 1;
                        let Some(charge) = charge else {
                            world.violation(c, "succeeded with no charge");
                        };
                        if Some(&charge.key) != key.as_ref() {
                            world
                                .violation(c, "succeeded, but charged under another attempt's key");
                        }
                        succeeded_with = Some(charge.envelope.clone());
                    }
                    "failed_final" => {
                        self.tally.failed += 1;
                        if charge.is_some() || !world.declined.contains(&c) {
                            world.violation(c, "failed_final, but the ledger disagrees");
                        }
                    }
                    _ => {
                        // Not terminal after the drain: only an outcome unknown past
                        // the cutoff, once the provider may have forgotten the key,
                        // so that no lookup can prove an absence: it waits for
                        // evidence or an operator.
                        let open = send.state.outcome_unknown();
                        let forgotten_from =
                            send.send_cutoff_at.micros() + (RETENTION - CUTOFF) * SECOND;
                        if !(open
                            && send.needs_reconciliation
                            && send.absence_provable_from.is_none()
                            && now >= forgotten_from)
                        {
                            world.violation(
                                c,
                                &format!("left unexplained after the drain: {send:?}"),
                            );
                        }
                        self.tally.pending_forgotten += 1;
                        if charge.is_some() {
                            self.tally.pending_forgotten_charged += 1;
                        }
                    }
                }
            }
            _ => {
                if !requests.is_empty() || terminal_state {
                    world.violation(c, "sent or terminal, but no plan is bound");
                }
                self.tally.never_sent += 1;
            }
        }
        for (call, variant, answer) in &self.commands[c].answers {
            let other_plan = bound.is_some_and(|b| b != *variant);
            let conflict = matches!(answer, Err(JournalError::PlanConflict));
            if conflict && !other_plan {
                world.violation(c, &format!("call#{call}: plan_conflict for the bound plan"));
            }
            if other_plan
                && !matches!(
                    answer,
                    Err(JournalError::PlanConflict)
                        | Ok(Execution::InProgress
                            | Execution::RetryLater { .. }
                            | Execution::Succeeded(_)
                            | Execution::Declined)
                )
            {
                world.violation(
                    c,
                    &format!("call#{call} with another plan answered {answer:?}"),
                );
            }
            let terminal = matches!(answer, Ok(Execution::Succeeded(_) | Execution::Declined));
            if terminal && !terminal_state {
                world.violation(
                    c,
                    &format!("call#{call} answered terminal, the command is not"),
                );
            }
        }
        succeeded_with
    }

    /// After the drain: each command terminal as the ledger says, or in a state its
    /// status explains; every earlier attempt never processed; plan conflicts only for
    /// other plans than the bound one.
    async fn check_generation(&mut self, generation: &[usize]) {
        for &c in generation {
            let input = self.commands[c].input.clone();
            let status = self.journal.send_status(&input).await.expect("status");
            let bound = status
                .send
                .as_ref()
                .map(|send| self.bound(c, send.plan_fingerprint.as_str()));
            let now = self.now();
            let succeeded_with = self.judge(c, &status, bound, now);
            if let Some(envelope) = succeeded_with {
                let stored = self.journal.result(&input).await.expect("result");
                if stored.as_ref() != Some(&envelope) {
                    self.violation(c, "the stored result is not the provider's charge");
                }
            }
        }
        let mut world = lock(&self.world);
        if std::env::var_os("CJ_MODEL_TRACE").is_some() {
            println!("{}", world.log.join("\n"));
        }
        world.log.clear();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn provider_model_execute_never_charges_a_command_twice() {
    let seed = seed();
    let _report = SeedReport(seed);
    let target = target_calls();
    let began = Instant::now();
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_930_000_000, 0).expect("time"),
    ));
    let connection = support::fresh_connection().await;
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let mut run = Run {
        journal,
        world: Arc::new(Mutex::new(World::new(clock.clone(), seed))),
        rng: fastrand::Rng::with_seed(seed),
        commands: Vec::new(),
        tx,
        rx,
        next_call: 0,
        mood: MOODS[0].1,
        tally: Tally::default(),
    };
    while run.tally.calls < target {
        let generation = run.new_generation();
        for round in 0..ROUNDS_PER_GENERATION {
            if run.rng.u32(..100) < 4 {
                run.change_mood();
            }
            run.jump(&generation, "between rounds");
            run.round(&generation).await;
            let settled = generation
                .iter()
                .all(|&c| run.commands[c].terminal.is_some());
            if (settled && round + 1 >= MIN_ROUNDS) || run.tally.calls >= target {
                break;
            }
        }
        run.drain(&generation).await;
        run.check_generation(&generation).await;
    }
    let ran = began.elapsed();
    let report = command_journal::verify(&connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "verify: {:?}", report.findings);
    let world = lock(&run.world);
    let p = &world.tally;
    let t = &run.tally;
    let charged_commands = world.charge_of.len();
    assert_eq!(
        p.charges as usize, charged_commands,
        "one charge per command"
    );
    assert_eq!(
        p.reprocessed_forgotten, 0,
        "a request processed after its key was forgotten: sent after the cutoff"
    );
    println!(
        "provider model seed={seed} execute_calls={} drain_calls={} rounds={} generations={} \
         commands={} charges={} second_charges=0 declines={} terminal_succeeded={} \
         terminal_failed={} pending_forgotten={} (with a charge: {}) never_sent={} \
         attempt_2_plus_commands={} max_attempt={} wrong_plan_bound={} plan_conflicts={} \
         answers={:?} sends={} resends={} sends_attempt_2_plus={} processed={} \
         processed_after_sender_left={} deduplicated={} dropped={} forced_by_clock={} \
         sent_after_lease={} lookups={} lookups_not_visible_yet={} lookups_forgotten={} sends_near_cutoff={} lookups_before_settle={} \
         lookups_unavailable={} lookups_answered_stale={} stale_not_found_across_settle={} race_jumps={} lookup_timeouts={} \
         send_timeouts={} lost_answers={} gave_up={} crashes_parked={} crashes_running={} \
         jumps={} targeted_jumps={} mid_flight_jumps={} recovery_jobs={} recovered={:?} \
         verify=clean ran={ran:?} total={:?}",
        t.calls,
        t.drain_calls,
        t.rounds,
        t.generations,
        run.commands.len(),
        p.charges,
        p.declines,
        t.succeeded,
        t.failed,
        t.pending_forgotten,
        t.pending_forgotten_charged,
        t.never_sent,
        t.commands_with_attempt_2,
        t.max_attempt,
        t.wrong_plan_bound,
        t.plan_conflicts,
        t.answers,
        p.sends,
        p.resends,
        p.sends_attempt_2_plus,
        p.processed,
        p.processed_late,
        p.deduplicated,
        p.dropped,
        p.forced,
        p.sent_after_lease,
        p.lookups,
        p.lookups_not_visible_yet,
        p.lookups_forgotten,
        p.sends_near_cutoff,
        p.lookups_before_settle,
        t.lookups_unavailable,
        t.lookups_answered_stale,
        t.stale_not_found_across_settle,
        t.race_jumps,
        t.lookup_timeouts,
        t.send_timeouts,
        t.lost_answers,
        t.gave_up,
        t.crashes_parked,
        t.crashes_running,
        t.jumps,
        t.targeted_jumps,
        t.mid_flight_jumps,
        t.recoveries,
        t.recovered,
        began.elapsed(),
    );
}

/// The sequence the long form found before `execute` judged a lookup by when it was
/// asked (seeds 3, 4, 8, 9 and 10 of its first run), minimized: one worker, three
/// calls. The re-send at 2,400 s is charged, its answer lost, and the provider's lookup
/// may miss that charge until the contract's bound, the re-send's lease end plus the
/// settle window (2,460 + 300 = 2,760 s). A lookup asked at 2,740 s, past the cutoff,
/// is evaluated then ("none") and answers 21 s later, within its deadline. Judged at the
/// reconciliation (2,761 s, past `absenceProvableFrom` = 2,400 + 60 + 300), attempt 1
/// was recorded absent and the same call sent attempt 2 under a new key: a second
/// charge. Now the "none" of a lookup asked before `absenceProvableFrom` writes nothing.
#[tokio::test]
async fn provider_model_a_lookup_asked_before_the_absence_is_provable_proves_nothing() {
    struct Slow {
        clock: Arc<ManualClock>,
        sends: Mutex<Vec<(i64, bool)>>,
        charges: Mutex<u32>,
    }
    impl Provider for Slow {
        async fn send(&self, request: SendRequest<'_>) -> ProviderAnswer {
            let mut sends = self.sends.lock().expect("sends");
            sends.push((request.attempt, request.resend));
            // The first request is lost; every later one is processed (attempt 1's
            // re-send, and any other attempt), its answer lost.
            if sends.len() >= 2 {
                *self.charges.lock().expect("charges") += 1;
            }
            ProviderAnswer::Unknown
        }
        async fn lookup(&self, _key: &str) -> ProviderAnswer {
            // Evaluated on arrival, before the re-send's charge is visible; the
            // response takes 21 s (the lookup's deadline is 50 s).
            self.clock.advance(TimeDelta::seconds(21));
            ProviderAnswer::NotFound
        }
    }
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_930_000_000, 0).expect("time"),
    ));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    let cmd = command(1_000_000);
    let plan = Variant::Right.plan(&cmd.parameters);
    let provider = Slow {
        clock: clock.clone(),
        sends: Mutex::new(Vec::new()),
        charges: Mutex::new(0),
    };
    let retry = Execution::RetryLater {
        after: Duration::from_secs(60),
    };
    assert_eq!(
        journal.execute(&cmd.input, &plan, &provider).await,
        Ok(retry.clone())
    );
    clock.advance(TimeDelta::seconds(2_400));
    assert_eq!(
        journal.execute(&cmd.input, &plan, &provider).await,
        Ok(retry)
    );
    clock.advance(TimeDelta::seconds(340));
    let answer = journal.execute(&cmd.input, &plan, &provider).await;
    let sends = provider.sends.lock().expect("sends").clone();
    let charges = *provider.charges.lock().expect("charges");
    assert_eq!(
        (charges, answer),
        (1, Ok(Execution::PendingReconciliation)),
        "sends (attempt, resend): {sends:?}"
    );
}

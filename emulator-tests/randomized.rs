//! A seeded randomized concurrency check: many workers race over a few commands,
//! acquiring (with `acquire_lease` or the one-call `start`), completing, failing,
//! crashing while they hold a lease and repeating calls whose response they "lost",
//! while a shared manual clock jumps across lease expiries. One command of each
//! generation is left unregistered for `start` to register. Afterwards the stored
//! documents alone, parsed field by field here (not with the crate's codecs), must
//! show a well-formed history, and every answer any worker was given must agree with
//! it.
//!
//! - `cargo test --test emulator randomized` runs the short form (150 operations).
//! - `CJ_LONG=1 cargo test --test emulator randomized -- --nocapture` runs
//!   the long form (5,000 operations) and prints a summary.
//! - `CJ_OPERATIONS=<n>` runs at least `n` operations (the endurance form:
//!   `CJ_OPERATIONS=25000`, several seeds).
//! - `CJ_RANDOM_SEED=<n>` replays a seed; a failing run prints its seed.
//!
//! The seed fixes every worker's choices and the clock's schedule for the same
//! answers. The emulator decides how concurrent calls interleave, which the test
//! cannot fix, so a replay makes the same choices as long as it gets the same answers.

use super::support::{self, list};
use chrono::{DateTime, TimeDelta};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::RegistrationOutcome;
use command_journal::time::ManualClock;
use command_journal::{Clock, Timestamp};
use command_journal::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use gcloud_sdk::google::firestore::v1::Document;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

const WORKERS: u64 = 8;
const COMMANDS_AT_ONCE: u64 = 3;
/// Commands `n` with `n % COMMANDS_AT_ONCE == STARTED` are registered by `start`
/// calls only; the others are registered up front by racing `register_command`s.
const STARTED: u64 = 2;
/// Rounds before the workers move on to fresh commands.
const ROUNDS_PER_GENERATION: u64 = 10;
const SHORT_OPERATIONS: usize = 150;
const LONG_OPERATIONS: usize = 5_000;
const DEFAULT_SEED: u64 = 0x5eed_0009;
const LEASE_MICROS: i64 = 60_000_000;
/// A jump of the shared clock: just past one lease.
const CLOCK_STEP: TimeDelta = TimeDelta::seconds(61);

/// Prints the seed if the test panics, so the run can be replayed.
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "randomized concurrency check failed; replay with CJ_RANDOM_SEED={}",
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

fn operations() -> usize {
    if let Some(n) = std::env::var("CJ_OPERATIONS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
    {
        return n;
    }
    match std::env::var("CJ_LONG").as_deref() {
        Ok("1") => LONG_OPERATIONS,
        _ => SHORT_OPERATIONS,
    }
}

fn command(n: u64) -> CommandInput {
    let id = support::uuid(6, n);
    let payload = json!({"n": n});
    CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "service",
        caller_id: "randomized_checker",
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("valid command")
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(5, n)).expect("lease id")
}

/// Each worker completes with its own reference, so two successes would conflict.
fn reference(worker: u64) -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&format!("{:02x}", worker + 0xa0).repeat(32))
        .expect("reference")
}

/// One call a worker makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Acquire { lease: u64 },
    Start { lease: u64 },
    Complete { lease: u64, fence: i64 },
    Fail { lease: u64, fence: i64 },
}

impl Call {
    fn lease(self) -> u64 {
        match self {
            Self::Acquire { lease }
            | Self::Start { lease }
            | Self::Complete { lease, .. }
            | Self::Fail { lease, .. } => lease,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Lease(LeaseOutput),
    Terminal(TerminalOutput),
}

/// One call and what the worker was told.
#[derive(Debug, Clone)]
struct Record {
    worker: u64,
    command: u64,
    call: Call,
    /// The second of a pair of identical calls (the first one's answer was "lost").
    repeat: bool,
    /// What `start` said of the registration (`None` for any other call).
    registration: Option<RegistrationOutcome>,
    clock_before: i64,
    clock_after: i64,
    result: Result<Answer, JournalError>,
}

/// What a worker believes about one command.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    lease: u64,
    fence: Option<i64>,
}

struct Worker {
    id: u64,
    rng: fastrand::Rng,
    next_lease: u64,
    attempts: HashMap<u64, Attempt>,
    /// Leases this worker abandoned ("crashed") with the fence they had.
    zombies: Vec<(u64, u64, i64)>,
}

impl Worker {
    fn new(id: u64, seed: u64) -> Self {
        Self {
            id,
            rng: fastrand::Rng::with_seed(seed ^ (id + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            next_lease: 0,
            attempts: HashMap::new(),
            zombies: Vec::new(),
        }
    }

    fn fresh_lease(&mut self) -> u64 {
        self.next_lease += 1;
        self.id * 1_000_000 + self.next_lease
    }

    /// Chooses this round's call on one of `commands`, or `None` for a crash.
    fn choose(&mut self, commands: &[u64]) -> Option<(u64, Call)> {
        // A worker mostly goes on with a command it holds a lease on.
        let held: Vec<u64> = commands
            .iter()
            .copied()
            .filter(|c| self.attempts.get(c).is_some_and(|a| a.fence.is_some()))
            .collect();
        let command = if !held.is_empty() && self.rng.u32(..100) < 75 {
            held[self.rng.usize(..held.len())]
        } else {
            commands[self.rng.usize(..commands.len())]
        };
        let roll = self.rng.u32(..100);
        let zombie = self
            .zombies
            .iter()
            .filter(|(c, _, _)| *c == command)
            .copied()
            .collect::<Vec<_>>();
        match self.attempts.get(&command).copied() {
            Some(Attempt {
                lease,
                fence: Some(fence),
            }) => match roll {
                0..35 => Some((command, Call::Complete { lease, fence })),
                35..50 => Some((command, Call::Fail { lease, fence })),
                50..62 => {
                    // Crash while holding the lease: stop using it.
                    self.attempts.remove(&command);
                    self.zombies.push((command, lease, fence));
                    None
                }
                _ if self.rng.u32(..100) < 30 => Some((command, Call::Start { lease })),
                _ => Some((command, Call::Acquire { lease })),
            },
            _ if roll < 15 && !zombie.is_empty() => {
                let (_, lease, fence) = zombie[self.rng.usize(..zombie.len())];
                Some(if self.rng.bool() {
                    (command, Call::Complete { lease, fence })
                } else {
                    (command, Call::Fail { lease, fence })
                })
            }
            _ => {
                let lease = self.fresh_lease();
                self.attempts
                    .insert(command, Attempt { lease, fence: None });
                Some(if self.rng.bool() {
                    (command, Call::Start { lease })
                } else {
                    (command, Call::Acquire { lease })
                })
            }
        }
    }

    /// Updates the worker's beliefs from an answer.
    fn learn(&mut self, command: u64, call: Call, result: &Result<Answer, JournalError>) {
        let current = self.attempts.get(&command).copied();
        let is_current = current.is_some_and(|a| a.lease == call.lease());
        match result {
            Ok(Answer::Lease(LeaseOutput::Acquired { fence_epoch, .. })) => {
                self.attempts.insert(
                    command,
                    Attempt {
                        lease: call.lease(),
                        fence: Some(fence_epoch.get()),
                    },
                );
            }
            Ok(_) | Err(JournalError::TerminalConflict) => {
                if is_current {
                    self.attempts.remove(&command);
                }
            }
            Err(_) => {
                if is_current {
                    self.attempts.remove(&command);
                    if let Some(Attempt {
                        lease,
                        fence: Some(fence),
                    }) = current
                    {
                        self.zombies.push((command, lease, fence));
                    }
                }
            }
        }
    }
}

async fn perform(
    journal: &Journal,
    commands: &HashMap<u64, CommandInput>,
    worker: u64,
    command: u64,
    call: Call,
) -> (Result<Answer, JournalError>, Option<RegistrationOutcome>) {
    let cmd = &commands[&command];
    let result = match call {
        Call::Start { lease: l } => {
            return match journal.start(cmd, &lease(l)).await {
                Ok(output) => (
                    Ok(Answer::Lease(output.lease)),
                    Some(output.registration_outcome()),
                ),
                Err(error) => (Err(error), None),
            };
        }
        Call::Acquire { lease: l } => journal
            .acquire_lease(cmd, &lease(l))
            .await
            .map(Answer::Lease),
        Call::Complete { lease: l, fence } => match command_journal::FenceEpoch::new(fence) {
            Ok(fence) => journal
                .complete_command(cmd, &lease(l), fence, &reference(worker))
                .await
                .map(Answer::Terminal),
            Err(error) => Err(error),
        },
        Call::Fail { lease: l, fence } => match command_journal::FenceEpoch::new(fence) {
            Ok(fence) => journal
                .fail_command(cmd, &lease(l), fence)
                .await
                .map(Answer::Terminal),
            Err(error) => Err(error),
        },
    };
    (result, None)
}

fn micros(clock: &ManualClock) -> i64 {
    Timestamp::from_datetime(clock.now())
        .expect("clock in range")
        .micros()
}

/// One worker's turn: its call, made twice in a row when the first answer is "lost".
async fn turn(
    mut worker: Worker,
    journal: Journal,
    clock: Arc<ManualClock>,
    commands: Arc<HashMap<u64, CommandInput>>,
    generation: Vec<u64>,
) -> (Worker, Vec<Record>) {
    let mut records = Vec::new();
    let Some((command, call)) = worker.choose(&generation) else {
        return (worker, records);
    };
    let lost_response = worker.rng.u32(..100) < 20;
    for repeat in [false, true] {
        if repeat && !lost_response {
            break;
        }
        let clock_before = micros(&clock);
        let (result, registration) = perform(&journal, &commands, worker.id, command, call).await;
        let clock_after = micros(&clock);
        records.push(Record {
            worker: worker.id,
            command,
            call,
            repeat,
            registration,
            clock_before,
            clock_after,
            result,
        });
    }
    if let Some(last) = records.last() {
        let result = last.result;
        worker.learn(command, call, &result);
    }
    (worker, records)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn randomized_workers_keep_every_invariant() {
    let seed = seed();
    let _report = SeedReport(seed);
    let target = operations();
    let began = Instant::now();
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_970_000_000, 500_000_000).expect("time"),
    ));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut workers: Vec<Worker> = (0..WORKERS).map(|id| Worker::new(id, seed)).collect();
    let mut commands: HashMap<u64, CommandInput> = HashMap::new();
    let mut records: Vec<Record> = Vec::new();
    let mut registrations = 0u64;
    let mut generation: Vec<u64> = Vec::new();
    let mut round = 0u64;
    while records.len() < target {
        if round.is_multiple_of(ROUNDS_PER_GENERATION) {
            let first = commands.len() as u64;
            generation = (first..first + COMMANDS_AT_ONCE).collect();
            for &n in &generation {
                commands.insert(n, command(n));
            }
            registrations += register_racing(&journal, &generation, &commands).await;
            for worker in &mut workers {
                worker.attempts.clear();
                worker.zombies.clear();
            }
        }
        round += 1;
        if rng.u32(..100) < 20 {
            clock.advance(CLOCK_STEP);
        }
        let shared = Arc::new(commands.clone());
        let mid_round = (rng.u32(..100) < 10).then(|| {
            let (clock, yields) = (clock.clone(), rng.u32(..32));
            tokio::spawn(async move {
                for _ in 0..yields {
                    tokio::task::yield_now().await;
                }
                clock.advance(CLOCK_STEP);
            })
        });
        let tasks: Vec<_> = workers
            .drain(..)
            .map(|worker| {
                tokio::spawn(turn(
                    worker,
                    journal.clone(),
                    clock.clone(),
                    shared.clone(),
                    generation.clone(),
                ))
            })
            .collect();
        for task in tasks {
            let (worker, made) = task.await.expect("worker task");
            workers.push(worker);
            records.extend(made);
        }
        if let Some(task) = mid_round {
            task.await.expect("clock task");
        }
    }
    let ran = began.elapsed();

    let stored = Stored::read(&journal).await;
    let summary = check(&stored, &commands, &records);
    let stats = journal.stats();
    assert_eq!(
        stats.commits - stats.conflicts,
        registrations + summary.transitions,
        "every successful commit is one stored registration or transition"
    );
    println!(
        "randomized seed={seed} operations={} rounds={round} commands={} transitions={} \
         takeovers={} terminal={} busy={} rejected={} starts={} lost_response_repeats={} \
         attempts={} commits={} conflicts={} ran={ran:?} checked={:?}",
        records.len(),
        commands.len(),
        summary.transitions,
        summary.takeovers,
        summary.terminal,
        summary.busy,
        summary.rejected,
        summary.started,
        records.iter().filter(|r| r.repeat).count(),
        stats.attempts,
        stats.commits,
        stats.conflicts,
        began.elapsed() - ran,
    );
}

/// Two workers race to register each new command: exactly one creates it.
async fn register_racing(
    journal: &Journal,
    generation: &[u64],
    commands: &HashMap<u64, CommandInput>,
) -> u64 {
    let mut tasks = Vec::new();
    let registered = generation
        .iter()
        .filter(|&&n| n % COMMANDS_AT_ONCE != STARTED);
    let expected = registered.clone().count() as u64;
    for &n in registered {
        for _ in 0..2 {
            let (journal, cmd) = (journal.clone(), commands[&n].clone());
            tasks.push(tokio::spawn(
                async move { journal.register_command(&cmd).await },
            ));
        }
    }
    let mut created = 0;
    for task in tasks {
        match task.await.expect("registration task") {
            Ok(out) if out.outcome() == RegistrationOutcome::RegisteredNew => created += 1,
            Ok(_) => {}
            Err(error) => panic!("registration failed: {error:?}"),
        }
    }
    assert_eq!(created, expected, "one registered_new per command");
    created
}

// ---------------------------------------------------------------------------------
// the stored documents, parsed here
// ---------------------------------------------------------------------------------

fn field<'a>(doc: &'a Document, name: &str) -> &'a ValueType {
    doc.fields
        .get(name)
        .and_then(|v| v.value_type.as_ref())
        .unwrap_or_else(|| panic!("{} has no {name}", doc.name))
}

fn int(doc: &Document, name: &str) -> i64 {
    match field(doc, name) {
        ValueType::IntegerValue(v) => *v,
        other => panic!("{name} is not an integer: {other:?}"),
    }
}

fn text<'a>(doc: &'a Document, name: &str) -> &'a str {
    match field(doc, name) {
        ValueType::StringValue(v) => v,
        other => panic!("{name} is not a string: {other:?}"),
    }
}

fn nullable_text<'a>(doc: &'a Document, name: &str) -> Option<&'a str> {
    match field(doc, name) {
        ValueType::NullValue(_) => None,
        ValueType::StringValue(v) => Some(v),
        other => panic!("{name} is neither null nor a string: {other:?}"),
    }
}

fn time(doc: &Document, name: &str) -> i64 {
    match field(doc, name) {
        ValueType::TimestampValue(ts) => ts.seconds * 1_000_000 + i64::from(ts.nanos / 1_000),
        other => panic!("{name} is not a timestamp: {other:?}"),
    }
}

/// One audit event.
#[derive(Debug, Clone)]
struct Event {
    revision: i64,
    kind: String,
    fence: Option<i64>,
    expires: Option<i64>,
    occurred: i64,
    from: Option<String>,
    to: String,
}

/// Everything stored, by command key hash.
struct Stored {
    roots: BTreeMap<String, Document>,
    events: BTreeMap<String, Vec<Event>>,
    lifecycles: BTreeMap<String, Document>,
    audit_documents: usize,
}

impl Stored {
    async fn read(journal: &Journal) -> Self {
        let connection = journal.connection();
        let mut roots = BTreeMap::new();
        let mut lifecycles = BTreeMap::new();
        for root in list(connection, "", "checkoutRequests").await {
            let hash = root.name.rsplit('/').next().expect("id").to_owned();
            let parent = format!("checkoutRequests/{hash}");
            let mut found = list(connection, &parent, "lifecycle").await;
            assert!(found.len() <= 1, "one lifecycle at most");
            if let Some(doc) = found.pop() {
                assert!(doc.name.ends_with("/lifecycle/current"), "{}", doc.name);
                lifecycles.insert(hash.clone(), doc);
            }
            roots.insert(hash, root);
        }
        let audits = list(connection, "", "auditEvents").await;
        let audit_documents = audits.len();
        let mut events: BTreeMap<String, Vec<Event>> = BTreeMap::new();
        for doc in &audits {
            let id = doc.name.rsplit('/').next().expect("id");
            let rest = id
                .strip_prefix("commerce_command_")
                .expect("audit id prefix");
            let (hash, revision) = rest.split_once('_').expect("audit id shape");
            assert_eq!(revision.len(), 10, "ten-digit revision");
            let revision: i64 = revision.parse().expect("numeric revision");
            assert_eq!(int(doc, "commandRevision"), revision, "{id}");
            assert_eq!(text(doc, "commandKeyHash"), hash, "{id}");
            assert_eq!(text(doc, "aggregateType"), "commerce_command");
            let version = int(doc, "auditSchemaVersion");
            let event = Event {
                revision,
                kind: text(doc, "eventType").to_owned(),
                fence: (version == 2).then(|| int(doc, "fenceEpoch")),
                expires: (version == 2).then(|| time(doc, "leaseExpiresAt")),
                occurred: time(doc, "occurredAt"),
                from: nullable_text(doc, "fromState").map(str::to_owned),
                to: text(doc, "toState").to_owned(),
            };
            assert_eq!(version, if revision == 1 { 1 } else { 2 }, "{id}");
            events.entry(hash.to_owned()).or_default().push(event);
        }
        for list in events.values_mut() {
            list.sort_by_key(|e| e.revision);
        }
        Self {
            roots,
            events,
            lifecycles,
            audit_documents,
        }
    }
}

#[derive(Debug, Default)]
struct Summary {
    transitions: u64,
    takeovers: u64,
    terminal: u64,
    busy: u64,
    rejected: u64,
    started: u64,
}

/// The history of one command, as stored.
struct History<'a> {
    leases: Vec<&'a Event>,
    terminal: Option<&'a Event>,
}

/// Checks the stored history of every command, then every record against it.
fn check(stored: &Stored, commands: &HashMap<u64, CommandInput>, records: &[Record]) -> Summary {
    let mut summary = Summary::default();
    let mut by_command: BTreeMap<u64, Vec<&Record>> = BTreeMap::new();
    for record in records {
        by_command.entry(record.command).or_default().push(record);
    }
    let mut audit_total = 0;
    let mut registered = 0;
    for (n, cmd) in commands {
        let hash = cmd.identity().command_key_hash().to_string();
        let left_to_start = n % COMMANDS_AT_ONCE == STARTED;
        let Some(events) = stored.events.get(&hash) else {
            // Only a command left to `start` can be unregistered, when no start ran.
            assert!(left_to_start, "{hash}: a registered command without events");
            assert!(!stored.roots.contains_key(&hash) && !stored.lifecycles.contains_key(&hash));
            let told = by_command.remove(n).unwrap_or_default();
            for record in told {
                assert_eq!(
                    record.result,
                    Err(JournalError::NotRegistered),
                    "{record:?}"
                );
                assert!(!matches!(record.call, Call::Start { .. }), "{record:?}");
            }
            continue;
        };
        registered += 1;
        audit_total += events.len();
        let history = check_history(stored, &hash, events);
        summary.transitions += events.len() as u64 - 1;
        summary.takeovers += history.leases.len().saturating_sub(1) as u64;
        summary.terminal += u64::from(history.terminal.is_some());
        let told = by_command.remove(n).unwrap_or_default();
        check_registered_by_start(left_to_start, &stored.roots[&hash], events, &told);
        summary.started += told
            .iter()
            .filter(|r| matches!(r.call, Call::Start { .. }))
            .count() as u64;
        check_answers(
            left_to_start,
            cmd,
            stored.lifecycles.get(&hash),
            &history,
            &told,
            &mut summary,
        );
    }
    assert_eq!(
        stored.roots.len(),
        registered,
        "one root per registered command"
    );
    assert_eq!(
        stored.events.len(),
        registered,
        "audit events only for registered commands"
    );
    assert_eq!(stored.audit_documents, audit_total, "no stray audit event");
    assert!(by_command.is_empty(), "records for unknown commands");
    summary
}

/// `start` registered a command exactly once when it was left to it and never
/// otherwise; the call that registered it took the first lease in the same commit, at
/// the same captured time.
fn check_registered_by_start(
    left_to_start: bool,
    root: &Document,
    events: &[Event],
    told: &[&Record],
) {
    let new: Vec<&&Record> = told
        .iter()
        .filter(|r| r.registration == Some(RegistrationOutcome::RegisteredNew))
        .collect();
    if !left_to_start {
        assert!(
            new.is_empty(),
            "start registered a registered command: {new:?}"
        );
        return;
    }
    assert_eq!(new.len(), 1, "exactly one start registered it: {new:?}");
    let record = new[0];
    let registered_at = time(root, "registeredAt");
    assert!(
        record.clock_before <= registered_at && registered_at <= record.clock_after,
        "registered outside the registering call: {record:?}"
    );
    assert!(
        matches!(record.result, Ok(Answer::Lease(LeaseOutput::Acquired { fence_epoch: f, .. })) if f.get() == 1),
        "the registering start holds fence 1: {record:?}"
    );
    let first = events.get(1).expect("a first lease with the registration");
    assert_eq!(first.fence, Some(1));
    assert_eq!(first.occurred, registered_at, "one captured time for both");
}

/// Registration first, then leases whose fence rises by one per takeover after
/// expiry, then at most one terminal event under the newest lease; the lifecycle
/// equals the last event.
fn check_history<'a>(stored: &Stored, hash: &str, events: &'a [Event]) -> History<'a> {
    let revisions: Vec<i64> = events.iter().map(|e| e.revision).collect();
    let contiguous: Vec<i64> = (1..=events.len() as i64).collect();
    assert_eq!(revisions, contiguous, "{hash}: audit revisions are 1..=N");
    let registration = &events[0];
    assert_eq!(registration.kind, "command_registered");
    assert_eq!(
        (registration.from.as_deref(), registration.to.as_str()),
        (None, "registered")
    );
    assert_eq!(
        time(&stored.roots[hash], "registeredAt"),
        registration.occurred
    );
    let mut leases: Vec<&Event> = Vec::new();
    let mut terminal = None;
    for event in &events[1..] {
        assert!(
            terminal.is_none(),
            "{hash}: an event after the terminal event"
        );
        let fence = event.fence.expect("fence");
        let expires = event.expires.expect("expiry");
        match event.kind.as_str() {
            "command_lease_acquired" | "command_lease_taken_over" => {
                match leases.last() {
                    None => {
                        assert_eq!(event.kind, "command_lease_acquired", "{hash}");
                        assert_eq!(fence, 1, "{hash}: the first fence is 1");
                        assert_eq!(event.from.as_deref(), Some("registered"));
                        assert!(event.occurred >= registration.occurred);
                    }
                    Some(previous) => {
                        assert_eq!(event.kind, "command_lease_taken_over", "{hash}");
                        assert_eq!(
                            fence,
                            previous.fence.expect("fence") + 1,
                            "{hash}: a takeover raises the fence by exactly one"
                        );
                        assert!(
                            event.occurred >= previous.expires.expect("expiry"),
                            "{hash}: taken over before the lease expired"
                        );
                        assert_eq!(event.from.as_deref(), Some("leased"));
                    }
                }
                assert_eq!(event.to, "leased");
                assert_eq!(expires, event.occurred + LEASE_MICROS, "{hash}: 60 s lease");
                leases.push(event);
            }
            "command_succeeded" | "command_failed_final" => {
                let newest = leases.last().expect("a terminal event after a lease");
                assert_eq!(
                    event.fence, newest.fence,
                    "{hash}: the terminal event carries the newest lease's fence"
                );
                assert_eq!(event.expires, newest.expires, "{hash}: and its expiry");
                assert!(
                    newest.occurred <= event.occurred && event.occurred < expires,
                    "{hash}: finalized while the lease was active"
                );
                let to = if event.kind == "command_succeeded" {
                    "succeeded"
                } else {
                    "failed_final"
                };
                assert_eq!(
                    (event.from.as_deref(), event.to.as_str()),
                    (Some("leased"), to)
                );
                terminal = Some(event);
            }
            other => panic!("{hash}: unknown event type {other}"),
        }
    }
    let last = events.last().expect("registration");
    match stored.lifecycles.get(hash) {
        None => assert_eq!(events.len(), 1, "{hash}: transitions without a lifecycle"),
        Some(doc) => {
            let newest = leases.last().expect("a lifecycle after a lease");
            assert_eq!(text(doc, "commandKeyHash"), hash);
            assert_eq!(text(doc, "state"), last.to, "{hash}: lifecycle state");
            assert_eq!(
                int(doc, "commandRevision"),
                last.revision,
                "{hash}: revision"
            );
            assert_eq!(Some(int(doc, "fenceEpoch")), newest.fence, "{hash}: fence");
            assert_eq!(Some(time(doc, "leaseExpiresAt")), newest.expires);
            assert_eq!(time(doc, "leaseAcquiredAt"), newest.occurred);
            assert_eq!(time(doc, "updatedAt"), last.occurred);
            assert_eq!(time(doc, "createdAt"), leases[0].occurred);
            let succeeded = terminal.is_some_and(|t| t.kind == "command_succeeded");
            assert_eq!(
                nullable_text(doc, "terminalCommitmentKind"),
                succeeded.then_some("business_record_digest")
            );
            assert_eq!(
                nullable_text(doc, "terminalCommitmentHash").is_some(),
                succeeded
            );
        }
    }
    History { leases, terminal }
}

/// Every answer given for one command agrees with its stored history.
fn check_answers(
    left_to_start: bool,
    cmd: &CommandInput,
    lifecycle: Option<&Document>,
    history: &History,
    told: &[&Record],
    summary: &mut Summary,
) {
    let identity = cmd.identity();
    let owner = |l: u64| {
        cmd.lease_owner(&identity, &lease(l))
            .expect("owner")
            .to_string()
    };
    // fence -> (lease, expiry) told to whoever acquired it.
    let mut holders: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
    for record in told {
        if let Ok(Answer::Lease(LeaseOutput::Acquired {
            fence_epoch,
            lease_expires_at,
        })) = record.result
        {
            let expires = lease_expires_at.micros();
            let held = (record.call.lease(), expires);
            let first = *holders.entry(fence_epoch.get()).or_insert(held);
            assert_eq!(
                first, held,
                "two answers of fence {fence_epoch} name different holders or expiries"
            );
            let event = history
                .leases
                .iter()
                .find(|e| e.fence == Some(fence_epoch.get()))
                .unwrap_or_else(|| panic!("told fence {fence_epoch}, never stored"));
            assert_eq!(
                event.expires,
                Some(expires),
                "told another expiry than stored"
            );
            assert!(
                expires - LEASE_MICROS <= record.clock_after,
                "a lease from the future"
            );
        }
    }
    let stored_fences: Vec<i64> = history.leases.iter().filter_map(|e| e.fence).collect();
    let told_fences: Vec<i64> = holders.keys().copied().collect();
    assert_eq!(
        stored_fences, told_fences,
        "every stored lease was told to its holder"
    );
    if let Some(doc) = lifecycle {
        let (lease, _) = holders[&int(doc, "fenceEpoch")];
        assert_eq!(
            text(doc, "leaseOwnerFingerprint"),
            owner(lease),
            "the lifecycle's holder"
        );
    }
    let mut terminal_told = false;
    for record in told {
        let call = record.call;
        match (&record.result, call) {
            (Ok(Answer::Lease(LeaseOutput::Acquired { .. })), _) => {}
            (Ok(Answer::Lease(LeaseOutput::Busy)), _) => {
                summary.busy += 1;
                assert!(!history.leases.is_empty(), "busy before any lease");
            }
            (Ok(Answer::Lease(LeaseOutput::Succeeded)), _) => {
                assert_eq!(
                    history.terminal.map(|t| t.kind.as_str()),
                    Some("command_succeeded")
                );
            }
            (Ok(Answer::Lease(LeaseOutput::FailedFinal)), _) => {
                assert_eq!(
                    history.terminal.map(|t| t.kind.as_str()),
                    Some("command_failed_final")
                );
            }
            (
                Ok(Answer::Terminal(outcome)),
                Call::Complete { lease, fence } | Call::Fail { lease, fence },
            ) => {
                terminal_told = true;
                let terminal = history.terminal.expect("told terminal, none stored");
                let kind = match (outcome, call) {
                    (TerminalOutput::Succeeded, Call::Complete { .. }) => "command_succeeded",
                    (TerminalOutput::FailedFinal, Call::Fail { .. }) => "command_failed_final",
                    _ => panic!("a terminal answer of the other kind: {record:?}"),
                };
                assert_eq!(
                    terminal.kind, kind,
                    "told another terminal outcome than stored"
                );
                assert_eq!(
                    terminal.fence,
                    Some(fence),
                    "told a terminal under another fence"
                );
                assert_eq!(
                    holders.get(&fence).map(|h| h.0),
                    Some(lease),
                    "not the holder"
                );
                let doc = lifecycle.expect("a lifecycle");
                if kind == "command_succeeded" {
                    let reference = reference(record.worker);
                    assert_eq!(
                        nullable_text(doc, "terminalCommitmentHash"),
                        Some(identity.terminal_commitment(&reference).as_str()),
                        "the stored commitment is the winner's"
                    );
                }
            }
            (Ok(Answer::Terminal(_)), Call::Acquire { .. } | Call::Start { .. }) => {
                panic!("impossible answer")
            }
            (Err(error), call) => {
                summary.rejected += 1;
                check_rejection(*error, call, record, history, &holders, left_to_start);
            }
        }
    }
    assert_eq!(
        terminal_told,
        history.terminal.is_some(),
        "a terminal event exists exactly when a worker was told it was recorded"
    );
    // Each stored transition was written by a call told its outcome: its time lies
    // within that call's clock readings. (Exact retries may be told the same outcome
    // later, even after expiry, without writing.)
    let wrote = |event: &Event, told_it: &dyn Fn(&Record) -> bool| {
        told.iter().any(|r| {
            told_it(r) && r.clock_before <= event.occurred && event.occurred <= r.clock_after
        })
    };
    for event in &history.leases {
        assert!(
            wrote(event, &|r| matches!(
                r.result,
                Ok(Answer::Lease(LeaseOutput::Acquired { fence_epoch, .. }))
                    if Some(fence_epoch.get()) == event.fence
            )),
            "no acquisition told fence {:?} ran when it was written",
            event.fence
        );
    }
    if let Some(terminal) = history.terminal {
        assert!(
            wrote(terminal, &|r| matches!(r.result, Ok(Answer::Terminal(_)))),
            "no terminal call ran when the terminal event was written"
        );
    }
    // A "lost" answer and its repeat agree: terminal answers always, lease answers
    // when the clock did not move in between.
    for pair in told.windows(2) {
        let (first, second) = (pair[0], pair[1]);
        if !second.repeat || first.worker != second.worker || first.call != second.call {
            continue;
        }
        match first.result {
            Ok(Answer::Terminal(_)) => assert_eq!(second.result, first.result, "repeat"),
            Ok(Answer::Lease(LeaseOutput::Acquired { .. }))
                if first.clock_before == second.clock_after =>
            {
                assert_eq!(second.result, first.result, "repeat of an acquisition");
            }
            _ => {}
        }
    }
}

/// A rejection is one the stored history explains.
fn check_rejection(
    error: JournalError,
    call: Call,
    record: &Record,
    history: &History,
    holders: &BTreeMap<i64, (u64, i64)>,
    left_to_start: bool,
) {
    let lease = call.lease();
    let fence = match call {
        Call::Complete { fence, .. } | Call::Fail { fence, .. } => fence,
        // Before a start registered it, a command left to start is not registered.
        Call::Acquire { .. } if left_to_start && error == JournalError::NotRegistered => return,
        Call::Acquire { .. } | Call::Start { .. } => {
            panic!("an acquisition was rejected: {error:?} {record:?}")
        }
    };
    match error {
        JournalError::LeaseNotHeld => assert!(
            holders.values().any(|(l, _)| *l != lease),
            "lease_not_held, but nobody else ever held it: {record:?}"
        ),
        JournalError::StaleFence => assert!(
            holders.iter().any(|(f, (l, _))| *l == lease && *f != fence),
            "stale_fence, but the lease never held another fence: {record:?}"
        ),
        JournalError::LeaseExpired => {
            let (holder, expires) = holders[&fence];
            assert_eq!(holder, lease, "lease_expired for a fence it never held");
            assert!(
                record.clock_after >= expires,
                "lease_expired before expiry: {record:?}"
            );
        }
        JournalError::TerminalConflict => {
            assert!(
                history.terminal.is_some(),
                "terminal_conflict without a terminal event"
            );
        }
        other => panic!("an answer no race explains: {other:?} for {record:?}"),
    }
}

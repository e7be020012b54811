//! The differential check: one seeded schedule run twice, once on the journal's fast
//! paths (the default preconditions mode: blind creations, `execute`'s chained
//! opening and planned outcomes, recovery's planned reconciliation, a replay's result
//! from the start's read) and once reading and deciding every operation
//! (`Journal::with_fast_paths(false)`), each on a project of its own, step by step.
//! After every step both runs must have given the same answers (the operation's, the
//! nested ones', and the provider calls with their keys, attempts and resend flags)
//! and must store the same documents, field by field (commit times aside; lease-owner
//! fingerprints compared by whose lease they are, since `execute` and `recover` draw
//! their lease ids at random).
//!
//! The schedule (`differential/schedule.rs`) mixes holders whose clocks disagree by
//! up to two lease lengths, one-attempt retry budgets, `execute`, `start`,
//! `acquire_lease`, `complete_command`, `fail_command` and recovery jobs, every
//! provider answer (a charge, a decline, ambiguous; found, declined, not found,
//! unavailable), other holders' takeovers inside the provider's callbacks (between a
//! send or a lookup and what follows it), and lost responses of the first commit and of
//! the commit after a callback, through the proxy of `proxy.rs`, at the same points in
//! both runs. A holder with one attempt never loses a response: it stops at its first
//! lost one, which on the fast paths can be a commit that holds more (the chained
//! opening holds the permit too). A holder with ten converges after any lost response,
//! and the check holds the fallback to the read path's result.
//!
//! - `cargo test --all-features --test emulator differential` runs the short form
//!   (300 steps).
//! - `CJ_LONG=1 cargo test --all-features --test emulator differential -- --nocapture`
//!   runs the long form (20,000 steps) and prints a summary.
//! - `CJ_DIFF_STEPS=<n>` runs `n` steps; `CJ_RANDOM_SEED=<n>` replays a seed;
//!   `CJ_DIFF_KEEP_GOING=1` reports every difference (moving to a fresh generation
//!   after each) and fails at the end, instead of failing at the first;
//!   `CJ_DIFF_TRACE=1` prints every step and what the planned run answered.

mod schedule;

use crate::proxy::{Fault, Proxy, Rpc};
use crate::support;
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::identity::OperationSlug;
use command_journal::recovery::{RecoverOptions, Recovery};
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    CommandInput, CommandRequest, Connection, Execution, Journal, JournalError, LeaseId,
    LeaseOutput, Provider, ProviderAccount, ProviderAnswer, ProviderPlan, ProviderPlanRequest,
    RetryPolicy, SendRequest, Target, TerminalReferenceFingerprint,
};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{
    BatchGetDocumentsRequest, Document, Value, batch_get_documents_response,
};
use schedule::{COMMANDS, Generation, LeaseCall, Op, STEPS_PER_GENERATION, Schedule, Step, Told};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

const SHORT_STEPS: usize = 300;
const LONG_STEPS: usize = 20_000;
const DEFAULT_SEED: u64 = 0x5eed_d1ff;
/// One hour of key retention: a 45 min cutoff, a 5 min settle window.
const RETENTION: i64 = 3_600;

fn seed() -> u64 {
    match std::env::var("CJ_RANDOM_SEED") {
        Ok(text) => text.trim().parse().expect("CJ_RANDOM_SEED is a u64"),
        Err(_) => DEFAULT_SEED,
    }
}

fn steps() -> usize {
    if let Ok(text) = std::env::var("CJ_DIFF_STEPS") {
        return text.trim().parse().expect("CJ_DIFF_STEPS is a number");
    }
    match std::env::var("CJ_LONG").as_deref() {
        Ok("1") => LONG_STEPS,
        _ => SHORT_STEPS,
    }
}

/// Prints the seed if the test panics, so the run can be replayed.
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "differential check failed; replay with CJ_RANDOM_SEED={}",
                self.0
            );
        }
    }
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_differential",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 700, "currency": "eur"}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid plan")
}

fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_differential", "test").expect("valid account")
}

fn start_time() -> DateTime<Utc> {
    DateTime::from_timestamp(1_940_000_000, 125_000_000).expect("time")
}

fn command(generation: u64, n: usize) -> CommandInput {
    let id = support::uuid(0xd1f0, generation * COMMANDS as u64 + n as u64);
    let payload = json!({"generation": generation, "n": n});
    CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "service",
        caller_id: "differential_checker",
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .expect("valid command")
}

/// Lease `lease` of `holder` on `command` in `generation`.
fn lease_id(generation: u64, holder: usize, command: usize, lease: u64) -> LeaseId {
    let n = generation << 24 | (holder as u64) << 16 | (command as u64) << 8 | lease;
    LeaseId::parse(&support::uuid(0xd1f1, n)).expect("lease id")
}

/// Each holder completes with its own reference.
fn reference(holder: usize) -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&format!("{:02x}", holder + 0xd0).repeat(32))
        .expect("reference")
}

fn error_text(error: &JournalError) -> String {
    format!("error {}", error.code())
}

fn lease_text(output: &LeaseOutput) -> String {
    match output {
        LeaseOutput::Acquired {
            fence_epoch,
            lease_expires_at,
        } => format!(
            "acquired fence {} until {}",
            fence_epoch.get(),
            time_text(lease_expires_at.micros())
        ),
        LeaseOutput::Busy => "busy".to_owned(),
        LeaseOutput::Succeeded => "succeeded".to_owned(),
        LeaseOutput::FailedFinal => "failed_final".to_owned(),
    }
}

/// A time as seconds after the schedule's start.
fn time_text(micros: i64) -> String {
    let since = micros - start_time().timestamp_micros();
    format!("t{:+}.{:06}", since / 1_000_000, (since % 1_000_000).abs())
}

fn execution_text(answer: &Result<Execution, JournalError>) -> String {
    match answer {
        Ok(Execution::Succeeded(envelope)) => format!("succeeded {}", envelope.canonical()),
        Ok(other) => format!("{other:?}"),
        Err(error) => error_text(error),
    }
}

fn recovery_text(answer: &Result<Recovery, JournalError>) -> String {
    let recovery = match answer {
        Ok(recovery) => recovery,
        Err(error) => return error_text(error),
    };
    let commands: Vec<String> = recovery
        .commands
        .iter()
        .map(|c| {
            let outcome = match &c.outcome {
                Ok(recovered) => recovered.as_str().to_owned(),
                Err(error) => error_text(error),
            };
            format!("{}: {outcome}", c.command_key_hash.as_str())
        })
        .collect();
    let pending: Vec<String> = recovery
        .pending
        .iter()
        .map(|p| {
            let send = p.send.as_ref().map(|s| {
                format!(
                    "attempt {} {} cutoff {} provable {}",
                    s.attempt,
                    s.state.as_str(),
                    time_text(s.send_cutoff_at.micros()),
                    s.absence_provable_from
                        .map_or("never".to_owned(), |t| time_text(t.micros()))
                )
            });
            format!(
                "{} fence {} since {} send {send:?} unblocked by {:?}",
                p.command_key_hash.as_str(),
                p.fence_epoch,
                time_text(p.since.micros()),
                p.unblocked_by
            )
        })
        .collect();
    format!(
        "recovered [{}]; pending [{}]",
        commands.join("; "),
        pending.join("; ")
    )
}

/// One holder of a run: its journal and its clock.
struct Holder {
    journal: Journal,
    clock: Arc<ManualClock>,
    skew: TimeDelta,
}

/// One of the two runs of a generation, on a project of its own.
struct Run {
    label: &'static str,
    generation: u64,
    proxy: Proxy,
    direct: Connection,
    holders: Vec<Holder>,
    commands: Vec<CommandInput>,
    hashes: Vec<String>,
    /// The shared time of this run.
    now: Mutex<DateTime<Utc>>,
    /// What this step's callers were answered, in order.
    log: Mutex<Vec<String>>,
    /// What each holder was last told of each command's lease.
    told: Mutex<Told>,
    /// Lease-owner fingerprint -> whose lease it is.
    owners: Mutex<HashMap<String, String>>,
    /// The proxy's count of fired faults when this step armed one, while armed.
    armed: Mutex<Option<usize>>,
    /// Every attempt key seen, and its command.
    keys: Mutex<HashMap<String, usize>>,
}

type Docs = BTreeMap<String, BTreeMap<String, String>>;

impl Run {
    async fn new(generation: &Generation, fast: bool) -> Run {
        let direct = support::fresh_connection().await;
        let proxy = Proxy::start(support::emulator().host()).await;
        let mut holders = Vec::new();
        for spec in &generation.holders {
            // A connection per holder: a lost response cuts only its own.
            let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
                .await
                .expect("connect through the proxy");
            let skew = TimeDelta::milliseconds(spec.skew_ms);
            let clock = Arc::new(ManualClock::new(start_time() + skew));
            // A minute per RPC: a slow answer on a loaded machine is no lost one.
            let policy = RetryPolicy {
                attempts: NonZeroU32::new(spec.attempts).expect("attempts"),
                rpc_timeout: std::time::Duration::from_secs(60),
                ..RetryPolicy::default()
            };
            let journal = Journal::new(through)
                .with_clock(clock.clone())
                .with_concurrency(support::mode())
                .with_retry_policy(policy)
                .with_fast_paths(fast);
            holders.push(Holder {
                journal,
                clock,
                skew,
            });
        }
        let commands: Vec<CommandInput> = (0..COMMANDS)
            .map(|n| command(generation.index, n))
            .collect();
        let charge = OperationSlug::parse("charge").expect("slug");
        let keys = commands
            .iter()
            .enumerate()
            .map(|(n, c)| (c.identity().provider_idempotency_key(&charge), n))
            .collect();
        let hashes = commands
            .iter()
            .map(|c| c.identity().command_key_hash().as_str().to_owned())
            .collect();
        Run {
            label: if fast { "planned" } else { "read-only" },
            generation: generation.index,
            proxy,
            direct,
            holders,
            commands,
            hashes,
            now: Mutex::new(start_time()),
            log: Mutex::new(Vec::new()),
            told: Mutex::new(Told::new()),
            owners: Mutex::new(HashMap::new()),
            armed: Mutex::new(None),
            keys: Mutex::new(keys),
        }
    }

    /// Loses the response of the next commit, the step holder's (unless a loss is
    /// armed already).
    fn lose_next_commit(&self) {
        if self.proxy.try_arm(Rpc::Commit, Fault::LoseResponse) {
            *self.armed.lock().expect("armed") = Some(self.proxy.fired());
        }
    }

    /// Disarms a loss that has not fired, so that another holder's call inside a
    /// callback loses nothing; whether one was armed.
    fn hold_fault(&self) -> bool {
        let armed = self.armed.lock().expect("armed").take();
        let pending = armed == Some(self.proxy.fired());
        self.proxy.disarm();
        pending
    }

    fn told(&self) -> Told {
        self.told.lock().expect("told").clone()
    }

    fn note(&self, line: String) {
        self.log.lock().expect("log").push(line);
    }

    /// Moves the shared time, and every holder's clock with it.
    fn advance(&self, seconds: i64) {
        let mut now = self.now.lock().expect("now");
        *now += TimeDelta::seconds(seconds);
        for holder in &self.holders {
            holder.clock.set(*now + holder.skew);
        }
    }

    /// `text` with every command key hash replaced by its command's number.
    fn redact(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for (n, hash) in self.hashes.iter().enumerate() {
            text = text.replace(hash.as_str(), &format!("<c{n}>"));
        }
        text
    }

    /// The lease `lease` of `holder` on `command`, its owner fingerprint named.
    fn lease(&self, holder: usize, command: usize, lease: u64) -> LeaseId {
        let id = lease_id(self.generation, holder, command, lease);
        let cmd = &self.commands[command];
        let owner = cmd
            .lease_owner(&cmd.identity(), &id)
            .expect("a lease id other than the command id");
        self.owners
            .lock()
            .expect("owners")
            .entry(owner.as_str().to_owned())
            .or_insert_with(|| format!("holder {holder}'s lease {lease}"));
        id
    }

    /// `start` or `acquire_lease` by `holder`; what it answered.
    async fn lease_call(
        &self,
        holder: usize,
        command: usize,
        call: LeaseCall,
        lease: u64,
    ) -> String {
        let id = self.lease(holder, command, lease);
        let (journal, cmd) = (&self.holders[holder].journal, &self.commands[command]);
        let answer = match call {
            LeaseCall::Start => journal
                .start(cmd, &id)
                .await
                .map(|out| (format!("{:?}, ", out.registration_outcome()), out.lease)),
            LeaseCall::Acquire => journal
                .acquire_lease(cmd, &id)
                .await
                .map(|out| (String::new(), out)),
        };
        match answer {
            Ok((registration, output)) => {
                if let LeaseOutput::Acquired { fence_epoch, .. } = output {
                    self.told
                        .lock()
                        .expect("told")
                        .insert((holder, command), (lease, fence_epoch.get()));
                }
                format!("{registration}{}", lease_text(&output))
            }
            Err(error) => error_text(&error),
        }
    }

    /// Runs `step`; everything its callers were answered, in order.
    async fn perform(&self, step: &Step) -> Vec<String> {
        self.log.lock().expect("log").clear();
        let holder = &self.holders[step.holder];
        match step.op {
            Op::Execute {
                command,
                opening_lost,
            } => {
                if opening_lost {
                    self.lose_next_commit();
                }
                let provider = StepProvider::new(self, step);
                let answer = holder
                    .journal
                    .execute(&self.commands[command], &plan(), &provider)
                    .await;
                self.note(format!("execute answered {}", execution_text(&answer)));
            }
            Op::Lease {
                command,
                call,
                lease,
            } => {
                let text = self.lease_call(step.holder, command, call, lease).await;
                self.note(format!("{call} answered {text}"));
            }
            Op::Terminal {
                command,
                lease,
                fence,
                succeed,
            } => {
                let id = self.lease(step.holder, command, lease);
                let (cmd, fence) = (&self.commands[command], support::fence_at(fence));
                let answer = if succeed {
                    holder
                        .journal
                        .complete_command(cmd, &id, fence, &reference(step.holder))
                        .await
                } else {
                    holder.journal.fail_command(cmd, &id, fence).await
                };
                self.note(match answer {
                    Ok(output) => format!("terminal answered {output:?}"),
                    Err(error) => format!("terminal answered {}", error_text(&error)),
                });
            }
            Op::Recover {
                account: declared,
                first_lost,
            } => {
                if first_lost {
                    self.lose_next_commit();
                }
                let options = RecoverOptions {
                    concurrency: 1,
                    per_second: None,
                    account: declared.then(account),
                    ..RecoverOptions::default()
                };
                let provider = StepProvider::new(self, step);
                let answer = holder.journal.recover(&provider, &options, |_| {}).await;
                self.note(format!("recover answered {}", recovery_text(&answer)));
            }
        }
        self.hold_fault();
        let log = std::mem::take(&mut *self.log.lock().expect("log"));
        log.iter().map(|line| self.redact(line)).collect()
    }

    /// Every document of the commands, by redacted path: its fields as text, the
    /// lifecycle's owner fingerprint replaced by whose lease it is (a lease first seen
    /// at `step` that no holder of the schedule named is the lease `execute` or
    /// `recover` drew in that step). Each command's own documents are read by path in
    /// one batch get and the audit events listed; `listed` lists every collection the
    /// journal writes instead (a stray document included).
    async fn documents(&self, step: usize, listed: bool) -> Docs {
        let roots: Vec<String> = self
            .hashes
            .iter()
            .map(|h| format!("checkoutRequests/{h}"))
            .collect();
        let mut found = support::list(&self.direct, "", "auditEvents").await;
        if listed {
            let mut lists = vec![support::list(&self.direct, "", "checkoutRequests")];
            for root in &roots {
                for sub in ["lifecycle", "providerSends", "results"] {
                    lists.push(support::list(&self.direct, root, sub));
                }
            }
            found.extend(futures::future::join_all(lists).await.into_iter().flatten());
        } else {
            let names = roots
                .iter()
                .flat_map(|root| {
                    [
                        String::new(),
                        "/lifecycle/current".to_owned(),
                        "/providerSends/current".to_owned(),
                        "/providerSends/plan".to_owned(),
                        "/results/current".to_owned(),
                    ]
                    .map(|sub| support::name(&self.direct, &format!("{root}{sub}")))
                })
                .collect();
            found.extend(batch_get(&self.direct, names).await);
        }
        let prefix = format!("{}/", self.direct.documents_path());
        let mut docs = Docs::new();
        for doc in found {
            let path = doc
                .name
                .strip_prefix(&prefix)
                .unwrap_or(&doc.name)
                .to_owned();
            let command = self.hashes.iter().position(|h| path.contains(h.as_str()));
            let mut fields = BTreeMap::new();
            for (name, value) in &doc.fields {
                let mut text = value_text(value);
                if name == "leaseOwnerFingerprint" {
                    let mut owners = self.owners.lock().expect("owners");
                    let label = owners.entry(string_of(value)).or_insert_with(|| {
                        let command = command.map_or("?".to_owned(), |c| c.to_string());
                        format!("the lease drawn at step {step} on command {command}")
                    });
                    text = label.clone();
                }
                fields.insert(name.clone(), self.redact(&text));
            }
            docs.insert(self.redact(&path), fields);
        }
        docs
    }
}

/// The documents of `names` that exist, read as the owner in one batch get.
async fn batch_get(connection: &Connection, names: Vec<String>) -> Vec<Document> {
    let request = BatchGetDocumentsRequest {
        database: connection.database_path(),
        documents: names,
        mask: None,
        consistency_selector: None,
        request_options: None,
    };
    let mut stream = connection
        .raw()
        .batch_get_documents(request)
        .await
        .expect("batch get")
        .into_inner();
    let mut found = Vec::new();
    while let Some(message) = stream.message().await.expect("batch get") {
        if let Some(batch_get_documents_response::Result::Found(doc)) = message.result {
            found.push(doc);
        }
    }
    found
}

fn string_of(value: &Value) -> String {
    match &value.value_type {
        Some(ValueType::StringValue(s)) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// A stored value as short text: strings quoted, times after the schedule's start.
fn value_text(value: &Value) -> String {
    match &value.value_type {
        None => "none".to_owned(),
        Some(ValueType::NullValue(_)) => "null".to_owned(),
        Some(ValueType::BooleanValue(b)) => b.to_string(),
        Some(ValueType::IntegerValue(i)) => i.to_string(),
        Some(ValueType::DoubleValue(d)) => format!("{d:?}"),
        Some(ValueType::TimestampValue(t)) => {
            time_text(t.seconds * 1_000_000 + i64::from(t.nanos) / 1_000)
        }
        Some(ValueType::StringValue(s)) => format!("{s:?}"),
        Some(ValueType::BytesValue(b)) => format!("bytes({})", b.len()),
        Some(ValueType::ReferenceValue(r)) => format!("ref {r}"),
        Some(ValueType::MapValue(m)) => {
            let sorted: BTreeMap<_, _> = m.fields.iter().collect();
            let inner: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{k}: {}", value_text(v)))
                .collect();
            format!("{{{}}}", inner.join(", "))
        }
        Some(ValueType::ArrayValue(a)) => {
            let inner: Vec<String> = a.values.iter().map(value_text).collect();
            format!("[{}]", inner.join(", "))
        }
        Some(other) => format!("{other:?}"),
    }
}

/// The provider of one step: it answers from the step's scripts and performs the
/// step's interludes inside its callbacks, before it answers.
struct StepProvider<'a> {
    run: &'a Run,
    step: &'a Step,
    callbacks: AtomicUsize,
    /// A recovery job's callbacks by key.
    per_key: Mutex<HashMap<String, usize>>,
    sends: AtomicUsize,
    lookups: AtomicUsize,
}

impl<'a> StepProvider<'a> {
    fn new(run: &'a Run, step: &'a Step) -> Self {
        Self {
            run,
            step,
            callbacks: AtomicUsize::new(0),
            per_key: Mutex::new(HashMap::new()),
            sends: AtomicUsize::new(0),
            lookups: AtomicUsize::new(0),
        }
    }

    /// The step's interlude for its next callback, if it has one. A recovery job's
    /// lookups of `key` count apart from other keys' (its first lookup of a command
    /// and the one that confirms an absence under its lease), and another holder's
    /// lease inside them is on the command looked up (the step's command when the
    /// key is not known).
    async fn interlude(&self, key: &str) {
        let n = match self.step.op {
            Op::Recover { .. } => {
                let mut per_key = self.per_key.lock().expect("per key");
                let n = per_key.entry(key.to_owned()).or_insert(0);
                *n += 1;
                *n - 1
            }
            _ => self.callbacks.fetch_add(1, Ordering::SeqCst),
        };
        let Some(Some(interlude)) = self.step.interludes.get(n) else {
            return;
        };
        let looked_up = self.run.keys.lock().expect("keys").get(key).copied();
        let mut takeover = interlude.takeover;
        if let (Op::Recover { .. }, Some(t), Some(command)) =
            (&self.step.op, &mut takeover, looked_up)
        {
            t.command = command;
        }
        if interlude.advance_s > 0 {
            self.run.advance(interlude.advance_s);
        }
        if let Some(t) = takeover {
            // A loss armed for the step holder's commit waits for it.
            let held = self.run.hold_fault();
            let text = self
                .run
                .lease_call(t.holder, t.command, t.call, t.lease)
                .await;
            self.run.note(format!(
                "in callback {n}, holder {}'s {} on command {} answered {text}",
                t.holder, t.call, t.command
            ));
            if held {
                self.run.lose_next_commit();
            }
        }
        if interlude.lose_next_commit {
            self.run.lose_next_commit();
        }
    }
}

impl Provider for StepProvider<'_> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.run.note(format!(
            "provider send: attempt {}, resend {}, key {}",
            request.attempt, request.resend, request.key
        ));
        if let Op::Execute { command, .. } = self.step.op {
            let mut keys = self.run.keys.lock().expect("keys");
            keys.insert(request.key.to_owned(), command);
        }
        self.interlude(&request.key).await;
        let n = self.sends.fetch_add(1, Ordering::SeqCst);
        self.step
            .sends
            .get(n)
            .cloned()
            .unwrap_or(ProviderAnswer::Unknown)
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        self.run.note(format!("provider lookup: key {key}"));
        self.interlude(key).await;
        let n = self.lookups.fetch_add(1, Ordering::SeqCst);
        self.step
            .lookups
            .get(n)
            .cloned()
            .unwrap_or(ProviderAnswer::Unknown)
    }
}

/// What the two runs of a step showed.
struct Seen {
    answers: Vec<String>,
    docs: Docs,
}

impl Seen {
    fn documents(docs: Docs) -> Self {
        Self {
            answers: Vec::new(),
            docs,
        }
    }
}

/// Where the runs of one step differ, as the failure message says it; `None` when
/// they agree.
fn difference(planned: &Seen, reads: &Seen) -> Option<String> {
    let mut out = Vec::new();
    if planned.answers != reads.answers {
        let at = planned
            .answers
            .iter()
            .zip(&reads.answers)
            .position(|(a, b)| a != b)
            .unwrap_or(planned.answers.len().min(reads.answers.len()));
        out.push(format!("answers differ from entry {at} on:"));
        for (label, answers) in [("planned", &planned.answers), ("read-only", &reads.answers)] {
            out.push(format!("  {label}:"));
            for (n, line) in answers.iter().enumerate() {
                let mark = if n >= at { "*" } else { " " };
                out.push(format!("   {mark}{n}. {line}"));
            }
        }
    }
    let paths: BTreeSet<&String> = planned.docs.keys().chain(reads.docs.keys()).collect();
    let mut documents = Vec::new();
    for path in paths {
        match (planned.docs.get(path), reads.docs.get(path)) {
            (Some(a), None) => documents.push(format!("  {path}: only in planned: {a:?}")),
            (None, Some(b)) => documents.push(format!("  {path}: only in read-only: {b:?}")),
            (Some(a), Some(b)) if a != b => {
                let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
                for name in names {
                    let (x, y) = (a.get(name), b.get(name));
                    if x != y {
                        documents.push(format!(
                            "  {path}: field {name}: planned {} / read-only {}",
                            x.map_or("(absent)", String::as_str),
                            y.map_or("(absent)", String::as_str)
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if !documents.is_empty() {
        out.push("stored documents differ:".to_owned());
        out.extend(documents);
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

/// What the schedule exercised, from the planned run's answers.
#[derive(Default)]
struct Coverage {
    ops: BTreeMap<&'static str, usize>,
    answers: BTreeMap<String, usize>,
    one_attempt_steps: usize,
    takeovers_in_callbacks: usize,
    /// Takeovers that took the lease, inside a send and inside a lookup.
    takeovers_acquired: (usize, usize),
    faults_armed: usize,
    faults_fired: (usize, usize),
    generations: usize,
}

impl Coverage {
    fn count(&mut self, setup: &Generation, step: &Step, answers: &[String]) {
        let op = match step.op {
            Op::Execute { .. } => "execute",
            Op::Lease {
                call: LeaseCall::Start,
                ..
            } => "start",
            Op::Lease {
                call: LeaseCall::Acquire,
                ..
            } => "acquire_lease",
            Op::Terminal { succeed: true, .. } => "complete_command",
            Op::Terminal { .. } => "fail_command",
            Op::Recover { .. } => "recover",
        };
        *self.ops.entry(op).or_default() += 1;
        if setup.holders[step.holder].attempts == 1 {
            self.one_attempt_steps += 1;
        }
        let mut in_send = false;
        for line in answers {
            if line.starts_with("provider ") {
                in_send = line.starts_with("provider send");
            }
            if line.starts_with("in callback") {
                self.takeovers_in_callbacks += 1;
                if line.contains("acquired fence") {
                    if in_send {
                        self.takeovers_acquired.0 += 1;
                    } else {
                        self.takeovers_acquired.1 += 1;
                    }
                }
            }
            if let Some(answer) = line.strip_prefix("execute answered ") {
                let kind = answer.split([' ', '{', '(']).next().unwrap_or(answer);
                *self.answers.entry(format!("execute {kind}")).or_default() += 1;
            }
            if line.starts_with("recover answered ") {
                for outcome in [
                    "succeeded",
                    "declined",
                    "absent",
                    "not_found",
                    "in_progress",
                ] {
                    if line.contains(&format!(": {outcome}")) {
                        *self
                            .answers
                            .entry(format!("recover {outcome}"))
                            .or_default() += 1;
                    }
                }
            }
            if line.starts_with("provider ") {
                let kind = if line.starts_with("provider send") {
                    "sends"
                } else {
                    "lookups"
                };
                *self.answers.entry(format!("provider {kind}")).or_default() += 1;
            }
        }
        let armed = match step.op {
            Op::Execute { opening_lost, .. } => usize::from(opening_lost),
            Op::Recover { first_lost, .. } => usize::from(first_lost),
            _ => 0,
        };
        self.faults_armed += armed
            + step
                .interludes
                .iter()
                .flatten()
                .filter(|i| i.lose_next_commit)
                .count();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn differential_the_fast_paths_store_and_answer_what_reading_and_deciding_does() {
    let seed = seed();
    let steps = steps();
    let keep_going = std::env::var_os("CJ_DIFF_KEEP_GOING").is_some();
    let trace = std::env::var_os("CJ_DIFF_TRACE").is_some();
    let _report = SeedReport(seed);
    let started = Instant::now();
    let mut schedule = Schedule::new(seed);
    let mut coverage = Coverage::default();
    let mut differences = Vec::new();
    let mut index = 0;
    let mut generation = 0u64;
    while index < steps {
        let setup = schedule.generation(generation);
        let (planned, reads) = tokio::join!(Run::new(&setup, true), Run::new(&setup, false));
        coverage.generations += 1;
        // The commands whose lifecycle is terminal, as the last step left them.
        let mut settled = BTreeSet::new();
        let mut last = None;
        for in_generation in 0..STEPS_PER_GENERATION {
            if index >= steps || settled.len() == COMMANDS {
                break;
            }
            let step = schedule.step(&setup, &planned.told(), &settled, index, in_generation);
            index += 1;
            let (a, b) = tokio::join!(planned.perform(&step), reads.perform(&step));
            let (da, db) = tokio::join!(
                planned.documents(step.index, false),
                reads.documents(step.index, false)
            );
            coverage.count(&setup, &step, &a);
            settled = (0..COMMANDS)
                .filter(|n| {
                    let path = format!("checkoutRequests/<c{n}>/lifecycle/current");
                    da.get(&path)
                        .and_then(|f| f.get("state"))
                        .is_some_and(|state| {
                            state == "\"succeeded\"" || state == "\"failed_final\""
                        })
                })
                .collect();
            if trace {
                eprintln!("{}\n  answered {:?}", step.describe(&setup), a);
            }
            let (a, b) = (
                Seen {
                    answers: a,
                    docs: da,
                },
                Seen {
                    answers: b,
                    docs: db,
                },
            );
            if let Some(diff) = difference(&a, &b) {
                let message = format!(
                    "the {} run and the {} run differ (seed {seed}), {}\n{diff}",
                    planned.label,
                    reads.label,
                    step.describe(&setup)
                );
                if !keep_going {
                    panic!("{message}");
                }
                eprintln!("{message}\n");
                differences.push((step.index, step.op.to_string()));
                last = None;
                break;
            }
            planned.advance(step.advance_s);
            reads.advance(step.advance_s);
            last = Some(step);
        }
        // Every collection listed once the generation is over: nothing stray either.
        if let Some(step) = last {
            let (da, db) = tokio::join!(
                planned.documents(step.index, true),
                reads.documents(step.index, true)
            );
            let (a, b) = (Seen::documents(da), Seen::documents(db));
            if let Some(diff) = difference(&a, &b) {
                let message = format!(
                    "the {} run and the {} run list different documents (seed {seed}) \
                     after generation {generation}, whose last {}\n{diff}",
                    planned.label,
                    reads.label,
                    step.describe(&setup)
                );
                if !keep_going {
                    panic!("{message}");
                }
                eprintln!("{message}\n");
                differences.push((step.index, format!("listing after {}", step.op)));
            }
        }
        coverage.faults_fired.0 += planned.proxy.fired();
        coverage.faults_fired.1 += reads.proxy.fired();
        generation += 1;
    }
    println!(
        "differential (seed {seed}): {index} steps in {} generations, {:.1} s; ops {:?}; \
         {} steps by one-attempt holders; {} takeovers inside provider callbacks (the lease \
         taken {} times between a send and its outcome, {} between a lookup and what follows); \
         {} lost responses armed, fired {} planned / {} read-only; answers {:?}; \
         {} differences {:?}",
        coverage.generations,
        started.elapsed().as_secs_f64(),
        coverage.ops,
        coverage.one_attempt_steps,
        coverage.takeovers_in_callbacks,
        coverage.takeovers_acquired.0,
        coverage.takeovers_acquired.1,
        coverage.faults_armed,
        coverage.faults_fired.0,
        coverage.faults_fired.1,
        coverage.answers,
        differences.len(),
        differences
    );
    assert!(
        differences.is_empty(),
        "{} steps differed (seed {seed}): {differences:?}",
        differences.len()
    );
}

//! `command-journal demo`: the main job on the embedded default. Starts its own
//! emulator (unless one is named), runs a seeded workload of racing, crashing, stale
//! and retrying workers over many commands with a manual clock that moves leases past
//! expiry, then prints a table of what happened and the verifier's verdict.
//!
//! The seed decides everything the table counts: the commands, each worker's plan,
//! and the order in which the workers racing for one command take their steps (a
//! seeded scheduler, `workers`), so the same seed prints the same table.
//!
//! It prints the project, database and emulator host it used and the commands that
//! inspect the result; with `--keep` its own emulator stays up until Ctrl-C or
//! SIGTERM, then the JVM is stopped. Progress is a bar on a terminal and plain lines
//! otherwise.

use crate::emulator::Emulator;
use crate::ledger::LedgerKey;
use crate::ledger::{CURRENT_FINGERPRINT_VERSION, FingerprintInput};
use crate::ledger::{LedgerOutcome, LedgerScope, Outcome};
use crate::time::ManualClock;
use crate::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::{Connection, Target};
use crate::{Journal, JournalError};
use chrono::{DateTime, TimeDelta};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// How long the demo waits for one RPC before retrying it.
const RPC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

mod options;
mod tally;
mod workers;
pub use options::DemoArgs;
use tally::{Tally, bump};
use workers::{Action, Plan};

/// Size and seed of the workload.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Commands to run.
    pub commands: u64,
    /// Workers sent at each unfinished command per round.
    pub workers: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Keep the emulator running afterwards until Ctrl-C or SIGTERM.
    pub keep: bool,
    /// The project to use; a fresh `demo-…` project when `None`.
    pub project: Option<String>,
    /// The database to use (`--database`).
    pub database: String,
}

fn uuid(rng: &mut fastrand::Rng) -> String {
    let mut bytes = [0_u8; 16];
    rng.fill(&mut bytes);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// One workload command, and the stdin object that names it to the CLI.
fn demo_command(
    rng: &mut fastrand::Rng,
    n: u64,
) -> Result<(CommandInput, serde_json::Value), JournalError> {
    let id = uuid(rng);
    let caller = format!("member_{}", rng.u32(..10_000));
    let payload = serde_json::json!({"sku": format!("sku-{}", n % 17), "quantity": 1 + n % 3, "priceCents": 1250 + n});
    let command = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "member",
        caller_id: &caller,
        command_id: &id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })?;
    let request = serde_json::json!({
        "environment": "emulator", "callerScopeKind": "member", "callerId": caller,
        "commandId": id, "commandType": "checkout", "endpointSchemaVersion": 1,
        "payload": payload,
    });
    Ok((command, request))
}

/// What a finished workload reports.
struct Finished {
    /// Verified clean with no unexpected answer.
    clean: bool,
    /// The project it ran in.
    project: String,
    /// The database it ran in.
    database: String,
    /// The stdin object of its first command, for `status`.
    first: Option<serde_json::Value>,
}

/// How many commands are terminal: a bar on a terminal, plain lines otherwise.
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines(u64),
}

impl Progress {
    fn new(total: u64) -> Self {
        use std::io::IsTerminal as _;
        if !std::io::stderr().is_terminal() {
            return Self::Lines(total);
        }
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "  [{bar:30}] {pos}/{len} commands terminal ({elapsed})",
        ) {
            bar.set_style(style.progress_chars("#>."));
        }
        Self::Bar(bar)
    }

    fn set(&self, done: u64) {
        match self {
            Self::Bar(bar) => bar.set_position(done),
            Self::Lines(total) => eprintln!("demo: {done}/{total} commands terminal"),
        }
    }

    /// Replaces the bar with one plain line of the final count.
    fn finish(self) {
        if let Self::Bar(bar) = self {
            bar.finish_and_clear();
            eprintln!(
                "demo: {}/{} commands terminal",
                bar.position(),
                bar.length().unwrap_or_default()
            );
        }
    }
}

/// Runs the demo; `host` is an emulator to use instead of starting one. The project
/// and database ids are checked before any emulator starts.
pub async fn run(host: Option<String>, options: DemoOptions) -> ExitCode {
    let started = std::time::Instant::now();
    let project = options.project.as_deref().unwrap_or("demo-project");
    if let Err(error) = Connection::check_ids(project, &options.database) {
        return super::exit::report(Err(error));
    }
    let mut owned = None;
    let host = match host {
        Some(host) => host,
        None => {
            eprintln!("demo: starting the Firestore emulator…");
            let emulator = match tokio::task::spawn_blocking(Emulator::start).await {
                Ok(Ok(emulator)) => emulator,
                Ok(Err(error)) => {
                    eprintln!("demo: {error}");
                    return super::exit::emulator_unavailable();
                }
                Err(_) => return super::exit::emulator_unavailable(),
            };
            let host = emulator.host().to_owned();
            if let Some(pid) = emulator.pid() {
                eprintln!("demo: emulator started at {host} (pid {pid})");
            }
            owned = Some(emulator);
            host
        }
    };
    // Until the workload ends, Ctrl-C ends the process and the JVM dies with it. The
    // listener is installed before the inspect commands are printed, so a stop sent
    // after reading them is always handled and the JVM stopped.
    let result = workload(&host, &options).await;
    let stop = options.keep.then(super::Stop::listen);
    let code = match result {
        Ok(finished) => {
            eprintln!("demo: finished in {:.1} s", started.elapsed().as_secs_f64());
            inspect(&host, &finished, owned.is_none() || options.keep);
            if finished.clean {
                super::exit::Exit::Success.into()
            } else {
                super::exit::Exit::Broken.into()
            }
        }
        Err(error) => super::exit::report(Err(error)),
    };
    if let (Some(emulator), Some(stop)) = (owned, stop) {
        println!("demo: the emulator keeps running; Ctrl-C or SIGTERM stops it");
        stop.wait().await;
        drop(emulator);
        eprintln!("demo: emulator stopped");
    }
    code
}

/// Prints how to look at the journal the demo built.
fn inspect(host: &str, finished: &Finished, running: bool) {
    let project = &finished.project;
    println!();
    if !running {
        println!("demo: its emulator stops now; run with --keep to inspect the journal");
        return;
    }
    println!("Inspect the journal:");
    println!("  export FIRESTORE_EMULATOR_HOST={host}");
    // A named database id is plain text ([a-z0-9-]); the default needs no option.
    let database = if finished.database == "(default)" {
        String::new()
    } else {
        format!(" --database {}", finished.database)
    };
    let me = options::invocation();
    println!("  {me} verify --project {project}{database}");
    if let Some(first) = &finished.first {
        println!("  echo '{first}' | {me} status --project {project}{database}");
    }
}

/// Runs the workload and reports how it finished.
async fn workload(host: &str, options: &DemoOptions) -> Result<Finished, JournalError> {
    let mut rng = fastrand::Rng::with_seed(options.seed);
    // Drawn even when a project is given, so that a seed always makes the same workload.
    let fresh = format!("demo-{}-{:06x}", std::process::id(), rng.u32(..0xff_ffff));
    let project = options.project.clone().unwrap_or(fresh);
    let connection = Connection::connect_database(
        &project,
        &options.database,
        Target::Emulator(host.to_owned()),
    )
    .await?;
    let database = connection.database().to_owned();
    eprintln!("demo: project {project}, database {database}, emulator {host}");
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_900_000_000, 0).unwrap_or_default(),
    ));
    // A slow emulator (a busy machine) is waited for rather than retried: a retry after
    // a timeout may find its own commit applied, which the table would count apart, so
    // that only the seed decides what the table says.
    let journal = Journal::new(connection).with_clock(clock.clone());
    let policy = command_journal::RetryPolicy {
        rpc_timeout: RPC_TIMEOUT,
        ..journal.retry_policy()
    };
    let journal = journal.with_retry_policy(policy);
    let tally = Arc::new(Tally::default());
    let (commands, requests): (Vec<CommandInput>, Vec<serde_json::Value>) = (0..options.commands)
        .map(|n| demo_command(&mut rng, n))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    eprintln!(
        "demo: {} commands, {} workers per command and round, seed {}",
        options.commands, options.workers, options.seed
    );

    // Two registrars per command, one after the other (a lost response and its
    // retry); the commands concurrently.
    let mut tasks = Vec::new();
    for command in &commands {
        let (journal, command, tally) = (journal.clone(), command.clone(), tally.clone());
        tasks.push(tokio::spawn(async move {
            use crate::RegistrationOutcome::*;
            for _ in 0..2 {
                match journal.register_command(&command).await?.outcome() {
                    RegisteredNew => bump(&tally.registrations_new),
                    RegisteredExisting => bump(&tally.registrations_existing),
                }
            }
            Ok::<(), JournalError>(())
        }));
    }
    for task in tasks.drain(..) {
        task.await.map_err(|_| JournalError::Internal {
            reason: "a worker task panicked",
        })??;
    }

    let mut terminal = vec![false; commands.len()];
    let progress = Progress::new(options.commands);
    progress.set(0);
    for _round in 0..30 {
        if terminal.iter().all(|t| *t) {
            break;
        }
        // Every draw is made here, in command order: each worker's plan, then the
        // seed of the scheduler its command's workers race on.
        let mut round = Vec::new();
        for (index, command) in commands.iter().enumerate().filter(|(i, _)| !terminal[*i]) {
            let plans = (0..options.workers)
                .map(|_| plan(&mut rng))
                .collect::<Result<Vec<_>, _>>()?;
            let scheduler = fastrand::Rng::with_seed(rng.u64(..));
            let (journal, command, tally) = (journal.clone(), command.clone(), tally.clone());
            round.push(tokio::spawn(async move {
                let crashed = workers::run(&journal, &command, plans, scheduler, &tally).await?;
                Ok::<_, JournalError>((index, crashed))
            }));
        }
        let mut stale = Vec::new();
        for task in round {
            let (index, crashed) = task.await.map_err(|_| JournalError::Internal {
                reason: "a worker task panicked",
            })??;
            stale.extend(crashed.into_iter().map(|c| (index, c)));
        }
        // Leases held by crashed workers expire; the stale workers come back.
        clock.advance(TimeDelta::seconds(61));
        for (index, s) in stale {
            let reference = TerminalReferenceFingerprint::parse(&"5a".repeat(32))?;
            match journal
                .complete_command(&commands[index], &s.lease, s.fence, &reference)
                .await
            {
                Err(
                    JournalError::LeaseExpired
                    | JournalError::LeaseNotHeld
                    | JournalError::StaleFence,
                ) => bump(&tally.stale_rejections),
                Err(JournalError::TerminalConflict) => bump(&tally.stale_rejections),
                Ok(_) | Err(_) => bump(&tally.unexpected),
            }
        }
        for (index, command) in commands.iter().enumerate() {
            if !terminal[index] {
                let status = journal.status(command).await?;
                terminal[index] = status.state.is_terminal();
            }
        }
        progress.set(terminal.iter().filter(|t| **t).count() as u64);
    }
    progress.finish();

    ledger(&journal, &tally, options.commands / 2, &mut rng).await?;

    let mut progress_line = |read: u64| eprintln!("demo: verify: {read} documents read");
    let report = crate::verify(journal.connection(), &mut progress_line).await?;
    let stats = journal.stats();
    let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let rows: Vec<(&str, u64)> = vec![
        ("commands", options.commands),
        ("registered new / existing", 0),
        ("acquisitions", get(&tally.acquisitions)),
        ("  of which takeovers", get(&tally.takeovers)),
        ("busy answers", get(&tally.busy)),
        ("lost responses retried", get(&tally.lost_responses_retried)),
        (
            "workers crashed holding a lease",
            get(&tally.crashed_holders),
        ),
        ("stale rejections", get(&tally.stale_rejections)),
        ("succeeded", get(&tally.succeeded)),
        ("failed", get(&tally.failed)),
        ("terminal observations", get(&tally.terminal_observed)),
        ("audit events", report.scanned.audit_events),
        ("ledger accepts", get(&tally.ledger_accepted)),
        ("ledger replays", get(&tally.ledger_replayed)),
        ("ledger mismatches (refused)", get(&tally.ledger_mismatches)),
        (
            "ledger documents",
            report.scanned.ledger_reservations + report.scanned.ledger_transactions,
        ),
        ("attempts / RPCs", 0),
        ("unexpected answers", get(&tally.unexpected)),
    ];
    println!();
    println!(
        "  {:<34} {:>10}",
        format!("what (seed {})", options.seed),
        "count"
    );
    println!("  {:-<34} {:->10}", "", "");
    for (name, value) in rows {
        match name {
            "registered new / existing" => println!(
                "  {name:<34} {:>10}",
                format!(
                    "{} / {}",
                    get(&tally.registrations_new),
                    get(&tally.registrations_existing)
                )
            ),
            "attempts / RPCs" => println!(
                "  {name:<34} {:>10}",
                format!("{} / {}", stats.attempts, stats.rpcs())
            ),
            _ => println!("  {name:<34} {value:>10}"),
        }
    }
    println!();
    if report.clean {
        println!("verify: clean ({} documents)", report.scanned.total());
    } else {
        println!(
            "verify: {} broken invariants: {:?}",
            report.findings.len(),
            report.finding_counts
        );
    }
    Ok(Finished {
        clean: report.clean && get(&tally.unexpected) == 0,
        project,
        database,
        first: requests.into_iter().next(),
    })
}

/// One worker's plan, drawn from the seed.
fn plan(rng: &mut fastrand::Rng) -> Result<Plan, JournalError> {
    Ok(Plan {
        lease: LeaseId::parse(&uuid(rng))?,
        lost_acquire: rng.u8(..100) < 20,
        lost_terminal: rng.u8(..100) < 20,
        action: match rng.u8(..100) {
            0..55 => Action::Complete,
            55..65 => Action::Fail,
            _ => Action::Crash,
        },
        reference: TerminalReferenceFingerprint::parse(&format!("{:064x}", rng.u128(..)))?,
    })
}

fn charge(quantity: u64, cents: u64) -> Result<FingerprintInput, JournalError> {
    let amount = format!("{}.{:02}", cents / 100, cents % 100);
    FingerprintInput::from_json(&serde_json::json!({
        "family": "store_purchase",
        "fingerprintVersion": CURRENT_FINGERPRINT_VERSION,
        "effects": [{"seat_id": "seat-1", "target_seat_id": "seat-1", "actor_seat_id": "seat-1",
                     "mechanism": "WALLET", "amount": amount, "account_type": "checking",
                     "type": "STORE_PURCHASE", "policy_id": "policy-1"}],
        "intent": {"policyUuid": "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", "quantity": quantity},
    }))
}

/// Ledger charges: each accept is sent by a second caller and retried after a lost
/// response, one call after the other (one accepts, two replay), and a changed plan
/// under the same key is refused. The charges run concurrently; they share no document.
async fn ledger(
    journal: &Journal,
    tally: &Arc<Tally>,
    charges: u64,
    rng: &mut fastrand::Rng,
) -> Result<(), JournalError> {
    let scope = LedgerScope::new("seat-1", "seat-1")?;
    let mut tasks = Vec::new();
    for n in 0..charges {
        let key = LedgerKey::new(
            "class-demo",
            "STORE_PURCHASE",
            &format!("charge-{n}-{}", rng.u32(..)),
        )?;
        let plan = charge(1 + n % 3, 1250 + n)?;
        let changed = charge(1 + n % 3, 1250 + n + 1)?;
        let (journal, tally, scope) = (journal.clone(), tally.clone(), scope.clone());
        tasks.push(tokio::spawn(async move {
            let count = |outcome: &LedgerOutcome| match outcome.outcome {
                Outcome::Accepted => bump(&tally.ledger_accepted),
                Outcome::Replayed => bump(&tally.ledger_replayed),
                _ => bump(&tally.unexpected),
            };
            for _ in 0..3 {
                count(&journal.accept_ledger_command(&key, &plan, &scope).await?);
            }
            match journal.accept_ledger_command(&key, &changed, &scope).await {
                Err(JournalError::ReplayMismatch) => bump(&tally.ledger_mismatches),
                _ => bump(&tally.unexpected),
            }
            Ok::<(), JournalError>(())
        }));
    }
    for task in tasks {
        task.await.map_err(|_| JournalError::Internal {
            reason: "a worker task panicked",
        })??;
    }
    Ok(())
}

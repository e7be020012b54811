//! Side-by-side benchmark of this crate and the Node.js Firestore client (issue 8).
//!
//! One emulator, one run, both sides alternating round by round so that the noise of
//! a shared machine lands on both: this crate (release build, in process) and the
//! Node.js peer (`bench/node-peer/peer.js`, a long-lived child process driven over
//! JSON lines, timing itself around its library calls).
//!
//! Phases: parity (the peer derives the same identities and each side reads, accepts
//! and finishes the other's documents; the crate's verifier finds the peer's journal
//! clean), RPCs per operation (through a counting loopback proxy, plus the crate's
//! counters and the Node client's request log), warm-up, sequential latency, the
//! 24-holder first-acquire race, throughput at 1, 4 and 16 workers. The report is
//! printed and written to `target/side-by-side/report.md` (and `results.json`).
//!
//! Run: `bash bench/run.sh` (npm ci, then `cargo bench --bench side_by_side`).
//! Options after `--`: `--quick` (a smoke run: fewer rounds, not for the table) and
//! `--concurrency transaction|preconditions` (this crate's mode; default
//! preconditions). A transaction-mode run writes `report-transaction.md` and
//! `results-transaction.json`.

mod cpu;
mod crate_side;
mod peer;
mod proxy;

use command_journal::Stats;
use command_journal::emulator::Emulator;
use command_journal::{Concurrency, Journal, RegistrationOutcome};
use command_journal::{Connection, Target};
use command_journal::{LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use cpu::{Cpu, CpuMeter};
use crate_side::{RawCommand, uuid};
use peer::Peer;
use proxy::CountingProxy;
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// How much to measure.
struct Plan {
    seq_blocks: u64,
    seq_block_len: u64,
    race_rounds: u64,
    holders: u64,
    tp_levels: [u64; 3],
    tp_rounds: u64,
    tp_duration: Duration,
    rpc_ops: u64,
}

impl Plan {
    fn full() -> Self {
        Self {
            seq_blocks: 10,
            seq_block_len: 30,
            race_rounds: 12,
            holders: 24,
            tp_levels: [1, 4, 16],
            tp_rounds: 3,
            tp_duration: Duration::from_secs(3),
            rpc_ops: 10,
        }
    }

    fn quick() -> Self {
        Self {
            seq_blocks: 2,
            seq_block_len: 10,
            race_rounds: 2,
            holders: 24,
            tp_levels: [1, 4, 16],
            tp_rounds: 1,
            tp_duration: Duration::from_secs(1),
            rpc_ops: 4,
        }
    }
}

/// The sides compared. `PeerSpeculative` is a diagnostic variant of the peer that
/// reads like the crate (audits 2..=4 with the first read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Crate,
    Peer,
    PeerSpeculative,
}

impl Side {
    fn mode(self) -> &'static str {
        match self {
            Side::PeerSpeculative => "speculative",
            _ => "natural",
        }
    }
}

/// Everything both sides need.
struct Bench {
    emulator: Emulator,
    peer: Peer,
    cpu: CpuMeter,
    next_tag: u16,
    /// This crate's concurrency mode in this run.
    concurrency: Concurrency,
}

impl Bench {
    /// A fresh pair of tags (commands use `tag`, leases `tag + 1`).
    fn tag(&mut self) -> u16 {
        self.next_tag += 2;
        self.next_tag
    }

    async fn journal(&self, project: &str, host: &str) -> Res<Journal> {
        let connection = Connection::connect(project, Target::Emulator(host.to_owned()))
            .await
            .map_err(err)?;
        Ok(Journal::new(connection).with_concurrency(self.concurrency))
    }

    async fn peer_call(&mut self, request: Value) -> Res<Value> {
        self.peer.call(request).await
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

fn check(condition: bool, what: &str) -> Res<()> {
    if condition {
        Ok(())
    } else {
        Err(format!("parity check failed: {what}"))
    }
}

// ------------------------------------------------------------------ parity

/// The peer derives the crate's identities, and each side reads, accepts and
/// finishes the documents the other wrote; the crate's verifier finds the peer's
/// documents clean. Any difference in paths, fields, types or checks fails here.
async fn parity(bench: &mut Bench) -> Res<Vec<String>> {
    let mut notes = Vec::new();
    // Identity.
    let cases: Vec<Value> = (0..3)
        .map(|n| {
            json!({"command": RawCommand::new(7, n).to_json(), "leaseId": uuid(8, n),
                   "reference": crate_side::REFERENCE})
        })
        .collect();
    let theirs = bench
        .peer_call(json!({"op": "selftest", "cases": cases}))
        .await?;
    for n in 0..3u64 {
        let input = RawCommand::new(7, n).input().map_err(err)?;
        let identity = input.identity();
        let lease = LeaseId::parse(&uuid(8, n)).map_err(err)?;
        let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
        let ours = json!({
            "commandKeyHash": identity.command_key_hash().as_str(),
            "payloadFingerprint": identity.payload_fingerprint().as_str(),
            "canonicalPayload": input.payload().canonical(),
            "leaseOwnerFingerprint": input.lease_owner(&identity, &lease).map_err(err)?.as_str(),
            "terminalCommitmentHash": identity.terminal_commitment(&reference).as_str(),
        });
        check(
            ours == theirs[n as usize],
            "the peer derives the crate's identities",
        )?;
    }
    notes.push("identities: the peer derives the crate's five hashes exactly".to_owned());

    // Cross reads and writes in one project.
    let project = bench.emulator.new_project_id();
    let host = bench.emulator.host().to_owned();
    let journal = bench.journal(&project, &host).await?;
    let tag = bench.tag();
    let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
    let peer = |call: &str, n: u64, lease: Option<String>, fence: Option<i64>| {
        json!({"op": "call", "project": project, "call": call,
               "command": RawCommand::new(tag, n).to_json(), "leaseId": lease,
               "fenceEpoch": fence, "reference": crate_side::REFERENCE})
    };
    let lease_of = |n: u64, holder: u64| uuid(tag + 1, n * 10 + holder);
    let outcome = |v: &Value| v["outcome"].as_str().unwrap_or("?").to_owned();

    // A: the peer finishes a command; the crate accepts every document.
    let a = RawCommand::new(tag, 1).input().map_err(err)?;
    bench.peer_call(peer("register", 1, None, None)).await?;
    let acquired = bench
        .peer_call(peer("acquire", 1, Some(lease_of(1, 0)), None))
        .await?;
    check(outcome(&acquired) == "lease_acquired", "peer acquires")?;
    let fence = acquired["fenceEpoch"].as_i64().unwrap_or(0);
    let done = bench
        .peer_call(peer("complete", 1, Some(lease_of(1, 0)), Some(fence)))
        .await?;
    check(outcome(&done) == "terminal_succeeded", "peer completes")?;
    let registered = journal.register_command(&a).await.map_err(err)?;
    check(
        registered.outcome() == RegistrationOutcome::RegisteredExisting,
        "crate accepts the peer's registration",
    )?;
    let other = LeaseId::parse(&lease_of(1, 1)).map_err(err)?;
    check(
        journal.acquire_lease(&a, &other).await.map_err(err)? == LeaseOutput::Succeeded,
        "crate reads the peer's terminal lifecycle and audit partner",
    )?;
    let holder = LeaseId::parse(&lease_of(1, 0)).map_err(err)?;
    check(
        journal
            .complete_command(&a, &holder, fence, &reference)
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate sees the peer's commitment as an exact retry",
    )?;

    // B: the crate finishes a command; the peer accepts every document.
    let b = RawCommand::new(tag, 2).input().map_err(err)?;
    journal.register_command(&b).await.map_err(err)?;
    let holder = LeaseId::parse(&lease_of(2, 0)).map_err(err)?;
    let LeaseOutput::Acquired { fence_epoch, .. } =
        journal.acquire_lease(&b, &holder).await.map_err(err)?
    else {
        return Err("crate acquire".into());
    };
    journal
        .complete_command(&b, &holder, fence_epoch, &reference)
        .await
        .map_err(err)?;
    let r = bench.peer_call(peer("register", 2, None, None)).await?;
    check(
        outcome(&r) == "registered_existing",
        "peer accepts the crate's registration",
    )?;
    let r = bench
        .peer_call(peer("acquire", 2, Some(lease_of(2, 1)), None))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer reads the crate's lifecycle",
    )?;
    let r = bench
        .peer_call(peer("complete", 2, Some(lease_of(2, 0)), Some(fence_epoch)))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer sees the crate's commitment as an exact retry",
    )?;

    // C: the peer leases, the crate is busy, then completes with the peer's lease.
    let c = RawCommand::new(tag, 3).input().map_err(err)?;
    bench.peer_call(peer("register", 3, None, None)).await?;
    let acquired = bench
        .peer_call(peer("acquire", 3, Some(lease_of(3, 0)), None))
        .await?;
    let fence = acquired["fenceEpoch"].as_i64().unwrap_or(0);
    let other = LeaseId::parse(&lease_of(3, 1)).map_err(err)?;
    check(
        journal.acquire_lease(&c, &other).await.map_err(err)? == LeaseOutput::Busy,
        "crate is busy on the peer's lease",
    )?;
    let holder = LeaseId::parse(&lease_of(3, 0)).map_err(err)?;
    check(
        journal
            .complete_command(&c, &holder, fence, &reference)
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate completes on the peer's lease",
    )?;
    let r = bench
        .peer_call(peer("complete", 3, Some(lease_of(3, 0)), Some(fence)))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer retries the crate's completion",
    )?;

    // D: the crate leases, the peer is busy, then completes with the crate's lease.
    let d = RawCommand::new(tag, 4).input().map_err(err)?;
    journal.register_command(&d).await.map_err(err)?;
    let holder = LeaseId::parse(&lease_of(4, 0)).map_err(err)?;
    let LeaseOutput::Acquired { fence_epoch, .. } =
        journal.acquire_lease(&d, &holder).await.map_err(err)?
    else {
        return Err("crate acquire".into());
    };
    let r = bench
        .peer_call(peer("acquire", 4, Some(lease_of(4, 1)), None))
        .await?;
    check(
        outcome(&r) == "lease_busy",
        "peer is busy on the crate's lease",
    )?;
    let r = bench
        .peer_call(peer("complete", 4, Some(lease_of(4, 0)), Some(fence_epoch)))
        .await?;
    check(
        outcome(&r) == "terminal_succeeded",
        "peer completes on the crate's lease",
    )?;
    check(
        journal
            .complete_command(&d, &holder, fence_epoch, &reference)
            .await
            .map_err(err)?
            == TerminalOutput::Succeeded,
        "crate retries the peer's completion",
    )?;

    // The crate's verifier over the whole mixed journal.
    let report = command_journal::verify(journal.connection(), &mut |_| {})
        .await
        .map_err(err)?;
    check(
        report.clean,
        "the crate's verifier finds the mixed journal clean",
    )?;
    check(
        (
            report.scanned.checkout_requests,
            report.scanned.lifecycles,
            report.scanned.audit_events,
        ) == (4, 4, 12),
        "4 roots, 4 lifecycles, 12 audit events",
    )?;
    notes.push(
        "documents: each side registered, leased and completed commands the other read, \
         was busy on, completed or retried; the crate's verifier found the mixed journal \
         clean (4 roots, 4 lifecycles, 12 audit events)"
            .to_owned(),
    );
    Ok(notes)
}

// ------------------------------------------------------------------ RPCs

#[derive(Debug, Default, Clone)]
struct RpcRow {
    op: String,
    calls: u64,
    crate_stats: Stats,
    crate_proxy: u64,
    peer_counts: Value,
    peer_proxy: u64,
}

async fn settle() {
    // The Node client sends Rollback without waiting; let it reach the proxy.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

async fn rpc_counts(bench: &mut Bench, ops: u64, holders: u64) -> Res<Vec<RpcRow>> {
    let proxy = CountingProxy::start(bench.emulator.host().to_owned())
        .await
        .map_err(err)?;
    let crate_project = bench.emulator.new_project_id();
    let peer_project = bench.emulator.new_project_id();
    let journal = bench.journal(&crate_project, &proxy.host()).await?;
    let tag = bench.tag();
    let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
    let mut rows = Vec::new();
    let mut fences_crate = vec![0; ops as usize];
    let mut fences_peer = vec![0; ops as usize];
    for (op, holder) in [
        ("register", 0),
        ("acquire (first)", 0),
        ("acquire (busy)", 1),
        ("complete", 0),
    ] {
        let mut row = RpcRow {
            op: op.to_owned(),
            calls: ops,
            ..RpcRow::default()
        };
        // The crate.
        let (s0, p0) = (journal.stats(), proxy.calls());
        for n in 0..ops {
            let command = RawCommand::new(tag, n).input().map_err(err)?;
            let lease = LeaseId::parse(&uuid(tag + 1, n * 10 + holder)).map_err(err)?;
            match op {
                "register" => {
                    journal.register_command(&command).await.map_err(err)?;
                }
                "complete" => {
                    let fence = fences_crate[n as usize];
                    journal
                        .complete_command(&command, &lease, fence, &reference)
                        .await
                        .map_err(err)?;
                }
                _ => {
                    if let LeaseOutput::Acquired { fence_epoch, .. } =
                        journal.acquire_lease(&command, &lease).await.map_err(err)?
                    {
                        fences_crate[n as usize] = fence_epoch;
                    }
                }
            }
        }
        settle().await;
        row.crate_stats = journal.stats().since(&s0);
        row.crate_proxy = proxy.calls() - p0;
        // The peer.
        let p0 = proxy.calls();
        bench.peer_call(json!({"op": "countStart"})).await?;
        for n in 0..ops {
            let call = match op {
                "register" => "register",
                "complete" => "complete",
                _ => "acquire",
            };
            let answer = bench
                .peer_call(
                    json!({"op": "call", "project": peer_project, "host": proxy.host(),
                    "call": call, "command": RawCommand::new(tag, n).to_json(),
                    "leaseId": uuid(tag + 1, n * 10 + holder),
                    "fenceEpoch": fences_peer[n as usize], "reference": crate_side::REFERENCE}),
                )
                .await?;
            if let Some(error) = answer.get("error") {
                return Err(format!("peer {op}: {error}"));
            }
            if op == "acquire (first)" {
                fences_peer[n as usize] = answer["fenceEpoch"].as_i64().unwrap_or(0);
            }
        }
        settle().await;
        row.peer_counts = bench.peer_call(json!({"op": "countStop"})).await?;
        row.peer_proxy = proxy.calls() - p0;
        rows.push(row);
    }
    // One race per side, per answer; the command is registered outside the count.
    let mut row = RpcRow {
        op: format!("race acquire ({holders} holders, per answer)"),
        calls: holders,
        ..RpcRow::default()
    };
    let race_tag = bench.tag();
    let command = RawCommand::new(race_tag, 1);
    journal
        .register_command(&command.input().map_err(err)?)
        .await
        .map_err(err)?;
    let (s0, p0) = (journal.stats(), proxy.calls());
    crate_side::race(&journal, race_tag, 1, holders, false).await?;
    settle().await;
    row.crate_stats = journal.stats().since(&s0);
    row.crate_proxy = proxy.calls() - p0;
    bench
        .peer_call(
            json!({"op": "call", "project": peer_project, "host": proxy.host(),
            "call": "register", "command": command.to_json()}),
        )
        .await?;
    let p0 = proxy.calls();
    bench.peer_call(json!({"op": "countStart"})).await?;
    bench
        .peer_call(
            json!({"op": "race", "project": peer_project, "host": proxy.host(),
            "mode": "natural", "tag": race_tag, "n": 1, "holders": holders, "register": false}),
        )
        .await?;
    settle().await;
    row.peer_counts = bench.peer_call(json!({"op": "countStop"})).await?;
    row.peer_proxy = proxy.calls() - p0;
    rows.push(row);
    Ok(rows)
}

// ------------------------------------------------------------------ phases

struct SeqSamples {
    side: Side,
    samples: Vec<[f64; 3]>,
    cpu: Cpu,
    wall_s: f64,
}

async fn run_sequential(
    bench: &mut Bench,
    side: Side,
    project: &str,
    tag: u16,
    from: u64,
    count: u64,
) -> Res<Vec<[f64; 3]>> {
    match side {
        Side::Crate => {
            let host = bench.emulator.host().to_owned();
            let journal = bench.journal(project, &host).await?;
            crate_side::sequential(&journal, tag, from, count).await
        }
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "sequential", "project": project, "mode": side.mode(),
                    "tag": tag, "from": from, "count": count}),
                )
                .await?;
            serde_json::from_value(answer["samples"].clone()).map_err(err)
        }
    }
}

struct RaceRound {
    side: Side,
    wall_us: f64,
    outcomes: Vec<String>,
    /// When each successful answer arrived, µs after the start.
    answered_us: Vec<f64>,
    cpu: Cpu,
}

async fn run_race(
    bench: &mut Bench,
    side: Side,
    journal: &Journal,
    project: &str,
    tag: u16,
    n: u64,
    holders: u64,
) -> Res<RaceRound> {
    let cpu0 = bench.cpu.now();
    let (wall_us, outcomes, answered_us) = match side {
        Side::Crate => crate_side::race(journal, tag, n, holders, true).await?,
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "race", "project": project, "mode": side.mode(),
                    "tag": tag, "n": n, "holders": holders}),
                )
                .await?;
            (
                answer["wallUs"].as_f64().unwrap_or(f64::NAN),
                serde_json::from_value(answer["results"].clone()).map_err(err)?,
                serde_json::from_value(answer["answeredUs"].clone()).map_err(err)?,
            )
        }
    };
    Ok(RaceRound {
        side,
        wall_us,
        outcomes,
        answered_us,
        cpu: bench.cpu.now().since(&cpu0),
    })
}

struct TpRound {
    side: Side,
    workers: u64,
    completed: u64,
    errors: u64,
    elapsed_us: f64,
    cpu: Cpu,
}

async fn run_throughput(
    bench: &mut Bench,
    side: Side,
    journal: &Journal,
    project: &str,
    tag: u16,
    workers: u64,
    duration: Duration,
) -> Res<TpRound> {
    let cpu0 = bench.cpu.now();
    let (completed, errors, elapsed_us) = match side {
        Side::Crate => crate_side::throughput(journal, tag, workers, duration).await,
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "throughput", "project": project, "mode": side.mode(),
                    "tag": tag, "workers": workers, "durationMs": duration.as_millis() as u64}),
                )
                .await?;
            (
                answer["completed"].as_u64().unwrap_or(0),
                answer["errors"].as_u64().unwrap_or(0),
                answer["elapsedUs"].as_f64().unwrap_or(f64::NAN),
            )
        }
    };
    Ok(TpRound {
        side,
        workers,
        completed,
        errors,
        elapsed_us,
        cpu: bench.cpu.now().since(&cpu0),
    })
}

/// Alternating order for round `r`: the crate first on even rounds.
fn order(r: u64, sides: &[Side]) -> Vec<Side> {
    let mut sides = sides.to_vec();
    let shift = (r as usize) % sides.len();
    sides.rotate_left(shift);
    sides
}

// ------------------------------------------------------------------ main

fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/node-peer/peer.js")
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1).map(|s| s.trim().to_owned()))
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!(
        "{cores} cores ({cpu}), {:.1} GiB",
        mem_kib as f64 / 1024.0 / 1024.0
    )
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("side_by_side: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let plan = if quick { Plan::quick() } else { Plan::full() };
    let concurrency = match args.iter().position(|a| a == "--concurrency") {
        Some(i) => {
            let text = args.get(i + 1).map(String::as_str).unwrap_or("");
            Concurrency::parse(text).map_err(|_| {
                format!("--concurrency takes transaction or preconditions, not {text:?}")
            })?
        }
        None => Concurrency::Preconditions,
    };
    let script = peer_script();
    let modules = script.with_file_name("node_modules");
    if !modules.join("@google-cloud/firestore").is_dir() {
        return Err(format!(
            "{} is missing: run `npm ci` in bench/node-peer (bash bench/run.sh does)",
            modules.display()
        ));
    }
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".to_owned());
    eprintln!("starting the emulator…");
    let emulator = tokio::task::spawn_blocking(Emulator::start)
        .await
        .map_err(err)?
        .map_err(err)?;
    let peer = Peer::start(&node, &script, emulator.host()).await?;
    let cpu = CpuMeter::new(peer.pid(), emulator.pid());
    let mut bench = Bench {
        emulator,
        peer,
        cpu,
        next_tag: 0x100,
        concurrency,
    };
    let load_before = cpu::load_average();
    let hello = bench.peer_call(json!({"op": "hello"})).await?;
    let versions = format!(
        "Node.js {}, @google-cloud/firestore {}",
        hello["node"].as_str().unwrap_or("?"),
        hello["firestore"].as_str().unwrap_or("?")
    );
    eprintln!("peer: {versions}");

    eprintln!("parity…");
    let parity_notes = parity(&mut bench).await?;

    eprintln!("RPCs per operation…");
    let rpc_rows = rpc_counts(&mut bench, plan.rpc_ops, plan.holders).await?;

    // Warm-up: the emulator's JIT, both clients' channels.
    eprintln!("warm-up…");
    let warm_project = bench.emulator.new_project_id();
    for side in [Side::Crate, Side::Peer, Side::Crate, Side::Peer] {
        let tag = bench.tag();
        run_sequential(&mut bench, side, &warm_project, tag, 0, 30).await?;
        let tag = bench.tag();
        let host = bench.emulator.host().to_owned();
        let journal = bench.journal(&warm_project, &host).await?;
        run_throughput(
            &mut bench,
            side,
            &journal,
            &warm_project,
            tag,
            16,
            Duration::from_secs(1),
        )
        .await?;
        let tag = bench.tag();
        run_race(
            &mut bench,
            side,
            &journal,
            &warm_project,
            tag,
            1,
            plan.holders,
        )
        .await?;
    }

    // Sequential latency.
    eprintln!("sequential latency…");
    let seq_sides = [Side::Crate, Side::Peer, Side::PeerSpeculative];
    let seq_projects: Vec<String> = seq_sides
        .iter()
        .map(|_| bench.emulator.new_project_id())
        .collect();
    let seq_tags: Vec<u16> = seq_sides.iter().map(|_| bench.tag()).collect();
    let mut seq: Vec<SeqSamples> = seq_sides
        .iter()
        .map(|&side| SeqSamples {
            side,
            samples: Vec::new(),
            cpu: Cpu::default(),
            wall_s: 0.0,
        })
        .collect();
    for block in 0..plan.seq_blocks {
        for side in order(block, &seq_sides) {
            let i = seq_sides.iter().position(|s| *s == side).unwrap_or(0);
            let from = block * plan.seq_block_len;
            let (cpu0, t0) = (bench.cpu.now(), std::time::Instant::now());
            let samples = run_sequential(
                &mut bench,
                side,
                &seq_projects[i],
                seq_tags[i],
                from,
                plan.seq_block_len,
            )
            .await?;
            seq[i].wall_s += t0.elapsed().as_secs_f64();
            seq[i].cpu.add(&bench.cpu.now().since(&cpu0));
            seq[i].samples.extend(samples);
        }
    }

    // The 24-holder race.
    eprintln!("{}-holder race…", plan.holders);
    let race_sides = [Side::Crate, Side::Peer];
    let race_project: Vec<String> = race_sides
        .iter()
        .map(|_| bench.emulator.new_project_id())
        .collect();
    let host = bench.emulator.host().to_owned();
    let race_journal = bench.journal(&race_project[0], &host).await?;
    let race_tag = bench.tag();
    let mut races = Vec::new();
    for round in 0..plan.race_rounds {
        for side in order(round, &race_sides) {
            let i = race_sides.iter().position(|s| *s == side).unwrap_or(0);
            let r = run_race(
                &mut bench,
                side,
                &race_journal,
                &race_project[i],
                race_tag,
                round + 1,
                plan.holders,
            )
            .await?;
            eprintln!("  round {round} {:?}: {:.1} ms", r.side, r.wall_us / 1000.0);
            races.push(r);
        }
    }

    // Throughput.
    eprintln!("throughput…");
    let mut tps = Vec::new();
    for &workers in &plan.tp_levels {
        for round in 0..plan.tp_rounds {
            for side in order(round, &race_sides) {
                let project = bench.emulator.new_project_id();
                let tag = bench.tag();
                let journal = bench.journal(&project, &host).await?;
                let r = run_throughput(
                    &mut bench,
                    side,
                    &journal,
                    &project,
                    tag,
                    workers,
                    plan.tp_duration,
                )
                .await?;
                eprintln!(
                    "  {workers} workers {:?}: {:.1} commands/s",
                    r.side,
                    r.completed as f64 / (r.elapsed_us / 1e6)
                );
                tps.push(r);
            }
        }
    }

    let load = format!("{load_before} before, {} after", cpu::load_average());
    let report = render(&RenderInput {
        plan: &plan,
        quick,
        load: &load,
        versions: &versions,
        mode: concurrency.as_str(),
        parity: &parity_notes,
        rpc: &rpc_rows,
        seq: &seq,
        races: &races,
        tps: &tps,
    });
    println!("{report}");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("side-by-side");
    std::fs::create_dir_all(&dir).map_err(err)?;
    let suffix = match concurrency {
        Concurrency::Preconditions => String::new(),
        Concurrency::Transaction => "-transaction".to_owned(),
    };
    let report_path = dir.join(format!("report{suffix}.md"));
    std::fs::write(&report_path, &report).map_err(err)?;
    let raw = json!({
        "sequential": seq.iter().map(|s| json!({"side": format!("{:?}", s.side), "samples": s.samples})).collect::<Vec<_>>(),
        "races": races.iter().map(|r| json!({"side": format!("{:?}", r.side), "wallUs": r.wall_us, "outcomes": r.outcomes, "answeredUs": r.answered_us})).collect::<Vec<_>>(),
        "throughput": tps.iter().map(|t| json!({"side": format!("{:?}", t.side), "workers": t.workers, "completed": t.completed, "errors": t.errors, "elapsedUs": t.elapsed_us})).collect::<Vec<_>>(),
    });
    std::fs::write(dir.join(format!("results{suffix}.json")), raw.to_string()).map_err(err)?;
    eprintln!("report written to {}", report_path.display());
    Ok(())
}

// ------------------------------------------------------------------ report

struct RenderInput<'a> {
    plan: &'a Plan,
    quick: bool,
    load: &'a str,
    versions: &'a str,
    /// This crate's concurrency mode.
    mode: &'a str,
    parity: &'a [String],
    rpc: &'a [RpcRow],
    seq: &'a [SeqSamples],
    races: &'a [RaceRound],
    tps: &'a [TpRound],
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn render(input: &RenderInput<'_>) -> String {
    let mut out = String::new();
    let plan = input.plan;
    let _ = writeln!(
        out,
        "## Side by side: command-journal vs the Node.js client\n"
    );
    if input.quick {
        let _ = writeln!(
            out,
            "**--quick smoke run: too few rounds for the table.**\n"
        );
    }
    let _ = writeln!(
        out,
        "Machine: {}; 1-minute load average {}. Peer: {}. This crate in {} mode. One emulator, sides alternating per round.\n",
        machine(),
        input.load,
        input.versions,
        input.mode
    );
    for note in input.parity {
        let _ = writeln!(out, "- parity: {note}");
    }

    // Sequential.
    let get = |side: Side| input.seq.iter().find(|s| s.side == side);
    let column = |s: &SeqSamples, k: usize| s.samples.iter().map(|x| x[k]).collect::<Vec<_>>();
    let sum = |s: &SeqSamples| s.samples.iter().map(|x| x[1] + x[2]).collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "\n### Sequential latency ({} commands per side, {} blocks alternating)\n",
        plan.seq_blocks * plan.seq_block_len,
        plan.seq_blocks
    );
    let _ = writeln!(
        out,
        "| operation | crate p50 | peer p50 | ratio p50 | crate p99 | peer p99 | ratio p99 | peer (speculative reads) p50 |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut acq_complete_ratio = f64::NAN;
    if let (Some(c), Some(p), Some(ps)) = (
        get(Side::Crate),
        get(Side::Peer),
        get(Side::PeerSpeculative),
    ) {
        let rows = [
            ("register", column(c, 0), column(p, 0), column(ps, 0)),
            ("acquire (first)", column(c, 1), column(p, 1), column(ps, 1)),
            ("complete", column(c, 2), column(p, 2), column(ps, 2)),
            ("acquire + complete", sum(c), sum(p), sum(ps)),
        ];
        for (name, cv, pv, psv) in rows {
            let (c50, p50, c99, p99) = (
                percentile(&cv, 0.5),
                percentile(&pv, 0.5),
                percentile(&cv, 0.99),
                percentile(&pv, 0.99),
            );
            if name == "acquire + complete" {
                acq_complete_ratio = c50 / p50;
            }
            let _ = writeln!(
                out,
                "| {name} | {} | {} | **{:.2}** | {} | {} | {:.2} | {} |",
                ms(c50),
                ms(p50),
                c50 / p50,
                ms(c99),
                ms(p99),
                c99 / p99,
                ms(percentile(&psv, 0.5))
            );
        }
    }

    // Race.
    let walls = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .map(|r| r.wall_us)
            .collect::<Vec<_>>()
    };
    let errors = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .flat_map(|r| r.outcomes.iter())
            .filter(|o| o.starts_with("error"))
            .count()
    };
    let exact = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .filter(|r| {
                let acquired = r.outcomes.iter().filter(|o| *o == "lease_acquired").count();
                let busy = r.outcomes.iter().filter(|o| *o == "lease_busy").count();
                acquired == 1 && busy == r.outcomes.len() - 1
            })
            .count()
    };
    let error_codes = |side: Side| {
        let mut codes: Vec<&str> = input
            .races
            .iter()
            .filter(|r| r.side == side)
            .flat_map(|r| r.outcomes.iter())
            .filter(|o| o.starts_with("error"))
            .map(String::as_str)
            .collect();
        codes.sort_unstable();
        codes.dedup();
        codes.join(", ")
    };
    let (cw, pw) = (walls(Side::Crate), walls(Side::Peer));
    let race_ratio = percentile(&cw, 0.5) / percentile(&pw, 0.5);
    let _ = writeln!(
        out,
        "\n### {}-holder first-acquire race ({} rounds per side, alternating)\n",
        plan.holders, plan.race_rounds
    );
    let _ = writeln!(out, "| | crate | peer | ratio |\n|---|---|---|---|");
    let _ = writeln!(
        out,
        "| wall time to all answers, median | {} | {} | **{:.3}** |",
        ms(percentile(&cw, 0.5)),
        ms(percentile(&pw, 0.5)),
        race_ratio
    );
    let _ = writeln!(
        out,
        "| wall time, mean | {} | {} | {:.3} |",
        ms(mean(&cw)),
        ms(mean(&pw)),
        mean(&cw) / mean(&pw)
    );
    let _ = writeln!(
        out,
        "| wall time, worst round | {} | {} | {:.3} |",
        ms(percentile(&cw, 1.0)),
        ms(percentile(&pw, 1.0)),
        percentile(&cw, 1.0) / percentile(&pw, 1.0)
    );
    let nth_answer = |side: Side, k: usize| {
        let per_round: Vec<f64> = input
            .races
            .iter()
            .filter(|r| r.side == side)
            .filter_map(|r| {
                let mut a = r.answered_us.clone();
                a.sort_by(f64::total_cmp);
                a.get(k).copied()
            })
            .collect();
        percentile(&per_round, 0.5)
    };
    for (label, k) in [("first answer", 0), ("second answer", 1)] {
        let (c, p) = (nth_answer(Side::Crate, k), nth_answer(Side::Peer, k));
        let _ = writeln!(
            out,
            "| {label}, median | {} | {} | {:.3} |",
            ms(c),
            ms(p),
            c / p
        );
    }
    let _ = writeln!(
        out,
        "| answers that were errors | {} of {} | {} of {} | |",
        errors(Side::Crate),
        cw.len() as u64 * plan.holders,
        errors(Side::Peer),
        pw.len() as u64 * plan.holders
    );
    let _ = writeln!(
        out,
        "| rounds with exactly 1 acquired + {} busy | {} of {} | {} of {} | |",
        plan.holders - 1,
        exact(Side::Crate),
        cw.len(),
        exact(Side::Peer),
        pw.len()
    );
    for side in [Side::Crate, Side::Peer] {
        let codes = error_codes(side);
        if !codes.is_empty() {
            let _ = writeln!(out, "\n{side:?} race errors: {codes}");
        }
    }

    // Throughput.
    let _ = writeln!(
        out,
        "\n### Throughput on distinct commands (register + acquire + complete per command; {} rounds × {:?} per side and level)\n",
        plan.tp_rounds, plan.tp_duration
    );
    let _ = writeln!(
        out,
        "| workers | crate commands/s | peer commands/s | ratio | crate errors | peer errors |\n|---|---|---|---|---|---|"
    );
    let mut tp16 = f64::NAN;
    for &w in &plan.tp_levels {
        let rate = |side: Side| {
            let rounds: Vec<&TpRound> = input
                .tps
                .iter()
                .filter(|t| t.side == side && t.workers == w)
                .collect();
            let done: u64 = rounds.iter().map(|t| t.completed).sum();
            let errs: u64 = rounds.iter().map(|t| t.errors).sum();
            let secs: f64 = rounds.iter().map(|t| t.elapsed_us).sum::<f64>() / 1e6;
            (done as f64 / secs, errs)
        };
        let ((c, ce), (p, pe)) = (rate(Side::Crate), rate(Side::Peer));
        if w == 16 {
            tp16 = c / p;
        }
        let _ = writeln!(
            out,
            "| {w} | {c:.1} | {p:.1} | **{:.2}** | {ce} | {pe} |",
            c / p
        );
    }

    // RPCs.
    let _ = writeln!(
        out,
        "\n### RPCs per operation (counted at a loopback proxy: client-opened HTTP/2 streams)\n"
    );
    let _ = writeln!(
        out,
        "| operation | crate RPCs | crate BatchGet / Commit | peer RPCs | peer BatchGet / Commit / BeginTransaction / Rollback |\n|---|---|---|---|---|"
    );
    let mut two_rpcs = true;
    let mut crate_proxy_agrees = true;
    for row in input.rpc {
        let calls = row.calls as f64;
        let s = &row.crate_stats;
        let pc = |k: &str| row.peer_counts[k].as_u64().unwrap_or(0) as f64 / calls;
        let crate_rpcs = row.crate_proxy as f64 / calls;
        let peer_rpcs = row.peer_proxy as f64 / calls;
        if row.crate_proxy != s.rpcs() {
            crate_proxy_agrees = false;
        }
        if ["register", "acquire (first)", "complete"].contains(&row.op.as_str()) {
            two_rpcs &= s.rpcs() == 2 * row.calls && s.commits == row.calls;
        }
        let _ = writeln!(
            out,
            "| {} | {crate_rpcs:.2} | {:.2} / {:.2} | {peer_rpcs:.2} | {:.2} / {:.2} / {:.2} / {:.2} |",
            row.op,
            s.batch_gets as f64 / calls,
            s.commits as f64 / calls,
            pc("batchGet"),
            pc("commit"),
            pc("beginTransaction"),
            pc("rollback"),
        );
    }
    let _ = writeln!(
        out,
        "\nThe crate's own counters (`journal.stats()`) {} the proxy's count.",
        if crate_proxy_agrees {
            "agree with"
        } else {
            "DISAGREE with"
        }
    );

    // CPU.
    let _ = writeln!(
        out,
        "\n### Where the CPU went (per command; cores = CPU seconds / wall seconds, of 2)\n"
    );
    let _ = writeln!(
        out,
        "| workload | side | client CPU per command | emulator CPU per command | client cores | emulator cores |\n|---|---|---|---|---|---|"
    );
    let client = |side: Side, cpu: &Cpu| {
        if side == Side::Crate {
            cpu.runner
        } else {
            cpu.node
        }
    };
    let mut cpu_row = |name: &str, side: Side, cpu: &Cpu, commands: f64, wall_s: f64| {
        let _ = writeln!(
            out,
            "| {name} | {side:?} | {:.2} ms | {:.2} ms | {:.2} | {:.2} |",
            client(side, cpu) * 1e3 / commands,
            cpu.emulator * 1e3 / commands,
            client(side, cpu) / wall_s,
            cpu.emulator / wall_s
        );
    };
    for s in input.seq {
        cpu_row(
            "sequential",
            s.side,
            &s.cpu,
            s.samples.len() as f64,
            s.wall_s,
        );
    }
    for side in [Side::Crate, Side::Peer] {
        let mut cpu = Cpu::default();
        let mut wall = 0.0;
        let mut n = 0.0;
        for r in input.races.iter().filter(|r| r.side == side) {
            cpu.add(&r.cpu);
            wall += r.wall_us / 1e6;
            n += 1.0;
        }
        cpu_row(
            "race (per round, incl. its registration)",
            side,
            &cpu,
            n,
            wall,
        );
    }
    for &w in &plan.tp_levels {
        for side in [Side::Crate, Side::Peer] {
            let mut cpu = Cpu::default();
            let mut wall = 0.0;
            let mut n = 0.0;
            for t in input
                .tps
                .iter()
                .filter(|t| t.side == side && t.workers == w)
            {
                cpu.add(&t.cpu);
                wall += t.elapsed_us / 1e6;
                n += t.completed as f64;
            }
            cpu_row(&format!("throughput, {w} workers"), side, &cpu, n, wall);
        }
    }

    // Targets.
    let race_errors = errors(Side::Crate);
    let _ = writeln!(out, "\n### Targets\n");
    let _ = writeln!(out, "| target | measured | |\n|---|---|---|");
    let _ = writeln!(
        out,
        "| 2 RPCs per committed operation, no BeginTransaction | {} | {} |",
        if two_rpcs {
            "2 (BatchGet + Commit)"
        } else {
            "other"
        },
        verdict(two_rpcs)
    );
    let _ = writeln!(
        out,
        "| sequential acquire+complete p50 ≤ 0.7 × peer | {acq_complete_ratio:.2} × | {} |",
        verdict(acq_complete_ratio <= 0.7)
    );
    let _ = writeln!(
        out,
        "| {}-holder race wall time ≤ 0.5 × peer, no errors | {race_ratio:.3} ×, {race_errors} errors | {} |",
        plan.holders,
        verdict(race_ratio <= 0.5 && race_errors == 0)
    );
    let _ = writeln!(
        out,
        "| 16-worker throughput ≥ 1.5 × peer | {tp16:.2} × | {} |",
        verdict(tp16 >= 1.5)
    );
    out
}

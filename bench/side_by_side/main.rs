//! Side-by-side benchmark of this crate and the Node.js Firestore client.
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
//! Run: `bash bench/run.sh`, or `cargo bench --bench side_by_side` (which runs `npm ci`
//! in bench/node-peer first when its modules are missing).
//! Options after `--`: `--quick` (a smoke run: fewer rounds, not for the table) and
//! `--concurrency transaction|preconditions` (this crate's mode; default
//! preconditions). A transaction-mode run writes `report-transaction.md` and
//! `results-transaction.json`.

mod cpu;
mod crate_side;
mod parity;
mod peer;
mod phases;
mod proxy;
mod report;
mod rpc;
mod setup;
mod stats;

use crate::cpu::{Cpu, CpuMeter};
use crate::parity::parity;
use crate::peer::Peer;
use crate::phases::{SeqSamples, order, run_race, run_sequential, run_throughput};
use crate::report::{RenderInput, render};
use crate::rpc::rpc_counts;
use crate::setup::{Options, options, peer_script};
use command_journal::{Concurrency, Journal};
use command_journal::{Connection, Target};
use command_journal_emulator::Emulator;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
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
    pub(crate) emulator: Emulator,
    pub(crate) peer: Peer,
    pub(crate) cpu: CpuMeter,
    pub(crate) next_tag: u16,
    /// This crate's concurrency mode in this run.
    pub(crate) concurrency: Concurrency,
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

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("side_by_side: {error}");
        std::process::exit(1);
    }
}

async fn run() -> Res<()> {
    let Options {
        quick,
        plan,
        concurrency,
    } = options()?;
    let script = peer_script();
    let modules = script.with_file_name("node_modules");
    if !modules.join("@google-cloud/firestore").is_dir() {
        // A fresh clone: install the locked peer, as bench/run.sh does.
        eprintln!("installing the Node.js peer (npm ci in bench/node-peer)…");
        let npm = std::env::var("NPM").unwrap_or_else(|_| "npm".to_owned());
        let dir = script.parent().ok_or("bench/node-peer has no folder")?;
        let status = std::process::Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
            .current_dir(dir)
            .status()
            .map_err(|e| format!("npm ci in {}: {e}", dir.display()))?;
        if !status.success() || !modules.join("@google-cloud/firestore").is_dir() {
            return Err(format!("npm ci in {} failed ({status})", dir.display()));
        }
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

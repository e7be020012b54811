//! This crate's command latency and throughput under network round trips, and its
//! 16-worker throughput as a fraction of the machine's limit.
//!
//! Every RPC goes through the loopback proxy of the side-by-side benchmark with an
//! added one-way delay (0, 2 and 10 ms each way by default: loopback, in-region and
//! cross-region Cloud Run to Firestore). Per delay: sequential end-to-end commands,
//! alternating in blocks between `start` + `complete` (3 sequential RPCs in
//! preconditions mode, 4 in transaction mode) and `register` + `acquire` + `complete`
//! (5 and 6; the RPC column is the runner's own count), then 16 workers on distinct commands for
//! each variant. CPU of this process and of the emulator's JVM is read from
//! `/proc/{pid}/stat` around each throughput run; the limit is
//! `cores ÷ (client + emulator CPU seconds per command)`, the rate at which the two
//! processes would saturate every core.
//!
//! The Node.js peer of the side-by-side benchmark (`bench/node-peer`, register +
//! acquire + complete in its own read-write transactions) runs the same sequential
//! and 16-worker phases through the same delayed proxy when its `node_modules` is
//! installed (`npm ci` there; `--no-peer` skips it).
//!
//! Then, per delay, `execute` (`execute.rs`): a new command and its replay with a stub
//! provider answering at once, beside the step-by-step path it replaced (`start`,
//! `begin_send`, `record_send_outcome`), RPCs counted by the crate and at the proxy,
//! against the floor of 2 round trips.
//!
//! Run: `cargo bench --bench rtt` (about 4 minutes with the peer); `-- --delays
//! 0,2,10 --commands 200 --seconds 5 --concurrency preconditions` are the defaults. A
//! bench target: `cargo test` never builds it.

#[allow(dead_code)]
#[path = "../side_by_side/cpu.rs"]
mod cpu;
#[allow(dead_code)]
#[path = "../side_by_side/crate_side.rs"]
mod crate_side;
#[allow(dead_code)]
#[path = "../side_by_side/peer.rs"]
mod peer;
#[allow(dead_code)]
#[path = "../side_by_side/proxy.rs"]
mod proxy;
#[allow(dead_code)]
#[path = "../side_by_side/stats.rs"]
mod stats;

mod execute;

use command_journal::Concurrency;
use command_journal::Journal;
use command_journal::{Connection, Target};
use command_journal::{LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use command_journal_emulator::Emulator;
use cpu::CpuMeter;
use crate_side::{RawCommand, uuid};
use peer::Peer;
use proxy::CountingProxy;
use serde_json::json;
use stats::{percentile, run_workers};
use std::time::{Duration, Instant};

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// `start` + `complete`.
    Start,
    /// `register` + `acquire` + `complete`.
    Separate,
}

impl Variant {
    fn label(self) -> &'static str {
        match self {
            Variant::Start => "start + complete",
            Variant::Separate => "register + acquire + complete",
        }
    }
}

/// One command end to end; its latency in µs.
async fn command_once(journal: &Journal, variant: Variant, tag: u16, n: u64) -> Res<f64> {
    if variant == Variant::Separate {
        let t0 = Instant::now();
        crate_side::lifecycle_once(journal, tag, n, tag + 1).await?;
        return Ok(t0.elapsed().as_secs_f64() * 1e6);
    }
    let raw = RawCommand::new(tag, n);
    let lease_text = uuid(tag + 1, n);
    let t0 = Instant::now();
    let command = raw.input().map_err(err)?;
    let lease = LeaseId::parse(&lease_text).map_err(err)?;
    let fence = match journal.start(&command, &lease).await.map_err(err)?.lease {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => return Err(format!("unexpected start answer {other:?}")),
    };
    let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
    match journal
        .complete_command(&command, &lease, fence, &reference)
        .await
    {
        Ok(TerminalOutput::Succeeded) => Ok(t0.elapsed().as_secs_f64() * 1e6),
        other => Err(format!("unexpected complete answer {other:?}")),
    }
}

/// `workers` loops on distinct commands for `duration`: (completed, errors, seconds).
async fn throughput(
    journal: &Journal,
    variant: Variant,
    tag: u16,
    workers: u64,
    duration: Duration,
) -> (u64, u64, f64) {
    let journal = journal.clone();
    let (completed, errors, elapsed) = run_workers(workers, duration, move |id| {
        let journal = journal.clone();
        async move { command_once(&journal, variant, tag, id).await.is_ok() }
    })
    .await;
    (completed, errors, elapsed.as_secs_f64())
}

struct Options {
    delays: Vec<u64>,
    commands: u64,
    seconds: u64,
    concurrency: Concurrency,
    peer: bool,
}

fn options() -> Res<Options> {
    let mut o = Options {
        delays: vec![0, 2, 10],
        commands: 200,
        seconds: 5,
        concurrency: Concurrency::Preconditions,
        peer: true,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(flag) = args.next() {
        if flag == "--no-peer" {
            o.peer = false;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--delays" => {
                o.delays = value
                    .split(',')
                    .map(|d| d.parse().map_err(err))
                    .collect::<Res<_>>()?;
            }
            "--commands" => o.commands = value.parse().map_err(err)?,
            "--seconds" => o.seconds = value.parse().map_err(err)?,
            "--concurrency" => {
                o.concurrency = Concurrency::parse(&value).map_err(|_| {
                    format!("--concurrency takes transaction or preconditions, not {value:?}")
                })?;
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() {
    if let Err(error) = run().await {
        eprintln!("rtt: {error}");
        std::process::exit(1);
    }
}

/// The Node.js peer when its dependencies are installed and `--no-peer` is not given.
async fn start_peer(o: &Options, emulator_host: &str) -> Res<Option<Peer>> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/node-peer/peer.js");
    if !o.peer {
        return Ok(None);
    }
    if !script
        .with_file_name("node_modules")
        .join("@google-cloud/firestore")
        .is_dir()
    {
        eprintln!("the Node.js peer is skipped: run `npm ci` in bench/node-peer to include it");
        return Ok(None);
    }
    let node = std::env::var("NODE").unwrap_or_else(|_| "node".to_owned());
    Ok(Some(Peer::start(&node, &script, emulator_host).await?))
}

/// The peer's sequential commands `[from, from + count)` of `tag` through `host`:
/// end-to-end latencies in µs.
async fn peer_sequential(
    peer: &mut Peer,
    project: &str,
    host: &str,
    tag: u16,
    from: u64,
    count: u64,
) -> Res<Vec<f64>> {
    let answer = peer
        .call(json!({"op": "sequential", "project": project, "host": host,
                     "tag": tag, "from": from, "count": count}))
        .await?;
    answer["samples"]
        .as_array()
        .ok_or("peer: no samples")?
        .iter()
        .map(|s| {
            s.as_array()
                .map(|parts| parts.iter().filter_map(|p| p.as_f64()).sum())
                .ok_or_else(|| "peer: bad sample".to_owned())
        })
        .collect()
}

const PEER_LABEL: &str = "register + acquire + complete (Node.js peer)";

async fn run() -> Res<()> {
    let o = options()?;
    let emulator = tokio::task::spawn_blocking(Emulator::from_env_or_start)
        .await
        .map_err(err)?
        .map_err(err)?;
    let mut peer = start_peer(&o, emulator.host()).await?;
    let meter = CpuMeter::new(peer.as_ref().and_then(Peer::pid), emulator.pid());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!("load average before: {}", cpu::load_average());
    println!("crate concurrency mode: {}", o.concurrency.as_str());
    let variants = [Variant::Start, Variant::Separate];
    let mut seq_rows = Vec::new();
    let mut tp_rows = Vec::new();
    let mut execute_rows = Vec::new();
    let mut tag = 0x300u16;
    let mut peer_tag = 0x700u16;
    for &delay in &o.delays {
        let proxy = CountingProxy::start_with_delay(
            emulator.host().to_owned(),
            Duration::from_millis(delay),
        )
        .await
        .map_err(err)?;
        let project = emulator.new_project_id();
        let connection = Connection::connect(&project, Target::Emulator(proxy.host()))
            .await
            .map_err(err)?;
        let journal = Journal::new(connection).with_concurrency(o.concurrency);
        let peer_project = emulator.new_project_id();
        // Warm-up: channel, JIT.
        for &v in &variants {
            tag += 2;
            for n in 0..20 {
                command_once(&journal, v, tag, n).await?;
            }
        }
        if let Some(peer) = peer.as_mut() {
            peer_tag += 2;
            peer_sequential(peer, &peer_project, &proxy.host(), peer_tag, 0, 20).await?;
        }
        // Sequential: blocks of 20, the crate's variants and the peer alternating.
        let mut samples = [Vec::new(), Vec::new()];
        // The runner's RPCs per variant, counted around its own commands only.
        let mut rpcs_used = [0_u64, 0];
        let mut peer_samples = Vec::new();
        let tags = [tag + 2, tag + 4];
        tag += 4;
        peer_tag += 2;
        let blocks = o.commands.div_ceil(20);
        for block in 0..blocks {
            let order = if block % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
            for i in order {
                if i == 2 {
                    if let Some(peer) = peer.as_mut() {
                        let block_samples = peer_sequential(
                            peer,
                            &peer_project,
                            &proxy.host(),
                            peer_tag,
                            block * 20,
                            20,
                        )
                        .await?;
                        peer_samples.extend(block_samples);
                    }
                    continue;
                }
                let v = variants[i];
                let before = journal.stats();
                for k in 0..20 {
                    samples[i].push(command_once(&journal, v, tags[i], block * 20 + k).await?);
                }
                rpcs_used[i] += journal.stats().since(&before).rpcs();
            }
        }
        let per_command = |i: usize| {
            let done = samples[i].len().max(1) as f64;
            format!("{:.2}", rpcs_used[i] as f64 / done)
        };
        let mut sequential = vec![
            (variants[0].label(), per_command(0), &samples[0]),
            (variants[1].label(), per_command(1), &samples[1]),
        ];
        if peer.is_some() {
            sequential.push((PEER_LABEL, "8".to_owned(), &peer_samples));
        }
        for (label, rpcs, values) in sequential {
            let p50 = percentile(values, 0.5) / 1e3;
            let p99 = percentile(values, 0.99) / 1e3;
            eprintln!("{delay} ms: {label}: p50 {p50:.2} ms, p99 {p99:.2} ms");
            seq_rows.push(format!(
                "| {delay} ms | {label} | {rpcs} | {} | {p50:.2} ms | {p99:.2} ms |",
                values.len()
            ));
        }
        // Throughput, 16 workers.
        for &v in &variants {
            tag += 2;
            let (cpu0, rpc0) = (meter.now(), proxy.calls());
            let (done, errors, secs) =
                throughput(&journal, v, tag, 16, Duration::from_secs(o.seconds)).await;
            let used = meter.now().since(&cpu0);
            let rpcs = (proxy.calls() - rpc0) as f64 / done.max(1) as f64;
            tp_rows.push(throughput_row(
                delay,
                v.label(),
                (done, errors, secs),
                rpcs,
                used.runner,
                used.emulator,
                cores,
            ));
        }
        if let Some(peer) = peer.as_mut() {
            peer_tag += 2;
            let (cpu0, rpc0) = (meter.now(), proxy.calls());
            let answer = peer
                .call(json!({"op": "throughput", "project": peer_project,
                             "host": proxy.host(), "tag": peer_tag, "workers": 16,
                             "durationMs": o.seconds * 1000}))
                .await?;
            let used = meter.now().since(&cpu0);
            let done = answer["completed"].as_u64().unwrap_or(0);
            let errors = answer["errors"].as_u64().unwrap_or(0);
            let secs = answer["elapsedUs"].as_f64().unwrap_or(f64::NAN) / 1e6;
            let rpcs = (proxy.calls() - rpc0) as f64 / done.max(1) as f64;
            tp_rows.push(throughput_row(
                delay,
                PEER_LABEL,
                (done, errors, secs),
                rpcs,
                used.node,
                used.emulator,
                cores,
            ));
        }
        tag += 8;
        execute_rows.extend(execute::rows(&journal, &proxy, delay, o.commands, tag).await?);
        tag += 8;
        let _ = emulator.clear(&project).await;
        let _ = emulator.clear(&peer_project).await;
    }
    println!("load average after: {}", cpu::load_average());
    println!(
        "\n| one-way delay | command | RPCs | commands | p50 | p99 |\n|---|---|---|---|---|---|"
    );
    for row in seq_rows {
        println!("{row}");
    }
    println!(
        "\n| one-way delay | command | commands/s (16 workers) | errors | RPCs per command | client CPU per command | emulator CPU per command | limit = {cores} cores ÷ CPU per command | fraction of the limit |\n|---|---|---|---|---|---|---|---|---|"
    );
    for row in tp_rows {
        println!("{row}");
    }
    println!(
        "\n| one-way delay | path (stub provider answering at once) | RPCs (crate) | RPCs (proxy) | commands | p50 | p99 | floor: 2 round trips |\n|---|---|---|---|---|---|---|---|"
    );
    for row in execute_rows {
        println!("{row}");
    }
    Ok(())
}

/// One 16-worker row: the rate, the limit `cores ÷ (client + emulator CPU per
/// command)` and the rate's fraction of it.
fn throughput_row(
    delay: u64,
    label: &str,
    (done, errors, secs): (u64, u64, f64),
    rpcs: f64,
    client_cpu: f64,
    emulator_cpu: f64,
    cores: f64,
) -> String {
    let rate = done as f64 / secs;
    let client = client_cpu / done.max(1) as f64;
    let server = emulator_cpu / done.max(1) as f64;
    let limit = cores / (client + server);
    eprintln!("{delay} ms: 16 workers {label}: {rate:.0}/s, {errors} errors, limit {limit:.0}/s");
    format!(
        "| {delay} ms | {label} | {rate:.0} | {errors} | {rpcs:.2} | {:.2} ms | {:.2} ms | {limit:.0} | {:.2} |",
        client * 1e3,
        server * 1e3,
        rate / limit
    )
}

//! `pending` and `recover` at scale, split over tasks: a journal of N settled
//! commands (default 1,000,000) and, for each split of the key space over 1, 2 and 4
//! tasks, a fresh backlog of M abandoned ones (default 10,000), listed and recovered
//! by that many tasks in parallel child processes, each over its key range with the
//! checkpoint kept (as `checkout-service recover` runs on Cloud Run with `--tasks`).
//!
//! Reports per split: the wall time of the tasks together, each task's listing (the
//! lifecycles its query returned, the pending commands, the documents read per pending
//! command), its recovery (commands settled, documents read and written, RPCs), and
//! the lookups per second achieved against the configured rate; and the emulator's
//! resident memory after the load and after each split (the emulator keeps every
//! document in its JVM heap: the size a machine can hold is bounded by it, see
//! `--rss-cap-gib`).
//!
//! Run: `cargo bench --bench pending_scale` (1,000,000 settled, 10,000 abandoned per
//! split, 100 lookups a second per task, 16 at once); other values after `--`:
//! `cargo bench --bench pending_scale -- SETTLED ABANDONED [--per-second N]
//! [--concurrency N] [--rss-cap-gib G]`. Loading stops early, at a batch boundary,
//! once the emulator's resident memory passes the cap (default 14 GiB): the tables say
//! how many settled commands were loaded. A bench target: `cargo test` never builds
//! it. Starts its own emulator (raise its heap with `JAVA_TOOL_OPTIONS=-Xmx…` for
//! millions of documents).

mod load;
mod task;

use command_journal::pending::KeyRange;
use command_journal::time::ManualClock;
use command_journal::{Connection, Journal, Target, Timestamp};
use command_journal_emulator::Emulator;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A `/proc/{pid}/status` field in KiB (`self` without a pid).
fn rss_kib(pid: Option<u32>, field: &str) -> u64 {
    let pid = pid.map_or_else(|| "self".to_owned(), |p| p.to_string());
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse().ok())
        })
        .unwrap_or(0)
}

/// The JVM `pid`'s heap in use right after a full collection, KiB (`jcmd GC.run`,
/// then `GC.heap_info`): the memory its documents really hold.
fn live_heap_kib(pid: Option<u32>) -> Option<u64> {
    let pid = pid?.to_string();
    let jcmd = |what: &str| {
        std::process::Command::new("jcmd")
            .args([pid.as_str(), what])
            .output()
            .ok()
    };
    jcmd("GC.run")?;
    let info = String::from_utf8(jcmd("GC.heap_info")?.stdout).ok()?;
    let used = info.split("used ").nth(1)?;
    used.split('K').next()?.trim().parse().ok()
}

fn gib(kib: u64) -> String {
    format!("{:.2} GiB", kib as f64 / 1_048_576.0)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let result = match args.split_first() {
        Some((flag, rest)) if flag == "--task" => task::run(rest).await,
        _ => parent(&args).await,
    };
    if let Err(error) = result {
        eprintln!("pending_scale: {error}");
        std::process::exit(1);
    }
}

/// The settings of a run.
struct Settings {
    settled: u64,
    abandoned: u64,
    per_second: u32,
    concurrency: usize,
    rss_cap_kib: u64,
}

fn settings(args: &[String]) -> Res<Settings> {
    let mut s = Settings {
        settled: 1_000_000,
        abandoned: 10_000,
        per_second: 100,
        concurrency: 16,
        rss_cap_kib: 14 * 1_048_576,
    };
    let mut counts = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--per-second" => s.per_second = value()?.parse().map_err(err)?,
            "--concurrency" => s.concurrency = value()?.parse().map_err(err)?,
            "--rss-cap-gib" => {
                s.rss_cap_kib = value()?.parse::<u64>().map_err(err)? * 1_048_576;
            }
            n => counts.push(n.parse::<u64>().map_err(|_| format!("not a count: {n}"))?),
        }
    }
    match counts[..] {
        [] => {}
        [settled] => s.settled = settled,
        [settled, abandoned] => (s.settled, s.abandoned) = (settled, abandoned),
        _ => return Err("at most two counts: SETTLED ABANDONED".into()),
    }
    Ok(s)
}

/// One task's line, and the fields read from it.
struct Task(Value);

impl Task {
    fn n(&self, field: &str) -> f64 {
        self.0[field].as_f64().unwrap_or(f64::NAN)
    }
}

/// Runs `count` tasks in parallel child processes over `project` at `at`; their
/// lines and the wall time of all of them.
async fn tasks(
    count: u32,
    host: &str,
    project: &str,
    at: chrono::DateTime<chrono::Utc>,
    s: &Settings,
) -> Res<(Vec<Task>, f64)> {
    let exe = std::env::current_exe().map_err(err)?;
    let started = Instant::now();
    let mut children = Vec::new();
    for index in 0..count {
        let range = KeyRange::new(u64::from(index), u64::from(count)).map_err(err)?;
        let child = tokio::process::Command::new(&exe)
            .args([
                "--task".to_owned(),
                range.to_string(),
                host.to_owned(),
                project.to_owned(),
                at.timestamp_micros().to_string(),
                s.per_second.to_string(),
                s.concurrency.to_string(),
            ])
            .output();
        children.push(child);
    }
    let outputs = futures::future::join_all(children).await;
    let wall = started.elapsed().as_secs_f64();
    let mut lines = Vec::new();
    for output in outputs {
        let output = output.map_err(err)?;
        if !output.status.success() {
            return Err(format!(
                "a task failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let line = serde_json::from_slice(&output.stdout).map_err(err)?;
        lines.push(Task(line));
    }
    Ok((lines, wall))
}

async fn parent(args: &[String]) -> Res<()> {
    let s = settings(args)?;
    let emulator = tokio::task::spawn_blocking(Emulator::start)
        .await
        .map_err(err)?
        .map_err(err)?;
    let jvm = emulator.pid();
    let host = emulator.host().to_owned();
    let project = emulator.new_project_id();
    let connection = Connection::connect(&project, Target::Emulator(host.clone()))
        .await
        .map_err(err)?;
    println!("load average before: {}", load_average());
    let start = chrono::Utc::now();
    let now = Timestamp::from_datetime(start).ok_or("clock")?;
    let loaded = load::settled(&connection, s.settled, now, jvm, s.rss_cap_kib).await?;
    println!(
        "loaded {} settled commands ({} documents) in {:.1} s ({:.0} documents/s); emulator RSS {}",
        loaded.commands,
        loaded.documents,
        loaded.seconds,
        loaded.documents as f64 / loaded.seconds,
        gib(loaded.emulator_rss_kib)
    );
    let live = live_heap_kib(jvm);
    if let Some(live) = live {
        println!(
            "emulator heap in use after a full collection: {} ({:.0} bytes per document)",
            gib(live),
            live as f64 * 1024.0 / loaded.documents as f64
        );
    }
    let clock = Arc::new(ManualClock::new(start));
    let journal = Journal::new(connection).with_clock(clock.clone());
    let mut rows = Vec::new();
    let mut task_rows = Vec::new();
    let mut first = loaded.commands;
    for count in [1u32, 2, 4] {
        // A fresh backlog: the abandoned commands of the split before were settled.
        let t0 = Instant::now();
        load::abandoned(&journal, first, s.abandoned).await?;
        eprintln!(
            "{count} task(s): {} abandoned in {:.1} s",
            s.abandoned,
            t0.elapsed().as_secs_f64()
        );
        first += s.abandoned;
        clock.advance(chrono::TimeDelta::seconds(61));
        let at = clock_now(&clock);
        let (lines, wall) = tasks(count, &host, &project, at, &s).await?;
        let sum = |field: &str| lines.iter().map(|t| t.n(field)).sum::<f64>();
        let recovered = sum("recovered");
        if recovered as u64 != s.abandoned || sum("errors") > 0.0 {
            return Err(format!(
                "{count} task(s) settled {recovered} of {}",
                s.abandoned
            ));
        }
        if !journal.pending().await.map_err(err)?.pending.is_empty() {
            return Err("commands left pending".into());
        }
        let slowest = lines
            .iter()
            .map(|t| t.n("settlingSeconds"))
            .fold(0.0, f64::max);
        let configured = f64::from(s.per_second) * f64::from(count);
        rows.push(format!(
            "| {count} | {:.1} s | {} | {:.2} | {:.1} | {:.1} | {:.0} / s of {configured:.0} / s configured | {} |",
            wall,
            sum("pending"),
            (sum("listed") + sum("pendingReads")) / sum("pending"),
            sum("recoverReads") / recovered,
            sum("recoverWrites") / recovered,
            sum("lookups") / slowest,
            gib(rss_kib(jvm, "VmRSS")),
        ));
        for t in &lines {
            task_rows.push(format!(
                "| {count} | {} | {} | {} | {:.2} s | {} | {:.1} s | {:.0} / s | {} |",
                t.0["range"].as_str().unwrap_or("?"),
                t.n("listed"),
                t.n("pending"),
                t.n("pendingSeconds"),
                t.n("recovered"),
                t.n("recoverSeconds"),
                t.n("lookups") / t.n("settlingSeconds"),
                gib(t.n("peakRssKib") as u64),
            ));
        }
        // Past the recovery leases, so that the next split's listing is of its own.
        clock.advance(chrono::TimeDelta::seconds(61));
    }
    println!(
        "\n| tasks | wall time | pending listed | documents read per pending command (listing: query + batch gets) | documents read per command settled (recovery) | documents written per command settled | lookups achieved (first to last settled, slowest task) | emulator RSS after |\n|---|---|---|---|---|---|---|---|"
    );
    for row in rows {
        println!("{row}");
    }
    println!(
        "\n| tasks | range | lifecycles its query returned | pending | listing time | settled | recovery time (its listing included) | lookups / s (first to last settled) | task peak RSS |\n|---|---|---|---|---|---|---|---|---|"
    );
    for row in task_rows {
        println!("{row}");
    }
    println!("\nload average after: {}", load_average());
    Ok(())
}

fn clock_now(clock: &ManualClock) -> chrono::DateTime<chrono::Utc> {
    use command_journal::time::Clock as _;
    clock.now()
}

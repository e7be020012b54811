//! The run's options and environment: what to measure, this crate's mode, the
//! Node.js peer's script and the machine.

use crate::Res;
use command_journal::Concurrency;
use std::path::PathBuf;
use std::time::Duration;

/// How much to measure.
pub(crate) struct Plan {
    pub(crate) seq_blocks: u64,
    pub(crate) seq_block_len: u64,
    pub(crate) race_rounds: u64,
    pub(crate) holders: u64,
    pub(crate) tp_levels: [u64; 3],
    pub(crate) tp_rounds: u64,
    pub(crate) tp_duration: Duration,
    pub(crate) rpc_ops: u64,
}

impl Plan {
    pub(crate) fn full() -> Self {
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

    pub(crate) fn quick() -> Self {
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

pub(crate) fn peer_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bench/node-peer/peer.js")
}

pub(crate) fn machine() -> String {
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

/// The command line after `--`.
pub(crate) struct Options {
    /// `--quick`: a smoke run, too few rounds for the table.
    pub(crate) quick: bool,
    pub(crate) plan: Plan,
    /// `--concurrency transaction|preconditions`: this crate's mode.
    pub(crate) concurrency: Concurrency,
}

pub(crate) fn options() -> Res<Options> {
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
    Ok(Options {
        quick,
        plan,
        concurrency,
    })
}

//! `command-journal`: the command-line interface of the command journal.
//!
//! Subcommands read one JSON object on stdin and print one JSON line on stdout.
//! Exit codes: 0 success, 2 `invalid_input`, 3 any other journal error, 4
//! `unavailable`.

mod cli;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "command-journal",
    version,
    about = "At-most-once payment and ledger commands on Firestore"
)]
struct Args {
    /// Firestore project id.
    #[arg(long, global = true)]
    project: Option<String>,
    /// Emulator `HOST:PORT` (default: FIRESTORE_EMULATOR_HOST).
    #[arg(long, global = true, env = "FIRESTORE_EMULATOR_HOST")]
    emulator_host: Option<String>,
    /// Replace the trusted clock (RFC 3339); refused unless the target is an emulator.
    #[arg(long, global = true)]
    at: Option<String>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Print the derived identity of the command on stdin.
    Identity,
    /// Register the command on stdin exactly once.
    Register,
    /// Acquire the command's lease for `leaseId`.
    Acquire,
    /// Record success for the holder at `expectedFenceEpoch`.
    Complete,
    /// Record final failure for the holder at `expectedFenceEpoch`.
    Fail,
    /// Print the command's redacted state, revision and fence.
    Status,
    /// Ledger reservations: `fingerprint`, `accept`, `replay`.
    Ledger {
        #[command(subcommand)]
        action: LedgerCmd,
    },
    /// Scan the whole journal, print every broken invariant, write nothing (exit 5 if any).
    Verify,
    /// Run the local emulator with firestore.rules in the foreground.
    Emulator,
    /// Security rules: `check` that a ruleset keeps every journal document server-only.
    #[cfg(feature = "rules-testing")]
    Rules {
        #[command(subcommand)]
        action: cli::rules::RulesCmd,
    },
    /// Run a worked workload on a private emulator and print what happened.
    Demo {
        /// Commands in the workload.
        #[arg(long, default_value_t = 60)]
        commands: u64,
        /// Workers sent at each unfinished command per round.
        #[arg(long, default_value_t = 4)]
        workers: u64,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 2026)]
        seed: u64,
    },
}

#[derive(Debug, Subcommand)]
enum LedgerCmd {
    /// Print the fingerprint, its version and the exact canonical text hashed.
    Fingerprint,
    /// Accept a ledger command: its reservation and every effect, atomically.
    Accept,
    /// Replay a reserved charge or reversal before pricing.
    Replay,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("command-journal: cannot start the async runtime: {error}");
            return cli::exit::unavailable();
        }
    };
    runtime.block_on(cli::run(args))
}

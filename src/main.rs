//! `command-journal`: the command-line interface of the command journal.
//!
//! Subcommands read one JSON object on stdin and print one JSON line on stdout; each
//! one's `--help` documents that object and `example` prints a working one.
//! Exit codes: 0 success, 2 `invalid_input`, 3 any other journal error, 4
//! `unavailable`, 5 `verify` found broken invariants, 7 `verify` scanned no journal
//! document (unless `--allow-empty`).

mod cli;

use clap::{Parser, Subcommand};
use cli::schema::Subject;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "command-journal",
    version,
    about = "At-most-once payment and ledger commands on Firestore",
    after_help = "Each subcommand that reads stdin documents its JSON object in its --help; \
                  `command-journal example <subcommand>` prints a working one."
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
    /// Firestore database id.
    #[arg(
        long,
        global = true,
        env = "FIRESTORE_DATABASE",
        default_value = "(default)"
    )]
    database: String,
    /// How operations stay consistent: `preconditions` (no server locks; default) or
    /// `transaction` (Firestore read-write transactions).
    #[arg(long, global = true, value_enum, default_value_t = ConcurrencyArg::Preconditions)]
    concurrency: ConcurrencyArg,
    /// Log format on stderr, when RUST_LOG enables logging (off by default).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Cmd,
}

/// `--concurrency`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ConcurrencyArg {
    /// One read, precondition-guarded commit; no server lock.
    Preconditions,
    /// Firestore read-write transactions.
    Transaction,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Logs to stderr as `RUST_LOG` says (nothing when it is unset).
fn install_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("off"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Print the derived identity of the command on stdin.
    #[command(after_help = Subject::Identity.help())]
    Identity,
    /// Register the command on stdin exactly once.
    #[command(after_help = Subject::Register.help())]
    Register,
    /// Acquire the command's lease for `leaseId`.
    #[command(after_help = Subject::Acquire.help())]
    Acquire,
    /// Register the command if needed and acquire its lease for `leaseId`, in one
    /// operation (2 RPCs for a new command).
    #[command(after_help = Subject::Start.help())]
    Start,
    /// Record success for the holder at `expectedFenceEpoch`.
    #[command(after_help = Subject::Complete.help())]
    Complete,
    /// Record final failure for the holder at `expectedFenceEpoch`.
    #[command(after_help = Subject::Fail.help())]
    Fail,
    /// Print the command's redacted state, revision and fence.
    #[command(after_help = Subject::Status.help())]
    Status,
    /// Provider sends: `begin` (a permit before the POST), `outcome`, `reconcile`.
    Send {
        #[command(subcommand)]
        action: SendCmd,
    },
    /// Ledger reservations: `fingerprint`, `accept`, `replay`, `link`.
    Ledger {
        #[command(subcommand)]
        action: LedgerCmd,
    },
    /// Scan the whole journal, print every broken invariant, write nothing (exit 5 if
    /// any; exit 7 if it scanned no journal document at all).
    Verify {
        /// Exit 0 even when the project and database hold no journal document.
        #[arg(long)]
        allow_empty: bool,
        /// Split the scan into this many consistent ranges (1 to 4096), each read at
        /// its own read time: for journals that take longer than the read-time
        /// retention (one hour without point-in-time recovery) to scan.
        #[arg(long, default_value = "1", allow_hyphen_values = true)]
        ranges: String,
    },
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
        /// Leave the emulator running afterwards, print how to inspect the journal,
        /// and stop it on Ctrl-C or SIGTERM.
        #[arg(long)]
        keep: bool,
    },
    /// Print the example stdin object of a subcommand (the one its --help shows).
    Example {
        #[command(subcommand)]
        of: ExampleOf,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum SendCmd {
    /// Record the attempt as sending before the provider call and print the permit.
    #[command(after_help = Subject::SendBegin.help())]
    Begin,
    /// Record what the provider answered the attempt.
    #[command(after_help = Subject::SendOutcome.help())]
    Outcome,
    /// Record verified provider evidence about an attempt whose outcome is unknown.
    #[command(after_help = Subject::SendReconcile.help())]
    Reconcile,
}

#[derive(Debug, Subcommand)]
enum LedgerCmd {
    /// Print the fingerprint, its version and the exact canonical text hashed.
    #[command(after_help = Subject::LedgerFingerprint.help())]
    Fingerprint,
    /// Accept a ledger command: its reservation and every effect, atomically.
    #[command(after_help = Subject::LedgerAccept.help())]
    Accept,
    /// Replay a reserved charge or reversal before pricing.
    #[command(after_help = Subject::LedgerReplay.help())]
    Replay,
    /// Link existing historical_unlinked rows to the reservation a migration proved.
    #[command(after_help = Subject::LedgerLink.help())]
    Link,
}

/// The subcommands `example` prints an input for.
#[derive(Debug, Subcommand)]
enum ExampleOf {
    /// `identity`'s input.
    Identity,
    /// `register`'s input.
    Register,
    /// `acquire`'s input.
    Acquire,
    /// `start`'s input.
    Start,
    /// `complete`'s input.
    Complete,
    /// `fail`'s input.
    Fail,
    /// `status`'s input.
    Status,
    /// A send subcommand's input.
    Send {
        #[command(subcommand)]
        action: SendCmd,
    },
    /// A ledger subcommand's input.
    Ledger {
        #[command(subcommand)]
        action: LedgerCmd,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    install_logging(args.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("command-journal: cannot start the async runtime: {error}");
            return cli::exit::internal("the async runtime could not start");
        }
    };
    runtime.block_on(cli::run(args))
}

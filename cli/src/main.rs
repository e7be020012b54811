//! `command-journal`: the command-line interface of the command journal.
//!
//! Subcommands read one JSON object on stdin and print one JSON line on stdout; each
//! one's `--help` documents that object and `example` prints a working one.
//! The exit codes are `cli::exit::Exit` (the top-level `--help` lists them);
//! docs/cli.md is the reference.

mod cli;

use clap::Parser;
use cli::args::{Args, LogFormat};
use std::process::ExitCode;

// The library's and the harness's modules and names the subcommands use, under the
// paths they had when the CLI was a module of the library.
use command_journal::{
    CommandInput, CommandRequest, Concurrency, Connection, FenceEpoch, Journal, JournalError,
    LeaseId, LeaseOutput, ProviderPlan, ProviderPlanRequest, RegistrationOutcome, ResultEnvelope,
    Target, TerminalOutput, TerminalReferenceFingerprint, Timestamp, connection, error, expected,
    identity, ledger, pending, sends, strict_json, time, verify,
};
use command_journal_emulator::{emulator, rules_testing};

/// Lets a closed pipe end the process quietly, as it ends every Unix filter
/// (`command-journal completions bash | head -1`): Rust ignores SIGPIPE, which makes
/// the first write into a closed pipe panic instead.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
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

fn main() -> ExitCode {
    restore_sigpipe();
    let mut args = Args::parse();
    if let Err(unused) = args.before.apply(&mut args.command) {
        let mut command = <Args as clap::CommandFactory>::command();
        command
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{} is not an option of this subcommand (see its --help)",
                    unused.option
                ),
            )
            .exit();
    }
    install_logging(args.command.log_format());
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
    runtime.block_on(cli::run(args.command))
}

//! Subcommand dispatch, shared by every subcommand of the binary.

pub mod commands;
pub mod demo;
pub mod exit;
pub mod identity;
pub mod input;
pub mod ledger;
#[cfg(feature = "rules-testing")]
pub mod rules;
pub mod schema;
pub mod sends;
pub mod verify;

use crate::{Args, Cmd, ExampleOf, LedgerCmd, SendCmd};
use command_journal::ManualClock;
use command_journal::{Concurrency, Journal, JournalError};
use command_journal::{Connection, Target};
use commands::Operation;
use input::Failure;
use schema::Subject;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs the parsed command line and returns the process exit code.
pub async fn run(args: Args) -> ExitCode {
    let options = Global::from_args(&args);
    let operation = match args.command {
        Cmd::Identity => return exit::report_failure(identity::run(&read_stdin())),
        Cmd::Emulator => return emulator().await,
        Cmd::Example { of } => return example(&of),
        Cmd::Completions { shell } => return completions(shell),
        #[cfg(feature = "rules-testing")]
        Cmd::Rules { action } => return rules::run(action, args.emulator_host).await,
        Cmd::Demo {
            commands,
            workers,
            seed,
            keep,
        } => {
            let demo = demo::DemoOptions {
                commands,
                workers,
                seed,
                keep,
                project: options.project,
                database: options.database,
            };
            return demo::run(options.emulator_host, demo).await;
        }
        Cmd::Ledger { action } => return ledger_command(&action, &options).await,
        Cmd::Send { action } => {
            let action = send_action(&action);
            let result = sends::run(action, &read_stdin(), || options.journal()).await;
            return exit::report_failure(result);
        }
        Cmd::Verify {
            allow_empty,
            ranges,
        } => return verify::run(&options, allow_empty, &ranges).await,
        Cmd::Register => Operation::Register,
        Cmd::Acquire => Operation::Acquire,
        Cmd::Start => Operation::Start,
        Cmd::Complete => Operation::Complete,
        Cmd::Fail => Operation::Fail,
        Cmd::Status => Operation::Status,
    };
    exit::report_failure(commands::run(operation, &read_stdin(), || options.journal()).await)
}

async fn ledger_command(action: &LedgerCmd, options: &Global) -> ExitCode {
    let stdin = read_stdin();
    if matches!(action, LedgerCmd::Fingerprint) {
        return exit::report_failure(ledger::run(action, &stdin, None).await);
    }
    // Validate the input before connecting: invalid input is exit 2 whatever the target.
    if let Err(error) = ledger::run(action, &stdin, None).await
        && error != Failure::Journal(ledger::no_journal())
    {
        return exit::report_failure(Err(error));
    }
    match options.journal().await {
        Ok(journal) => exit::report_failure(ledger::run(action, &stdin, Some(&journal)).await),
        Err(error) => exit::report(Err(error)),
    }
}

fn send_action(action: &SendCmd) -> sends::SendAction {
    match action {
        SendCmd::Begin => sends::SendAction::Begin,
        SendCmd::Outcome => sends::SendAction::Outcome,
        SendCmd::Reconcile => sends::SendAction::Reconcile,
    }
}

/// Prints the example stdin object of a subcommand.
fn example(of: &ExampleOf) -> ExitCode {
    let subject = match of {
        ExampleOf::Identity => Subject::Identity,
        ExampleOf::Register => Subject::Register,
        ExampleOf::Acquire => Subject::Acquire,
        ExampleOf::Start => Subject::Start,
        ExampleOf::Complete => Subject::Complete,
        ExampleOf::Fail => Subject::Fail,
        ExampleOf::Status => Subject::Status,
        ExampleOf::Send { action } => send_action(action).subject(),
        ExampleOf::Ledger { action } => match action {
            LedgerCmd::Fingerprint => Subject::LedgerFingerprint,
            LedgerCmd::Accept => Subject::LedgerAccept,
            LedgerCmd::Replay => Subject::LedgerReplay,
            LedgerCmd::Link => Subject::LedgerLink,
        },
    };
    println!("{}", subject.example());
    ExitCode::SUCCESS
}

/// Prints the completion script of `shell` for the whole command line.
fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = <Args as clap::CommandFactory>::command();
    clap_complete::generate(
        shell,
        &mut command,
        "command-journal",
        &mut std::io::stdout(),
    );
    ExitCode::SUCCESS
}

/// The global options that choose the project, the target and the clock.
pub struct Global {
    project: Option<String>,
    emulator_host: Option<String>,
    at: Option<String>,
    database: String,
    concurrency: Concurrency,
}

impl Global {
    /// The global options of a parsed command line.
    pub fn from_args(args: &Args) -> Self {
        Self {
            project: args.project.clone(),
            emulator_host: args.emulator_host.clone(),
            at: args.at.clone(),
            database: args.database.clone(),
            concurrency: match args.concurrency {
                crate::ConcurrencyArg::Preconditions => Concurrency::Preconditions,
                crate::ConcurrencyArg::Transaction => Concurrency::Transaction,
            },
        }
    }

    /// The emulator when a host is given, otherwise production.
    pub fn target(&self) -> Target {
        match self.emulator_host.as_deref().map(str::trim) {
            Some(host) if !host.is_empty() => Target::Emulator(host.to_owned()),
            _ => Target::Production,
        }
    }

    /// Connects, with `--at` as the clock when given; `--at` is refused (exit 2, field
    /// `at`) unless the target is an emulator.
    pub async fn journal(&self) -> Result<Journal, JournalError> {
        let target = self.target();
        let clock = match &self.at {
            None => None,
            Some(_) if !target.is_emulator() => {
                return Err(JournalError::InvalidInput { field: "at" });
            }
            Some(at) => {
                let at = chrono::DateTime::parse_from_rfc3339(at)
                    .map_err(|_| JournalError::InvalidInput { field: "at" })?;
                Some(Arc::new(ManualClock::new(at.to_utc())))
            }
        };
        let production = !target.is_emulator();
        let project = command_journal::resolve_project(self.project.as_deref(), production).await?;
        let connection = Connection::connect_database(&project, &self.database, target).await?;
        let journal = match clock {
            Some(clock) => Journal::with_clock(connection, clock),
            None => Journal::new(connection),
        };
        Ok(journal.with_concurrency(self.concurrency))
    }
}

fn read_stdin() -> String {
    let mut text = String::new();
    // Unreadable stdin leaves the text empty, which parses as invalid input.
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
    text
}

async fn emulator() -> ExitCode {
    let emulator = match command_journal::emulator::Emulator::start() {
        Ok(emulator) => emulator,
        Err(error) => {
            eprintln!("command-journal: {error}");
            return exit::unavailable();
        }
    };
    let line = serde_json::json!({
        "host": emulator.host(),
        "pid": emulator.pid(),
        "rules": "firestore.rules",
    });
    let stop = Stop::listen();
    println!("{line}");
    eprintln!(
        "emulator ready: export FIRESTORE_EMULATOR_HOST={} (Ctrl-C stops it)",
        emulator.host()
    );
    stop.wait().await;
    drop(emulator);
    ExitCode::SUCCESS
}

/// Ctrl-C and SIGTERM, listened for from creation on.
pub struct Stop {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Stop {
    /// Starts listening for Ctrl-C and SIGTERM.
    pub fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Waits until either arrives (returns at once if neither could be listened for).
    pub async fn wait(mut self) {
        if self.interrupt.is_none() && self.terminate.is_none() {
            return;
        }
        let interrupt = async {
            match &mut self.interrupt {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        let terminate = async {
            match &mut self.terminate {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate => {}
        }
    }
}

//! Subcommand dispatch, shared by every subcommand of the binary.

pub mod commands;
pub mod demo;
pub mod exit;
pub mod identity;
pub mod input;
pub mod ledger;
#[cfg(feature = "rules-testing")]
pub mod rules;
pub mod verify;

use crate::{Args, Cmd};
use command_journal::connection::{Connection, Target};
use command_journal::time::ManualClock;
use command_journal::{Journal, JournalError};
use commands::Operation;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs the parsed command line and returns the process exit code.
pub async fn run(args: Args) -> ExitCode {
    let operation = match args.command {
        Cmd::Identity => return exit::report(identity::run(&read_stdin())),
        Cmd::Emulator => return emulator().await,
        #[cfg(feature = "rules-testing")]
        Cmd::Rules { action } => return rules::run(action, args.emulator_host).await,
        Cmd::Demo {
            commands,
            workers,
            seed,
        } => {
            let options = demo::DemoOptions {
                commands,
                workers,
                seed,
            };
            return demo::run(args.emulator_host, options).await;
        }
        Cmd::Ledger { action } => {
            let options = Global {
                project: args.project,
                emulator_host: args.emulator_host,
                at: args.at,
            };
            return ledger_command(action, &options).await;
        }
        Cmd::Verify => {
            let options = Global {
                project: args.project,
                emulator_host: args.emulator_host,
                at: args.at,
            };
            return verify::run(&options).await;
        }
        Cmd::Register => Operation::Register,
        Cmd::Acquire => Operation::Acquire,
        Cmd::Complete => Operation::Complete,
        Cmd::Fail => Operation::Fail,
        Cmd::Status => Operation::Status,
    };
    let options = Global {
        project: args.project,
        emulator_host: args.emulator_host,
        at: args.at,
    };
    exit::report(commands::run(operation, &read_stdin(), || options.journal()).await)
}

async fn ledger_command(action: crate::LedgerCmd, options: &Global) -> ExitCode {
    let stdin = read_stdin();
    let (name, needs_journal) = match action {
        crate::LedgerCmd::Fingerprint => ("fingerprint", false),
        crate::LedgerCmd::Accept => ("accept", true),
        crate::LedgerCmd::Replay => ("replay", true),
    };
    if !needs_journal {
        return exit::report(ledger::run(name, &stdin, None).await);
    }
    // Validate the input before connecting: invalid input is exit 2 whatever the target.
    if let Err(error) = ledger::run(name, &stdin, None).await
        && error != JournalError::Unavailable
    {
        return exit::report(Err(error));
    }
    match options.journal().await {
        Ok(journal) => exit::report(ledger::run(name, &stdin, Some(&journal)).await),
        Err(error) => exit::report(Err(error)),
    }
}

/// The global options that choose the project, the target and the clock.
pub struct Global {
    project: Option<String>,
    emulator_host: Option<String>,
    at: Option<String>,
}

impl Global {
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
        let project = self
            .project
            .clone()
            .or_else(|| std::env::var("GOOGLE_CLOUD_PROJECT").ok())
            .ok_or(JournalError::InvalidInput { field: "project" })?;
        let connection = Connection::connect(&project, target).await?;
        Ok(match clock {
            Some(clock) => Journal::with_clock(connection, clock),
            None => Journal::new(connection),
        })
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
    println!("{line}");
    eprintln!(
        "emulator ready: export FIRESTORE_EMULATOR_HOST={} (Ctrl-C stops it)",
        emulator.host()
    );
    wait_for_stop().await;
    drop(emulator);
    ExitCode::SUCCESS
}

async fn wait_for_stop() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

//! Subcommand dispatch, shared by every subcommand of the binary.

pub mod args;
pub mod commands;
pub mod demo;
pub mod dev_token;
pub mod emulator;
pub mod exit;
pub mod explain;
pub mod identity;
pub mod input;
pub mod ledger;
pub mod output;
pub mod request;
pub mod rules;
pub mod schema;
pub mod sends;
pub mod verify;

/// The `expected` text of an `invalid_input` answer for `field` (the CLI tests compare it).
pub use crate::expected::expected_for;
use crate::time::ManualClock;
use crate::{Concurrency, Journal, JournalError};
use crate::{Connection, Target};
use args::{Cmd, ConcurrencyArg, JournalArgs, TargetArgs};
pub use request::Request;
use std::process::ExitCode;
use std::sync::Arc;

/// The environment variable naming the emulator to use.
const EMULATOR_HOST_ENV: &str = "FIRESTORE_EMULATOR_HOST";
/// The environment variable naming the database to use.
const DATABASE_ENV: &str = "FIRESTORE_DATABASE";
/// Production Firestore's endpoint, as `unavailable` names it.
const PRODUCTION_HOST: &str = "firestore.googleapis.com:443";

/// Runs the parsed subcommand and returns the process exit code: its stdin object
/// is validated into a [`Request`] first (exit 2 before any connection), then run.
pub async fn run(command: Cmd) -> ExitCode {
    match Request::parse(command, read_stdin) {
        Ok(request) => request.execute().await,
        Err(failure) => exit::report_failure(failure),
    }
}

/// The options that choose the project, the target and the clock, resolved against
/// the environment (`FIRESTORE_EMULATOR_HOST`, `FIRESTORE_DATABASE`).
pub struct Global {
    project: Option<String>,
    emulator_host: Option<String>,
    at: Option<String>,
    database: String,
    concurrency: Concurrency,
}

impl Global {
    /// The target options of a subcommand that only reads or scans.
    pub fn from_target(target: &TargetArgs) -> Self {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let global = Self {
            project: target.project.clone(),
            emulator_host: target
                .emulator_host
                .clone()
                .or_else(|| env(EMULATOR_HOST_ENV)),
            at: None,
            database: target
                .database
                .clone()
                .or_else(|| env(DATABASE_ENV))
                .unwrap_or_else(|| crate::connection::DEFAULT_DATABASE.to_owned()),
            concurrency: Concurrency::Preconditions,
        };
        exit::set_host(match global.target() {
            Target::Emulator(host) => host,
            _ => PRODUCTION_HOST.to_owned(),
        });
        global
    }

    /// The options of a journal operation.
    pub fn from_journal(args: &JournalArgs) -> Self {
        Self {
            at: args.at.clone(),
            concurrency: match args.concurrency {
                None | Some(ConcurrencyArg::Preconditions) => Concurrency::Preconditions,
                Some(ConcurrencyArg::Transaction) => Concurrency::Transaction,
            },
            ..Self::from_target(&args.target)
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
        let project =
            crate::credentials::resolve_project(self.project.as_deref(), production).await?;
        let connection = Connection::connect_database(&project, &self.database, target).await?;
        let journal = match clock {
            Some(clock) => Journal::new(connection).with_clock(clock),
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

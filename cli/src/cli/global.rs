//! The options that choose the project, the target and the clock, resolved against
//! the environment, and the connection they make.

use super::exit;
use super::target::{ConcurrencyArg, JournalArgs, TargetArgs};
use crate::time::ManualClock;
use crate::{Concurrency, Journal, JournalError};
use crate::{Connection, Target};
use std::sync::Arc;

/// The environment variable naming the emulator to use.
pub(super) const EMULATOR_HOST_ENV: &str = "FIRESTORE_EMULATOR_HOST";
/// The environment variable naming the database to use.
const DATABASE_ENV: &str = "FIRESTORE_DATABASE";
/// Production Firestore's endpoint, as `unavailable` names it.
const PRODUCTION_HOST: &str = "firestore.googleapis.com:443";

/// The options that choose the project, the target and the clock, resolved against
/// the environment (`FIRESTORE_EMULATOR_HOST`, `FIRESTORE_DATABASE`).
pub struct Global {
    pub(super) project: Option<String>,
    pub(super) emulator_host: Option<String>,
    at: Option<String>,
    pub(super) database: String,
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
        match global.target() {
            Target::Emulator(host) => {
                exit::set_hint(exit::Hint::EmulatorAt(host.clone()));
                exit::set_host(host);
            }
            _ => exit::set_host(PRODUCTION_HOST.to_owned()),
        }
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
            crate::connection::resolve_project(self.project.as_deref(), production).await?;
        if production && project.starts_with("demo-") {
            exit::set_hint(exit::Hint::DemoProject);
        }
        let connection = Connection::connect_database(&project, &self.database, target).await?;
        let journal = match clock {
            Some(clock) => Journal::new(connection).with_clock(clock),
            None => Journal::new(connection),
        };
        Ok(journal.with_concurrency(self.concurrency))
    }
}

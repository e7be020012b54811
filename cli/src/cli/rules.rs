//! `command-journal rules check [PATH]`: loads a ruleset into a fresh project of its
//! own emulator, seeds journal documents with the rules bypassed, runs the journal's
//! denial matrix, prints a table on stderr and a JSON report on stdout.
//!
//! `--coverage-html FILE` saves the emulator's rules coverage report of the run.
//!
//! Exit codes: 0 every operation denied and the seeded documents unchanged; 6 any
//! leak (or changed document); 2 the ruleset is unreadable or does not compile; 4 the
//! emulator is unavailable or answered something that is neither allow nor deny.

use super::exit::Exit;
use super::input::{InvalidInput, Problem};
use crate::emulator::Emulator;
use crate::rules_testing::{
    MatrixReport, Outcome, RulesTestError, TestEnvironment, journal_denial_matrix,
};
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// `rules` subcommands.
#[derive(Debug, Subcommand)]
pub enum RulesCmd {
    /// Check that a ruleset denies every client every journal operation (exit 6 on a
    /// leak, 2 when it does not compile).
    Check {
        /// The ruleset to check.
        #[arg(default_value = "firestore.rules")]
        path: PathBuf,
        /// An emulator to use instead of starting one (default: FIRESTORE_EMULATOR_HOST).
        #[arg(long, value_name = "HOST:PORT")]
        emulator_host: Option<String>,
        /// Save the emulator's HTML rules coverage report of the check to this file.
        #[arg(long, value_name = "FILE")]
        coverage_html: Option<PathBuf>,
    },
}

/// Runs a `rules` subcommand.
pub async fn run(action: RulesCmd) -> ExitCode {
    match action {
        RulesCmd::Check {
            path,
            emulator_host,
            coverage_html,
        } => {
            let host =
                emulator_host.or_else(|| std::env::var(super::global::EMULATOR_HOST_ENV).ok());
            check(path, host, coverage_html).await
        }
    }
}

async fn check(
    path: PathBuf,
    emulator_host: Option<String>,
    coverage_html: Option<PathBuf>,
) -> ExitCode {
    let rules = match std::fs::read_to_string(&path) {
        Ok(rules) => rules,
        Err(error) => {
            eprintln!("command-journal: cannot read {}: {error}", path.display());
            let failure = InvalidInput {
                field: "path".to_owned(),
                problem: Problem::Invalid,
                expected: "a readable Firestore ruleset file",
            };
            println!("{}", super::exit::invalid_line(&failure));
            return Exit::Input.into();
        }
    };
    // A private emulator lives as long as this function and dies with it.
    let emulator = match emulator_host.as_deref().map(str::trim) {
        Some(host) if !host.is_empty() => Emulator::existing(host),
        _ => match Emulator::start() {
            Ok(emulator) => emulator,
            Err(error) => {
                eprintln!("command-journal: {error}");
                return super::exit::emulator_unavailable();
            }
        },
    };
    let environment = match TestEnvironment::on(&emulator, &rules).await {
        Ok(environment) => environment,
        Err(RulesTestError::RulesRejected(message)) => {
            eprintln!(
                "command-journal: {} does not compile:\n{message}",
                path.display()
            );
            println!(
                "{}",
                json!({"error": "rules_do_not_compile", "ruleset": path, "message": message})
            );
            return Exit::Input.into();
        }
        Err(error) => return unavailable(emulator.host(), &error.to_string()),
    };
    let report = match journal_denial_matrix(&environment).await {
        Ok(report) => report,
        Err(error) => return unavailable(emulator.host(), &error.to_string()),
    };
    if let Some(file) = coverage_html {
        let saved = match environment.coverage_html().await {
            Ok(html) => std::fs::write(&file, html).map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(error) = saved {
            return unavailable(
                emulator.host(),
                &format!(
                    "the coverage report could not be saved to {}: {error}",
                    file.display()
                ),
            );
        }
    }
    eprint!("{}", table(&report));
    let mut line = report.to_json();
    line["ruleset"] = json!(path);
    line["project"] = json!(environment.project_id());
    line["clean"] = json!(report.all_denied());
    println!("{line}");

    let leaks = report.leaks();
    for cell in &leaks {
        eprintln!("LEAK: {cell}");
    }
    for document in &report.changed {
        eprintln!("CHANGED: {document}");
    }
    let unexpected = report.unexpected();
    eprintln!(
        "{} of {} operations denied with PERMISSION_DENIED; {} leaks; {} unexpected answers; \
         {} seeded documents changed",
        report.denied(),
        report.outcomes.len(),
        leaks.len(),
        unexpected.len(),
        report.changed.len()
    );
    if !leaks.is_empty() || !report.changed.is_empty() {
        Exit::Leak.into()
    } else if !unexpected.is_empty() {
        eprintln!("command-journal: some answers were neither an allow nor a deny");
        Exit::Unavailable.into()
    } else {
        Exit::Success.into()
    }
}

/// The emulator could not be driven: `unavailable` naming its host and the cause.
fn unavailable(host: &str, message: &str) -> ExitCode {
    eprintln!("command-journal: {message}");
    let line = json!({
        "error": "unavailable",
        "class": "unavailable",
        "host": host,
        "message": format!("{host}: the emulator did not answer as expected: {message}"),
    });
    println!("{line}");
    Exit::Unavailable.into()
}

/// One line per operation: context, operation, path, result.
fn table(report: &MatrixReport) -> String {
    let rows: Vec<[String; 4]> = report
        .outcomes
        .iter()
        .map(|(cell, outcome)| {
            let result = match outcome {
                Outcome::Allowed => "LEAK (allowed)".to_owned(),
                other => other.to_string(),
            };
            [
                cell.context.name().to_owned(),
                cell.operation.to_string(),
                cell.target.template.to_owned(),
                result,
            ]
        })
        .collect();
    let header = ["CONTEXT", "OPERATION", "PATH", "RESULT"].map(str::to_owned);
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    let mut text = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        text.push_str(&format!(
            "{:w0$}  {:w1$}  {:w2$}  {}\n",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        ));
    }
    text
}

//! A payout worker that is not HTTP: it drains a list of payout commands through
//! `Journal::execute` with an in-process fake provider, crashes part-way (one payout's
//! answer is lost and the worker dies mid-send), restarts, drains the list again, and
//! ends with `verify` clean and every payout made exactly once.
//!
//! `cargo run --release --bin payout-worker` starts its own Firestore emulator
//! through the harness (Java and the emulator must be installed: see the README),
//! prints its counts and `verify: clean`, and exits 0. `-- --payouts N` sets the list's
//! length (1 to 1,000; default 50).

mod worker;

use command_journal::{Connection, Target};
use command_journal_emulator::Emulator;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let payouts = match parse_payouts(std::env::args().skip(1).collect()) {
        Ok(payouts) => payouts,
        Err(message) => {
            eprintln!("payout-worker: {message}");
            return ExitCode::from(2);
        }
    };
    let emulator = match Emulator::start() {
        Ok(emulator) => emulator,
        Err(error) => {
            eprintln!("payout-worker: cannot start the Firestore emulator: {error}");
            return ExitCode::FAILURE;
        }
    };
    let project = emulator.new_project_id();
    let connection =
        match Connection::connect(&project, Target::Emulator(emulator.host().to_owned())).await {
            Ok(connection) => connection,
            Err(error) => {
                eprintln!("payout-worker: cannot connect to the emulator: {error}");
                return ExitCode::FAILURE;
            }
        };
    match worker::run(&connection, payouts).await {
        Ok(report) => {
            print!("{report}");
            if report.all_once() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("payout-worker: {error}");
            ExitCode::FAILURE
        }
    }
}

/// `[--payouts N]`, N from 1 to 1,000.
fn parse_payouts(args: Vec<String>) -> Result<u64, String> {
    match args.as_slice() {
        [] => Ok(worker::DEFAULT_PAYOUTS),
        [flag, value] if flag == "--payouts" => match value.parse::<u64>() {
            Ok(n) if (1..=worker::MAX_PAYOUTS).contains(&n) => Ok(n),
            _ => Err(format!(
                "--payouts must be a whole number from 1 to {}",
                worker::MAX_PAYOUTS
            )),
        },
        _ => Err("usage: payout-worker [--payouts N]".to_owned()),
    }
}

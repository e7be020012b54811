//! Subcommand dispatch, shared by every subcommand of the binary.

pub mod exit;
pub mod identity;
pub mod input;

use crate::{Args, Cmd};
use std::process::ExitCode;

/// Runs the parsed command line and returns the process exit code.
pub async fn run(args: Args) -> ExitCode {
    match args.command {
        Cmd::Identity => exit::report(identity::run(&read_stdin())),
        Cmd::Emulator => emulator().await,
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

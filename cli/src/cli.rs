//! Subcommand dispatch, shared by every subcommand of the binary.

pub mod args;
pub mod commands;
pub mod demo;
pub mod dev_token;
pub mod emulator;
pub mod exit;
pub mod explain;
pub mod global;
pub mod identity;
pub mod input;
pub mod ledger;
pub mod output;
pub mod pending;
pub mod request;
pub mod rules;
pub mod schema;
pub mod sends;
pub mod stop;
pub mod target;
pub mod verify;

use args::Cmd;
pub use global::Global;
pub use request::Request;
use std::process::ExitCode;
pub use stop::Stop;

/// Runs the parsed subcommand and returns the process exit code: its stdin object
/// is validated into a [`Request`] first (exit 2 before any connection), then run.
pub async fn run(command: Cmd) -> ExitCode {
    match Request::parse(command, read_stdin) {
        Ok(request) => request.execute().await,
        Err(failure) => exit::report_failure(failure),
    }
}

/// The subcommand's stdin object, read whole.
fn read_stdin() -> String {
    let mut text = String::new();
    // Unreadable stdin leaves the text empty, which parses as invalid input.
    let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
    text
}

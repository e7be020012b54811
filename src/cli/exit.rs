//! Maps results to the one JSON line on stdout and the exit code.

use super::input::Failure;
use command_journal::JournalError;
use serde_json::{Value, json};
use std::process::ExitCode;

/// Prints `result` as one JSON line and returns its exit code: 0 for success, 2 for
/// `invalid_input` (with the field and the fixed text of what it expects), 4 for `unavailable`, 3 for any other journal error.
pub fn report(result: Result<Value, JournalError>) -> ExitCode {
    match result {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            let (line, code) = match error {
                JournalError::InvalidInput { field } => (
                    json!({"error": "invalid_input", "field": field, "expected": error.expected()}),
                    2,
                ),
                JournalError::Unavailable => (json!({"error": "unavailable"}), 4),
                other => (json!({"error": other.code()}), 3),
            };
            println!("{line}");
            ExitCode::from(code)
        }
    }
}

/// Prints `{"error":"unavailable"}` and returns exit code 4.
pub fn unavailable() -> ExitCode {
    report(Err(JournalError::Unavailable))
}

/// [`report`] for a subcommand that reads stdin: a key failure is `invalid_input`
/// naming the key (exit 2).
pub fn report_failure(result: Result<Value, Failure>) -> ExitCode {
    match result {
        Err(Failure::Key { key, expected }) => {
            let line = json!({"error": "invalid_input", "field": key, "expected": expected});
            println!("{line}");
            ExitCode::from(2)
        }
        Err(Failure::Journal(error)) => report(Err(error)),
        Ok(value) => report(Ok(value)),
    }
}

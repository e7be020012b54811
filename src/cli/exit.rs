//! Maps results to the one JSON line on stdout and the exit code.

use super::input::Failure;
use command_journal::{ErrorClass, JournalError};
use serde_json::{Value, json};
use std::process::ExitCode;

/// Exit code of a refused transition (`command_conflict`, `stale_fence`, …).
pub const REFUSED: u8 = 3;
/// Exit code of `unavailable`: retrying the whole call later is safe.
pub const UNAVAILABLE: u8 = 4;
/// Exit code of a configuration refusal (credentials, permissions, project, database).
pub const CONFIGURATION: u8 = 8;
/// Exit code of a defect inside the process.
pub const INTERNAL: u8 = 1;

/// The exit code of an error's class: 2 input, 3 refused, 4 unavailable,
/// 8 configuration, 1 internal.
pub fn code_of(error: &JournalError) -> u8 {
    match error.class() {
        ErrorClass::Input => 2,
        ErrorClass::Refused => REFUSED,
        ErrorClass::Unavailable => UNAVAILABLE,
        ErrorClass::Configuration => CONFIGURATION,
        _ => INTERNAL,
    }
}

/// The one JSON line of an error: `{"error": code}`, plus the field of an invalid
/// input, and for outages, configuration and internal errors the class, the gRPC
/// code, the attempts made and a message naming the cause (never a raw value).
pub fn error_line(error: &JournalError) -> Value {
    let mut line = json!({"error": error.code()});
    match error {
        JournalError::InvalidInput { field } => {
            line["field"] = json!(field);
            line["expected"] = json!(error.expected());
        }
        JournalError::Unavailable {
            attempts, deadline, ..
        } => {
            line["attempts"] = json!(attempts);
            line["deadline"] = json!(deadline);
        }
        JournalError::NotConfigured { cause, .. } => {
            line["cause"] = json!(cause.code());
        }
        _ => {}
    }
    if !matches!(error.class(), ErrorClass::Input | ErrorClass::Refused) {
        line["class"] = json!(error.class().code());
        if let Some(code) = error.grpc_code() {
            line["grpcCode"] = json!(code.as_str());
        }
        line["message"] = json!(error.to_string());
    }
    line
}

/// Prints `result` as one JSON line and returns its exit code (see [`code_of`]).
pub fn report(result: Result<Value, JournalError>) -> ExitCode {
    match result {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("{}", error_line(&error));
            ExitCode::from(code_of(&error))
        }
    }
}

/// Prints `unavailable` with no attempt made (the emulator or runtime could not
/// start) and returns exit code 4.
pub fn unavailable() -> ExitCode {
    report(Err(JournalError::Unavailable {
        last_code: None,
        attempts: 0,
        deadline: false,
    }))
}

/// Prints `internal` with a fixed reason and returns exit code 1.
pub fn internal(reason: &'static str) -> ExitCode {
    report(Err(JournalError::Internal { reason }))
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

//! Maps results to the one JSON line on stdout and the exit code.
//!
//! Every error line carries `error` (the stable code) and a `message`: a short fixed
//! text for an input error or a refusal, and for outages, configuration and internal
//! errors the cause (with the host and gRPC code for an outage), never a raw value.

use super::input::{Failure, InvalidInput, Problem};
use crate::JournalError;
use crate::error::ErrorClass;
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::OnceLock;

/// Exit code of `invalid_input` (and of a usage error).
pub const INPUT: u8 = 2;
/// Exit code of a refused transition (`command_conflict`, `stale_fence`, …).
pub const REFUSED: u8 = 3;
/// Exit code of `unavailable`: retrying the whole call later is safe.
pub const UNAVAILABLE: u8 = 4;
/// Exit code of a configuration refusal (credentials, permissions, project, database).
pub const CONFIGURATION: u8 = 8;
/// Exit code of a defect inside the process.
pub const INTERNAL: u8 = 1;

/// The Firestore host the subcommand talks to, named by `unavailable` lines.
static HOST: OnceLock<String> = OnceLock::new();

/// Records the host `unavailable` answers name (the first call wins).
pub fn set_host(host: String) {
    let _ = HOST.set(host);
}

/// The exit code of an error's class: 2 input, 3 refused, 4 unavailable,
/// 8 configuration, 1 internal.
pub fn code_of(error: &JournalError) -> u8 {
    match error.class() {
        ErrorClass::Input => INPUT,
        ErrorClass::Refused => REFUSED,
        ErrorClass::Unavailable => UNAVAILABLE,
        ErrorClass::Configuration => CONFIGURATION,
        _ => INTERNAL,
    }
}

/// The line of an `invalid_input`: the key, what is wrong with it, what it expects,
/// and the problem's fixed message.
pub fn invalid_line(input: &InvalidInput) -> Value {
    json!({
        "error": "invalid_input",
        "field": input.field,
        "problem": input.problem.code(),
        "expected": input.expected,
        "message": input.problem.message(),
    })
}

/// The one JSON line of an error: `{"error": code, "message": …}`, plus the field,
/// problem and expected text of an invalid input, and for outages, configuration and
/// internal errors the class, the gRPC code (and for an outage the host, the attempts
/// made and whether the deadline ended it).
pub fn error_line(error: &JournalError) -> Value {
    if let JournalError::InvalidInput { field } = error {
        return invalid_line(&InvalidInput {
            field: (*field).to_owned(),
            problem: Problem::Invalid,
            expected: error.expected().unwrap_or(super::input::ONE_OBJECT),
        });
    }
    let mut line = json!({"error": error.code()});
    match error {
        JournalError::Unavailable {
            attempts, deadline, ..
        } => {
            let host = HOST.get().map_or("firestore", String::as_str);
            line["host"] = json!(host);
            line["attempts"] = json!(attempts);
            line["deadline"] = json!(deadline);
            line["message"] = json!(format!("{host}: {error}"));
        }
        JournalError::NotConfigured { cause, .. } => {
            line["cause"] = json!(cause.code());
        }
        _ => {}
    }
    if error.class() != ErrorClass::Refused {
        line["class"] = json!(error.class().code());
        if let Some(code) = error.grpc_code() {
            line["grpcCode"] = json!(code.as_str());
        }
    }
    if line.get("message").is_none() {
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

/// Prints `emulator_unavailable` (the emulator could not start; stderr says why) and
/// returns exit code 4.
pub fn emulator_unavailable() -> ExitCode {
    let line = json!({
        "error": "emulator_unavailable",
        "class": "unavailable",
        "message": "the Firestore emulator could not be started; stderr says why",
    });
    println!("{line}");
    ExitCode::from(UNAVAILABLE)
}

/// Prints `internal` with a fixed reason and returns exit code 1.
pub fn internal(reason: &'static str) -> ExitCode {
    report(Err(JournalError::Internal { reason }))
}

/// [`report`] for a subcommand that reads stdin: an input failure is `invalid_input`
/// naming the key and its problem (exit 2).
pub fn report_failure(result: Result<Value, Failure>) -> ExitCode {
    match result {
        Err(Failure::Input(input)) => {
            println!("{}", invalid_line(&input));
            ExitCode::from(INPUT)
        }
        Err(Failure::Journal(error)) => report(Err(error)),
        Ok(value) => report(Ok(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::GrpcCode;

    #[test]
    fn refusals_carry_a_short_fixed_message() {
        assert_eq!(
            error_line(&JournalError::StaleFence),
            json!({"error": "stale_fence", "message": "the fence epoch is stale"})
        );
    }

    #[test]
    fn an_outage_names_the_host_and_the_grpc_code_and_never_zero_attempts() {
        set_host("127.0.0.1:9".to_owned());
        let line = error_line(&JournalError::Unavailable {
            last_code: Some(GrpcCode::Unavailable),
            attempts: 0,
            deadline: false,
        });
        assert_eq!(line["host"], "127.0.0.1:9");
        assert_eq!(line["grpcCode"], "UNAVAILABLE");
        let message = line["message"].as_str().expect("message");
        assert!(
            message.starts_with("127.0.0.1:9: could not connect"),
            "{message}"
        );
        assert!(message.contains("UNAVAILABLE"), "{message}");
        assert!(!message.contains("0 attempt"), "{message}");
    }

    #[test]
    fn invalid_input_says_which_problem() {
        let line = error_line(&JournalError::InvalidInput { field: "commandId" });
        assert_eq!(
            line,
            json!({"error": "invalid_input", "field": "commandId", "problem": "invalid",
                   "expected": "canonical lowercase UUID v4",
                   "message": "the value given for this key or option is not valid"})
        );
    }
}

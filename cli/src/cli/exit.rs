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

/// Every exit code of the binary, with its meaning; `--help` and docs/cli.md list
/// exactly these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: the outcome is on stdout.
    Success,
    /// 1: a defect inside the process; not retryable.
    Internal,
    /// 2: `invalid_input` (and usage errors): the named key or option is wrong.
    Input,
    /// 3: the journal refused the transition (`command_conflict`, `stale_fence`, …).
    Refused,
    /// 4: `unavailable`: retrying the whole call later is safe.
    Unavailable,
    /// 5: `verify` found broken invariants.
    Broken,
    /// 6: `rules check` found a journal document a browser can reach.
    Leak,
    /// 7: `verify` scanned no journal document (unless `--allow-empty`).
    Empty,
    /// 8: a configuration refusal (credentials, permissions, project, database).
    Configuration,
}

impl Exit {
    /// Every exit code, in numeric order.
    pub const ALL: [Self; 9] = [
        Self::Success,
        Self::Internal,
        Self::Input,
        Self::Refused,
        Self::Unavailable,
        Self::Broken,
        Self::Leak,
        Self::Empty,
        Self::Configuration,
    ];

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Internal => 1,
            Self::Input => 2,
            Self::Refused => 3,
            Self::Unavailable => 4,
            Self::Broken => 5,
            Self::Leak => 6,
            Self::Empty => 7,
            Self::Configuration => 8,
        }
    }

    /// The error class of its lines (docs/cli.md's `class` column; empty when none).
    pub fn class(self) -> &'static str {
        match self {
            Self::Internal => "internal",
            Self::Input => "input",
            Self::Refused => "refused",
            Self::Unavailable => "unavailable",
            Self::Configuration => "configuration",
            Self::Success | Self::Broken | Self::Leak | Self::Empty => "",
        }
    }

    /// What it means, as docs/cli.md's `meaning` column begins.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Internal => "a defect inside the process",
            Self::Input => "the named key or option is wrong",
            Self::Refused => "the journal refused the transition",
            Self::Unavailable => "transient; retrying the whole call later is safe",
            Self::Broken => "`verify` found broken invariants",
            Self::Leak => "`rules check` found a journal document a browser can reach",
            Self::Empty => "`verify` scanned no journal document (unless `--allow-empty`)",
            Self::Configuration => {
                "the deployment is misconfigured (credentials, permissions, project, database)"
            }
        }
    }

    /// The top-level `--help`'s closing text: where the stdin objects are documented,
    /// then every exit code, one line each, generated from [`Exit::ALL`].
    pub fn after_help() -> String {
        let mut text = String::from(
            "Each subcommand that reads stdin documents its JSON object in its --help; \
             `command-journal example <subcommand>` prints a working one. \
             `command-journal explain CODE` explains an error or verify finding code.\n\n\
             Exit codes:",
        );
        for exit in Self::ALL {
            let class = match exit.class() {
                "" => String::new(),
                class => format!("{class}: "),
            };
            text += &format!("\n  {exit}  {class}{}", exit.meaning());
        }
        text
    }

    /// The exit code of an error's class: 2 input, 3 refused, 4 unavailable,
    /// 8 configuration, 1 internal.
    pub fn of(error: &JournalError) -> Self {
        match error.class() {
            ErrorClass::Input => Self::Input,
            ErrorClass::Refused => Self::Refused,
            ErrorClass::Unavailable => Self::Unavailable,
            ErrorClass::Configuration => Self::Configuration,
            _ => Self::Internal,
        }
    }
}

/// The bare number, as tables and help texts print it.
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        Self::from(exit.code())
    }
}

/// The Firestore host the subcommand talks to, named by `unavailable` lines.
static HOST: OnceLock<String> = OnceLock::new();

/// Records the host `unavailable` answers name (the first call wins).
pub fn set_host(host: String) {
    let _ = HOST.set(host);
}

/// What an error line adds to its message: the likely fix, when the subcommand was
/// probably meant for an emulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hint {
    /// The target is the emulator at this host: an outage may mean it is not running.
    EmulatorAt(String),
    /// A `demo-` project aimed at production: such a project exists only on an
    /// emulator, whatever the configuration or outage error says.
    DemoProject,
}

impl Hint {
    /// The text an error line of `class` ends with, if any.
    fn text(&self, class: ErrorClass) -> Option<String> {
        match (self, class) {
            (Self::EmulatorAt(host), ErrorClass::Unavailable) => {
                let port = host.rsplit_once(':').map_or("8080", |(_, port)| port);
                Some(format!(
                    "is the Firestore emulator running at {host}? \
                     (`command-journal emulator --port {port}` starts one there)"
                ))
            }
            (Self::DemoProject, ErrorClass::Unavailable | ErrorClass::Configuration) => Some(
                "a demo- project exists only on an emulator: set FIRESTORE_EMULATOR_HOST \
                 or pass --emulator-host HOST:PORT (`command-journal emulator --port 8080` \
                 starts one)"
                    .to_owned(),
            ),
            _ => None,
        }
    }
}

static HINT: OnceLock<Hint> = OnceLock::new();

/// Records the hint error lines end with (the first call wins).
pub fn set_hint(hint: Hint) {
    let _ = HINT.set(hint);
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
        JournalError::AbsenceNotProvable { provable_from } => {
            line["provableFrom"] = json!(provable_from.map(crate::time::SecondsNanos));
        }
        JournalError::ResendNotYet { from } => {
            line["resendFrom"] = json!(crate::time::SecondsNanos(*from));
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
    let hint = HINT.get().and_then(|hint| hint.text(error.class()));
    if let (Some(hint), Some(message)) = (hint, line["message"].as_str()) {
        line["message"] = json!(format!("{message}; {hint}"));
    }
    line
}

/// Prints `result` as one JSON line and returns its exit code (see [`Exit::of`]).
pub fn report(result: Result<Value, JournalError>) -> ExitCode {
    match result {
        Ok(value) => {
            println!("{value}");
            Exit::Success.into()
        }
        Err(error) => {
            println!("{}", error_line(&error));
            Exit::of(&error).into()
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
    Exit::Unavailable.into()
}

/// Prints `internal` with a fixed reason and returns exit code 1.
pub fn internal(reason: &'static str) -> ExitCode {
    report(Err(JournalError::Internal { reason }))
}

/// Prints the refusal of a subcommand's input and returns its exit code: an input
/// failure is `invalid_input` naming the key and its problem (exit 2), a journal
/// error as [`report`] prints it.
pub fn report_failure(failure: Failure) -> ExitCode {
    match failure {
        Failure::Input(input) => {
            println!("{}", invalid_line(&input));
            Exit::Input.into()
        }
        Failure::Journal(error) => report(Err(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let line = error_line(&JournalError::connect_failed());
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
    fn hints_name_the_fix_for_their_classes_only() {
        let emulator = Hint::EmulatorAt("127.0.0.1:9".to_owned());
        let text = emulator.text(ErrorClass::Unavailable).unwrap_or_default();
        assert!(text.contains("running at 127.0.0.1:9?"), "{text}");
        assert!(text.contains("emulator --port 9`"), "{text}");
        assert_eq!(emulator.text(ErrorClass::Configuration), None);
        assert_eq!(emulator.text(ErrorClass::Refused), None);
        let demo = Hint::DemoProject.text(ErrorClass::Configuration);
        let demo = demo.unwrap_or_default();
        assert!(demo.contains("FIRESTORE_EMULATOR_HOST"), "{demo}");
        assert!(demo.contains("--emulator-host"), "{demo}");
        assert_eq!(Hint::DemoProject.text(ErrorClass::Input), None);
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

    #[test]
    fn the_docs_table_lists_every_exit_code_with_its_class_and_meaning() {
        let docs = include_str!("../../../docs/cli.md");
        let table = docs
            .split("## Exit codes")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .unwrap_or_default();
        let rows: Vec<Vec<&str>> = table
            .lines()
            .filter_map(|line| line.strip_prefix("| "))
            .filter(|line| line.starts_with(|c: char| c.is_ascii_digit()))
            .map(|line| line.split(" |").map(str::trim).collect())
            .collect();
        assert_eq!(rows.len(), Exit::ALL.len(), "{rows:?}");
        for (exit, row) in Exit::ALL.into_iter().zip(&rows) {
            assert_eq!(row[0], exit.code().to_string(), "{row:?}");
            assert_eq!(row[1], exit.class(), "{row:?}");
            assert!(row[3].starts_with(exit.meaning()), "{exit:?}: {row:?}");
        }
    }

    #[test]
    fn every_error_class_has_its_exit_code() {
        assert_eq!(Exit::of(&JournalError::StaleFence), Exit::Refused);
        assert_eq!(Exit::of(&JournalError::connect_failed()), Exit::Unavailable);
        assert_eq!(Exit::of(&JournalError::invalid("at")), Exit::Input);
        assert_eq!(Exit::of(&JournalError::internal("x")), Exit::Internal);
        let codes: Vec<u8> = Exit::ALL.into_iter().map(Exit::code).collect();
        assert_eq!(codes, (0..=8).collect::<Vec<u8>>());
    }

    #[test]
    fn a_usage_error_exits_as_invalid_input() {
        use clap::Parser as _;
        let error = super::super::args::Args::try_parse_from(["command-journal", "--bogus"])
            .expect_err("an unknown option");
        assert_eq!(error.exit_code(), i32::from(Exit::Input.code()));
    }
}

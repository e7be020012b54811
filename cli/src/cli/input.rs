//! The one JSON object a subcommand reads on stdin, taken field by field.
//!
//! Every refusal says what is wrong ([`Problem`]): a required key missing, a key whose
//! value is invalid, a key the subcommand does not read, a key given twice, or stdin
//! that is empty, not JSON, or JSON but not one object.

use crate::JournalError;
use crate::expected::expected_for;
use crate::identity::{
    CallerId, CallerScopeKind, CommandId, CommandType, EndpointSchemaVersion, Environment,
};
use crate::strict_json::{ObjectError, parse_object};
use crate::{CommandInput, CommandRequest};
use serde_json::{Map, Value};

/// What is wrong with the stdin object, or with one of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A required key is absent.
    Missing,
    /// A key's value has the wrong type or breaks its rule.
    Invalid,
    /// A key the subcommand does not read.
    Unknown,
    /// A key given twice (at the top level, or anywhere inside its value).
    Duplicate,
    /// Stdin is empty (or only whitespace).
    Empty,
    /// Stdin is not JSON: truncated, malformed, or followed by more text.
    MalformedJson,
    /// Stdin is JSON but not one object (an array, a string, a number, …).
    NotAnObject,
}

impl Problem {
    /// The stable snake_case code printed as `problem`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Invalid => "invalid",
            Self::Unknown => "unknown",
            Self::Duplicate => "duplicate",
            Self::Empty => "empty",
            Self::MalformedJson => "malformed_json",
            Self::NotAnObject => "not_an_object",
        }
    }

    /// The short fixed `message` printed with it.
    pub fn message(self) -> &'static str {
        match self {
            Self::Missing => "a required key is missing",
            Self::Invalid => "the value given for this key or option is not valid",
            Self::Unknown => "a key this subcommand does not read",
            Self::Duplicate => "a key is given more than once",
            Self::Empty => "stdin is empty: pipe one JSON object into the subcommand",
            Self::MalformedJson => {
                "stdin is not valid JSON (truncated, malformed or followed by more text)"
            }
            Self::NotAnObject => "stdin is JSON but not one object",
        }
    }
}

/// An `invalid_input` answer: the key (never its value), what is wrong with it, and
/// the fixed rule it must follow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidInput {
    /// The key's name, or `input` for the stdin text as a whole.
    pub field: String,
    /// What is wrong.
    pub problem: Problem,
    /// What was expected instead.
    pub expected: &'static str,
}

/// Why a subcommand refused: a journal error, or its stdin object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Any error of the journal, `invalid_input` on a known field (problem `invalid`)
    /// included.
    Journal(JournalError),
    /// `invalid_input` with a problem a journal error does not carry.
    Input(InvalidInput),
}

impl From<JournalError> for Failure {
    fn from(error: JournalError) -> Self {
        Self::Journal(error)
    }
}

/// The fixed text of an unknown key.
pub const UNKNOWN_KEY: &str = "only the keys this subcommand's --help lists";
/// The fixed text of a duplicate key.
pub const DUPLICATE_KEY: &str = "each key at most once, at every depth";
/// The fixed text of stdin that is not one object.
pub const ONE_OBJECT: &str =
    "one JSON object, each key at most once, with only the documented keys";

impl Failure {
    /// `invalid_input` on `field` with `problem`, expecting `expected`.
    pub fn input(field: impl Into<String>, problem: Problem, expected: &'static str) -> Self {
        Self::Input(InvalidInput {
            field: field.into(),
            problem,
            expected,
        })
    }

    /// A required key that is absent.
    pub fn missing(field: &'static str) -> Self {
        Self::input(
            field,
            Problem::Missing,
            expected_for(field).unwrap_or(ONE_OBJECT),
        )
    }

    /// An unknown or duplicate key. Names that are not short identifiers (which could
    /// be values pasted as keys) are reported as the whole `input` instead.
    pub fn key(key: String, problem: Problem) -> Self {
        let expected = match problem {
            Problem::Duplicate => DUPLICATE_KEY,
            _ => UNKNOWN_KEY,
        };
        let identifier = (1..=64).contains(&key.len())
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && key.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
        if identifier {
            Self::input(key, problem, expected)
        } else {
            Self::input("input", problem, expected)
        }
    }
}

/// Parses `text` as one JSON object; a duplicate key names its top-level key, and
/// text that is not one JSON object says whether it is empty, not JSON, or another
/// JSON value.
pub fn object(text: &str) -> Result<Map<String, Value>, Failure> {
    parse_object(text).map_err(|error| match error {
        ObjectError::DuplicateKey(key) => Failure::key(key, Problem::Duplicate),
        ObjectError::NotAnObject => {
            let problem = if text.trim().is_empty() {
                Problem::Empty
            } else if serde_json::from_str::<Value>(text).is_err() {
                Problem::MalformedJson
            } else {
                Problem::NotAnObject
            };
            Failure::input("input", problem, ONE_OBJECT)
        }
    })
}

/// Fails naming the first key of `map` that is not in `allowed`.
pub fn only_keys(map: &Map<String, Value>, allowed: &[&str]) -> Result<(), Failure> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(Failure::key(key.clone(), Problem::Unknown)),
        None => Ok(()),
    }
}

/// The fields of the stdin object not yet taken.
pub struct Input {
    fields: Map<String, Value>,
}

impl Input {
    /// Parses `text` as one JSON object without duplicate keys.
    pub fn parse(text: &str) -> Result<Self, Failure> {
        Ok(Self {
            fields: object(text)?,
        })
    }

    /// Takes a required string field.
    pub fn string(&mut self, field: &'static str) -> Result<String, Failure> {
        match self.fields.remove(field) {
            Some(Value::String(text)) => Ok(text),
            Some(_) => Err(JournalError::InvalidInput { field }.into()),
            None => Err(Failure::missing(field)),
        }
    }

    /// Takes an optional string field (absent or null is `None`).
    pub fn optional_string(&mut self, field: &'static str) -> Result<Option<String>, JournalError> {
        match self.fields.remove(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(JournalError::InvalidInput { field }),
        }
    }

    /// Takes a required integer field.
    pub fn integer(&mut self, field: &'static str) -> Result<i64, Failure> {
        match self.fields.remove(field) {
            Some(value) => value
                .as_i64()
                .ok_or(JournalError::InvalidInput { field }.into()),
            None => Err(Failure::missing(field)),
        }
    }

    /// Takes a required field of any JSON type.
    pub fn value(&mut self, field: &'static str) -> Result<Value, Failure> {
        self.fields
            .remove(field)
            .ok_or_else(|| Failure::missing(field))
    }

    /// Takes an optional field of any JSON type (absent is `None`).
    pub fn optional_value(&mut self, field: &'static str) -> Option<Value> {
        self.fields.remove(field)
    }

    /// Fails naming the first key of `allowed`'s complement present in the object;
    /// call before taking fields so that an unknown key is reported first.
    pub fn only(&self, allowed: &[&str]) -> Result<(), Failure> {
        only_keys(&self.fields, allowed)
    }

    /// Takes the command fields and validates them, each as it is taken, so that the
    /// first key in the documented order that is missing or wrong is the one reported.
    pub fn command(&mut self) -> Result<CommandInput, Failure> {
        let environment = self.string("environment")?;
        Environment::parse(&environment)?;
        let caller_scope_kind = self.string("callerScopeKind")?;
        CallerScopeKind::parse(&caller_scope_kind)?;
        let caller_id = self.string("callerId")?;
        CallerId::parse(&caller_id)?;
        let command_id = self.string("commandId")?;
        CommandId::parse(&command_id)?;
        let command_type = self.string("commandType")?;
        CommandType::parse(&command_type)?;
        let endpoint_schema_version = self.integer("endpointSchemaVersion")?;
        EndpointSchemaVersion::new(endpoint_schema_version)?;
        let payload = self.value("payload")?;
        Ok(CommandInput::new(CommandRequest {
            environment: &environment,
            caller_scope_kind: &caller_scope_kind,
            caller_id: &caller_id,
            command_id: &command_id,
            command_type: &command_type,
            endpoint_schema_version,
            payload: &payload,
        })?)
    }

    /// Fails naming the first key that was not taken.
    pub fn finish(self) -> Result<(), Failure> {
        only_keys(&self.fields, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (String, Problem) {
        match object(text) {
            Err(Failure::Input(input)) => (input.field, input.problem),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn text_that_is_not_one_object_says_why() {
        let input = |p| ("input".to_owned(), p);
        assert_eq!(problem(""), input(Problem::Empty));
        assert_eq!(problem(" \n"), input(Problem::Empty));
        assert_eq!(problem(r#"{"a":"#), input(Problem::MalformedJson));
        assert_eq!(problem(r#"{"a":1} {}"#), input(Problem::MalformedJson));
        assert_eq!(problem("[1,2]"), input(Problem::NotAnObject));
        assert_eq!(problem("\"text\""), input(Problem::NotAnObject));
        assert_eq!(
            problem(r#"{"a":1,"a":2}"#),
            ("a".to_owned(), Problem::Duplicate)
        );
        // A value pasted as a key is never echoed.
        assert_eq!(
            problem(r#"{"a b":1,"a b":2}"#),
            ("input".to_owned(), Problem::Duplicate)
        );
    }

    #[test]
    fn missing_and_invalid_keys_are_told_apart() {
        let mut input = Input::parse(r#"{"commandId":7}"#).expect("object");
        assert_eq!(
            input.string("commandId"),
            Err(Failure::Journal(JournalError::InvalidInput {
                field: "commandId"
            }))
        );
        assert_eq!(
            input.string("commandId"),
            Err(Failure::input(
                "commandId",
                Problem::Missing,
                "canonical lowercase UUID v4"
            ))
        );
        let mut input = Input::parse(r#"{"x":1}"#).expect("object");
        assert_eq!(
            input.only(&["y"]),
            Err(Failure::input("x", Problem::Unknown, UNKNOWN_KEY))
        );
        assert!(matches!(
            input.integer("expectedFenceEpoch"),
            Err(Failure::Input(InvalidInput {
                problem: Problem::Missing,
                ..
            }))
        ));
    }
}

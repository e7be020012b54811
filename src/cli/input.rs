//! The one JSON object a subcommand reads on stdin, taken field by field.

use command_journal::JournalError;
use command_journal::strict_json::{ObjectError, parse_object};
use command_journal::{
    CallerId, CallerScopeKind, CommandId, CommandInput, CommandRequest, CommandType,
    EndpointSchemaVersion, Environment,
};
use serde_json::{Map, Value};

/// Why a subcommand refused: a journal error, or a key of its stdin object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Any error of the journal, `invalid_input` on a known field included.
    Journal(JournalError),
    /// `invalid_input` on a top-level key the subcommand does not read, or one given
    /// twice (or holding a duplicate key): `key` is the key's name, never its value.
    Key {
        /// The key's name.
        key: String,
        /// What was expected instead.
        expected: &'static str,
    },
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

/// A key's name as reported: names that are not short identifiers (which could be
/// values pasted as keys) are reported as the whole `input` instead.
fn key_failure(key: String, expected: &'static str) -> Failure {
    let identifier = (1..=64).contains(&key.len())
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && key.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    if identifier {
        Failure::Key { key, expected }
    } else {
        Failure::Journal(JournalError::InvalidInput { field: "input" })
    }
}

/// Parses `text` as one JSON object; a duplicate key names its top-level key, and only
/// text that is not one JSON object is `invalid_input` on `input`.
pub fn object(text: &str) -> Result<Map<String, Value>, Failure> {
    parse_object(text).map_err(|error| match error {
        ObjectError::NotAnObject => Failure::Journal(JournalError::InvalidInput { field: "input" }),
        ObjectError::DuplicateKey(key) => key_failure(key, DUPLICATE_KEY),
    })
}

/// Fails naming the first key of `map` that is not in `allowed`.
pub fn only_keys(map: &Map<String, Value>, allowed: &[&str]) -> Result<(), Failure> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(key_failure(key.clone(), UNKNOWN_KEY)),
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
    pub fn string(&mut self, field: &'static str) -> Result<String, JournalError> {
        match self.fields.remove(field) {
            Some(Value::String(text)) => Ok(text),
            _ => Err(JournalError::InvalidInput { field }),
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
    pub fn integer(&mut self, field: &'static str) -> Result<i64, JournalError> {
        self.fields
            .remove(field)
            .and_then(|v| v.as_i64())
            .ok_or(JournalError::InvalidInput { field })
    }

    /// Takes a required field of any JSON type.
    pub fn value(&mut self, field: &'static str) -> Result<Value, JournalError> {
        self.fields
            .remove(field)
            .ok_or(JournalError::InvalidInput { field })
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
    pub fn command(&mut self) -> Result<CommandInput, JournalError> {
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
        CommandInput::new(CommandRequest {
            environment: &environment,
            caller_scope_kind: &caller_scope_kind,
            caller_id: &caller_id,
            command_id: &command_id,
            command_type: &command_type,
            endpoint_schema_version,
            payload: &payload,
        })
    }

    /// Fails naming the first key that was not taken.
    pub fn finish(self) -> Result<(), Failure> {
        only_keys(&self.fields, &[])
    }
}

//! The one JSON object a subcommand reads on stdin, taken field by field.

use command_journal::JournalError;
use command_journal::identity::{CommandInput, CommandRequest};
use serde_json::{Map, Value};

/// The fields of the stdin object not yet taken.
pub struct Input {
    fields: Map<String, Value>,
}

impl Input {
    /// Parses `text` as one JSON object without duplicate keys.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match command_journal::strict_json::parse(text) {
            Some(Value::Object(fields)) => Ok(Self { fields }),
            _ => Err(JournalError::InvalidInput { field: "input" }),
        }
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

    /// Takes the command fields and validates them.
    pub fn command(&mut self) -> Result<CommandInput, JournalError> {
        let environment = self.string("environment")?;
        let caller_scope_kind = self.string("callerScopeKind")?;
        let caller_id = self.string("callerId")?;
        let command_id = self.string("commandId")?;
        let command_type = self.string("commandType")?;
        let endpoint_schema_version = self.integer("endpointSchemaVersion")?;
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

    /// Fails with `invalid_input { field: "input" }` if any field was not taken.
    pub fn finish(self) -> Result<(), JournalError> {
        if self.fields.is_empty() {
            Ok(())
        } else {
            Err(JournalError::InvalidInput { field: "input" })
        }
    }
}

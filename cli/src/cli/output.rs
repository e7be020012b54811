//! The one conversion of a library output to the JSON value the CLI prints.

use crate::JournalError;
use serde_json::Value;

/// `value` as JSON. The outputs are plain data and always serialize; the mapping only
/// keeps the signature total.
pub fn to_json(value: impl serde::Serialize) -> Result<Value, JournalError> {
    serde_json::to_value(value).map_err(|_| JournalError::internal("output serialization failed"))
}

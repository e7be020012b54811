//! Result envelopes: the domain answer a succeeded command returns on every retry.
//!
//! An envelope is a JSON object under the payload rules (integers within ±(2^53−1), at
//! most 32 deep), at most [`MAX_RESULT_ENVELOPE_BYTES`] in RFC 8785 canonical form. The
//! journal never interprets it: its SHA-256 over the canonical text is the terminal
//! reference, so the lifecycle's commitment binds it, and it is stored server-only in
//! the same commit as the terminal transition (`docs/documents.md`).

use crate::error::JournalError;
use crate::identity::{MAX_RESULT_ENVELOPE_BYTES, TerminalReferenceFingerprint, canonical_object};
use serde_json::Value;
use std::fmt;

/// A validated result envelope: its canonical text and the value it parses to.
///
/// It holds domain data (identifiers and amounts the caller may see; never card data
/// or personal data), so `Debug` prints `ResultEnvelope(<redacted>)`.
#[derive(Clone, PartialEq, Eq)]
pub struct ResultEnvelope {
    canonical: String,
    value: Value,
}

impl fmt::Debug for ResultEnvelope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResultEnvelope(<redacted>)")
    }
}

impl ResultEnvelope {
    /// Validates `value`: a JSON object under the payload rules, at most
    /// [`MAX_RESULT_ENVELOPE_BYTES`] canonical bytes; `invalid_input` on `result`
    /// otherwise (the value is never echoed).
    ///
    /// ```
    /// use command_journal_core::ResultEnvelope;
    /// let envelope = ResultEnvelope::new(&serde_json::json!({"id": "ch_1", "amount": 500}))?;
    /// assert_eq!(envelope.canonical(), r#"{"amount":500,"id":"ch_1"}"#);
    /// # Ok::<(), command_journal_core::error::JournalError>(())
    /// ```
    pub fn new(value: &Value) -> Result<Self, JournalError> {
        let canonical = canonical_object(value, "result")?;
        if canonical.len() > MAX_RESULT_ENVELOPE_BYTES {
            return Err(JournalError::invalid("result"));
        }
        let value =
            serde_json::from_str(&canonical).map_err(|_| JournalError::invalid("result"))?;
        Ok(Self { canonical, value })
    }

    /// Parses stored canonical text: `None` unless it is exactly the canonical form of
    /// a valid envelope (no duplicate key, nothing re-ordered, nothing re-spaced).
    pub(crate) fn from_canonical(text: &str) -> Option<Self> {
        let object = crate::strict_json::parse_object(text).ok()?;
        let envelope = Self::new(&Value::Object(object)).ok()?;
        (envelope.canonical == text).then_some(envelope)
    }

    /// The RFC 8785 canonical JSON text: byte-identical for equal envelopes, and what
    /// a service returns on the first answer and on every retry.
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// The envelope as a JSON value.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The terminal reference this envelope stands for: the lowercase hex SHA-256 of
    /// [`canonical`](Self::canonical).
    pub fn reference(&self) -> TerminalReferenceFingerprint {
        TerminalReferenceFingerprint::of_receipt(self.canonical.as_bytes())
    }
}

pub(crate) mod read;
pub(crate) mod record;
pub mod stored;

#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod tests;

//! The first read of evidence: the key index document of the key it names.

use crate::error::JournalError;
use crate::sends::key_index::{self, KeyIndex};
use crate::transaction::{Decision, OperationName, Snapshot, Transition};

/// A prepared read of the index document of one provider idempotency key.
#[derive(Debug, Clone)]
pub struct KeyIndexRead {
    path: String,
}

impl KeyIndexRead {
    /// The read of `key`'s index document.
    pub(crate) fn new(key: &str) -> Self {
        Self {
            path: key_index::path(key),
        }
    }
}

impl Transition for KeyIndexRead {
    type Output = Option<KeyIndex>;

    fn name(&self) -> OperationName {
        OperationName::RecordEvidence
    }

    fn paths(&self) -> Vec<String> {
        vec![self.path.clone()]
    }

    /// The index document strictly parsed, `None` when absent; a malformed one is
    /// `journal_corrupt`.
    fn decide(&self, snapshot: &Snapshot) -> Decision<Option<KeyIndex>> {
        match snapshot.get(&self.path).map(KeyIndex::parse).transpose() {
            Ok(index) => Decision::Observe(index),
            Err(error) => Decision::Reject(error),
        }
    }
}

/// What a journal error means about the index document that led to it: a command
/// that is not registered, or whose stored plan derives no attempt's key equal to the
/// key (the settle program's `invalid_input` on `providerIdempotencyKey`), is a wrong
/// index (`journal_corrupt`). Any other error keeps its own kind: another
/// `invalid_input` is about the input, never the index.
pub(super) fn indexed_error(error: JournalError) -> JournalError {
    match error {
        // The index is wrong, never the giver's evidence.
        JournalError::NotRegistered => {
            JournalError::corrupt("a provider key index names no registered command")
        }
        JournalError::InvalidInput {
            field: "providerIdempotencyKey",
        } => JournalError::corrupt("a provider key index names a command without that key"),
        other => other,
    }
}

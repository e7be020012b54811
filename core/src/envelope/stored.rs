//! `checkoutRequests/{commandKeyHash}/results/current`: the result envelope of a
//! command that succeeded with one, created in the commit of the terminal success and
//! never changed. The one journal document that holds domain data: the envelope's
//! canonical text, exactly as [`ResultEnvelope::canonical`] gives it.
//!
//! ```text
//! resultSchemaVersion  integer  1
//! commandKeyHash       string   the parent root's id
//! envelope             string   RFC 8785 canonical JSON text of the envelope
//! createdAt            timestamp the terminal success's time (the lifecycle's updatedAt)
//! ```
//!
//! It binds to its lifecycle: the lifecycle is `succeeded`, its
//! `terminalCommitmentHash` is the commitment of the envelope's reference (the SHA-256
//! of the stored text) and its `updatedAt` is `createdAt`.

use super::ResultEnvelope;
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::document::lifecycle::{Lifecycle, LifecycleState};
use crate::error::JournalError;
use crate::identity::terminal_commitment;
use crate::time::Timestamp;

/// The collection id of the results document.
pub const COLLECTION: &str = "results";
/// The `journal_corrupt` reason of a malformed results document.
pub const KIND: &str = "malformed result document";
/// The exact field set.
pub const FIELDS: [&str; 4] = [
    "resultSchemaVersion",
    "commandKeyHash",
    "envelope",
    "createdAt",
];

/// The results document's path relative to the documents root.
pub fn path(hash: &Digest) -> String {
    format!(
        "{}/{hash}/{COLLECTION}/current",
        crate::document::root::COLLECTION
    )
}

/// A parsed results document. `Debug` redacts the envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResult {
    /// Equals the parent root's id.
    pub command_key_hash: Digest,
    /// The envelope, parsed from text that is exactly its canonical form.
    pub envelope: ResultEnvelope,
    /// The terminal success's time.
    pub created_at: Timestamp,
}

impl StoredResult {
    /// Parses strictly; `hash` is the command the document was read under. The
    /// envelope text must be exactly canonical (no re-ordering, re-spacing or
    /// duplicate key) and a valid envelope.
    pub fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("resultSchemaVersion", 1..=1)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let envelope = f.parsed("envelope", |text| {
            ResultEnvelope::from_canonical(text).ok_or(())
        })?;
        Ok(Self {
            command_key_hash,
            envelope,
            created_at: f.timestamp("createdAt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("resultSchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("envelope", fields::string(self.envelope.canonical())),
            ("createdAt", fields::timestamp(self.created_at)),
        ])
    }

    /// The `terminalCommitmentHash` this envelope stands for.
    pub fn commitment(&self) -> Digest {
        terminal_commitment(&self.command_key_hash, &self.envelope.reference())
    }

    /// Whether `lifecycle` (of the same command) is the success this document was
    /// stored with: `succeeded`, with this envelope's commitment, at `createdAt`.
    pub fn binds(&self, lifecycle: &Lifecycle) -> bool {
        lifecycle.state == LifecycleState::Succeeded
            && lifecycle.terminal_commitment.as_ref() == Some(&self.commitment())
            && lifecycle.updated_at == self.created_at
    }
}

//! The documents the checks read: each with its path, fields and the write times
//! Firestore keeps on it, and one command's documents together.

use crate::document::fields::FieldMap;

/// A commit time as Firestore records it on a document (`createTime`, `updateTime`):
/// set by the server, never by a client, shared by every write of one commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct WriteTime {
    /// Seconds since the Unix epoch.
    pub seconds: i64,
    /// Nanoseconds within the second.
    pub nanos: i32,
}

/// One stored document: its path relative to the documents root, its fields and when
/// it was created and last written.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDoc {
    /// Path relative to the documents root.
    pub path: String,
    /// The raw fields.
    pub fields: FieldMap,
    /// The commit that created it.
    pub created: WriteTime,
    /// The commit that last changed it (equal to `created` when never rewritten).
    pub updated: WriteTime,
}

impl StoredDoc {
    /// A document created at `created` and never rewritten.
    #[cfg(test)]
    pub fn new(path: impl Into<String>, fields: FieldMap, created: WriteTime) -> Self {
        Self {
            path: path.into(),
            fields,
            created,
            updated: created,
        }
    }

    /// Whether a commit other than the one that created it changed it.
    pub fn rewritten(&self) -> bool {
        self.updated != self.created
    }
}

/// Everything stored under one command key hash.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandDocs {
    /// The root, if any.
    pub root: Option<StoredDoc>,
    /// Documents of the root's `lifecycle` collection (exactly `current` expected).
    pub lifecycles: Vec<StoredDoc>,
    /// Audit events with their revisions, in revision order.
    pub audits: Vec<(i64, StoredDoc)>,
    /// The send layer's `providerSends/plan` and `providerSends/current`, if any.
    pub sends: Vec<StoredDoc>,
    /// Send events with their send revisions, in revision order.
    pub send_events: Vec<(i64, StoredDoc)>,
    /// `results/current`, if any.
    pub result: Option<StoredDoc>,
    /// `lateCharges/{attempt:04}`, with their attempts, in attempt order.
    pub late_charges: Vec<(crate::sends::AttemptNumber, StoredDoc)>,
    /// `leaseReleases/{fence:010}`, with their fences, in fence order.
    pub releases: Vec<(crate::fence::FenceEpoch, StoredDoc)>,
}

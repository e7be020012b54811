//! Strict codecs for every stored document type.
//!
//! Each codec parses the raw Firestore field map, never a serde view of it: the exact
//! field set, exact value types (an integer is not a double, a timestamp is not a
//! string, null is not absent), exact enums and the relations between fields.
//! Anything else is [`JournalError::JournalCorrupt`](crate::error::JournalError) and the
//! operation that read it writes nothing. `docs/documents.md` lists every document's
//! fields and invariants.

pub mod audit;
pub mod fields;
pub mod lifecycle;
pub mod release;
pub mod root;
pub mod value;

/// Largest command revision and fence epoch (ten decimal digits).
pub(crate) const MAX_REVISION: i64 = 9_999_999_999;

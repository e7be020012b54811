//! The verifier's checks, pure: every invariant of docs/documents.md over the
//! documents of one command or one reservation, as strictly parsed fields and the write
//! times Firestore kept, each broken one reported as a [`Finding`] with a stable
//! [`FindingCode`]. The library's `verify` streams a project's documents into them.

pub mod checkpoints;
pub mod commerce;
pub mod historical_links;
pub mod keys;
pub mod ledger;
pub mod pending_index;
pub mod ranges;
pub mod report;
pub mod results;
pub mod sends;
pub mod stored;
pub mod write_times;

pub use ranges::ScanRanges;
pub use report::{Finding, FindingCode, MAX_FINDINGS, Scanned, VerifyReport};

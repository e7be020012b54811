//! The verifier's checks, pure: every invariant of docs/documents.md over the
//! documents of one command or one reservation, as strictly parsed fields and the write
//! times Firestore kept, each broken one reported as a [`Finding`] with a stable
//! [`FindingCode`]. The report's types are public here; the checks are private to
//! the core, and the library's `verify`, which streams a project's documents into
//! them, reaches them through [`tools::verify`](crate::tools::verify).

pub(crate) mod attention;
pub(crate) mod checkpoints;
pub(crate) mod commerce;
pub(crate) mod corrections;
pub(crate) mod cross_checks;
pub(crate) mod historical_links;
pub(crate) mod keys;
pub(crate) mod late;
pub(crate) mod ledger;
#[cfg(test)]
pub(crate) mod ledger_scan;
pub(crate) mod pending_index;
pub(crate) mod provider_keys;
pub(crate) mod ranges;
pub(crate) mod releases;
pub(crate) mod report;
pub(crate) mod results;
pub(crate) mod sends;
pub(crate) mod stored;
pub(crate) mod write_times;

pub use ranges::ScanRanges;
pub use report::{
    Attention, AttentionCode, Finding, FindingCode, MAX_FINDINGS, Scanned, VerifyReport,
};

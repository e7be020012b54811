//! Pure checks of a command's result envelope document (`results/current`) against
//! its lifecycle (`docs/documents.md`):
//!
//! - created once and never rewritten (`rewritten_document`);
//! - exactly the strict codec, the envelope text exactly canonical
//!   (`malformed_result`);
//! - only for a succeeded lifecycle (`orphan_result`; a root without one is reported by
//!   the caller the same way);
//! - the commitment of its reference is the lifecycle's `terminalCommitmentHash` and
//!   its `createdAt` the success's `updatedAt` (`result_commitment_mismatch`);
//! - created by the commit of the success: its `createTime` is the lifecycle's
//!   `updateTime` (`commit_time_mismatch`).
//!
//! A deleted results document is not detectable: the success then reads as one
//! recorded with a bare reference.

use super::report::{Finding, FindingCode};
use super::stored::StoredDoc;
use crate::digest::Digest;
use crate::document::lifecycle::{Lifecycle, LifecycleState};
use crate::envelope::stored::StoredResult;

fn finding(code: FindingCode, doc: &StoredDoc) -> Finding {
    Finding {
        code,
        path: doc.path.clone(),
    }
}

/// The findings of the results document `doc` of a registered command; `lifecycle` is
/// the parsed `current` lifecycle with its document, `lifecycle_unknown` whether one
/// exists but failed to parse (then only the document itself is checked).
pub(crate) fn check_result(
    hash: &Digest,
    doc: &StoredDoc,
    lifecycle: Option<(&StoredDoc, &Lifecycle)>,
    lifecycle_unknown: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if doc.rewritten() {
        out.push(finding(FindingCode::RewrittenDocument, doc));
    }
    let Ok(stored) = StoredResult::parse(hash, &doc.fields) else {
        out.push(finding(FindingCode::MalformedResult, doc));
        return out;
    };
    if lifecycle_unknown {
        return out;
    }
    let Some((lifecycle_doc, lifecycle)) =
        lifecycle.filter(|(_, l)| l.state == LifecycleState::Succeeded)
    else {
        out.push(finding(FindingCode::OrphanResult, doc));
        return out;
    };
    let commitment_fits = lifecycle.terminal_commitment.as_ref() == Some(&stored.commitment());
    if !commitment_fits || stored.created_at != lifecycle.updated_at {
        out.push(finding(FindingCode::ResultCommitmentMismatch, doc));
    }
    if doc.created != lifecycle_doc.updated {
        out.push(finding(FindingCode::CommitTimeMismatch, doc));
    }
    out
}

//! Pure checks of the write times Firestore keeps on every document (`createTime`,
//! `updateTime`): set by the server at commit, shared by every write of one commit,
//! never set by a client. A document edited, or deleted and written again, outside
//! the journal changes them, whatever its fields say.
//!
//! - Every journal document but the lifecycle is created once and never rewritten:
//!   `updateTime = createTime` (`rewritten_document`).
//! - Documents the journal creates in one commit share its time: the root and its
//!   revision-1 event; the lifecycle's creation and the revision-2 event; the
//!   lifecycle's last write and the event of its current revision
//!   (`commit_time_mismatch`).
//! - Each audit event is created in a later commit than the one before it, except
//!   revisions 1 and 2 when `start` created both (`commit_time_mismatch` at the event
//!   created out of order).
//! - A reservation and the effects whose ids derive from it are created in one
//!   commit and never rewritten. Imported rows are exempt: a migration links them by
//!   replacing them once, and they keep the times of their import.

use super::report::{Finding, FindingCode};
use super::stored::{CommandDocs, StoredDoc};
use crate::document::lifecycle::Lifecycle;

fn finding(code: FindingCode, doc: &StoredDoc) -> Finding {
    Finding {
        code,
        path: doc.path.clone(),
    }
}

/// The write-time findings of a registered command (none without `docs.root`);
/// `lifecycle` is the `current` lifecycle document with its parsed fields, if it
/// parsed.
pub fn check_command(
    docs: &CommandDocs,
    lifecycle: Option<(&StoredDoc, &Lifecycle)>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(root) = &docs.root else {
        return out;
    };
    if root.rewritten() {
        out.push(finding(FindingCode::RewrittenDocument, root));
    }
    for (_, event) in &docs.audits {
        if event.rewritten() {
            out.push(finding(FindingCode::RewrittenDocument, event));
        }
    }
    let event = |revision: i64| {
        docs.audits
            .iter()
            .find(|(r, _)| *r == revision)
            .map(|(_, d)| d)
    };
    if let Some(registered) = event(1)
        && registered.created != root.created
    {
        out.push(finding(FindingCode::CommitTimeMismatch, registered));
    }
    // `audits` is in revision order.
    for pair in docs.audits.windows(2) {
        let [(r, earlier), (next, later)] = pair else {
            continue;
        };
        let same_commit_allowed = (*r, *next) == (1, 2);
        let in_order = if same_commit_allowed {
            earlier.created <= later.created
        } else {
            earlier.created < later.created
        };
        if !in_order {
            out.push(finding(FindingCode::CommitTimeMismatch, earlier));
        }
    }
    if let Some((doc, lifecycle)) = lifecycle {
        let created = event(2).is_none_or(|first| first.created == doc.created);
        // A released lifecycle's last write is its release's (`releases`).
        let updated = lifecycle.released
            || event(lifecycle.command_revision).is_none_or(|e| e.created == doc.updated);
        if !created || !updated {
            out.push(finding(FindingCode::CommitTimeMismatch, doc));
        }
    }
    out
}

/// The write-time findings of a reservation (if stored) and the effects whose ids
/// derive from its id.
pub fn check_reservation(reservation: Option<&StoredDoc>, effects: &[StoredDoc]) -> Vec<Finding> {
    let mut out = Vec::new();
    for doc in reservation.into_iter().chain(effects) {
        if doc.rewritten() {
            out.push(finding(FindingCode::RewrittenDocument, doc));
        }
    }
    if let Some(reservation) = reservation {
        for effect in effects {
            if effect.created != reservation.created {
                out.push(finding(FindingCode::CommitTimeMismatch, effect));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;

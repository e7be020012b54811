//! Pure invariant checks over one command's documents: root, lifecycle(s) and its
//! whole audit chain.

use super::{Finding, FindingCode};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, EventType, RegistrationEvent, TransitionEvent};
use crate::document::fields::FieldMap;
use crate::document::lifecycle::{self, Lifecycle};
use crate::document::root::RootDocument;
use crate::lease::partners;

/// One stored document: its path relative to the documents root and its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDoc {
    /// Path relative to the documents root.
    pub path: String,
    /// The raw fields.
    pub fields: FieldMap,
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
}

fn finding(code: FindingCode, path: &str) -> Finding {
    Finding {
        code,
        path: path.to_owned(),
    }
}

/// Every broken invariant of one command, in a stable order.
pub fn check_command(hash: &Digest, docs: &CommandDocs) -> Vec<Finding> {
    let mut out = Vec::new();
    let root = docs.root.as_ref().and_then(|doc| {
        RootDocument::parse(hash.as_str(), &doc.fields)
            .map_err(|_| out.push(finding(FindingCode::MalformedDocument, &doc.path)))
            .ok()
    });
    let current_path = lifecycle::path(hash);
    let mut lifecycle_doc = None;
    for doc in &docs.lifecycles {
        if doc.path == current_path {
            lifecycle_doc = Some(doc);
        } else {
            out.push(finding(FindingCode::UnexpectedDocument, &doc.path));
        }
    }
    if docs.root.is_none() {
        if let Some(doc) = lifecycle_doc {
            out.push(finding(FindingCode::OrphanLifecycle, &doc.path));
        }
        for (_, doc) in &docs.audits {
            out.push(finding(FindingCode::OrphanAuditEvent, &doc.path));
        }
        return out;
    }
    let lifecycle = lifecycle_doc.and_then(|doc| {
        Lifecycle::parse(hash, &doc.fields)
            .map_err(|_| out.push(finding(FindingCode::MalformedDocument, &doc.path)))
            .ok()
    });

    // The registration event.
    let registration = docs.audits.iter().find(|(r, _)| *r == 1);
    match (registration, &root) {
        (None, _) => out.push(finding(
            FindingCode::MissingRegistrationEvent,
            &audit::path(hash, 1),
        )),
        (Some((_, doc)), root) => {
            match RegistrationEvent::parse(&audit::id(hash, 1), &doc.fields) {
                Err(_) => out.push(finding(FindingCode::MalformedDocument, &doc.path)),
                Ok(event) => {
                    if let Some(root) = root {
                        let same = event.environment == root.environment
                            && event.caller_scope_kind == root.caller_scope_kind
                            && event.command_type == root.command_type
                            && event.occurred_at == root.registered_at;
                        if !same {
                            out.push(finding(FindingCode::RegistrationMismatch, &doc.path));
                        }
                    }
                }
            }
        }
    }

    // The transition chain, revisions 2..=N. With a malformed lifecycle the current
    // revision is unknown: only the chain itself is checked.
    let lifecycle_unknown = lifecycle_doc.is_some() && lifecycle.is_none();
    let expected_last = match &lifecycle {
        Some(l) => l.command_revision,
        None if lifecycle_unknown => i64::MAX,
        None => 1,
    };
    let mut events: Vec<(i64, &StoredDoc, Option<TransitionEvent>)> = Vec::new();
    for (revision, doc) in docs.audits.iter().filter(|(r, _)| *r >= 2) {
        let parsed = TransitionEvent::parse(&audit::id(hash, *revision), &doc.fields);
        if parsed.is_err() {
            out.push(finding(FindingCode::MalformedDocument, &doc.path));
        }
        if *revision > expected_last {
            out.push(finding(FindingCode::ExtraAuditEvent, &doc.path));
        }
        events.push((*revision, doc, parsed.ok()));
    }
    let present: std::collections::BTreeSet<i64> = docs.audits.iter().map(|(r, _)| *r).collect();
    // Every revision up to the current one must have its event. One finding per
    // missing range, at its first revision, so the work is linear in the events.
    if !lifecycle_unknown && expected_last >= 2 {
        let mut expected_next = 2;
        for &revision in present.range(2..=expected_last) {
            if revision > expected_next {
                out.push(finding(
                    FindingCode::AuditGap,
                    &audit::path(hash, expected_next),
                ));
            }
            expected_next = revision + 1;
        }
        if expected_next <= expected_last.min(MAX_REVISION) {
            out.push(finding(
                FindingCode::AuditGap,
                &audit::path(hash, expected_next),
            ));
        }
    }

    if let (Some(lifecycle), Some(root)) = (&lifecycle, &root) {
        let partner = events
            .iter()
            .find(|(r, _, _)| *r == lifecycle.command_revision);
        match partner {
            None => {
                if lifecycle.command_revision >= 2 {
                    out.push(finding(
                        FindingCode::LifecycleWithoutCurrentEvent,
                        &current_path,
                    ));
                }
            }
            Some((_, doc, Some(event))) => {
                if !partners(root, lifecycle, event) {
                    out.push(finding(FindingCode::LifecycleEventMismatch, &doc.path));
                }
            }
            Some((_, _, None)) => {}
        }
    }

    // Fences and terminal state along the chain.
    let mut previous: Option<&TransitionEvent> = None;
    let mut terminal_seen = false;
    for (_, doc, event) in &events {
        let Some(event) = event else {
            previous = None;
            continue;
        };
        if terminal_seen {
            out.push(finding(FindingCode::ChangedAfterTerminal, &doc.path));
        }
        let fence_ok = match (previous, event.event_type) {
            (None, EventType::LeaseAcquired) => event.fence_epoch == 1,
            (None, _) => true, // a gap or malformed predecessor was reported already
            (Some(_), EventType::LeaseAcquired) => false,
            (Some(prev), EventType::LeaseTakenOver) => event.fence_epoch == prev.fence_epoch + 1,
            (Some(prev), EventType::Succeeded | EventType::FailedFinal) => {
                event.fence_epoch == prev.fence_epoch
            }
        };
        if !fence_ok {
            out.push(finding(FindingCode::FenceNotIncremented, &doc.path));
        }
        if previous.is_some_and(|p| event.occurred_at < p.occurred_at) {
            out.push(finding(FindingCode::TimestampRegression, &doc.path));
        }
        if matches!(
            event.event_type,
            EventType::Succeeded | EventType::FailedFinal
        ) {
            terminal_seen = true;
        }
        previous = Some(event);
    }
    if let (Some(lifecycle), Some(root)) = (&lifecycle, &root)
        && lifecycle.created_at < root.registered_at
    {
        out.push(finding(FindingCode::TimestampRegression, &current_path));
    }
    out
}

#[cfg(test)]
mod tests;

//! Pure invariant checks over one command's documents: root, lifecycle(s) and its
//! whole audit chain.

use super::report::{Finding, FindingCode};
use super::stored::{CommandDocs, StoredDoc};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, EventType, RegistrationEvent, TransitionEvent};
use crate::document::lifecycle::{self, LEASE_SECONDS, Lifecycle};
use crate::document::root::RootDocument;
use crate::lease::partners;

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
    let releases = super::releases::parsed(hash, docs, &mut out);
    if docs.root.is_none() {
        for (_, doc) in &docs.releases {
            out.push(finding(FindingCode::ReleaseMismatch, &doc.path));
        }
        if let Some(doc) = lifecycle_doc {
            out.push(finding(FindingCode::OrphanLifecycle, &doc.path));
        }
        for (_, doc) in docs.audits.iter().chain(&docs.send_events) {
            out.push(finding(FindingCode::OrphanAuditEvent, &doc.path));
        }
        for doc in &docs.sends {
            out.push(finding(FindingCode::OrphanSendRecord, &doc.path));
        }
        if let Some(doc) = &docs.result {
            out.push(finding(FindingCode::OrphanResult, &doc.path));
        }
        out.extend(super::late::check_late_charges(hash, docs));
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

    let current = lifecycle_doc.zip(lifecycle.as_ref());
    out.extend(super::write_times::check_command(docs, current));
    out.extend(check_send_layer(hash, docs, current));
    out.extend(super::late::check_late_charges(hash, docs));
    if let Some(doc) = &docs.result {
        out.extend(super::results::check_result(
            hash,
            doc,
            current,
            lifecycle_unknown,
        ));
    }
    if root.is_some() {
        let parsed: Vec<&TransitionEvent> =
            events.iter().filter_map(|(_, _, e)| e.as_ref()).collect();
        out.extend(super::releases::check_releases(
            hash, docs, &releases, &parsed, current,
        ));
    }
    if let Some(root) = &root {
        check_chain(root, &events, &releases, &mut out);
        if let (Some(lifecycle), Some(doc)) = (&lifecycle, lifecycle_doc) {
            check_history(root, lifecycle, &events, &doc.path, &mut out);
        }
    }
    out
}

/// The send layer's documents (`docs/providers.md`) against each other and the
/// lifecycle: [`check_sends`](super::sends::check_sends).
fn check_send_layer(
    hash: &Digest,
    docs: &CommandDocs,
    lifecycle: Option<(&StoredDoc, &Lifecycle)>,
) -> Vec<Finding> {
    if docs.sends.is_empty() && docs.send_events.is_empty() {
        return Vec::new();
    }
    let named = |id: &str| {
        docs.sends
            .iter()
            .find(|doc| doc.path.rsplit('/').next() == Some(id))
    };
    let sends = super::sends::SendDocs {
        plan: named("plan"),
        current: named("current"),
        events: docs.send_events.iter().map(|(r, doc)| (*r, doc)).collect(),
        lifecycle,
        result: docs.result.as_ref(),
    };
    super::sends::check_sends(hash, &sends)
}

/// The lease rules along the transition chain, each event against its root and
/// against the last well-formed event before it: adjacent events by the exact rules,
/// an event after a gap (a missing or malformed revision, reported already) by what
/// the gap allows.
fn check_chain(
    root: &RootDocument,
    events: &[(i64, &StoredDoc, Option<TransitionEvent>)],
    releases: &super::releases::Releases<'_>,
    out: &mut Vec<Finding>,
) {
    let mut previous: Option<&TransitionEvent> = None;
    let mut terminal_seen = false;
    for (revision, doc, event) in events {
        let Some(event) = event else { continue };
        let mut found = |code| out.push(finding(code, &doc.path));
        let agrees = event.environment == root.environment
            && event.caller_scope_kind == root.caller_scope_kind
            && event.command_type == root.command_type
            && event.command_key_hash == root.command_key_hash;
        if !agrees {
            found(FindingCode::EventRootMismatch);
        }
        let terminal = matches!(
            event.event_type,
            EventType::Succeeded | EventType::FailedFinal
        );
        if terminal_seen {
            found(FindingCode::ChangedAfterTerminal);
        }
        if terminal {
            // The lease it ended expires after it: a terminal event always carries the
            // ended lease's expiry, so this holds whatever came before.
            if event.occurred_at >= event.lease_expires_at {
                found(FindingCode::TerminalLeaseMismatch);
            }
        } else if event.occurred_at.plus_seconds(LEASE_SECONDS) != Some(event.lease_expires_at) {
            found(FindingCode::LeaseDurationMismatch);
        }
        match previous {
            None => {
                if event.occurred_at < root.registered_at {
                    found(FindingCode::TimestampRegression);
                }
            }
            Some(prev) => {
                let adjacent = prev.command_revision + 1 == *revision;
                let fence_ok = match (event.event_type, adjacent) {
                    (EventType::LeaseAcquired, _) => false,
                    (EventType::LeaseTakenOver, true) => {
                        Some(event.fence_epoch) == prev.fence_epoch.next()
                    }
                    (_, true) => event.fence_epoch == prev.fence_epoch,
                    // Only takeovers can be missing between two events: each raised it.
                    (_, false) => event.fence_epoch > prev.fence_epoch,
                };
                if !fence_ok {
                    found(FindingCode::FenceNotIncremented);
                }
                if event.occurred_at < prev.occurred_at {
                    found(FindingCode::TimestampRegression);
                }
                // A takeover (or, across a gap, the missing takeovers before it) waits
                // for the previous lease to expire, 60 s after it began (a stored
                // expiry that breaks that rule was reported at its own event).
                let after_expiry = event.event_type == EventType::LeaseTakenOver || !adjacent;
                let expired_at = prev
                    .occurred_at
                    .plus_seconds(LEASE_SECONDS)
                    .unwrap_or(prev.lease_expires_at);
                // Unless the previous holder released its lease by then.
                let released =
                    super::releases::released_by(releases, prev.fence_epoch, event.occurred_at);
                if after_expiry && !terminal_seen && event.occurred_at < expired_at && !released {
                    found(FindingCode::OverlappingLease);
                }
                if adjacent && terminal && event.lease_expires_at != prev.lease_expires_at {
                    found(FindingCode::TerminalLeaseMismatch);
                }
            }
        }
        terminal_seen |= terminal;
        previous = Some(event);
    }
}

/// The lifecycle against the events of the revisions it summarises: its creation is
/// the first acquisition, and its current lease (fence, acquisition, expiry) is the
/// one the acquisition or takeover at revision `fenceEpoch + 1` recorded. The lease
/// owner is not in the events, so only the lifecycle records it.
fn check_history(
    root: &RootDocument,
    lifecycle: &Lifecycle,
    events: &[(i64, &StoredDoc, Option<TransitionEvent>)],
    path: &str,
    out: &mut Vec<Finding>,
) {
    // The current event is compared with the lifecycle by `partners` already.
    let at = |revision: i64| {
        events
            .iter()
            .find(|(r, _, _)| *r == revision && revision != lifecycle.command_revision)
            .and_then(|(_, _, e)| e.as_ref())
    };
    let created = at(2).is_none_or(|first| first.occurred_at == lifecycle.created_at);
    // The acquisition of fence n is revision n + 1.
    let leased = at(lifecycle.fence_epoch.get() + 1).is_none_or(|acquired| {
        acquired.fence_epoch == lifecycle.fence_epoch
            && acquired.occurred_at == lifecycle.lease_acquired_at
            && Some(acquired.lease_expires_at) == lifecycle.granted_until()
    });
    if !created || !leased {
        out.push(finding(FindingCode::LifecycleHistoryMismatch, path));
    }
    if lifecycle.created_at < root.registered_at {
        out.push(finding(FindingCode::TimestampRegression, path));
    }
}

#[cfg(test)]
mod tests;

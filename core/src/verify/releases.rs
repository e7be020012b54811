//! The lease releases of one command (`leaseReleases/{fence:010}`,
//! `document::release`) against its lifecycle and its audit chains:
//!
//! - each record parses strictly, is never rewritten, has a registration, and its
//!   fence has its acquisition or takeover event with `acquiredAt <= releasedAt <
//!   acquiredAt + 60 s` (`release_mismatch`);
//! - a released (version 2) lifecycle has its fence's record, released at its
//!   `leaseExpiresAt`, written by the lifecycle's last commit; a lifecycle still
//!   holding (version 1, leased) a fence that has a record is a mismatch
//!   (`release_mismatch`);
//! - no terminal event by a released fence, and no send event by it after its
//!   release, on the journal's time or on the commit times (`write_after_release`).
//!
//! A takeover before the previous lease's 60 s is allowed exactly when that lease was
//! released no later than the takeover ([`released_by`], read by the chain check).

use super::report::{Finding, FindingCode};
use super::stored::{CommandDocs, StoredDoc};
use crate::digest::Digest;
use crate::document::audit::{EventType, TransitionEvent};
use crate::document::lifecycle::{LEASE_SECONDS, Lifecycle};
use crate::document::release::{self, LeaseRelease};
use crate::fence::FenceEpoch;
use crate::sends::event::{self, SendEvent};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// The well-formed release records of a command, by fence.
pub(crate) type Releases<'a> = BTreeMap<FenceEpoch, (LeaseRelease, &'a StoredDoc)>;

/// The release records of `docs` that parse, by fence; each malformed one is a
/// finding in `out`.
pub(crate) fn parsed<'a>(
    hash: &Digest,
    docs: &'a CommandDocs,
    out: &mut Vec<Finding>,
) -> Releases<'a> {
    let mut releases = BTreeMap::new();
    for (fence, doc) in &docs.releases {
        match LeaseRelease::parse(hash, &release::id(*fence), &doc.fields) {
            Ok(record) => {
                releases.insert(*fence, (record, doc));
            }
            Err(_) => out.push(mismatch(doc)),
        }
    }
    releases
}

/// Whether the lease of `fence` was released no later than `at`.
pub(crate) fn released_by(releases: &Releases<'_>, fence: FenceEpoch, at: Timestamp) -> bool {
    releases
        .get(&fence)
        .is_some_and(|(record, _)| record.released_at <= at)
}

fn mismatch(doc: &StoredDoc) -> Finding {
    Finding {
        code: FindingCode::ReleaseMismatch,
        path: doc.path.clone(),
    }
}

/// The findings of the releases of one registered command: `events` is its chain of
/// transition events (the parsed ones), `lifecycle` its current lifecycle document
/// and fields, if it parsed.
pub(crate) fn check_releases(
    hash: &Digest,
    docs: &CommandDocs,
    releases: &Releases<'_>,
    events: &[&TransitionEvent],
    lifecycle: Option<(&StoredDoc, &Lifecycle)>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (fence, (record, doc)) in releases {
        // The acquisition or takeover of the fence (its revision is fence + 1).
        let acquired = events.iter().find(|e| {
            e.fence_epoch == *fence
                && matches!(
                    e.event_type,
                    EventType::LeaseAcquired | EventType::LeaseTakenOver
                )
        });
        let within = acquired.is_some_and(|e| {
            e.occurred_at <= record.released_at
                && e.occurred_at
                    .plus_seconds(LEASE_SECONDS)
                    .is_some_and(|end| record.released_at < end)
        });
        if !within || doc.rewritten() || docs.root.is_none() {
            out.push(mismatch(doc));
        }
        // Nothing ends the command under a fence given up.
        for e in events {
            let terminal = matches!(e.event_type, EventType::Succeeded | EventType::FailedFinal);
            if terminal && e.fence_epoch == *fence {
                out.push(after_release(&docs.audits, e.command_revision));
            }
        }
    }
    if let Some((doc, lifecycle)) = lifecycle {
        let record = releases.get(&lifecycle.fence_epoch);
        let fits = match (lifecycle.released, record) {
            (true, Some((record, written))) => {
                lifecycle.released_at() == Some(record.released_at)
                    && written.created == doc.updated
            }
            (true, None) => false,
            // Still held (or ended) by a fence that gave it up.
            (false, Some(_)) => false,
            (false, None) => true,
        };
        if !fits {
            out.push(mismatch(doc));
        }
    }
    // No send mutation by a fence after it gave its lease up.
    for (revision, doc) in &docs.send_events {
        let Ok(sent) = SendEvent::parse(&event::id(hash, *revision), &doc.fields) else {
            continue;
        };
        if let Some((record, written)) = releases.get(&sent.fence_epoch)
            && (sent.occurred_at > record.released_at || doc.created > written.created)
        {
            out.push(Finding {
                code: FindingCode::WriteAfterRelease,
                path: doc.path.clone(),
            });
        }
    }
    out
}

fn after_release(audits: &[(i64, StoredDoc)], revision: i64) -> Finding {
    let path = audits
        .iter()
        .find(|(r, _)| *r == revision)
        .map(|(_, doc)| doc.path.clone())
        .unwrap_or_default();
    Finding {
        code: FindingCode::WriteAfterRelease,
        path,
    }
}

//! `evidenceCheckpoints/{digest of the feed's name}`: how far a job that reads a
//! provider's list of evidence by creation time (Stripe's Events API, `GET
//! /v1/events`) has taken every item, so that its next run lists from there instead
//! of a fixed window back.
//!
//! The document holds one number, `listFrom`: the next run lists the items created at
//! or after that Unix second. The job names its feed (the provider, the account and
//! the mode it reads, say); the journal stores the feed's framed digest as the
//! document id and never the name, so no account id is stored. It is server-only like
//! every journal document (`firestore.rules`), parsed strictly (the exact field set
//! and types, version 1, `listFrom` no later than `recordedAt`; anything else is
//! `journal_corrupt` and nothing is written) and checked by `verify`.
//!
//! **Advancing.** [`EvidenceCheckpointAdvance`] moves `listFrom` forward only: a value at or
//! before the stored one writes nothing ([`Advance::Kept`]). It is a `Create` where
//! there is none and a `Replace` under the update time read otherwise, so a job that
//! advanced meanwhile makes the commit's precondition fail; the runner reads again
//! and decides again, and the later of the two points stays: a concurrent job's
//! advance is never lost, and a slow one never moves the checkpoint back.
//!
//! **What to advance to.** [`ListingProgress`] tallies one run: every item listed with
//! its creation second and whether it was taken (recorded, or acknowledged as final),
//! and whether the listing reached its end. It names the point the run proves: the
//! creation second of the oldest item not taken (so the next run lists it again),
//! else of the newest item listed, minus the caller's overlap; nothing when the
//! listing stopped short or listed nothing. [`window`] gives where a run lists from:
//! the checkpoint, else a default window back, never further back than the provider
//! keeps its items (a checkpoint older than that is clamped and said so).

use crate::digest::{Digest, frame_digest};
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::time::Timestamp;
use crate::transaction::{Decision, OperationName, Snapshot, Transition, Write};
use serde::Serialize;

/// The collection of the evidence checkpoints, one document per feed.
pub const COLLECTION: &str = "evidenceCheckpoints";
const KIND: &str = "malformed evidence checkpoint";
const DOMAIN: &str = "command-journal.evidence-checkpoint";

/// The exact field set of a checkpoint.
pub(crate) const FIELDS: [&str; 3] = ["checkpointSchemaVersion", "listFrom", "recordedAt"];

/// The latest `listFrom` stored: 9999-12-31T23:59:59Z, Firestore's last second.
const MAX_LIST_FROM: i64 = 253_402_300_799;
/// The longest feed name.
pub const MAX_FEED_BYTES: usize = 256;

/// A feed's name, validated: 1 to 256 bytes of `A-Z a-z 0-9 _ - . :` (the provider,
/// account and mode a job reads, say). Only its digest is stored; `Debug` never shows
/// it.
#[derive(Clone, PartialEq, Eq)]
pub struct Feed {
    id: Digest,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed").finish_non_exhaustive()
    }
}

impl Feed {
    /// Validates `name`; `invalid_input` naming `feed` otherwise (never echoing it).
    pub fn new(name: &str) -> Result<Self, JournalError> {
        let valid = (1..=MAX_FEED_BYTES).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
        if !valid {
            return Err(JournalError::invalid("feed"));
        }
        Ok(Self {
            id: frame_digest(DOMAIN, 1, &[name.as_bytes()]),
        })
    }

    /// The checkpoint's document id: the name's framed digest.
    pub fn id(&self) -> &Digest {
        &self.id
    }

    /// The checkpoint's path, relative to the documents root.
    pub(crate) fn path(&self) -> String {
        format!("{COLLECTION}/{}", self.id)
    }
}

/// A parsed evidence checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvidenceCheckpoint {
    /// The next run lists the items created at or after this Unix second.
    pub list_from: i64,
    /// When it was last advanced (the advancing call's captured time).
    pub recorded_at: Timestamp,
}

impl EvidenceCheckpoint {
    /// Parses a checkpoint's fields strictly: the exact field set and types, version 1,
    /// `listFrom` from 0 to Firestore's last second and no later than `recordedAt`.
    pub(crate) fn parse(map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("checkpointSchemaVersion", 1..=1)?;
        let list_from = f.int_in("listFrom", 0..=MAX_LIST_FROM)?;
        let recorded_at = f.timestamp("recordedAt")?;
        if list_from > recorded_at.seconds() {
            return Err(f.corrupt("listFrom"));
        }
        Ok(Self {
            list_from,
            recorded_at,
        })
    }

    /// The stored fields.
    pub(crate) fn encode(&self) -> FieldMap {
        fields::map([
            ("checkpointSchemaVersion", fields::int(1)),
            ("listFrom", fields::int(self.list_from)),
            ("recordedAt", fields::timestamp(self.recorded_at)),
        ])
    }
}

/// The checkpoint of `feed` in `snapshot`, strictly parsed; `None` when absent.
fn stored(feed: &Feed, snapshot: &Snapshot) -> Result<Option<EvidenceCheckpoint>, JournalError> {
    snapshot
        .get(&feed.path())
        .map(EvidenceCheckpoint::parse)
        .transpose()
}

/// A prepared read of one feed's checkpoint: `None` when there is none.
#[derive(Debug, Clone)]
pub struct EvidenceCheckpointRead {
    feed: Feed,
}

impl EvidenceCheckpointRead {
    /// Prepares the read of `feed`'s checkpoint.
    pub fn new(feed: Feed) -> Self {
        Self { feed }
    }
}

impl Transition for EvidenceCheckpointRead {
    type Output = Option<EvidenceCheckpoint>;

    fn name(&self) -> OperationName {
        OperationName::RecordEvidence
    }

    fn paths(&self) -> Vec<String> {
        vec![self.feed.path()]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Option<EvidenceCheckpoint>> {
        match stored(&self.feed, snapshot) {
            Ok(checkpoint) => Decision::Observe(checkpoint),
            Err(error) => Decision::Reject(error),
        }
    }
}

/// What advancing a checkpoint did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Advance {
    /// The checkpoint now lists from the point given.
    Advanced,
    /// It lists from that point, or a later one, already: nothing written.
    Kept,
}

impl Advance {
    /// The fixed code of a log line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Advanced => "advanced",
            Self::Kept => "kept",
        }
    }
}

/// Advances one feed's checkpoint to `list_from`, forward only, at the captured time
/// `now`. A point after `now` is `invalid_input` (`listFrom`): no run can have taken
/// what was not yet created.
#[derive(Debug, Clone)]
pub struct EvidenceCheckpointAdvance {
    feed: Feed,
    list_from: i64,
    now: Timestamp,
}

impl EvidenceCheckpointAdvance {
    /// Prepares the advance of `feed`'s checkpoint to `list_from` at `now`.
    pub fn new(feed: Feed, list_from: i64, now: Timestamp) -> Self {
        Self {
            feed,
            list_from,
            now,
        }
    }
}

impl Transition for EvidenceCheckpointAdvance {
    type Output = Advance;

    fn name(&self) -> OperationName {
        OperationName::RecordEvidence
    }

    fn paths(&self) -> Vec<String> {
        vec![self.feed.path()]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Advance> {
        if !(0..=self.now.seconds().min(MAX_LIST_FROM)).contains(&self.list_from) {
            return Decision::Reject(JournalError::invalid("listFrom"));
        }
        let current = match stored(&self.feed, snapshot) {
            Ok(current) => current,
            Err(error) => return Decision::Reject(error),
        };
        if current.is_some_and(|c| c.list_from >= self.list_from) {
            return Decision::Observe(Advance::Kept);
        }
        let path = self.feed.path();
        let fields = EvidenceCheckpoint {
            list_from: self.list_from,
            recorded_at: self.now,
        }
        .encode();
        let write = match current {
            Some(_) => Write::Replace { path, fields },
            None => Write::Create { path, fields },
        };
        Decision::Mutate(vec![write], Advance::Advanced)
    }
}

/// Where one run lists from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// List the items created at or after this Unix second.
    pub from: i64,
    /// Whether the checkpoint lay further back than the provider keeps its items and
    /// was clamped to the oldest second it still lists.
    pub clamped: bool,
}

/// Where a run at Unix second `now` lists from: `checkpoint`'s `listFrom`, else
/// `default_seconds` back; never further back than `retention_seconds` (the provider
/// keeps its items that long), a checkpoint older than that clamped.
pub fn window(
    checkpoint: Option<&EvidenceCheckpoint>,
    now: i64,
    default_seconds: i64,
    retention_seconds: i64,
) -> Window {
    let oldest = now.saturating_sub(retention_seconds);
    let from = checkpoint.map_or(now.saturating_sub(default_seconds), |c| c.list_from);
    Window {
        from: from.max(oldest),
        clamped: from < oldest,
    }
}

/// One run's tally of the items it listed and took, by creation second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListingProgress {
    oldest_open: Option<i64>,
    newest: Option<i64>,
    complete: bool,
}

impl ListingProgress {
    /// An item created at Unix second `created` was listed; `taken` when it was
    /// recorded or acknowledged as final (nothing left to do for it).
    pub fn listed(&mut self, created: i64, taken: bool) {
        self.newest = Some(self.newest.map_or(created, |n| n.max(created)));
        if !taken {
            self.oldest_open = Some(self.oldest_open.map_or(created, |o| o.min(created)));
        }
    }

    /// The listing reached its end: every item of the window was listed.
    pub fn finished(&mut self) {
        self.complete = true;
    }

    /// Whether an item listed was not taken.
    pub fn held_back(&self) -> bool {
        self.oldest_open.is_some()
    }

    /// The point this run proves, `overlap` seconds back: the creation second of the
    /// oldest item not taken, else of the newest listed, minus `overlap` (never below
    /// 0); `None` when the listing stopped short or listed nothing.
    pub fn resume_from(&self, overlap: i64) -> Option<i64> {
        if !self.complete {
            return None;
        }
        self.oldest_open
            .or(self.newest)
            .map(|second| second.saturating_sub(overlap).max(0))
    }
}

#[cfg(test)]
mod tests;

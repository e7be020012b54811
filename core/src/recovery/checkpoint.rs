//! `recoveryCheckpoints/{index}-of-{count}`: where the last recovery run of one key
//! range stopped, so that the next scheduled run of that range goes on from there
//! instead of starting again at the front of the key-hash order.
//!
//! The document holds the range it belongs to (its id's index and count, checked
//! against the id), the key hash of the last command a run handled (`after`, inside
//! the range) and when it was recorded: a key hash, never a raw id, payload or holder.
//! It is server-only like every journal document (`firestore.rules`), parsed strictly
//! (anything else is `journal_corrupt` and the run writes nothing) and checked by
//! `verify`.
//!
//! **What it can and cannot do.** A run handles its range's commands circularly from
//! the checkpoint ([`super::schedule`]): those after it, then from the range's start
//! up to it. A checkpoint therefore only says where the circle starts: whatever it
//! holds (stale, pointing past every command, or written by a run that raced this
//! one), every command of the range is reached within a bounded number of runs. It
//! never makes a run skip a command.
//!
//! **Two runs of one range.** A run reads the checkpoint, works, then records where
//! it stopped with [`CheckpointRecord`]: a `Replace` under the update time it read,
//! or a `Create` where there was none. If another run recorded a position meanwhile,
//! the commit's precondition fails, the runner reads again, and the decision keeps
//! whichever of the two positions lies further along the circle from where this run
//! started: a slow run never moves the range back over what a faster one handled.

use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::key_range::KeyRange;
use crate::time::Timestamp;
use crate::transaction::{Decision, OperationName, Snapshot, Transition, Write};
use serde::Serialize;

/// The collection of the checkpoints, one document per key range.
pub const COLLECTION: &str = "recoveryCheckpoints";
const KIND: &str = "malformed recovery checkpoint";

/// The exact field set of a checkpoint.
pub(crate) const FIELDS: [&str; 5] = [
    "checkpointSchemaVersion",
    "keyRangeIndex",
    "keyRangeCount",
    "after",
    "recordedAt",
];

/// The checkpoint of `range`, relative to the documents root.
pub(crate) fn path(range: KeyRange) -> String {
    format!("{COLLECTION}/{}", range.id())
}

/// A parsed checkpoint whose relations hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The range it belongs to: its id's.
    pub range: KeyRange,
    /// The last command a run of the range handled: the next run starts after it.
    pub after: Digest,
    /// When that run recorded it (the run's captured time).
    pub recorded_at: Timestamp,
}

impl Checkpoint {
    /// Parses the document with id `id` strictly: the exact field set and types,
    /// version 1, an id naming a range (`{index}-of-{count}`) equal to the stored
    /// index and count, and `after` inside that range.
    pub(crate) fn parse(id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("checkpointSchemaVersion", 1..=1)?;
        let range = KeyRange::from_id(id).ok_or(f.corrupt("id"))?;
        let index = f.int("keyRangeIndex")?;
        let count = f.int("keyRangeCount")?;
        if index != i64::from(range.index()) || count != i64::from(range.count()) {
            return Err(f.corrupt("keyRange"));
        }
        let after = f.digest("after")?;
        if !range.contains(&after) {
            return Err(f.corrupt("after"));
        }
        Ok(Self {
            range,
            after,
            recorded_at: f.timestamp("recordedAt")?,
        })
    }

    /// The stored fields.
    pub(crate) fn encode(&self) -> FieldMap {
        fields::map([
            ("checkpointSchemaVersion", fields::int(1)),
            ("keyRangeIndex", fields::int(i64::from(self.range.index()))),
            ("keyRangeCount", fields::int(i64::from(self.range.count()))),
            ("after", fields::string(self.after.as_str())),
            ("recordedAt", fields::timestamp(self.recorded_at)),
        ])
    }
}

/// The checkpoint of `range` in `snapshot`, strictly parsed; `None` when absent.
fn stored(range: KeyRange, snapshot: &Snapshot) -> Result<Option<Checkpoint>, JournalError> {
    snapshot
        .get(&path(range))
        .map(|map| Checkpoint::parse(&range.id(), map))
        .transpose()
}

/// A prepared read of `range`'s checkpoint.
#[derive(Debug, Clone)]
pub struct CheckpointRead {
    range: KeyRange,
}

impl CheckpointRead {
    /// Prepares the read of `range`'s checkpoint.
    pub fn new(range: KeyRange) -> Self {
        Self { range }
    }
}

impl Transition for CheckpointRead {
    type Output = Option<Checkpoint>;

    fn name(&self) -> OperationName {
        OperationName::Recover
    }

    fn paths(&self) -> Vec<String> {
        vec![path(self.range)]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Option<Checkpoint>> {
        match stored(self.range, snapshot) {
            Ok(checkpoint) => Decision::Observe(checkpoint),
            Err(error) => Decision::Reject(error),
        }
    }
}

/// What recording a run's position did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recorded {
    /// The checkpoint now holds where this run stopped.
    Recorded,
    /// It held that position already: nothing written.
    Unchanged,
    /// Another run recorded a position further along since this one read it: kept,
    /// nothing written.
    Kept,
}

/// Records where a run of one range stopped: the last command it handled in its
/// circular order. Decided from the checkpoint as it is now, against the one the run
/// read when it started.
#[derive(Debug, Clone)]
pub struct CheckpointRecord {
    range: KeyRange,
    read: Option<Digest>,
    from: Option<Digest>,
    stopped: Digest,
    now: Timestamp,
}

impl CheckpointRecord {
    /// Prepares the record of a run of `range` that read the checkpoint `read`
    /// (`None`: there was none), started after `from` (the checkpoint's position, or
    /// the one the caller gave) and last handled `stopped`, at the captured time
    /// `now`.
    pub fn new(
        range: KeyRange,
        read: Option<Digest>,
        from: Option<Digest>,
        stopped: Digest,
        now: Timestamp,
    ) -> Self {
        Self {
            range,
            read,
            from,
            stopped,
            now,
        }
    }

    fn write(&self, exists: bool) -> Decision<Recorded> {
        let fields = Checkpoint {
            range: self.range,
            after: self.stopped.clone(),
            recorded_at: self.now,
        }
        .encode();
        let path = path(self.range);
        let write = if exists {
            Write::Replace { path, fields }
        } else {
            Write::Create { path, fields }
        };
        Decision::Mutate(vec![write], Recorded::Recorded)
    }
}

impl Transition for CheckpointRecord {
    type Output = Recorded;

    fn name(&self) -> OperationName {
        OperationName::Recover
    }

    fn paths(&self) -> Vec<String> {
        vec![path(self.range)]
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<Recorded> {
        if !self.range.contains(&self.stopped) {
            return Decision::Reject(JournalError::internal(
                "checkpoint: a position outside its range",
            ));
        }
        let current = match stored(self.range, snapshot) {
            Ok(current) => current.map(|c| c.after),
            Err(error) => return Decision::Reject(error),
        };
        match current {
            Some(ref at) if *at == self.stopped => Decision::Observe(Recorded::Unchanged),
            // As this run read it: its own position goes in.
            ref at if *at == self.read => self.write(at.is_some()),
            // Moved by another run since: the further of the two along this run's
            // circle stays.
            Some(ref other) => {
                if super::schedule::further(self.from.as_ref(), &self.stopped, other) {
                    self.write(true)
                } else {
                    Decision::Observe(Recorded::Kept)
                }
            }
            // Deleted since it was read: this run's position goes in.
            None => self.write(false),
        }
    }
}

#[cfg(test)]
mod tests;

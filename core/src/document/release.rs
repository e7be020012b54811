//! `checkoutRequests/{commandKeyHash}/leaseReleases/{fenceEpoch:010}`: the immutable
//! record that the holder of one fence gave its lease up, created once per fence in
//! the same commit as the released (version 2) lifecycle. It is the release's audit
//! record: the revision chain gains no event for it.

use super::fields::{self, FieldMap, Strict};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::time::Timestamp;

/// The collection id of a command's release records (and its collection group).
pub const COLLECTION: &str = "leaseReleases";
const KIND: &str = "malformed lease release record";

/// The exact field set of a release record.
pub const FIELDS: [&str; 4] = [
    "leaseReleaseSchemaVersion",
    "commandKeyHash",
    "fenceEpoch",
    "releasedAt",
];

/// The record's id: the fence, zero-padded to ten digits as revisions are.
pub fn id(fence: FenceEpoch) -> String {
    format!("{:010}", fence.get())
}

/// The fence a record id names; `None` unless exactly ten digits naming a fence of
/// 1 or more.
pub fn parse_id(id: &str) -> Option<FenceEpoch> {
    if id.len() != 10 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    FenceEpoch::new(id.parse().ok()?).ok()
}

/// The record's path relative to the documents root.
pub fn path(hash: &Digest, fence: FenceEpoch) -> String {
    format!(
        "{}/{hash}/{COLLECTION}/{}",
        super::root::COLLECTION,
        id(fence)
    )
}

/// A parsed release record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRelease {
    /// Equals the parent root's id.
    pub command_key_hash: Digest,
    /// The fence whose holder released; equals the document id's.
    pub fence_epoch: FenceEpoch,
    /// When it released: the released lifecycle's `updatedAt` and `leaseExpiresAt`.
    pub released_at: Timestamp,
}

impl LeaseRelease {
    /// Parses strictly; `hash` and `document_id` are what the record was read under.
    pub fn parse(hash: &Digest, document_id: &str, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("leaseReleaseSchemaVersion", 1..=1)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let fence_epoch = f.fence("fenceEpoch")?;
        if parse_id(document_id) != Some(fence_epoch) {
            return Err(f.corrupt("fenceEpoch"));
        }
        Ok(Self {
            command_key_hash,
            fence_epoch,
            released_at: f.timestamp("releasedAt")?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("leaseReleaseSchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("fenceEpoch", fields::int(self.fence_epoch.get())),
            ("releasedAt", fields::timestamp(self.released_at)),
        ])
    }
}

#[cfg(test)]
mod tests;

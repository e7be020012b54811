//! `checkoutRequests/{commandKeyHash}/providerSends/plan`: the plan a command bound on
//! its first send, created once with attempt 1 and never changed. Holds the plan's
//! fingerprint and its non-secret parts only: no account, API version, endpoint or
//! parameters.

use super::plan::{MAX_KEY_RETENTION_SECONDS, MIN_KEY_RETENTION_SECONDS, ProviderMode};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::identity::{OperationSlug, is_slug};
use crate::time::Timestamp;

/// The `journal_corrupt` reason of a malformed plan document.
pub(crate) const KIND: &str = "malformed provider plan document";
pub(crate) const FIELDS: [&str; 9] = [
    "sendSchemaVersion",
    "commandKeyHash",
    "planFingerprint",
    "provider",
    "mode",
    "operation",
    "keyRetentionSeconds",
    "boundAt",
    "boundFenceEpoch",
];

/// The plan document's path relative to the documents root.
pub(crate) fn path(hash: &Digest) -> String {
    format!(
        "{}/{hash}/providerSends/plan",
        crate::document::root::COLLECTION
    )
}

/// A parsed plan document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BoundPlan {
    /// Equals the parent root's id.
    pub command_key_hash: Digest,
    /// The command-bound plan fingerprint.
    pub plan_fingerprint: Digest,
    /// The provider slug.
    pub provider: String,
    /// `test` or `live`.
    pub mode: ProviderMode,
    /// The operation whose key attempt 1 uses.
    pub operation: OperationSlug,
    /// The provider's key retention, seconds.
    pub key_retention_seconds: i64,
    /// Attempt 1's `firstSentAt`.
    pub bound_at: Timestamp,
    /// The fence that bound the plan (attempt 1's `firstSentFenceEpoch`).
    pub bound_fence_epoch: i64,
}

impl BoundPlan {
    /// Parses strictly; `hash` is the command the document was read under.
    pub fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        f.int_in("sendSchemaVersion", 1..=1)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let provider = f.parsed("provider", |p| {
            if is_slug(p) {
                Ok(p.to_owned())
            } else {
                Err(())
            }
        })?;
        Ok(Self {
            command_key_hash,
            plan_fingerprint: f.digest("planFingerprint")?,
            provider,
            mode: f.parsed("mode", ProviderMode::parse)?,
            operation: f.parsed("operation", OperationSlug::parse)?,
            key_retention_seconds: f.int_in(
                "keyRetentionSeconds",
                MIN_KEY_RETENTION_SECONDS..=MAX_KEY_RETENTION_SECONDS,
            )?,
            bound_at: f.timestamp("boundAt")?,
            bound_fence_epoch: f.int_in("boundFenceEpoch", 1..=MAX_REVISION)?,
        })
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        fields::map([
            ("sendSchemaVersion", fields::int(1)),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            (
                "planFingerprint",
                fields::string(self.plan_fingerprint.as_str()),
            ),
            ("provider", fields::string(self.provider.as_str())),
            ("mode", fields::string(self.mode.as_str())),
            ("operation", fields::string(self.operation.as_str())),
            (
                "keyRetentionSeconds",
                fields::int(self.key_retention_seconds),
            ),
            ("boundAt", fields::timestamp(self.bound_at)),
            ("boundFenceEpoch", fields::int(self.bound_fence_epoch)),
        ])
    }
}

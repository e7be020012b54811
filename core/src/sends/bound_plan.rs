//! `checkoutRequests/{commandKeyHash}/providerSends/plan`: the plan a command bound on
//! its first send, created once with attempt 1 and never changed. Holds the plan's
//! fingerprint and its non-secret parts only: no account, API version, endpoint or
//! parameters.
//!
//! Two versions are read: `sendSchemaVersion` 1 (plan version 1, bound before the
//! lookup fields existed: a `key_store` lookup with the default settle window) and 2
//! (every plan bound now, with `lookup` and `lookupSettleSeconds`). Only 2 is written.

use super::plan::{
    DEFAULT_LOOKUP_SETTLE_SECONDS, MAX_KEY_RETENTION_SECONDS, MIN_KEY_RETENTION_SECONDS,
    PLAN_VERSION, ProviderLookup, ProviderMode, ProviderPlan, settle_fits,
};
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::identity::{CommandIdentity, OperationSlug, is_slug};
use crate::time::Timestamp;

/// The `journal_corrupt` reason of a malformed plan document.
pub const KIND: &str = "malformed provider plan document";
/// The fields of a version-2 plan document: version 1's and the lookup's two.
pub const FIELDS: [&str; 11] = [
    "sendSchemaVersion",
    "commandKeyHash",
    "planFingerprint",
    "provider",
    "mode",
    "operation",
    "keyRetentionSeconds",
    "boundAt",
    "boundFenceEpoch",
    "lookup",
    "lookupSettleSeconds",
];
/// The fields of a version-1 plan document: version 2's without the lookup's two.
pub const FIELDS_V1: &[&str] = FIELDS.split_at(FIELDS.len() - 2).0;

/// The plan document's path relative to the documents root.
pub fn path(hash: &Digest) -> String {
    format!(
        "{}/{hash}/providerSends/plan",
        crate::document::root::COLLECTION
    )
}

/// A parsed plan document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundPlan {
    /// The plan version: 1 or 2 (`sendSchemaVersion`).
    pub version: i64,
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
    /// What the provider's lookup answers from (`key_store` for version 1).
    pub lookup: ProviderLookup,
    /// The lookup's settle window, seconds (300 for version 1).
    pub lookup_settle_seconds: i64,
    /// Attempt 1's `firstSentAt`.
    pub bound_at: Timestamp,
    /// The fence that bound the plan (attempt 1's `firstSentFenceEpoch`).
    pub bound_fence_epoch: i64,
}

impl BoundPlan {
    /// Parses strictly; `hash` is the command the document was read under.
    pub fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let version = if map.len() == FIELDS.len() { 2 } else { 1 };
        let expected: &[&str] = if version == 2 { &FIELDS } else { FIELDS_V1 };
        let f = Strict::new(map, expected, KIND)?;
        f.int_in("sendSchemaVersion", version..=version)?;
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
        let key_retention_seconds = f.int_in(
            "keyRetentionSeconds",
            MIN_KEY_RETENTION_SECONDS..=MAX_KEY_RETENTION_SECONDS,
        )?;
        let (lookup, lookup_settle_seconds) = if version == 2 {
            let lookup = f.parsed("lookup", ProviderLookup::parse)?;
            let settle = f.int("lookupSettleSeconds")?;
            if !settle_fits(lookup, settle, key_retention_seconds) {
                return Err(f.corrupt("lookupSettleSeconds"));
            }
            (lookup, settle)
        } else {
            (ProviderLookup::KeyStore, DEFAULT_LOOKUP_SETTLE_SECONDS)
        };
        Ok(Self {
            version,
            command_key_hash,
            plan_fingerprint: f.digest("planFingerprint")?,
            provider,
            mode: f.parsed("mode", ProviderMode::parse)?,
            operation: f.parsed("operation", OperationSlug::parse)?,
            key_retention_seconds,
            lookup,
            lookup_settle_seconds,
            bound_at: f.timestamp("boundAt")?,
            bound_fence_epoch: f.int_in("boundFenceEpoch", 1..=MAX_REVISION)?,
        })
    }

    /// The plan bound now by `plan` for `identity`, at `bound_at` by `fence`.
    pub fn bind(
        plan: &ProviderPlan,
        identity: &CommandIdentity,
        bound_at: Timestamp,
        fence: i64,
    ) -> Self {
        Self {
            version: PLAN_VERSION,
            command_key_hash: identity.command_key_hash().clone(),
            plan_fingerprint: plan.fingerprint(identity),
            provider: plan.provider().to_owned(),
            mode: plan.mode(),
            operation: plan.operation().clone(),
            key_retention_seconds: plan.key_retention_seconds(),
            lookup: plan.lookup(),
            lookup_settle_seconds: plan.lookup_settle_seconds(),
            bound_at,
            bound_fence_epoch: fence,
        }
    }

    /// Whether `plan` is the plan bound here: its fingerprint under this document's
    /// plan version, and for a version-1 plan also the lookup that version implied.
    pub fn is(&self, plan: &ProviderPlan, identity: &CommandIdentity) -> bool {
        plan.fingerprint_v(identity, self.version) == self.plan_fingerprint
            && plan.lookup() == self.lookup
            && plan.lookup_settle_seconds() == self.lookup_settle_seconds
    }

    /// The exact stored field map.
    pub fn encode(&self) -> FieldMap {
        let mut map = fields::map([
            ("sendSchemaVersion", fields::int(self.version)),
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
        ]);
        if self.version >= 2 {
            map.insert("lookup".to_owned(), fields::string(self.lookup.as_str()));
            map.insert(
                "lookupSettleSeconds".to_owned(),
                fields::int(self.lookup_settle_seconds),
            );
        }
        map
    }
}

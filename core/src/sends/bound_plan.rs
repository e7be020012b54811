//! `checkoutRequests/{commandKeyHash}/providerSends/plan`: the plan a command bound on
//! its first send, created once with attempt 1 and never changed. Holds the plan's
//! fingerprint and its non-secret parts only: no account, API version, endpoint or
//! parameters (the account only inside its command-bound `accountFingerprint`).
//!
//! Four versions are read: `sendSchemaVersion` 1 (plan version 1, bound before the
//! lookup fields existed: a `key_store` lookup with the default settle window), 2
//! (with `lookup` and `lookupSettleSeconds`), 3 (every plan bound now without a
//! customer window: version 2's fields and `accountFingerprint`, which lets a recovery
//! job prove it asks the plan's account) and 4 (a plan that binds a customer window:
//! version 3's fields and `customerWindowSeconds`, its range checked again on read).
//! Only 3 and 4 are written; versions 2 and 3 share plan version 2's fingerprint
//! frame, version 4 has plan version 3's (with the window).

use super::account::ProviderAccount;
use super::attempt::SendAttempt;
use super::plan::{
    DEFAULT_LOOKUP_SETTLE_SECONDS, MAX_KEY_RETENTION_SECONDS, MIN_KEY_RETENTION_SECONDS,
    PLAN_VERSION, PLAN_VERSION_WINDOW, ProviderLookup, ProviderMode, ProviderPlan, cutoff_seconds,
    settle_fits,
};
use super::window::{act_by, window_fits};
use crate::digest::Digest;
use crate::document::fields::{self, FieldMap, Strict};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandIdentity, OperationSlug, is_slug};
use crate::time::Timestamp;

/// The `journal_corrupt` reason of a malformed plan document.
pub(crate) const KIND: &str = "malformed provider plan document";
/// The `sendSchemaVersion` of a plan document written now without a customer window.
pub(crate) const VERSION: i64 = 3;
/// The `sendSchemaVersion` of a plan document written now with a customer window.
pub(crate) const VERSION_WINDOW: i64 = 4;
/// The fields of a version-4 plan document: version 3's and `customerWindowSeconds`
/// (every field a plan document may hold).
pub const FIELDS: [&str; 13] = [
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
    "accountFingerprint",
    "customerWindowSeconds",
];
/// The fields of a version-3 plan document: version 2's and `accountFingerprint`.
pub(crate) const FIELDS_V3: &[&str] = FIELDS.split_at(FIELDS.len() - 1).0;
/// The fields of a version-2 plan document: version 1's and the lookup's two.
pub(crate) const FIELDS_V2: &[&str] = FIELDS.split_at(FIELDS.len() - 2).0;
/// The fields of a version-1 plan document: version 2's without the lookup's two.
pub(crate) const FIELDS_V1: &[&str] = FIELDS.split_at(FIELDS.len() - 4).0;

/// The plan document's path relative to the documents root.
pub(crate) fn path(hash: &Digest) -> String {
    format!(
        "{}/{hash}/providerSends/plan",
        crate::document::root::COLLECTION
    )
}

/// A parsed plan document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoundPlan {
    /// The document version: 1, 2, 3 or 4 (`sendSchemaVersion`).
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
    pub bound_fence_epoch: FenceEpoch,
    /// The command-bound fingerprint of the plan's provider, account and mode
    /// ([`ProviderAccount::fingerprint`]); `None` for plans bound before version 3.
    pub account_fingerprint: Option<Digest>,
    /// The customer's window, seconds after an attempt's first send (version 4);
    /// `None`: the window ends at the attempt's cutoff.
    pub customer_window_seconds: Option<i64>,
}

impl BoundPlan {
    /// Parses strictly; `hash` is the command the document was read under.
    pub fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let (version, expected): (i64, &[&str]) = match map.len() {
            n if n == FIELDS.len() => (4, &FIELDS),
            n if n == FIELDS_V3.len() => (3, FIELDS_V3),
            n if n == FIELDS_V2.len() => (2, FIELDS_V2),
            _ => (1, FIELDS_V1),
        };
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
        let (lookup, lookup_settle_seconds) = if version >= 2 {
            let lookup = f.parsed("lookup", ProviderLookup::parse)?;
            let settle = f.int("lookupSettleSeconds")?;
            if !settle_fits(lookup, settle, key_retention_seconds) {
                return Err(f.corrupt("lookupSettleSeconds"));
            }
            (lookup, settle)
        } else {
            (ProviderLookup::KeyStore, DEFAULT_LOOKUP_SETTLE_SECONDS)
        };
        let customer_window_seconds = if version == 4 {
            let window = f.int("customerWindowSeconds")?;
            if !window_fits(window, cutoff_seconds(key_retention_seconds)) {
                return Err(f.corrupt("customerWindowSeconds"));
            }
            Some(window)
        } else {
            None
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
            bound_fence_epoch: f.fence("boundFenceEpoch")?,
            account_fingerprint: if version >= 3 {
                Some(f.digest("accountFingerprint")?)
            } else {
                None
            },
            customer_window_seconds,
        })
    }

    /// The plan bound now by `plan` for `identity`, at `bound_at` by `fence`.
    pub fn bind(
        plan: &ProviderPlan,
        identity: &CommandIdentity,
        bound_at: Timestamp,
        fence: FenceEpoch,
    ) -> Self {
        let hash = identity.command_key_hash();
        let window = plan.customer_window_seconds();
        Self {
            version: if window.is_some() {
                VERSION_WINDOW
            } else {
                VERSION
            },
            command_key_hash: hash.clone(),
            plan_fingerprint: plan.fingerprint(identity),
            provider: plan.provider().to_owned(),
            mode: plan.mode(),
            operation: plan.operation().clone(),
            key_retention_seconds: plan.key_retention_seconds(),
            lookup: plan.lookup(),
            lookup_settle_seconds: plan.lookup_settle_seconds(),
            bound_at,
            bound_fence_epoch: fence,
            account_fingerprint: Some(plan.provider_account().fingerprint(hash)),
            customer_window_seconds: window,
        }
    }

    /// The plan version whose fingerprint frame this document's version stores.
    fn plan_version(&self) -> i64 {
        match self.version {
            1 => 1,
            4 => PLAN_VERSION_WINDOW,
            _ => PLAN_VERSION,
        }
    }

    /// Whether `plan` is the plan bound here: its fingerprint under this document's
    /// plan version, for a version-1 plan also the lookup that version implied, for a
    /// version-3 or 4 plan its account fingerprint, and the same customer window (or
    /// none on both).
    pub fn is(&self, plan: &ProviderPlan, identity: &CommandIdentity) -> bool {
        plan.fingerprint_v(identity, self.plan_version()) == self.plan_fingerprint
            && plan.lookup() == self.lookup
            && plan.lookup_settle_seconds() == self.lookup_settle_seconds
            && plan.customer_window_seconds() == self.customer_window_seconds
            && self.is_account(&plan.provider_account()) != Some(false)
    }

    /// The instant the customer of `attempt` must have acted by under this plan's
    /// window ([`act_by`](super::window::act_by) of the stored attempt).
    pub(crate) fn act_by(&self, attempt: &SendAttempt) -> Timestamp {
        act_by(
            attempt.first_sent_at,
            attempt.send_cutoff_at,
            self.customer_window_seconds,
        )
    }

    /// Whether `account` is the account the plan sends to: `None` for a plan bound
    /// before version 3, which keeps no account fingerprint (nothing is proven).
    pub fn is_account(&self, account: &ProviderAccount) -> Option<bool> {
        self.account_fingerprint
            .as_ref()
            .map(|stored| *stored == account.fingerprint(&self.command_key_hash))
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
            ("boundFenceEpoch", fields::int(self.bound_fence_epoch.get())),
        ]);
        if self.version >= 2 {
            map.insert("lookup".to_owned(), fields::string(self.lookup.as_str()));
            map.insert(
                "lookupSettleSeconds".to_owned(),
                fields::int(self.lookup_settle_seconds),
            );
        }
        if let Some(account) = &self.account_fingerprint {
            map.insert(
                "accountFingerprint".to_owned(),
                fields::string(account.as_str()),
            );
        }
        if let Some(window) = self.customer_window_seconds {
            map.insert("customerWindowSeconds".to_owned(), fields::int(window));
        }
        map
    }
}

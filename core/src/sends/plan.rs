//! The provider plan: what one command sends to its payment provider, validated like
//! every other input and only ever stored as its command-bound fingerprint.
//!
//! `docs/identity.md` ("Provider plan and attempt keys") gives the rules, the frame of
//! the plan fingerprint and the attempt-key derivation; `testdata/send_vectors.json`
//! holds golden vectors from an independent implementation.

pub use super::account::ProviderMode;
use super::account::{ProviderAccount, checked_account};
use super::attempt_number::AttemptNumber;
use super::window::window_fits;
use crate::digest::{Digest, frame_digest};
use crate::document::lifecycle::LEASE_SECONDS;
use crate::error::JournalError;
use crate::identity::{CommandIdentity, OperationSlug, canonical_object, is_slug};
use crate::time::Timestamp;
use serde_json::Value;
use std::fmt;

/// Smallest accepted provider key retention, in seconds (one hour).
pub(crate) const MIN_KEY_RETENTION_SECONDS: i64 = 3_600;
/// Largest accepted provider key retention, in seconds (30 days).
pub(crate) const MAX_KEY_RETENTION_SECONDS: i64 = 2_592_000;
/// `lookupSettleSeconds` when a plan does not set it: five minutes.
pub const DEFAULT_LOOKUP_SETTLE_SECONDS: i64 = 300;
/// Largest accepted `lookupSettleSeconds` (one day).
pub(crate) const MAX_LOOKUP_SETTLE_SECONDS: i64 = 86_400;
/// The plan version new plans without a customer window are fingerprinted under:
/// version 2 adds the lookup's durability and settle window. Version 1 plans stay
/// readable.
pub(crate) const PLAN_VERSION: i64 = 2;
/// The plan version of a plan that binds a customer window: version 2's frame and the
/// window.
pub(crate) const PLAN_VERSION_WINDOW: i64 = 3;
/// Longest endpoint text (`METHOD /path`), in bytes.
const MAX_ENDPOINT_BYTES: usize = 512;
/// Longest API version text, in characters.
const MAX_API_VERSION_CHARS: usize = 64;

/// The HTTP methods a provider endpoint may name.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

pub use crate::sends::lookup::ProviderLookup;

/// Whether `settle_seconds` is a valid settle window for `lookup` with key retention
/// `retention`: 0 to [`MAX_LOOKUP_SETTLE_SECONDS`], and for a key-store lookup short
/// enough that every attempt has a window in which its absence is provable (a lease
/// plus the settle window fit in the quarter of the retention after the cutoff).
pub(crate) fn settle_fits(lookup: ProviderLookup, settle_seconds: i64, retention: i64) -> bool {
    (0..=MAX_LOOKUP_SETTLE_SECONDS).contains(&settle_seconds)
        && (lookup != ProviderLookup::KeyStore
            || LEASE_SECONDS + settle_seconds <= retention - cutoff_seconds(retention))
}

/// The borrowed, unvalidated parts of a provider plan, as a caller holds them.
#[derive(Clone, Copy)]
pub struct ProviderPlanRequest<'a> {
    /// The provider, a slug: `^[a-z][a-z0-9_]{0,62}$` (e.g. `stripe`).
    pub provider: &'a str,
    /// The provider account, opaque: 1–255 characters, no control characters.
    pub account: &'a str,
    /// `test` | `live`.
    pub mode: &'a str,
    /// The provider API version: 1–64 printable ASCII characters without spaces.
    pub api_version: &'a str,
    /// The operation slug whose provider idempotency key attempt 1 uses.
    pub operation: &'a str,
    /// `METHOD /path`: one of GET, POST, PUT, PATCH, DELETE, one space, an absolute
    /// path of non-empty RFC 3986 segments (no `.`/`..`, no query or fragment).
    pub endpoint: &'a str,
    /// A JSON object under the payload rules; hashed in RFC 8785 canonical form.
    pub parameters: &'a Value,
    /// The provider's documented key retention, 3,600 to 2,592,000 seconds.
    pub key_retention_seconds: i64,
}

impl fmt::Debug for ProviderPlanRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProviderPlanRequest(<redacted>)")
    }
}

/// A validated provider plan. Holds the raw account and canonical parameters in
/// memory only: it prints as `<redacted>` and is stored only as
/// [`fingerprint`](Self::fingerprint).
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderPlan {
    provider: String,
    account: String,
    mode: ProviderMode,
    api_version: String,
    operation: OperationSlug,
    endpoint: String,
    parameters: String,
    key_retention_seconds: i64,
    lookup: ProviderLookup,
    lookup_settle_seconds: i64,
    customer_window_seconds: Option<i64>,
}

impl fmt::Debug for ProviderPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProviderPlan(<redacted>)")
    }
}

fn api_version(text: &str) -> Result<String, JournalError> {
    let ok = (1..=MAX_API_VERSION_CHARS).contains(&text.len())
        && text.bytes().all(|b| (0x21..=0x7e).contains(&b));
    ok.then(|| text.to_owned())
        .ok_or(JournalError::invalid("apiVersion"))
}

/// One path segment character of RFC 3986 (`pchar` without `%`, which is checked
/// with the two hex digits after it).
fn is_pchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

fn segment_ok(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    if bytes.is_empty() || segment == "." || segment == ".." {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // `%` and two uppercase hex digits (RFC 3986's normalized form).
            let hex = |at: usize| {
                bytes
                    .get(at)
                    .is_some_and(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
            };
            if !(hex(i + 1) && hex(i + 2)) {
                return false;
            }
            i += 3;
        } else if is_pchar(bytes[i]) {
            i += 1;
        } else {
            return false;
        }
    }
    true
}

fn endpoint(text: &str) -> Result<String, JournalError> {
    let invalid = || JournalError::invalid("endpoint");
    if text.len() > MAX_ENDPOINT_BYTES {
        return Err(invalid());
    }
    let (method, path) = text.split_once(' ').ok_or_else(invalid)?;
    let rest = path.strip_prefix('/').ok_or_else(invalid)?;
    let ok = METHODS.contains(&method) && rest.split('/').all(segment_ok);
    ok.then(|| text.to_owned()).ok_or_else(invalid)
}

impl ProviderPlan {
    /// Validates every part, reporting the first invalid field in declaration order
    /// (`provider`, `account`, `mode`, `apiVersion`, `operation`, `endpoint`,
    /// `parameters`, `keyRetentionSeconds`); the value is never echoed.
    pub fn new(request: ProviderPlanRequest<'_>) -> Result<Self, JournalError> {
        let provider = is_slug(request.provider)
            .then(|| request.provider.to_owned())
            .ok_or(JournalError::invalid("provider"))?;
        let account = checked_account(request.account)?;
        let mode = ProviderMode::parse(request.mode)?;
        let api_version = api_version(request.api_version)?;
        let operation = OperationSlug::parse(request.operation)?;
        let endpoint = endpoint(request.endpoint)?;
        let parameters = canonical_object(request.parameters, "parameters")?;
        let retention = request.key_retention_seconds;
        if !(MIN_KEY_RETENTION_SECONDS..=MAX_KEY_RETENTION_SECONDS).contains(&retention) {
            return Err(JournalError::invalid("keyRetentionSeconds"));
        }
        Ok(Self {
            provider,
            account,
            mode,
            api_version,
            operation,
            endpoint,
            parameters,
            key_retention_seconds: retention,
            lookup: ProviderLookup::KeyStore,
            lookup_settle_seconds: DEFAULT_LOOKUP_SETTLE_SECONDS,
            customer_window_seconds: None,
        })
    }

    /// The same plan with the customer's window: an attempt that waits for its
    /// customer (a 3-D Secure challenge, a hosted page) is theirs for `seconds` after
    /// its first send, then its object is canceled (`act_by`, the earlier of that end
    /// and the attempt's cutoff). Unset, the window ends at the cutoff. `invalid_input`
    /// on `customerWindowSeconds` under 60 or over the cutoff span
    /// `retention − retention / 4` (64,800 s for a day's retention).
    pub fn with_customer_window(mut self, seconds: i64) -> Result<Self, JournalError> {
        if !window_fits(seconds, cutoff_seconds(self.key_retention_seconds)) {
            return Err(JournalError::invalid("customerWindowSeconds"));
        }
        self.customer_window_seconds = Some(seconds);
        Ok(self)
    }

    /// The customer's window in seconds, if the plan sets one (stored when set).
    pub fn customer_window_seconds(&self) -> Option<i64> {
        self.customer_window_seconds
    }

    /// The same plan with the provider's lookup durability and settle window (the
    /// time the provider's lookup needs to see a charge). Defaults: `key_store`, 300.
    /// `invalid_input` on `lookupSettleSeconds` outside 0 to 86,400, or, for a
    /// key-store lookup, when 60 s (a lease) plus the settle window exceed a quarter of
    /// the key retention: no absence could ever be proven.
    pub fn with_lookup(
        mut self,
        lookup: ProviderLookup,
        settle_seconds: i64,
    ) -> Result<Self, JournalError> {
        if !settle_fits(lookup, settle_seconds, self.key_retention_seconds) {
            return Err(JournalError::invalid("lookupSettleSeconds"));
        }
        self.lookup = lookup;
        self.lookup_settle_seconds = settle_seconds;
        Ok(self)
    }

    /// What the provider's lookup answers from (stored).
    pub fn lookup(&self) -> ProviderLookup {
        self.lookup
    }

    /// Seconds the provider's lookup needs to see a charge (stored).
    pub fn lookup_settle_seconds(&self) -> i64 {
        self.lookup_settle_seconds
    }

    /// Where the plan's requests and lookups go: its provider, account and mode
    /// (stored only as the command-bound `accountFingerprint`).
    pub fn provider_account(&self) -> ProviderAccount {
        ProviderAccount::from_parts(&self.provider, &self.account, self.mode)
    }

    /// The provider slug (stored: it is not secret).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The mode (stored).
    pub fn mode(&self) -> ProviderMode {
        self.mode
    }

    /// The operation slug (stored); attempt 1's key is the command's provider
    /// idempotency key for it.
    pub fn operation(&self) -> &OperationSlug {
        &self.operation
    }

    /// The provider's key retention in seconds (stored).
    pub fn key_retention_seconds(&self) -> i64 {
        self.key_retention_seconds
    }

    /// The RFC 8785 canonical parameters text that is fingerprinted.
    pub(crate) fn canonical_parameters(&self) -> &str {
        &self.parameters
    }

    /// `planFingerprint` under the current plan version: without a customer window,
    /// version 2: domain `command-journal.provider-plan`, version 2, then
    /// `commandKeyHash`, provider, account, mode, API version, operation, endpoint,
    /// canonical parameters, the key retention, the lookup (`key_store` | `durable` |
    /// `final_state`) and the settle window (integers as decimal text); with one,
    /// version 3: the same parts under version 3, then the window. Bound to the
    /// command, so the same plan under another command has an unrelated fingerprint.
    pub fn fingerprint(&self, identity: &CommandIdentity) -> Digest {
        let version = match self.customer_window_seconds {
            Some(_) => PLAN_VERSION_WINDOW,
            None => PLAN_VERSION,
        };
        self.fingerprint_v(identity, version)
    }

    /// The fingerprint under plan version `version`: 1 is the frame above without the
    /// lookup and settle parts (plans bound before version 2), 3 the frame with the
    /// customer window (its window, or none: then no plan version 3 document can
    /// match), anything else 2.
    pub(crate) fn fingerprint_v(&self, identity: &CommandIdentity, version: i64) -> Digest {
        let retention = self.key_retention_seconds.to_string();
        let settle = self.lookup_settle_seconds.to_string();
        let mut parts: Vec<&[u8]> = vec![
            identity.command_key_hash().as_str().as_bytes(),
            self.provider.as_bytes(),
            self.account.as_bytes(),
            self.mode.as_str().as_bytes(),
            self.api_version.as_bytes(),
            self.operation.as_str().as_bytes(),
            self.endpoint.as_bytes(),
            self.parameters.as_bytes(),
            retention.as_bytes(),
        ];
        if version == 1 {
            return frame_digest("command-journal.provider-plan", 1, &parts);
        }
        parts.push(self.lookup.as_str().as_bytes());
        parts.push(settle.as_bytes());
        if version != PLAN_VERSION_WINDOW {
            return frame_digest("command-journal.provider-plan", 2, &parts);
        }
        let window = self
            .customer_window_seconds
            .map_or_else(String::new, |seconds| seconds.to_string());
        parts.push(window.as_bytes());
        frame_digest("command-journal.provider-plan", 3, &parts)
    }
}

/// The provider idempotency key of attempt `attempt` of `operation`:
/// attempt 1 is exactly the command's [`provider_idempotency_key`]; attempt n ≥ 2 is
/// `cj1-` followed by the digest of domain `command-journal.provider-attempt-key`,
/// version 1, `commandKeyHash`, operation slug, n (decimal text).
///
/// [`provider_idempotency_key`]: CommandIdentity::provider_idempotency_key
pub fn attempt_key(
    identity: &CommandIdentity,
    operation: &OperationSlug,
    attempt: AttemptNumber,
) -> String {
    if attempt == AttemptNumber::FIRST {
        return identity.provider_idempotency_key(operation);
    }
    let n = attempt.to_string();
    let digest = frame_digest(
        "command-journal.provider-attempt-key",
        1,
        &[
            identity.command_key_hash().as_str().as_bytes(),
            operation.as_str().as_bytes(),
            n.as_bytes(),
        ],
    );
    format!("cj1-{digest}")
}

/// Seconds from an attempt's first send to its cutoff: `retention − retention / 4`
/// (integer division), so 86,400 s of retention gives 64,800 s (18 h).
pub(crate) fn cutoff_seconds(key_retention_seconds: i64) -> i64 {
    key_retention_seconds - key_retention_seconds / 4
}

/// `sendCutoffAt` of an attempt first sent at `first_sent_at`; `None` past
/// Firestore's timestamp range.
pub(crate) fn send_cutoff_at(
    first_sent_at: Timestamp,
    key_retention_seconds: i64,
) -> Option<Timestamp> {
    first_sent_at.plus_seconds(cutoff_seconds(key_retention_seconds))
}

#[cfg(test)]
mod tests;

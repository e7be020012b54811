//! Where a plan's requests go: the provider's mode ([`ProviderMode`]) and the
//! provider account ([`ProviderAccount`]), as a reader that holds no plan can prove it
//! asks the same one: the plan document stores the account's command-bound
//! fingerprint (`accountFingerprint`), never the account.
//!
//! A recovery job knows a command by its key hash alone. Its provider adapter asks
//! one account; the job declares it ([`ProviderAccount`]), and only where the bound
//! plan's `accountFingerprint` equals the declared account's may the job's "not found"
//! prove an absence: a job asking another account finds nothing for a key that holds
//! a charge. A job may also declare what its lookups answer from
//! ([`ProviderAccount::with_lookup`]): a lookup of the provider's key store, which
//! sees only the keys the provider still keeps, proves no absence for a plan whose
//! lookup is `durable` (the plan's absence window outlives what such a lookup sees).

use crate::digest::{Digest, frame_digest};
use crate::error::JournalError;
use crate::identity::is_slug;
use crate::sends::lookup::ProviderLookup;
use std::fmt;

/// Whether the plan runs against the provider's test or live mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderMode {
    /// The provider's sandbox.
    Test,
    /// Real money.
    Live,
}

impl ProviderMode {
    /// Parses exactly `test` or `live`; anything else is `invalid_input` on `mode`.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match text {
            "test" => Ok(Self::Test),
            "live" => Ok(Self::Live),
            _ => Err(JournalError::invalid("mode")),
        }
    }

    /// The exact text hashed and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Test => "test",
            Self::Live => "live",
        }
    }
}

/// Longest account text, in characters (the plan's bound).
pub(crate) const MAX_ACCOUNT_CHARS: usize = 255;

/// A validated provider, account and mode: the parts of a plan that say where its
/// requests and lookups go. The account is held in memory only: it prints as
/// `<redacted>` and is stored only inside its command-bound fingerprint
/// (`accountFingerprint`).
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderAccount {
    provider: String,
    account: String,
    mode: ProviderMode,
    lookup: Option<ProviderLookup>,
}

impl fmt::Debug for ProviderAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderAccount")
            .field("provider", &self.provider)
            .field("account", &"<redacted>")
            .field("mode", &self.mode)
            .field("lookup", &self.lookup)
            .finish()
    }
}

/// The account text as a plan accepts it: 1 to 255 characters, no control
/// characters; `invalid_input` on `account` otherwise (the value is never echoed).
pub(crate) fn checked_account(text: &str) -> Result<String, JournalError> {
    let count = text.chars().count();
    let ok = (1..=MAX_ACCOUNT_CHARS).contains(&count) && !text.chars().any(char::is_control);
    ok.then(|| text.to_owned())
        .ok_or(JournalError::invalid("account"))
}

impl ProviderAccount {
    /// Validates the parts as a plan does, reporting the first invalid field
    /// (`provider`, `account`, `mode`).
    pub fn new(provider: &str, account: &str, mode: &str) -> Result<Self, JournalError> {
        let provider = is_slug(provider)
            .then(|| provider.to_owned())
            .ok_or(JournalError::invalid("provider"))?;
        let account = checked_account(account)?;
        let mode = ProviderMode::parse(mode)?;
        Ok(Self {
            provider,
            account,
            mode,
            lookup: None,
        })
    }

    /// The same account, declaring what its lookups answer from. A `key_store`
    /// lookup (one that sees only the keys the provider still keeps, such as a listing
    /// of recent charges) proves no absence for a plan bound with a `durable` lookup;
    /// undeclared, the job's lookups are taken to answer as the plan says its own do.
    /// Not part of the account's fingerprint (`accountFingerprint`).
    pub fn with_lookup(mut self, lookup: ProviderLookup) -> Self {
        self.lookup = Some(lookup);
        self
    }

    /// What the job's lookups answer from, as declared.
    pub fn lookup(&self) -> Option<ProviderLookup> {
        self.lookup
    }

    /// Whether a "not found" of these lookups can prove an absence under a plan whose
    /// lookup is `plan`: not when they see only the key store while the plan counts
    /// on a durable lookup, and never when they ask a provider that may still
    /// complete a request it never answered (declared `final_state`: a Stripe job),
    /// whatever the plan bound (a plan bound `durable` before its client's plans were
    /// `final_state` included).
    pub fn lookup_covers(&self, plan: ProviderLookup) -> bool {
        !matches!(
            (self.lookup, plan),
            (Some(ProviderLookup::KeyStore), ProviderLookup::Durable)
                | (Some(ProviderLookup::FinalState), _)
        )
    }

    /// Parts already validated (a plan's).
    pub(crate) fn from_parts(provider: &str, account: &str, mode: ProviderMode) -> Self {
        Self {
            provider: provider.to_owned(),
            account: account.to_owned(),
            mode,
            lookup: None,
        }
    }

    /// The provider slug.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The mode.
    pub fn mode(&self) -> ProviderMode {
        self.mode
    }

    /// `accountFingerprint` for the command `hash`: domain
    /// `command-journal.provider-account`, version 1, then `commandKeyHash`,
    /// provider, account, mode. Bound to the command, so two commands' documents
    /// never show that they share an account.
    pub(crate) fn fingerprint(&self, hash: &Digest) -> Digest {
        frame_digest(
            "command-journal.provider-account",
            1,
            &[
                hash.as_str().as_bytes(),
                self.provider.as_bytes(),
                self.account.as_bytes(),
                self.mode.as_str().as_bytes(),
            ],
        )
    }
}

//! What a provider's lookup of an idempotency key answers from ([`ProviderLookup`]):
//! a plan binds it, and a recovery job may declare its own.

use crate::error::JournalError;

/// What the provider's lookup of an idempotency key answers from, which bounds how
/// long an absence can be proven (`docs/providers.md`, "Proven absence").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProviderLookup {
    /// The provider's idempotency-key store: it forgets a key after the plan's key
    /// retention, so an absence is provable only before `firstSentAt + retention`.
    #[default]
    KeyStore,
    /// The provider's own durable records (a Stripe metadata search): an absence is
    /// provable at any time after the settle window.
    Durable,
}

impl ProviderLookup {
    /// Parses exactly `key_store` or `durable`; anything else is `invalid_input` on
    /// `lookup`.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match text {
            "key_store" => Ok(Self::KeyStore),
            "durable" => Ok(Self::Durable),
            _ => Err(JournalError::invalid("lookup")),
        }
    }

    /// The exact text hashed and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeyStore => "key_store",
            Self::Durable => "durable",
        }
    }
}

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
    /// A provider that may still complete a request it never answered with a final
    /// result (Stripe: a 500 is indeterminate and its incident remediation may roll
    /// the request forward, and a request whose answer was lost may have met one), so
    /// a lookup's "not found" proves no attempt absent, ever. Its lookups still find a
    /// charge; an attempt ends by the provider's answer to its key (a re-send before
    /// the cutoff), the object's final state read by id, an event, or a person.
    FinalState,
}

impl ProviderLookup {
    /// Parses exactly `key_store`, `durable` or `final_state`; anything else is
    /// `invalid_input` on `lookup`.
    pub fn parse(text: &str) -> Result<Self, JournalError> {
        match text {
            "key_store" => Ok(Self::KeyStore),
            "durable" => Ok(Self::Durable),
            "final_state" => Ok(Self::FinalState),
            _ => Err(JournalError::invalid("lookup")),
        }
    }

    /// The exact text hashed and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KeyStore => "key_store",
            Self::Durable => "durable",
            Self::FinalState => "final_state",
        }
    }
}

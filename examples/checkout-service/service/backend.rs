//! The provider a checkout is charged through: a provider of the service's charge
//! contract (`service::provider`, the stub's), or Stripe PaymentIntents through
//! `command-journal-stripe` (`PROVIDER_NAME=stripe`).

use super::config::Config;
use super::provider::Charges;
use command_journal_stripe::Stripe;

/// The HTTP client of the configured provider.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The charge contract at `PROVIDER_URL`.
    Charges(Charges),
    /// Stripe at `STRIPE_API_BASE`.
    Stripe(Stripe),
}

impl Backend {
    /// The client `config` names; `None` when the HTTP client could not be built.
    pub fn new(config: &Config) -> Option<Self> {
        match &config.stripe {
            Some(stripe) => Stripe::new(stripe.clone()).ok().map(Self::Stripe),
            None => Charges::new(config.charges_url(), config.provider_timeout)
                .ok()
                .map(Self::Charges),
        }
    }
}

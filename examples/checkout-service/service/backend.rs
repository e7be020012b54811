//! The provider a checkout is charged through: a provider of the service's charge
//! contract (`service::provider`, the stub's), or Stripe PaymentIntents through
//! `command-journal-stripe` (`PROVIDER_NAME=stripe`), or Stripe Checkout Sessions
//! (`CHECKOUT_FLOW=checkout`, `service::flow`). Each binds its own plans (the
//! contract's [`plan`](super::provider::plan), [`Stripe::plan`]) and declares its own
//! account, lookup included, to a recovery job.

use super::config::{Config, PlanSettings};
use super::flow::Flow;
use super::provider::{self, Charges};
use command_journal::{Clock, JournalError, ProviderAccount, ProviderPlan};
use command_journal_stripe::{CheckoutPages, Stripe};
use serde_json::Value;
use std::sync::Arc;

/// The HTTP client of the configured provider.
#[derive(Debug, Clone)]
pub enum Backend {
    /// The charge contract at `PROVIDER_URL`, and the plan settings its operator
    /// declares (the contract cannot know the provider's retention or lookup).
    Charges(Charges, PlanSettings),
    /// Stripe at `STRIPE_API_BASE`.
    Stripe(Stripe),
    /// Stripe Checkout at `STRIPE_API_BASE`: a session per attempt, whose hosted page
    /// returns the customer to the configured pages ([`Stripe::checkout_plan`]).
    Checkout(Stripe, CheckoutPages),
}

impl Backend {
    /// The client `config` names; `None` when the HTTP client could not be built.
    pub fn new(config: &Config) -> Option<Self> {
        match (&config.stripe, &config.flow) {
            (Some(stripe), Flow::Checkout(pages)) => Stripe::new(stripe.clone())
                .ok()
                .map(|stripe| Self::Checkout(stripe, pages.clone())),
            (Some(stripe), Flow::PaymentIntents) => {
                Stripe::new(stripe.clone()).ok().map(Self::Stripe)
            }
            (None, _) => Charges::new(config.charges_url(), config.provider_timeout)
                .ok()
                .map(|charges| Self::Charges(charges, config.plan.clone())),
        }
    }

    /// The same client, a Stripe client reading `clock` (a Checkout Session's
    /// `expires_at`, a listing's window): a test's, whose journal runs on the Stripe
    /// stand-in's clock. A deployment keeps the system clock, as its journal does.
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        match self {
            Self::Charges(..) => self,
            Self::Stripe(stripe) => Self::Stripe(stripe.with_clock(clock)),
            Self::Checkout(stripe, pages) => Self::Checkout(stripe.with_clock(clock), pages),
        }
    }

    /// The plan of a checkout of `parameters` (the payload), as the provider's own
    /// client binds it: `invalid_input` on `parameters` for a payload Stripe can make
    /// no PaymentIntent of.
    pub fn plan(&self, parameters: &Value) -> Result<ProviderPlan, JournalError> {
        match self {
            Self::Charges(_, settings) => provider::plan(settings, parameters),
            Self::Stripe(stripe) => stripe.plan(parameters),
            Self::Checkout(stripe, _) => stripe.checkout_plan(parameters),
        }
    }

    /// The account (and lookup) a recovery job over this provider declares.
    pub fn account(&self) -> Result<ProviderAccount, JournalError> {
        match self {
            Self::Charges(_, settings) => settings.account(),
            Self::Stripe(stripe) | Self::Checkout(stripe, _) => stripe.account(),
        }
    }
}

//! A [`Provider`](command_journal::Provider) for Stripe PaymentIntents, for
//! `Journal::execute` and `Journal::recover`.
//!
//! A send is one create-and-confirm (`POST /v1/payment_intents`, form-encoded, with
//! `confirm=true`, the plan's `amount`, `currency` and `paymentMethod`, and the attempt's
//! key both as the `Idempotency-Key` header and as `metadata[journal_key]`); a lookup
//! finds the intent carrying the key, through Stripe's search or, where search is not
//! offered, by listing the day's intents ([`LookupMethod`]). Every answer Stripe
//! documents maps to one of the journal's ([`SendAnswer`], [`LookupAnswer`]; the
//! package's `README.md` gives the table): only a `succeeded` intent of this request is
//! a success, only a refusal that moved no money is a decline, and everything else
//! leaves the attempt open.
//!
//! ```no_run
//! use command_journal_stripe::{Account, SecretKey, Stripe, StripeConfig};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let key = SecretKey::new(&std::env::var("STRIPE_SECRET_KEY")?)?;
//! let config = StripeConfig::new(key, "2026-01-28.clover", Account::Own("acct_1".into()));
//! let stripe = Stripe::new(config)?;
//! let payload = serde_json::json!({"amount": 1250, "currency": "eur", "paymentMethod": "pm_card_visa"});
//! let plan = stripe.plan(&payload)?; // the plan `Journal::execute` binds
//! let provider = stripe.payment(&payload); // the provider it calls
//! # let _ = (plan, provider);
//! # Ok(())
//! # }
//! ```
//!
//! The secret key is never logged, shown by `Debug`, or put in an error
//! ([`SecretKey`]); no answer carries more than a fixed code.
//!
//! [`webhook`] verifies Stripe's webhook signatures (the `Stripe-Signature` header over
//! the raw body, a tolerance on the journal's clock, several endpoint secrets during a
//! roll), reads the event's envelope strictly, and classifies each PaymentIntent and
//! Checkout Session event in the journal's answers (`docs/events.md` gives the table).

#![deny(missing_docs)]

pub mod answer;
pub mod charge;
pub mod checkout;
pub mod client;
pub mod config;
pub mod customer;
pub mod error;
pub mod events_api;
pub mod intent;
pub mod provider;
pub mod read;
pub mod retrieve;
pub mod secret;
pub mod session;
pub mod webhook;

pub use answer::{LookupAnswer, RetrieveAnswer, SendAnswer};
pub use charge::{Charge, InvalidParameters};
pub use checkout::Checkout;
pub use client::{PlanTerms, Stripe};
pub use config::{Account, LookupMethod, StripeConfig};
pub use customer::CustomerStep;
pub use error::ConfigError;
pub use events_api::{EVENTS_OVERLAP_SECONDS, EVENTS_RETENTION_SECONDS, EventsPage, EventsQuery};
pub use intent::Expected;
pub use provider::Payment;
pub use retrieve::Retrieval;
pub use secret::SecretKey;
pub use session::CheckoutPages;

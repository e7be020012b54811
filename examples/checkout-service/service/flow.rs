//! The payment flow a checkout takes with Stripe, from the environment, validated at
//! start-up with the other settings (`service::config`).
//!
//! | variable | meaning |
//! |---|---|
//! | `CHECKOUT_FLOW` | `payment_intents` (the default: a PaymentIntent confirmed at once, the customer's browser confirming 3-D Secure with Stripe.js when Stripe asks) or `checkout` (a Stripe Checkout Session, paid on its hosted page); `checkout` only with `PROVIDER_NAME=stripe` |
//! | `CHECKOUT_SUCCESS_URL` | with `checkout`, required: where the hosted page sends the customer after paying (Stripe fills in `{CHECKOUT_SESSION_ID}`); `https`, or `http` to a loopback host |
//! | `CHECKOUT_CANCEL_URL` | with `checkout`, required: where its cancel link goes; the same rule |
//! | `CHECKOUT_PRODUCT_NAME` | with `checkout`: the line item's name the hosted page shows, 1 to 250 characters; `Checkout` when unset |
//!
//! The pages' URLs are the merchant's own pages, not a customer's: they are never
//! logged either (`Debug` shows none).

use super::config::ConfigError;
use command_journal_stripe::CheckoutPages;

/// `CHECKOUT_FLOW` when unset.
pub const PAYMENT_INTENTS: &str = "payment_intents";
/// `CHECKOUT_FLOW` of Stripe Checkout.
pub const CHECKOUT: &str = "checkout";
/// `CHECKOUT_PRODUCT_NAME` when unset.
pub const DEFAULT_PRODUCT_NAME: &str = "Checkout";

/// How a checkout is paid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Flow {
    /// A PaymentIntent created and confirmed at once (the charge contract's POST for a
    /// provider of it); Stripe may ask for 3-D Secure, which the customer's browser
    /// confirms with the answer's client secret.
    #[default]
    PaymentIntents,
    /// A Stripe Checkout Session, whose hosted page the customer opens and pays on,
    /// returning to the configured pages.
    Checkout(CheckoutPages),
}

impl Flow {
    /// The flow `get` names (empty values unset already); `stripe` is whether
    /// `PROVIDER_NAME=stripe`. A page variable set without `CHECKOUT_FLOW=checkout`
    /// is refused, so that no deployment believes it configured pages it never uses.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        stripe: bool,
    ) -> Result<Self, ConfigError> {
        let refuse =
            |variable: &'static str, problem: &'static str| ConfigError { variable, problem };
        let pages = [
            "CHECKOUT_SUCCESS_URL",
            "CHECKOUT_CANCEL_URL",
            "CHECKOUT_PRODUCT_NAME",
        ];
        match get("CHECKOUT_FLOW").as_deref().map(str::trim) {
            None | Some(PAYMENT_INTENTS) => {
                match pages.into_iter().find(|page| get(page).is_some()) {
                    Some(page) => Err(refuse(page, "is only accepted with CHECKOUT_FLOW=checkout")),
                    None => Ok(Self::PaymentIntents),
                }
            }
            Some(CHECKOUT) if !stripe => Err(refuse(
                "CHECKOUT_FLOW",
                "may be checkout only with PROVIDER_NAME=stripe",
            )),
            Some(CHECKOUT) => {
                let required = |variable: &'static str| {
                    get(variable)
                        .map(|text| text.trim().to_owned())
                        .ok_or(refuse(variable, "is missing (CHECKOUT_FLOW=checkout)"))
                };
                let success = required("CHECKOUT_SUCCESS_URL")?;
                let cancel = required("CHECKOUT_CANCEL_URL")?;
                let name = get("CHECKOUT_PRODUCT_NAME")
                    .map_or(DEFAULT_PRODUCT_NAME.to_owned(), |name| {
                        name.trim().to_owned()
                    });
                let url = |text: &str| CheckoutPages::new(text, text, DEFAULT_PRODUCT_NAME).is_ok();
                const URL_PROBLEM: &str =
                    "must be an absolute https URL (http to a loopback host), at most 5000 bytes";
                if !url(&success) {
                    return Err(refuse("CHECKOUT_SUCCESS_URL", URL_PROBLEM));
                }
                if !url(&cancel) {
                    return Err(refuse("CHECKOUT_CANCEL_URL", URL_PROBLEM));
                }
                CheckoutPages::new(&success, &cancel, &name)
                    .map(Self::Checkout)
                    .map_err(|_| {
                        refuse(
                            "CHECKOUT_PRODUCT_NAME",
                            "must be 1 to 250 characters without control characters",
                        )
                    })
            }
            Some(_) => Err(refuse(
                "CHECKOUT_FLOW",
                "must be payment_intents or checkout",
            )),
        }
    }

    /// The flow's name, as `CHECKOUT_FLOW` spells it (the `listening` line states it).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::PaymentIntents => PAYMENT_INTENTS,
            Self::Checkout(_) => CHECKOUT,
        }
    }
}

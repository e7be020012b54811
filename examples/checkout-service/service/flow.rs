//! The payment flow a checkout takes with Stripe, from the environment, validated at
//! start-up with the other settings (`service::config`).
//!
//! | variable | meaning |
//! |---|---|
//! | `CHECKOUT_FLOW` | `payment_intents` (the default: a PaymentIntent confirmed at once, the customer's browser confirming 3-D Secure with Stripe.js when Stripe asks) or `checkout` (a Stripe Checkout Session, paid on its hosted page); `checkout` only with `PROVIDER_NAME=stripe` |
//! | `CHECKOUT_SUCCESS_URL` | with `checkout`, required: where the hosted page sends the customer after paying (Stripe fills in `{CHECKOUT_SESSION_ID}`); `https`, or `http` to a loopback host |
//! | `CHECKOUT_CANCEL_URL` | with `checkout`, required: where its cancel link goes; the same rule |
//! | `CHECKOUT_PRODUCT_NAME` | with `checkout`: the line item's name the hosted page shows, 1 to 250 characters; `Checkout` when unset |
//! | `CUSTOMER_WINDOW_SECONDS` | with `PROVIDER_NAME=stripe`: how long a customer asked to act (3-D Secure, the hosted page) has after the attempt's first send, 60 to 64800 (at least 1920 with `checkout`, Stripe's shortest session); bound into every plan; unset: until the attempt's cutoff (18 h) |
//!
//! The pages' URLs are the merchant's own pages, not a customer's: they are never
//! logged either (`Debug` shows none).

use super::config::ConfigError;
use command_journal_stripe::config::{
    MAX_CUSTOMER_WINDOW_SECONDS, MIN_CHECKOUT_WINDOW_SECONDS, MIN_CUSTOMER_WINDOW_SECONDS,
};
use command_journal_stripe::{CheckoutPages, StripeConfig};

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

/// `CUSTOMER_WINDOW_SECONDS` (empty values unset already) set on the Stripe client's
/// configuration `stripe` (`None` without `PROVIDER_NAME=stripe`, where it is
/// refused): a whole number of seconds from 60 to 64,800, at least 1,920 with
/// `flow` Checkout. Unset: the configuration as it is (no window).
pub fn customer_window(
    get: &impl Fn(&str) -> Option<String>,
    stripe: Option<StripeConfig>,
    flow: &Flow,
) -> Result<Option<StripeConfig>, ConfigError> {
    const VARIABLE: &str = "CUSTOMER_WINDOW_SECONDS";
    let refuse = |problem: &'static str| ConfigError {
        variable: VARIABLE,
        problem,
    };
    let Some(text) = get(VARIABLE) else {
        return Ok(stripe);
    };
    let Some(mut config) = stripe else {
        return Err(refuse("is only accepted with PROVIDER_NAME=stripe"));
    };
    let seconds = text
        .trim()
        .parse::<i64>()
        .ok()
        .filter(|s| (MIN_CUSTOMER_WINDOW_SECONDS..=MAX_CUSTOMER_WINDOW_SECONDS).contains(s))
        .ok_or(refuse("must be a whole number of seconds from 60 to 64800"))?;
    if matches!(flow, Flow::Checkout(_)) && seconds < MIN_CHECKOUT_WINDOW_SECONDS {
        return Err(refuse(
            "must be at least 1920 with CHECKOUT_FLOW=checkout (a Checkout Session lives 30 minutes at least, and a send may come a minute after the attempt opened)",
        ));
    }
    config.customer_window_seconds = Some(seconds);
    Ok(Some(config))
}

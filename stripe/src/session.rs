//! A Checkout Session as evidence: what one is made from (the plan's amount and
//! currency, the configured pages, the customer's deadline), whose it is, and what its
//! status says (`https://docs.stripe.com/api/checkout/sessions/object`,
//! `https://docs.stripe.com/checkout/fulfillment`).

use crate::answer::RetrieveAnswer;
use crate::charge::Charge;
use crate::customer::CustomerStep;
use crate::error::ConfigError;
use crate::intent::IntentState;
use serde_json::{Map, Value};
use std::fmt;

/// The earliest `expires_at` Stripe takes: "between 30 minutes and 24 hours after the
/// current time" (`https://docs.stripe.com/payments/checkout/managing-limited-inventory`),
/// and a minute for the clocks.
pub const MIN_EXPIRY_SECONDS: i64 = 30 * 60 + 60;
/// The latest, a minute inside Stripe's 24 hours.
pub const MAX_EXPIRY_SECONDS: i64 = 24 * 3_600 - 60;

/// Where the hosted page sends the customer back, and what it shows them: a
/// service's configuration. `Debug` shows no URL.
#[derive(Clone, PartialEq, Eq)]
pub struct CheckoutPages {
    success_url: String,
    cancel_url: String,
    product_name: String,
}

impl fmt::Debug for CheckoutPages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckoutPages").finish_non_exhaustive()
    }
}

impl CheckoutPages {
    /// The session's `success_url` (Stripe fills in `{CHECKOUT_SESSION_ID}`), its
    /// `cancel_url`, both absolute `https` URLs (or `http` to a loopback host, for a
    /// local run), and the line item's product name (1 to 250 characters) the hosted
    /// page shows. [`ConfigError::Pages`] otherwise.
    pub fn new(
        success_url: &str,
        cancel_url: &str,
        product_name: &str,
    ) -> Result<Self, ConfigError> {
        let url = |text: &str| {
            reqwest::Url::parse(text).is_ok_and(|url| {
                let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
                url.scheme() == "https" || (url.scheme() == "http" && loopback)
            }) && text.len() <= 5_000
        };
        let named = (1..=250).contains(&product_name.chars().count())
            && !product_name.chars().any(char::is_control);
        if !(url(success_url) && url(cancel_url) && named) {
            return Err(ConfigError::Pages);
        }
        Ok(Self {
            success_url: success_url.to_owned(),
            cancel_url: cancel_url.to_owned(),
            product_name: product_name.to_owned(),
        })
    }
}

/// The `expires_at` of a session made at `now` for a customer who must act by
/// `act_by` (Unix seconds). A first send (`resend` false) clamps it into Stripe's
/// window of [`MIN_EXPIRY_SECONDS`] to [`MAX_EXPIRY_SECONDS`] after `now`; a re-send
/// sends `act_by` as it is, so that its form is the first send's whenever the first
/// was not clamped (Stripe replays only the same parameters): the journal's window
/// keeps `act_by` inside Stripe's from the attempt's first send. A re-send whose
/// first send never reached Stripe and whose `act_by` is now too soon is refused by
/// Stripe (400, nothing made): a final refusal with nothing charged.
pub fn expires_at(act_by: i64, now: i64, resend: bool) -> i64 {
    if resend {
        act_by
    } else {
        act_by.clamp(now + MIN_EXPIRY_SECONDS, now + MAX_EXPIRY_SECONDS)
    }
}

/// The form of `POST /v1/checkout/sessions` under `key`, in a fixed order: one line
/// item of the plan's amount and currency, `mode=payment`, the configured pages, the
/// customer's deadline, and the key in the session's metadata and in its
/// PaymentIntent's (`payment_intent_data[metadata]`), where the lookup finds it after
/// Stripe forgets the key.
pub fn form(
    charge: &Charge,
    pages: &CheckoutPages,
    key: &str,
    expires_at: i64,
) -> Vec<(&'static str, String)> {
    vec![
        ("mode", "payment".to_owned()),
        (
            "line_items[0][price_data][currency]",
            charge.currency().to_owned(),
        ),
        (
            "line_items[0][price_data][unit_amount]",
            charge.amount().to_string(),
        ),
        (
            "line_items[0][price_data][product_data][name]",
            pages.product_name.clone(),
        ),
        ("line_items[0][quantity]", "1".to_owned()),
        ("success_url", pages.success_url.clone()),
        ("cancel_url", pages.cancel_url.clone()),
        ("expires_at", expires_at.to_string()),
        ("metadata[journal_key]", key.to_owned()),
        ("payment_intent_data[metadata][journal_key]", key.to_owned()),
    ]
}

/// Whether `session` is a `payment` Checkout Session of this request under `key`:
/// its `metadata.journal_key` is the key, and, when the charge is known, its
/// `amount_total` and `currency` are the plan's.
pub fn owns(session: &Map<String, Value>, key: &str, charge: Option<&Charge>) -> bool {
    let text = |field: &str| session.get(field).and_then(Value::as_str);
    let keyed = session
        .get("metadata")
        .and_then(|metadata| metadata.get("journal_key"))
        .and_then(Value::as_str)
        == Some(key);
    let charged = charge.is_none_or(|charge| {
        session.get("amount_total").and_then(Value::as_i64) == Some(charge.amount())
            && text("currency").is_some_and(|c| c.eq_ignore_ascii_case(charge.currency()))
    });
    text("object") == Some("checkout.session")
        && text("mode") == Some("payment")
        && keyed
        && charged
}

/// What a session of this request, read by id, answers now. A `complete` session is
/// decided with its PaymentIntent, which the caller reads by id: `intent` (`None`: not
/// read, or none named).
pub fn current(
    session: &Map<String, Value>,
    intent: Option<&Map<String, Value>>,
) -> RetrieveAnswer {
    let text = |field: &str| session.get(field).and_then(Value::as_str);
    let paid_by = intent.map(crate::intent::state);
    match (text("status"), text("payment_status")) {
        // "The Checkout Session is still in progress": the customer may still pay on
        // its page.
        (Some("open"), _) => match text("url") {
            Some(url) => RetrieveAnswer::CustomerMustAct(CustomerStep::Open {
                url: url.to_owned(),
            }),
            None => RetrieveAnswer::Unknown("open"),
        },
        // Paid: "You can use this value to decide when to fulfill your customer's
        // order" (payment_status). The envelope is its PaymentIntent's, the same as
        // a PaymentIntents payment's and an event's (`webhook::settle`): `id`,
        // `amount`, `currency`, `status`.
        (Some("complete"), Some("paid")) => match paid_by {
            Some(IntentState::Succeeded(fields)) => RetrieveAnswer::Succeeded(fields),
            _ => RetrieveAnswer::Unknown("paid_intent"),
        },
        // A delayed method: the payment is not final until
        // `checkout.session.async_payment_succeeded` or `..._failed`
        // (`https://docs.stripe.com/checkout/fulfillment`). Its intent tells which.
        (Some("complete"), Some("unpaid")) => match paid_by {
            Some(IntentState::Succeeded(fields)) => RetrieveAnswer::Succeeded(fields),
            Some(IntentState::Refused) => RetrieveAnswer::Declined("declined"),
            _ => RetrieveAnswer::Unknown("unpaid"),
        },
        // Nothing to pay at completion, where the line item is the plan's amount (at
        // least 1): nothing is due now. No money moved, and the session is complete,
        // not expired: never a success, never closed. A person settles it.
        (Some("complete"), Some("no_payment_required")) => {
            RetrieveAnswer::Unknown("no_payment_required")
        }
        // "After it expires, a customer can't complete a Checkout Session"
        // (`https://docs.stripe.com/api/checkout/sessions/expire`): closed, nothing
        // charged (its intent canceled, if one was made).
        (Some("expired"), _) => RetrieveAnswer::Closed,
        _ => RetrieveAnswer::Unknown("unknown_status"),
    }
}

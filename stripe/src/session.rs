//! A Checkout Session as evidence: what one is made from (the plan's amount and
//! currency, the configured pages, the customer's deadline), whose it is, and what its
//! status says (`https://docs.stripe.com/api/checkout/sessions/object`,
//! `https://docs.stripe.com/checkout/fulfillment`).

use crate::answer::RetrieveAnswer;
use crate::charge::Charge;
use crate::customer::CustomerStep;
use crate::error::ConfigError;
use crate::intent::IntentState;
use crate::webhook::{ObjectKind, ObjectRef};
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
        let named = (1..=250).contains(&product_name.chars().count())
            && !product_name.chars().any(char::is_control);
        if !(page_url(success_url) && page_url(cancel_url) && named) {
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

/// What a Checkout Session says. No variant holds a field of the session but the
/// hosted page's URL of an open one (handed to the customer only) and the id of its
/// PaymentIntent.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum SessionState {
    /// `open`: "The Checkout Session is still in progress": the customer may still pay
    /// on the hosted page at `url` (when present).
    Open { url: Option<String> },
    /// `expired`: "After it expires, a customer can't complete a Checkout Session"
    /// (`https://docs.stripe.com/api/checkout/sessions/expire`); its PaymentIntent, if
    /// the customer began to pay, says whether anything was paid through it.
    Expired { intent: Option<ObjectRef> },
    /// `complete`: the customer finished the hosted page; `payment_status` says
    /// whether the funds are available (`paid`) or still on the way (`unpaid`, a
    /// delayed method), and the session's `payment_intent` carries the payment.
    Complete {
        payment: PaymentStatus,
        intent: Option<ObjectRef>,
    },
    /// Any other status (Stripe may add one): nothing is concluded from it.
    Unrecognised,
}

/// A complete session's `payment_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PaymentStatus {
    /// `paid`: "The payment funds are available in your account."
    Paid,
    /// `unpaid`: the funds are not yet available (a delayed method is processing, or
    /// it failed: `checkout.session.async_payment_failed`).
    Unpaid,
    /// `no_payment_required`: the journal never makes such a session (its amount is
    /// positive), so nothing is concluded from it.
    NoPaymentRequired,
    /// Any other value.
    Other,
}

/// The state of `session` (a `checkout.session` object).
pub(crate) fn state(session: &Map<String, Value>) -> SessionState {
    match session.get("status").and_then(Value::as_str) {
        Some("open") => SessionState::Open {
            url: session
                .get("url")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        Some("expired") => SessionState::Expired {
            intent: intent_of(session),
        },
        Some("complete") => SessionState::Complete {
            payment: match session.get("payment_status").and_then(Value::as_str) {
                Some("paid") => PaymentStatus::Paid,
                Some("unpaid") => PaymentStatus::Unpaid,
                Some("no_payment_required") => PaymentStatus::NoPaymentRequired,
                _ => PaymentStatus::Other,
            },
            intent: intent_of(session),
        },
        _ => SessionState::Unrecognised,
    }
}

/// The session's `payment_intent`: an id (as events and a plain retrieve render it) or
/// the expanded object's `id`; `None` when null, absent or not a PaymentIntent id.
pub(crate) fn intent_of(session: &Map<String, Value>) -> Option<ObjectRef> {
    let id = match session.get("payment_intent")? {
        Value::String(id) => id.as_str(),
        Value::Object(intent) => intent.get("id").and_then(Value::as_str)?,
        _ => return None,
    };
    ObjectRef::new(ObjectKind::PaymentIntent, id)
}

/// The PaymentIntent whose current state [`current`] needs to answer for `session`:
/// a `complete` session's (paid or unpaid), and an `expired` session's when it names
/// one (the customer began to pay before it expired). The caller reads it by id.
pub fn intent_to_read(session: &Map<String, Value>) -> Option<ObjectRef> {
    match state(session) {
        SessionState::Complete {
            payment: PaymentStatus::Paid | PaymentStatus::Unpaid,
            intent,
        }
        | SessionState::Expired { intent } => intent,
        _ => None,
    }
}

/// What a session of this request, read by id, answers now: the one mapping of a
/// Checkout Session's status, which the adapter's retrieve and lookup and the
/// webhook's settlement (`webhook::settle`, `webhook::settle_by_id`) all use.
/// `intent` is the PaymentIntent [`intent_to_read`] names, read by id and of this
/// request (`None`: not read, none named, or not this request's).
///
/// An `expired` session that names no PaymentIntent is closed: nothing was paid and
/// nothing can be. One that names one is decided by it: the session's payment may
/// have gone through before it expired, or may still be on its way (a delayed
/// method), so only its intent `canceled` closes it; `succeeded` is the payment, and
/// any other state, or none read, is unknown.
pub fn current(
    session: &Map<String, Value>,
    intent: Option<&Map<String, Value>>,
) -> RetrieveAnswer {
    let paid_by = intent.map(crate::intent::state);
    match state(session) {
        // "The Checkout Session is still in progress": the customer may still pay on
        // its page, whose URL goes to them only.
        SessionState::Open { url: Some(url) } if page_url(&url) => {
            RetrieveAnswer::CustomerMustAct(CustomerStep::Open { url })
        }
        SessionState::Open { .. } => RetrieveAnswer::Unknown("open"),
        // Paid: "You can use this value to decide when to fulfill your customer's
        // order" (payment_status). The envelope is its PaymentIntent's, the same as
        // a PaymentIntents payment's and an event's: `id`, `amount`, `currency`,
        // `status`.
        SessionState::Complete {
            payment: PaymentStatus::Paid,
            ..
        } => match paid_by {
            Some(IntentState::Succeeded(fields)) => RetrieveAnswer::Succeeded(fields),
            _ => RetrieveAnswer::Unknown("paid_intent"),
        },
        // A delayed method: the payment is not final until
        // `checkout.session.async_payment_succeeded` or `..._failed`
        // (`https://docs.stripe.com/checkout/fulfillment`). Its intent tells which;
        // the session is complete, so no customer can pay on it again.
        SessionState::Complete {
            payment: PaymentStatus::Unpaid,
            ..
        } => match paid_by {
            Some(IntentState::Succeeded(fields)) => RetrieveAnswer::Succeeded(fields),
            Some(IntentState::Refused) => RetrieveAnswer::Declined("declined"),
            _ => RetrieveAnswer::Unknown("unpaid"),
        },
        // Nothing to pay at completion, where the line item is the plan's amount (at
        // least 1): nothing is due now. No money moved, and the session is complete,
        // not expired: never a success, never closed. A person settles it.
        SessionState::Complete {
            payment: PaymentStatus::NoPaymentRequired,
            ..
        } => RetrieveAnswer::Unknown("no_payment_required"),
        // "After it expires, a customer can't complete a Checkout Session"
        // (`https://docs.stripe.com/api/checkout/sessions/expire`): with no intent,
        // closed, nothing charged.
        SessionState::Expired { intent: None } => RetrieveAnswer::Closed,
        // Its intent decides: "After it's canceled, no additional charges are made by
        // the PaymentIntent" (`https://docs.stripe.com/api/payment_intents/cancel`,
        // which also says a Checkout Session's intent is ended by expiring the session):
        // closed; `succeeded`, the payment; `processing` (a delayed method on its way),
        // `requires_capture` (funds held) or anything else: not final.
        SessionState::Expired { intent: Some(_) } => match intent {
            Some(intent) if intent.get("status").and_then(Value::as_str) == Some("canceled") => {
                RetrieveAnswer::Closed
            }
            _ => match paid_by {
                Some(IntentState::Succeeded(fields)) => RetrieveAnswer::Succeeded(fields),
                Some(IntentState::Open(status)) => RetrieveAnswer::Unknown(status),
                _ => RetrieveAnswer::Unknown("expired_intent"),
            },
        },
        SessionState::Complete {
            payment: PaymentStatus::Other,
            ..
        }
        | SessionState::Unrecognised => RetrieveAnswer::Unknown("unknown_status"),
    }
}

/// Whether `text` is a page a customer may be sent to: an absolute `https` URL, or
/// `http` to a loopback host (a local run), at most 5,000 bytes.
fn page_url(text: &str) -> bool {
    reqwest::Url::parse(text).is_ok_and(|url| {
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        url.scheme() == "https" || (url.scheme() == "http" && loopback)
    }) && text.len() <= 5_000
}

//! A Checkout Session's state as the journal reads it (the Checkout Session object,
//! `https://docs.stripe.com/api/checkout/sessions/object`): its `status`, its
//! `payment_status` once complete, and the PaymentIntent that carries its payment.

use super::object::{ObjectKind, ObjectRef};
use serde_json::{Map, Value};

/// What a Checkout Session says. No variant holds a field of the session but the
/// hosted page's URL of an open one (handed to the customer only) and the id of its
/// PaymentIntent.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum SessionState {
    /// `open`: the customer may still pay on the hosted page at `url` (when present).
    Open { url: Option<String> },
    /// `expired`: "After it expires, a customer can't complete a Checkout Session"
    /// (`https://docs.stripe.com/api/checkout/sessions/expire`): nothing was paid
    /// through it and nothing can be.
    Expired,
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
    /// `no_payment_required`, or any other value: the journal never makes such a
    /// session (its amount is positive), so nothing is concluded from it.
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
        Some("expired") => SessionState::Expired,
        Some("complete") => SessionState::Complete {
            payment: match session.get("payment_status").and_then(Value::as_str) {
                Some("paid") => PaymentStatus::Paid,
                Some("unpaid") => PaymentStatus::Unpaid,
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

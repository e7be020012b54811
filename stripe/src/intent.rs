//! A PaymentIntent as evidence: whose it is, what state it is in, and the result
//! envelope a success stores.

use crate::charge::Charge;
use crate::customer::CustomerStep;
use serde_json::{Map, Value};
use std::fmt;

/// What an intent must show to be evidence about one request: `metadata.journal_key`
/// is the attempt's key (always: the adapter sets it on every intent it creates), and,
/// for a request whose parameters are known, `amount` is its amount and `currency` its
/// currency (ignoring ASCII case). A recovery job knows only the key
/// ([`Expected::key_only`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Expected {
    charge: Option<(i64, String)>,
}

impl fmt::Debug for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The payload's amount and currency stay out of logs.
        f.debug_struct("Expected")
            .field("parameters_known", &self.charge.is_some())
            .finish()
    }
}

impl Expected {
    /// The expectation of a request sending `charge`.
    pub fn of(charge: &Charge) -> Self {
        Self {
            charge: Some((charge.amount(), charge.currency().to_owned())),
        }
    }

    /// The expectation of a lookup made without the parameters: the key alone.
    pub fn key_only() -> Self {
        Self { charge: None }
    }

    /// Whether `intent` is a PaymentIntent of this request under `key`.
    pub fn owns(&self, intent: &Map<String, Value>, key: &str) -> bool {
        let is_intent = intent.get("object").and_then(Value::as_str) == Some("payment_intent");
        let keyed = intent
            .get("metadata")
            .and_then(|metadata| metadata.get("journal_key"))
            .and_then(Value::as_str)
            == Some(key);
        let charged = match &self.charge {
            None => true,
            Some((amount, currency)) => {
                intent.get("amount").and_then(Value::as_i64) == Some(*amount)
                    && intent
                        .get("currency")
                        .and_then(Value::as_str)
                        .is_some_and(|c| c.eq_ignore_ascii_case(currency))
            }
        };
        is_intent && keyed && charged
    }
}

/// What an intent of this request says about its payment. `Debug` shows no field of
/// the intent.
#[derive(Clone, PartialEq)]
pub enum IntentState {
    /// `succeeded`: the envelope's fields (`id`, `amount`, `currency`, `status`).
    Succeeded(Map<String, Value>),
    /// Final without money moved: `canceled`, or `requires_payment_method` with a
    /// `last_payment_error` (this confirmation was refused).
    Refused,
    /// Anything else; the fixed code names the status.
    Open(&'static str),
}

impl fmt::Debug for IntentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Succeeded(_) => f.write_str("Succeeded(<redacted>)"),
            Self::Refused => f.write_str("Refused"),
            Self::Open(code) => f.debug_tuple("Open").field(code).finish(),
        }
    }
}

/// The state of `intent`, an intent of this request ([`Expected::owns`]).
///
/// `canceled` is final: Stripe makes no charge through a canceled intent and refuses
/// every operation on it, and under this key no other intent can be created (a re-send
/// replays the stored answer). `requires_payment_method` after this confirmation, with
/// the error that sent it back there, is that confirmation's refusal: only a new
/// confirmation (which the adapter never makes, and which needs the client secret it
/// never hands out) could still charge it. `requires_action` waits for the customer,
/// `processing` for the payment method, `requires_capture` for a capture: none of them
/// has settled, so none is evidence.
pub fn state(intent: &Map<String, Value>) -> IntentState {
    let refused_confirmation = matches!(intent.get("last_payment_error"), Some(Value::Object(_)));
    match intent.get("status").and_then(Value::as_str) {
        Some("succeeded") => match envelope(intent) {
            Some(fields) => IntentState::Succeeded(fields),
            None => IntentState::Open("receipt"),
        },
        Some("canceled") => IntentState::Refused,
        Some("requires_payment_method") if refused_confirmation => IntentState::Refused,
        Some("requires_payment_method") => IntentState::Open("requires_payment_method"),
        Some("requires_action") => IntentState::Open("requires_action"),
        Some("processing") => IntentState::Open("processing"),
        Some("requires_capture") => IntentState::Open("requires_capture"),
        Some("requires_confirmation") => IntentState::Open("requires_confirmation"),
        _ => IntentState::Open("unknown_status"),
    }
}

/// What the customer must do for a `requires_action` intent: confirm with its
/// `client_secret` the action `next_action.type` names ("If the payment requires
/// additional actions, such as authenticating with 3D Secure, the PaymentIntent has a
/// status of `requires_action`": `https://docs.stripe.com/payments/paymentintents/lifecycle`).
/// `None` for another status, or without both fields.
pub fn customer_step(intent: &Map<String, Value>) -> Option<CustomerStep> {
    if intent.get("status").and_then(Value::as_str) != Some("requires_action") {
        return None;
    }
    let client_secret = intent.get("client_secret").and_then(Value::as_str)?;
    let next_action = intent
        .get("next_action")
        .and_then(|action| action.get("type"))
        .and_then(Value::as_str)?;
    Some(CustomerStep::Confirm {
        client_secret: client_secret.to_owned(),
        next_action: next_action.to_owned(),
    })
}

/// Whether a JSON value has the type an envelope field needs.
type TypeCheck = fn(&Value) -> bool;

/// The result envelope of a succeeded intent: its `id` (a string), `amount` (an
/// integer), `currency` and `status` (strings), nothing else (no card data, no client
/// secret); `None` when one is missing or of another type.
pub fn envelope(intent: &Map<String, Value>) -> Option<Map<String, Value>> {
    let typed: [(&str, TypeCheck); 4] = [
        ("id", Value::is_string),
        ("amount", Value::is_i64),
        ("currency", Value::is_string),
        ("status", Value::is_string),
    ];
    let mut fields = Map::new();
    for (field, check) in typed {
        let value = intent.get(field).filter(|value| check(value))?;
        fields.insert(field.to_owned(), value.clone());
    }
    Some(fields)
}

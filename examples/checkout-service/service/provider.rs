//! The payment provider over HTTP, as the example's provider contract
//! (`docs/providers.md`, "The checkout service's provider contract") defines it:
//!
//! - `POST {PROVIDER_URL}/v1/charges` with the attempt's `Idempotency-Key` and the
//!   plan's parameters as the JSON body. A 2xx answer is a charge: its `id`,
//!   `amount`, `currency` and `status` (those present) form the result envelope.
//!   402 and every other 4xx but 408, 409, 425 and 429 are a final decline.
//!   Everything else (a timeout, a lost connection, 5xx, 408/409/425/429, a
//!   redirect, a 2xx whose body is no charge) is ambiguous: the charge may exist.
//! - `GET {PROVIDER_URL}/v1/charges?idempotency_key=<key>`: 200 `{"data":[charge…]}`.
//!   No charge is "not found"; one charge with status `succeeded` is found (its
//!   envelope), `failed` is a decline; any other status, more than one charge, any
//!   other answer or any error is "unavailable": nothing is concluded.
//!
//! Redirects are never followed: a payment POST is never replayed somewhere else.
//! Nothing here logs; the answers carry fixed codes only.

use command_journal::strict_json;
use serde_json::{Map, Value};
use std::time::Duration;

/// What one POST answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// A 2xx charge: the envelope's fields.
    Charged(Map<String, Value>),
    /// A final decline.
    Declined,
    /// Nothing final is known; the fixed code says why.
    Ambiguous(&'static str),
}

/// What one lookup answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Looked {
    /// The provider holds a succeeded charge for the key: the envelope's fields.
    Found(Map<String, Value>),
    /// The provider holds a failed charge for the key.
    Declined,
    /// The provider holds no charge for the key.
    NotFound,
    /// Nothing could be concluded; the fixed code says why.
    Unavailable(&'static str),
}

/// The provider's HTTP client: charges and lookups at one base URL.
#[derive(Debug, Clone)]
pub struct Charges {
    client: reqwest::Client,
    charges: reqwest::Url,
    lookup_timeout: Duration,
}

/// Whether a JSON value has the type a field needs.
type TypeCheck = fn(&Value) -> bool;

/// The envelope fields of a charge, and the JSON type each must have.
const ENVELOPE: [(&str, TypeCheck); 4] = [
    ("id", Value::is_string),
    ("amount", Value::is_i64),
    ("currency", Value::is_string),
    ("status", Value::is_string),
];

/// The envelope of `charge`: its `id`, `amount`, `currency` and `status`, those
/// present; `None` when one of them has the wrong type.
pub fn envelope(charge: &Map<String, Value>) -> Option<Map<String, Value>> {
    let mut envelope = Map::new();
    for (field, typed) in ENVELOPE {
        if let Some(value) = charge.get(field) {
            if !typed(value) {
                return None;
            }
            envelope.insert(field.to_owned(), value.clone());
        }
    }
    Some(envelope)
}

impl Charges {
    /// Charges go to `charges` (`{PROVIDER_URL}/v1/charges`); a lookup waits at most
    /// `lookup_timeout`.
    pub fn new(charges: reqwest::Url, lookup_timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            client,
            charges,
            lookup_timeout,
        })
    }

    /// One charge attempt under `key`, bounded by `timeout` (body included).
    pub async fn post(&self, key: &str, parameters: &Value, timeout: Duration) -> Sent {
        let sent = self
            .client
            .post(self.charges.clone())
            .header("Idempotency-Key", key)
            .json(parameters)
            .timeout(timeout)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) if error.is_timeout() => return Sent::Ambiguous("provider_timeout"),
            Err(_) => return Sent::Ambiguous("provider_unreachable"),
        };
        let status = response.status();
        if status.is_success() {
            return match response.text().await {
                Ok(body) => match strict_json::parse_object(&body)
                    .ok()
                    .as_ref()
                    .and_then(envelope)
                {
                    Some(envelope) => Sent::Charged(envelope),
                    None => Sent::Ambiguous("provider_receipt"),
                },
                Err(error) if error.is_timeout() => Sent::Ambiguous("provider_timeout"),
                Err(_) => Sent::Ambiguous("provider_unreachable"),
            };
        }
        match status.as_u16() {
            408 | 409 | 425 | 429 => Sent::Ambiguous("provider_busy"),
            400..=499 => Sent::Declined,
            500..=599 => Sent::Ambiguous("provider_5xx"),
            _ => Sent::Ambiguous("provider_unexpected_status"),
        }
    }

    /// Asks the provider what it holds for `key`.
    pub async fn lookup(&self, key: &str) -> Looked {
        let mut url = self.charges.clone();
        url.query_pairs_mut().append_pair("idempotency_key", key);
        let answered = self
            .client
            .get(url)
            .timeout(self.lookup_timeout)
            .send()
            .await;
        let response = match answered {
            Ok(response) if response.status() == reqwest::StatusCode::OK => response,
            Ok(_) => return Looked::Unavailable("lookup_status"),
            Err(error) if error.is_timeout() => return Looked::Unavailable("lookup_timeout"),
            Err(_) => return Looked::Unavailable("lookup_unreachable"),
        };
        match response.text().await {
            Ok(body) => classify_lookup(&body),
            Err(_) => Looked::Unavailable("lookup_unreachable"),
        }
    }
}

/// A lookup's 200 body, strictly: `{"data":[…]}` with at most one charge.
pub fn classify_lookup(body: &str) -> Looked {
    let Ok(mut object) = strict_json::parse_object(body) else {
        return Looked::Unavailable("lookup_body");
    };
    let charges = match object.remove("data") {
        Some(Value::Array(charges)) => charges,
        _ => return Looked::Unavailable("lookup_body"),
    };
    let charge = match charges.as_slice() {
        [] => return Looked::NotFound,
        [Value::Object(charge)] => charge,
        [_] => return Looked::Unavailable("lookup_body"),
        _ => return Looked::Unavailable("lookup_several"),
    };
    match charge.get("status").and_then(Value::as_str) {
        Some("succeeded") => {
            envelope(charge).map_or(Looked::Unavailable("lookup_body"), Looked::Found)
        }
        Some("failed") => Looked::Declined,
        _ => Looked::Unavailable("lookup_pending"),
    }
}

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
//! Nothing here logs; the answers carry fixed codes only. [`RequestProvider`] is the
//! library's [`Provider`] over these calls, for one request.

use command_journal::strict_json;
use command_journal::{LookupResult, Provider, ResultEnvelope, SendRequest, SendResult};
use serde_json::{Map, Value};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
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
    timeout: Duration,
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
    /// Charges go to `charges` (`{PROVIDER_URL}/v1/charges`); no call waits longer
    /// than `timeout` (`PROVIDER_TIMEOUT_MS`).
    pub fn new(charges: reqwest::Url, timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            client,
            charges,
            timeout,
        })
    }

    /// One charge attempt under `key`, bounded by `deadline` and the client's
    /// timeout (body included).
    pub async fn post(&self, key: &str, parameters: &Value, deadline: Duration) -> Sent {
        let sent = self
            .client
            .post(self.charges.clone())
            .header("Idempotency-Key", key)
            .json(parameters)
            .timeout(deadline.min(self.timeout))
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
        let answered = self.client.get(url).timeout(self.timeout).send().await;
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

/// The library's [`Provider`] over [`Charges`] for one request, noting for the log
/// line whether the provider was called and why a send stayed ambiguous.
pub struct RequestProvider<'a> {
    charges: &'a Charges,
    called: AtomicBool,
    ambiguity: Mutex<Option<&'static str>>,
}

impl<'a> RequestProvider<'a> {
    /// A provider for one request over `charges`.
    pub fn new(charges: &'a Charges) -> Self {
        Self {
            charges,
            called: AtomicBool::new(false),
            ambiguity: Mutex::new(None),
        }
    }

    /// Whether a POST or a lookup was made.
    pub fn called(&self) -> bool {
        self.called.load(Ordering::Relaxed)
    }

    /// Why the last send was ambiguous, if one was.
    pub fn ambiguity(&self) -> Option<&'static str> {
        *self.ambiguity.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ambiguous(&self, code: &'static str) -> SendResult {
        *self.ambiguity.lock().unwrap_or_else(|e| e.into_inner()) = Some(code);
        SendResult::Ambiguous
    }
}

impl Provider for RequestProvider<'_> {
    async fn send(&self, request: SendRequest<'_>) -> SendResult {
        self.called.store(true, Ordering::Relaxed);
        // Marked before the POST: a send the journal stops waiting for is ambiguous.
        *self.ambiguity.lock().unwrap_or_else(|e| e.into_inner()) = Some("provider_timeout");
        let sent = self
            .charges
            .post(request.key, request.parameters, request.deadline)
            .await;
        match sent {
            Sent::Charged(fields) => match ResultEnvelope::new(&Value::Object(fields)) {
                Ok(envelope) => SendResult::Succeeded(envelope),
                Err(_) => self.ambiguous("provider_receipt"),
            },
            Sent::Declined => SendResult::Declined,
            Sent::Ambiguous(code) => self.ambiguous(code),
        }
    }

    async fn lookup(&self, key: &str) -> LookupResult {
        self.called.store(true, Ordering::Relaxed);
        match self.charges.lookup(key).await {
            Looked::Found(fields) => ResultEnvelope::new(&Value::Object(fields))
                .map_or(LookupResult::Unavailable, LookupResult::Found),
            Looked::Declined => LookupResult::Declined,
            Looked::NotFound => LookupResult::NotFound,
            Looked::Unavailable(_) => LookupResult::Unavailable,
        }
    }
}

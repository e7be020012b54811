//! The payment provider over HTTP, as the example's provider contract
//! (`docs/providers.md`, "The checkout service's provider contract") defines it:
//!
//! - `POST {PROVIDER_URL}/v1/charges` with the attempt's `Idempotency-Key` and the
//!   plan's parameters as the JSON body. A 2xx answer is a success only when its body
//!   is a charge of this request ([`Expected::owns`]: the request's `amount` and
//!   `currency`, and the attempt's key where the charge records one in
//!   `metadata.journal_key`) in the final success state (`status` = `succeeded`): its
//!   `id`, `amount`, `currency` and `status` form the result envelope. 402 and every
//!   other 4xx but 408, 409, 425 and 429 are a final decline. Everything else (a
//!   timeout, a lost connection, 5xx, 408/409/425/429, a redirect, a 2xx whose body
//!   is no charge, another request's charge, or a charge in any other state,
//!   `pending` and `failed` included) is ambiguous: the charge may exist, and the
//!   lookup after the cutoff settles it.
//! - `GET {PROVIDER_URL}/v1/charges?idempotency_key=<key>`: 200 `{"data":[charge…]}`.
//!   No charge is "not found"; one charge of this request with status `succeeded` is
//!   found (its envelope), `failed` is a decline; another request's charge, any other
//!   status, more than one charge, any other answer or any error is "unavailable":
//!   nothing is concluded.
//!
//! Redirects are never followed: a payment POST is never replayed somewhere else.
//! Nothing here logs; the answers carry fixed codes only. [`RequestProvider`] is the
//! library's [`Provider`] over these calls, for one request; [`plan`] is the plan a
//! provider of the contract (the stub) binds, as `Stripe::plan` is Stripe's.

use super::config::PlanSettings;
use command_journal::sends::LookupRequest;
use command_journal::strict_json;
use command_journal::{
    JournalError, Provider, ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope,
    SendRequest,
};
use serde_json::{Map, Value};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// What one POST answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Sent {
    /// A 2xx charge of this request in the final success state: the envelope's
    /// fields.
    Charged(Map<String, Value>),
    /// A final decline.
    Declined,
    /// Nothing final is known; the fixed code says why.
    Ambiguous(&'static str),
}

/// What one lookup answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Looked {
    /// The provider holds a succeeded charge of this request for the key: the
    /// envelope's fields.
    Found(Map<String, Value>),
    /// The provider holds a failed charge of this request for the key.
    Declined,
    /// The provider holds no charge for the key.
    NotFound,
    /// Nothing could be concluded; the fixed code says why.
    Unavailable(&'static str),
}

/// The plan's operation: its provider idempotency key is attempt 1's.
pub const OPERATION: &str = "charge";
/// The plan's endpoint.
pub const ENDPOINT: &str = "POST /v1/charges";

/// The plan of one checkout charged through the contract: `settings` (the provider,
/// account, mode, API version, key retention, lookup and settle window its operator
/// declares: the contract cannot know them), operation `charge`, endpoint `POST
/// /v1/charges` and `parameters` (the request's payload). Only the parameters can make
/// it fail once the configuration accepted the settings.
pub fn plan(settings: &PlanSettings, parameters: &Value) -> Result<ProviderPlan, JournalError> {
    ProviderPlan::new(ProviderPlanRequest {
        provider: &settings.provider,
        account: &settings.account,
        mode: &settings.mode,
        api_version: &settings.api_version,
        operation: OPERATION,
        endpoint: ENDPOINT,
        parameters,
        key_retention_seconds: settings.key_retention_seconds,
    })?
    .with_lookup(settings.lookup, settings.lookup_settle_seconds)
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

/// What a charge must show to be evidence about one request: the `amount` and
/// `currency` of the parameters the request sends (the plan's parameters, which are
/// the checkout's payload). A charge is this request's under `key`
/// ([`Expected::owns`]) when
///
/// - its `amount` is the parameters' `amount`, an integer (or both have none);
/// - its `currency` is the parameters' `currency`, a string, ignoring ASCII case (a
///   provider may answer `eur` for `EUR`; or both have none);
/// - its `metadata.journal_key`, where the provider records it, is `key`; a
///   `metadata` that is not an object, or a `journal_key` that is not a string, is no
///   evidence at all. A provider that records no key there (no `metadata`, or none
///   with `journal_key`) is taken at its word that the charge is the key's: the send
///   answered the POST made with it, the lookup was asked for it.
///
/// The recovery job knows no parameters ([`Expected::key_only`]): a charge is its
/// command's when it was found under the attempt's key (derived from the command's
/// key hash, so no other command's request carries it) and records no other key.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// The parameters' `amount` and `currency`; `None` for a key-only expectation.
    parameters: Option<(Option<Value>, Option<Value>)>,
}

impl Expected {
    /// The expectation of a request sending `parameters`.
    pub fn of(parameters: &Value) -> Self {
        Self {
            parameters: Some((
                parameters.get("amount").cloned(),
                parameters.get("currency").cloned(),
            )),
        }
    }

    /// The expectation of a lookup made without the parameters (the recovery job):
    /// only the recorded key is checked.
    pub fn key_only() -> Self {
        Self { parameters: None }
    }

    /// Whether `charge` is this request's charge under `key` (see [`Expected`]).
    pub fn owns(&self, charge: &Map<String, Value>, key: &str) -> bool {
        let (amount, currency) = match &self.parameters {
            Some((amount, currency)) => (
                Self::same_amount(amount.as_ref(), charge.get("amount")),
                Self::same_currency(currency.as_ref(), charge.get("currency")),
            ),
            None => (true, true),
        };
        let recorded_key = match charge.get("metadata") {
            None => true,
            Some(Value::Object(metadata)) => match metadata.get("journal_key") {
                None => true,
                Some(Value::String(recorded)) => recorded == key,
                Some(_) => false,
            },
            Some(_) => false,
        };
        amount && currency && recorded_key
    }

    fn same_amount(asked: Option<&Value>, charged: Option<&Value>) -> bool {
        match (asked, charged) {
            (None, None) => true,
            (Some(asked), Some(charged)) => {
                asked.as_i64().is_some() && asked.as_i64() == charged.as_i64()
            }
            _ => false,
        }
    }

    fn same_currency(asked: Option<&Value>, charged: Option<&Value>) -> bool {
        match (asked, charged) {
            (None, None) => true,
            (Some(Value::String(asked)), Some(Value::String(charged))) => {
                asked.eq_ignore_ascii_case(charged)
            }
            _ => false,
        }
    }
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
    /// timeout (body included). A 2xx is [`Sent::Charged`] only for a charge of this
    /// request (`parameters`' amount and currency, `key`) whose `status` is
    /// `succeeded`; see [`classify_charge`].
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
                Ok(body) => classify_charge(&body, key, &Expected::of(parameters)),
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

    /// Asks the provider what it holds for `key`, as evidence about the request
    /// `expected` describes.
    pub async fn lookup(&self, key: &str, expected: &Expected) -> Looked {
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
            Ok(body) => super::plant::looked(classify_lookup(&body, key, expected)),
            Err(_) => Looked::Unavailable("lookup_unreachable"),
        }
    }
}

/// A 2xx answer's body to a POST under `key`, strictly: a JSON object whose envelope
/// fields have their types (else `provider_receipt`), the charge of the request
/// `expected` describes (else `provider_mismatch`), with `status` = `succeeded` (else
/// `provider_not_final`).
///
/// A 2xx charge that says `failed` is ambiguous, not a decline: the contract's
/// declines are 4xx answers, and a success status over a failed charge contradicts
/// itself, so it is not taken as final. Leaving the attempt ambiguous costs nothing
/// but time: a re-send with the same key before the cutoff creates nothing, and the
/// lookup after the cutoff reads the same `failed` charge as the decline it is.
pub fn classify_charge(body: &str, key: &str, expected: &Expected) -> Sent {
    let Ok(charge) = strict_json::parse_object(body) else {
        return Sent::Ambiguous("provider_receipt");
    };
    let Some(envelope) = envelope(&charge) else {
        return Sent::Ambiguous("provider_receipt");
    };
    if !expected.owns(&charge, key) {
        return Sent::Ambiguous("provider_mismatch");
    }
    match charge.get("status").and_then(Value::as_str) {
        Some("succeeded") => Sent::Charged(envelope),
        _ => Sent::Ambiguous("provider_not_final"),
    }
}

/// A lookup's 200 body for `key`, strictly: `{"data":[…]}` with at most one charge,
/// whose envelope fields have their types and which is the charge of the request
/// `expected` describes (else `lookup_mismatch`): `succeeded` is found, `failed` a
/// decline, any other status unavailable.
pub fn classify_lookup(body: &str, key: &str, expected: &Expected) -> Looked {
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
    let Some(envelope) = envelope(charge) else {
        return Looked::Unavailable("lookup_body");
    };
    if !expected.owns(charge, key) {
        return Looked::Unavailable("lookup_mismatch");
    }
    match charge.get("status").and_then(Value::as_str) {
        Some("succeeded") => Looked::Found(envelope),
        Some("failed") => Looked::Declined,
        _ => Looked::Unavailable("lookup_pending"),
    }
}

/// The library's [`Provider`] over [`Charges`] for one request, noting for the log
/// line whether the provider was called and why a send stayed ambiguous. It holds
/// what a charge of the request must show ([`Expected`]): a send checks its answer
/// against the parameters it sent, a lookup (which gets the key only) against these.
pub struct RequestProvider<'a> {
    charges: &'a Charges,
    expected: Expected,
    called: AtomicBool,
    ambiguity: Mutex<Option<&'static str>>,
}

impl<'a> RequestProvider<'a> {
    /// A provider for one request over `charges`, whose plan's parameters are
    /// `parameters` (the checkout's payload).
    pub fn new(charges: &'a Charges, parameters: &Value) -> Self {
        Self {
            charges,
            expected: Expected::of(parameters),
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

    fn ambiguous(&self, code: &'static str) -> ProviderAnswer {
        *self.ambiguity.lock().unwrap_or_else(|e| e.into_inner()) = Some(code);
        ProviderAnswer::Unknown
    }
}

impl Provider for RequestProvider<'_> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        self.called.store(true, Ordering::Relaxed);
        // Marked before the POST: a send the journal stops waiting for is ambiguous.
        *self.ambiguity.lock().unwrap_or_else(|e| e.into_inner()) = Some("provider_timeout");
        let sent = self
            .charges
            .post(&request.key, &request.parameters, request.deadline)
            .await;
        match sent {
            Sent::Charged(fields) => match ResultEnvelope::new(&Value::Object(fields)) {
                Ok(envelope) => ProviderAnswer::Succeeded(envelope),
                Err(_) => self.ambiguous("provider_receipt"),
            },
            Sent::Declined => ProviderAnswer::Declined,
            Sent::Ambiguous(code) => self.ambiguous(code),
        }
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        self.called.store(true, Ordering::Relaxed);
        match self.charges.lookup(key, &self.expected).await {
            Looked::Found(fields) => ResultEnvelope::new(&Value::Object(fields))
                .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
            Looked::Declined => ProviderAnswer::Declined,
            Looked::NotFound => ProviderAnswer::NotFound,
            Looked::Unavailable(_) => ProviderAnswer::Unknown,
        }
    }
}

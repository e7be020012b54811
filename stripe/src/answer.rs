//! Every answer Stripe documents, classified: first in this package's own vocabulary
//! ([`SendAnswer`], [`LookupAnswer`], pure functions of the HTTP status, headers and
//! body), then in the journal's ([`send_result`], [`lookup_result`]). The package's
//! `README.md` gives the table; each row is tested against the stand-in.

use crate::customer::CustomerStep;
use crate::intent::{Expected, IntentState, customer_step, state};
use command_journal::sends::{ActionName, CustomerAction, Handoff};
use command_journal::strict_json;
use command_journal::{ProviderAnswer, ResultEnvelope};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value};
use std::fmt;

/// What one create-and-confirm answered. `Debug` shows no field of an intent.
#[derive(Clone, PartialEq)]
pub enum SendAnswer {
    /// A `succeeded` intent of this request: the envelope's fields.
    Succeeded(Map<String, Value>),
    /// Final, no money moved: a 402 `card_error` decline, a 400 `invalid_request_error`
    /// (these parameters can never be charged), or an intent of this request that is
    /// `canceled` or back in `requires_payment_method` with its `last_payment_error`.
    Declined(&'static str),
    /// Nothing final is known yet: re-send the same key later (a timeout, a lost
    /// connection, a 409 for a request with the key still executing, a 429, a 502 to
    /// 599 answered fresh, an intent still `processing` or `requires_action`, …).
    Unknown(&'static str),
    /// A `requires_action` intent of this request, answered fresh: the customer must
    /// authenticate (3-D Secure) in the browser, with the intent's client secret.
    CustomerMustAct(CustomerStep),
    /// A 200 of an open intent of this request (`processing`, `requires_action`, ...)
    /// replayed under the key (`Idempotent-Replayed: true`): the first answer's state,
    /// stale. The intent's id, to read its current state by at once
    /// ([`Stripe::retrieve_by_id`](crate::Stripe::retrieve_by_id)); never re-sent.
    ReplayedOpen(String),
    /// A 500 answered fresh: Stripe documents its result as indeterminate (it may
    /// complete the request later, during an incident's remediation) and stores it
    /// under the key, so a re-send only hears it again. Only the intent's final state,
    /// looked up, can tell; no absence of it is ever proven.
    Indeterminate,
    /// A 5xx replayed under the key (`Idempotent-Replayed: true`): Stripe stored the
    /// first request's 500 and answers it for as long as it keeps the key, so no
    /// re-send of this key will ever tell more. Only a lookup can.
    ReplayedUnknown,
    /// 401, 403 or 404: the key, its permissions, the account or the API base is
    /// wrong. Nothing ran; once corrected, the same key may be sent again.
    Configuration(&'static str),
    /// 400 `idempotency_error`: the key was first used with other parameters. The plan
    /// binding makes that impossible, so it is a defect, and never evidence: the first
    /// request may have charged.
    Defect(&'static str),
}

impl SendAnswer {
    /// A fixed code naming the answer, for a log line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::CustomerMustAct(_) => "customer_must_act",
            Self::ReplayedOpen(_) => "provider_replayed_open",
            Self::ReplayedUnknown => "provider_replayed_5xx",
            Self::Indeterminate => "provider_500",
            Self::Declined(code)
            | Self::Unknown(code)
            | Self::Configuration(code)
            | Self::Defect(code) => code,
        }
    }
}

impl fmt::Debug for SendAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An intent's fields (its id, amount and currency) stay out of logs, as the
        // journal's result envelope keeps them.
        match self {
            Self::Succeeded(_) => f.write_str("Succeeded(<redacted>)"),
            Self::Declined(code) => f.debug_tuple("Declined").field(code).finish(),
            Self::Unknown(code) => f.debug_tuple("Unknown").field(code).finish(),
            Self::CustomerMustAct(step) => f.debug_tuple("CustomerMustAct").field(step).finish(),
            Self::ReplayedOpen(_) => f.write_str("ReplayedOpen(<redacted>)"),
            Self::ReplayedUnknown => f.write_str("ReplayedUnknown"),
            Self::Indeterminate => f.write_str("Indeterminate"),
            Self::Configuration(code) => f.debug_tuple("Configuration").field(code).finish(),
            Self::Defect(code) => f.debug_tuple("Defect").field(code).finish(),
        }
    }
}

/// What one lookup of a key found. `Debug` shows no field of an intent.
#[derive(Clone, PartialEq)]
pub enum LookupAnswer {
    /// A `succeeded` intent of this request: the envelope's fields.
    Found(Map<String, Value>),
    /// An intent of this request that is final without money moved.
    Declined,
    /// No intent carries the key (the journal decides whether that proves anything).
    NotFound,
    /// Nothing could be concluded; the fixed code says why.
    Unavailable(&'static str),
}

impl fmt::Debug for LookupAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Found(_) => f.write_str("Found(<redacted>)"),
            Self::Declined => f.write_str("Declined"),
            Self::NotFound => f.write_str("NotFound"),
            Self::Unavailable(code) => f.debug_tuple("Unavailable").field(code).finish(),
        }
    }
}

/// The journal's answer for a send. The one place where this package's vocabulary
/// meets the journal's.
pub fn send_result(answer: SendAnswer) -> ProviderAnswer {
    match answer {
        SendAnswer::Succeeded(fields) => ResultEnvelope::new(&Value::Object(fields))
            .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
        SendAnswer::Declined(_) => ProviderAnswer::Declined,
        SendAnswer::Unknown(_)
        | SendAnswer::Configuration(_)
        | SendAnswer::Defect(_)
        | SendAnswer::ReplayedOpen(_) => ProviderAnswer::Unknown,
        SendAnswer::CustomerMustAct(step) => customer_result(step),
        // The key can no longer tell: the journal looks it up at once, never re-sends,
        // and never takes a "not found" for an absence (Stripe may still complete it).
        SendAnswer::ReplayedUnknown => ProviderAnswer::ReplayedUnknown,
        SendAnswer::Indeterminate => ProviderAnswer::Indeterminate,
    }
}

/// The journal's answer for a retrieve.
pub fn retrieve_result(answer: RetrieveAnswer) -> ProviderAnswer {
    match answer {
        RetrieveAnswer::Succeeded(fields) => ResultEnvelope::new(&Value::Object(fields))
            .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
        RetrieveAnswer::Declined(_) => ProviderAnswer::Declined,
        RetrieveAnswer::CustomerMustAct(step) => customer_result(step),
        RetrieveAnswer::Closed => closed_result(),
        RetrieveAnswer::Unknown(_) => ProviderAnswer::Unknown,
    }
}

/// The journal's "the customer must act": the secret or the page wrapped as a
/// `Handoff`, never shown. A next action whose name is not of the journal's alphabet
/// is unknown (the step cannot be handed over as Stripe named it).
fn customer_result(step: CustomerStep) -> ProviderAnswer {
    let action = match step {
        CustomerStep::Confirm {
            client_secret,
            next_action,
        } => match ActionName::new(&next_action) {
            Ok(next_action) => CustomerAction::Confirm {
                client_secret: Handoff::new(client_secret),
                next_action,
            },
            Err(_) => return ProviderAnswer::Unknown,
        },
        CustomerStep::Open { url } => CustomerAction::Open {
            url: Handoff::new(url),
        },
    };
    ProviderAnswer::CustomerMustAct(action)
}

/// The journal's "closed with nothing charged": a final state read by id.
fn closed_result() -> ProviderAnswer {
    ProviderAnswer::Closed
}

/// What one retrieve of an attempt's object found, read by id (its current state).
/// `Debug` shows no field of the object.
#[derive(Clone, PartialEq)]
pub enum RetrieveAnswer {
    /// A `succeeded` intent (a `paid` session) of this request: the envelope's fields.
    Succeeded(Map<String, Value>),
    /// Final, nothing charged, a refusal: an intent canceled after its confirmation
    /// was refused (a failed 3-D Secure challenge, a decline); the code says which.
    Declined(&'static str),
    /// The customer may still pay: a `requires_action` intent, an `open` session.
    CustomerMustAct(CustomerStep),
    /// Final, nothing charged and nothing chargeable under the key any more: an
    /// intent canceled with no refused confirmation, an `expired` session.
    Closed,
    /// Nothing final is known; the fixed code says why.
    Unknown(&'static str),
}

impl RetrieveAnswer {
    /// A fixed code naming the answer, for a log line.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::CustomerMustAct(_) => "customer_must_act",
            Self::Closed => "closed",
            Self::Declined(code) | Self::Unknown(code) => code,
        }
    }
}

impl fmt::Debug for RetrieveAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Succeeded(_) => f.write_str("Succeeded(<redacted>)"),
            Self::Declined(code) => f.debug_tuple("Declined").field(code).finish(),
            Self::CustomerMustAct(step) => f.debug_tuple("CustomerMustAct").field(step).finish(),
            Self::Closed => f.write_str("Closed"),
            Self::Unknown(code) => f.debug_tuple("Unknown").field(code).finish(),
        }
    }
}

/// The journal's answer for a lookup.
pub fn lookup_result(answer: LookupAnswer) -> ProviderAnswer {
    match answer {
        LookupAnswer::Found(fields) => ResultEnvelope::new(&Value::Object(fields))
            .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
        LookupAnswer::Declined => ProviderAnswer::Declined,
        LookupAnswer::NotFound => ProviderAnswer::NotFound,
        LookupAnswer::Unavailable(_) => ProviderAnswer::Unknown,
    }
}

/// Whether an answer is Stripe's replay of a key's stored one
/// (`Idempotent-Replayed: true`).
pub fn replayed(headers: &HeaderMap) -> bool {
    headers
        .get("idempotent-replayed")
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"true"))
}

/// A create-and-confirm's answer under `key`, for the request `expected` describes.
pub fn classify_send(
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    key: &str,
    expected: &Expected,
) -> SendAnswer {
    let replayed = replayed(headers);
    match status.as_u16() {
        200 => match strict_json::parse_object(body) {
            Ok(intent) if expected.owns(&intent, key) => match state(&intent) {
                IntentState::Succeeded(fields) => SendAnswer::Succeeded(fields),
                IntentState::Refused => SendAnswer::Declined("declined"),
                // The first answer's state, stored: only a read by id tells the
                // current one (`https://docs.stripe.com/api/idempotent_requests`).
                IntentState::Open(status) if replayed => match intent.get("id") {
                    Some(Value::String(id)) => SendAnswer::ReplayedOpen(id.clone()),
                    _ => SendAnswer::Unknown(status),
                },
                IntentState::Open("requires_action") => customer_step(&intent).map_or(
                    SendAnswer::Unknown("requires_action"),
                    SendAnswer::CustomerMustAct,
                ),
                IntentState::Open(status) => SendAnswer::Unknown(status),
            },
            Ok(intent)
                if intent.get("object").and_then(Value::as_str) == Some("payment_intent") =>
            {
                SendAnswer::Unknown("provider_mismatch")
            }
            _ => SendAnswer::Unknown("provider_receipt"),
        },
        400 | 402 => refusal(status.as_u16(), body, key, expected),
        401 => SendAnswer::Configuration("provider_authentication"),
        403 => SendAnswer::Configuration("provider_permission"),
        404 => SendAnswer::Configuration("provider_not_found"),
        409 => SendAnswer::Unknown("provider_key_in_use"),
        429 => SendAnswer::Unknown("provider_rate_limited"),
        500..=599 if replayed => SendAnswer::ReplayedUnknown,
        // Stripe's idempotency layer stores a 500 (and only a 500) under the key, and
        // its result is indeterminate (`https://docs.stripe.com/error-low-level`,
        // server errors). A fresh 502 to 599 is not stored: a re-send under the same
        // key learns what happened, as after a network error.
        500 => SendAnswer::Indeterminate,
        501..=599 => SendAnswer::Unknown("provider_5xx"),
        _ => SendAnswer::Unknown("provider_unexpected_status"),
    }
}

/// A 400 or 402 error body: `{"error": {"type": …, "payment_intent": …}}`.
fn refusal(status: u16, body: &str, key: &str, expected: &Expected) -> SendAnswer {
    let Ok(mut object) = strict_json::parse_object(body) else {
        return SendAnswer::Unknown("provider_receipt");
    };
    let Some(Value::Object(error)) = object.remove("error") else {
        return SendAnswer::Unknown("provider_receipt");
    };
    let code = match (status, error.get("type").and_then(Value::as_str)) {
        (400, Some("idempotency_error")) => {
            return SendAnswer::Defect("provider_idempotency_mismatch");
        }
        (400, Some("invalid_request_error")) => "invalid_request",
        (402, Some("card_error")) => "declined",
        _ => return SendAnswer::Unknown("provider_unexpected_error"),
    };
    // A refusal that carries the intent is final only if that intent is this request's
    // and moved no money.
    match error.get("payment_intent") {
        None => SendAnswer::Declined(code),
        Some(Value::Object(intent)) if expected.owns(intent, key) => match state(intent) {
            IntentState::Refused | IntentState::Open("requires_payment_method") => {
                SendAnswer::Declined(code)
            }
            _ => SendAnswer::Unknown("provider_contradiction"),
        },
        Some(Value::Object(_)) => SendAnswer::Unknown("provider_mismatch"),
        Some(_) => SendAnswer::Unknown("provider_receipt"),
    }
}

/// A search's answer for `key`: `{"object":"search_result","data":[…],"has_more":…}`.
pub fn classify_search(
    status: StatusCode,
    body: &str,
    key: &str,
    expected: &Expected,
) -> LookupAnswer {
    match status.as_u16() {
        200 => match page(body, "search_result") {
            Some((_, true)) => LookupAnswer::Unavailable("lookup_several"),
            Some((intents, false)) => evidence(&intents, key, expected),
            None => LookupAnswer::Unavailable("lookup_body"),
        },
        // Search is not offered in every region: there, configure the list method
        // (`LookupMethod::List`), whose plans say how far back it sees.
        400 => LookupAnswer::Unavailable("search_unavailable"),
        _ => LookupAnswer::Unavailable("lookup_status"),
    }
}

/// One page of a list or search: its intents and `has_more`; `None` unless the body
/// is exactly that object (every entry a JSON object).
pub fn page(body: &str, object: &str) -> Option<(Vec<Map<String, Value>>, bool)> {
    let mut page = strict_json::parse_object(body).ok()?;
    if page.get("object").and_then(Value::as_str) != Some(object) {
        return None;
    }
    let has_more = page.get("has_more").and_then(Value::as_bool)?;
    let Some(Value::Array(data)) = page.remove("data") else {
        return None;
    };
    let intents = data
        .into_iter()
        .map(|entry| match entry {
            Value::Object(intent) => Some(intent),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((intents, has_more))
}

/// The intents of `intents` that carry `key` in their metadata.
pub fn keyed(intents: Vec<Map<String, Value>>, key: &str) -> Vec<Map<String, Value>> {
    intents
        .into_iter()
        .filter(|intent| {
            intent
                .get("metadata")
                .and_then(|metadata| metadata.get("journal_key"))
                .and_then(Value::as_str)
                == Some(key)
        })
        .collect()
}

/// What the intents found for `key` prove: none is not found; one of this request's
/// is found, declined or (still open) unavailable; one of another request, or more
/// than one, is unavailable.
pub fn evidence(intents: &[Map<String, Value>], key: &str, expected: &Expected) -> LookupAnswer {
    match intents {
        [] => LookupAnswer::NotFound,
        [intent] if !expected.owns(intent, key) => LookupAnswer::Unavailable("lookup_mismatch"),
        [intent] => match state(intent) {
            IntentState::Succeeded(fields) => LookupAnswer::Found(fields),
            IntentState::Refused => LookupAnswer::Declined,
            IntentState::Open(_) => LookupAnswer::Unavailable("lookup_pending"),
        },
        _ => LookupAnswer::Unavailable("lookup_several"),
    }
}

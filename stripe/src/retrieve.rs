//! A PaymentIntent read by its id for its current state, and canceled when the
//! journal asks: how a `requires_action` intent (the customer authenticating) and a
//! replayed answer of an open one are settled. The id is never stored: it is learned
//! from the key, by a re-send of the same key and form before the key's cutoff
//! (Stripe replays the stored answer, which names the intent:
//! `https://docs.stripe.com/api/idempotent_requests`), or through the lookup after it.

use crate::answer::RetrieveAnswer;
use crate::charge::Charge;
use crate::client::{Stripe, journal_key};
use crate::intent::{Expected, IntentState, customer_step, state};
use command_journal::strict_json;
use reqwest::Method;
use serde_json::{Map, Value};
use std::time::Duration;

/// What the journal asks of one retrieve of an intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retrieval {
    /// Whether the key may still be re-sent to learn the intent's id (before the
    /// attempt's cutoff, decided by the journal); otherwise the lookup finds it.
    pub replayable: bool,
    /// Cancel the intent if it is still open, then answer its final state.
    pub cancel: bool,
    /// End an intent the customer's last try left refused (back in
    /// `requires_payment_method` with a `last_payment_error`): cancel it, then answer
    /// its refusal. The journal asks it under a lease only (`RetrieveRequest::end_refusal`).
    pub end_refusal: bool,
    /// The bound on each request.
    pub deadline: Duration,
}

/// An intent of this request: its fields, and whether they are its current state
/// (a fresh answer) or possibly stale (a replay, a search result).
struct Found {
    intent: Map<String, Value>,
    current: bool,
}

impl Stripe {
    /// The current state of the intent the key `key` made for `charge` (`None`: a
    /// recovery job's, which knows only the key and cannot re-send it), canceled first
    /// when `retrieval.cancel` and it is still open.
    ///
    /// A refused confirmation left in `requires_payment_method` (a failed 3-D Secure
    /// challenge, a decline after it) is not final: the customer holds the client
    /// secret and "the payment can be retried" on the same intent
    /// (`https://docs.stripe.com/payments/paymentintents/lifecycle`; the failed
    /// challenge's own error, `payment_intent_authentication_failure`, invites "a new
    /// PaymentMethod to attempt to fulfill this PaymentIntent again":
    /// `https://docs.stripe.com/error-codes#payment-intent-authentication-failure`).
    /// It answers unknown until the journal asks to cancel (`retrieval.cancel`: under
    /// its lease, from `act_by` on); canceled then, it answers declined. The adapter
    /// never cancels on its own.
    pub async fn retrieve_intent(
        &self,
        key: &str,
        charge: Option<&Charge>,
        expected: &Expected,
        retrieval: Retrieval,
    ) -> RetrieveAnswer {
        if !journal_key(key) {
            return RetrieveAnswer::Unknown("provider_key");
        }
        let found = match (retrieval.replayable, charge) {
            (true, Some(charge)) => self.replay(key, charge, expected, retrieval.deadline).await,
            (true, None) => Err("retrieve_parameters"),
            (false, _) => self.locate(key, expected).await,
        };
        let found = match found {
            Ok(found) => found,
            Err(code) => return RetrieveAnswer::Unknown(code),
        };
        let intent = if found.current {
            found.intent
        } else {
            let Some(id) = id_of(&found.intent) else {
                return RetrieveAnswer::Unknown("provider_receipt");
            };
            match self
                .intent_by_id(&id, key, expected, retrieval.deadline)
                .await
            {
                Ok(intent) => intent,
                Err(code) => return RetrieveAnswer::Unknown(code),
            }
        };
        self.settle(intent, key, expected, retrieval).await
    }

    /// The current state of the intent `id`, when a replay named it
    /// ([`SendAnswer::ReplayedOpen`](crate::SendAnswer::ReplayedOpen)): read at once,
    /// never canceled.
    pub async fn retrieve_by_id(
        &self,
        id: &str,
        key: &str,
        expected: &Expected,
        deadline: Duration,
    ) -> RetrieveAnswer {
        match self.intent_by_id(id, key, expected, deadline).await {
            Ok(intent) => {
                let retrieval = Retrieval {
                    replayable: true,
                    cancel: false,
                    end_refusal: false,
                    deadline,
                };
                self.settle(intent, key, expected, retrieval).await
            }
            Err(code) => RetrieveAnswer::Unknown(code),
        }
    }

    /// What the current `intent` answers, after canceling it where it must be.
    async fn settle(
        &self,
        intent: Map<String, Value>,
        key: &str,
        expected: &Expected,
        retrieval: Retrieval,
    ) -> RetrieveAnswer {
        let refused = matches!(intent.get("last_payment_error"), Some(Value::Object(_)));
        let status = intent.get("status").and_then(Value::as_str).unwrap_or("");
        // Only when the journal asks: the customer may still confirm an open intent
        // (a refused one too, with another payment method, as the failed challenge's
        // message invites), so a cancel is the journal's decision, never the
        // adapter's: the window ended (`cancel`), or a read under its lease (the
        // customer's return) ends a refusal (`end_refusal`).
        let open = matches!(
            status,
            "requires_action" | "requires_payment_method" | "requires_confirmation"
        );
        let ends_refusal = retrieval.end_refusal && refused && status == "requires_payment_method";
        let cancel = open && (retrieval.cancel || ends_refusal);
        if !cancel {
            return current(&intent);
        }
        let Some(id) = id_of(&intent) else {
            return RetrieveAnswer::Unknown("provider_receipt");
        };
        let reason = if refused { None } else { Some("abandoned") };
        match self
            .cancel_intent(&id, reason, key, expected, retrieval.deadline)
            .await
        {
            Ok(intent) => current(&intent),
            // Not cancelable any more (the customer confirmed meanwhile): read it
            // again, once, and answer that state without another cancel.
            Err("provider_unexpected_state") => {
                match self
                    .intent_by_id(&id, key, expected, retrieval.deadline)
                    .await
                {
                    Ok(intent) => match current(&intent) {
                        RetrieveAnswer::CustomerMustAct(_) => {
                            RetrieveAnswer::Unknown("requires_action")
                        }
                        other => other,
                    },
                    Err(code) => RetrieveAnswer::Unknown(code),
                }
            }
            Err(code) => RetrieveAnswer::Unknown(code),
        }
    }

    /// The key's intent from a re-send of the same key and form: a replay names it
    /// (its state then is the first answer's); a fresh answer is its current state.
    async fn replay(
        &self,
        key: &str,
        charge: &Charge,
        expected: &Expected,
        deadline: Duration,
    ) -> Result<Found, &'static str> {
        let form = charge.form(key);
        let answered = self
            .call(
                Method::POST,
                "/v1/payment_intents",
                Some(key),
                Some(&form),
                deadline,
            )
            .await?;
        let current = !answered.replayed();
        let mut body = strict_json::parse_object(&answered.body).map_err(|_| "provider_receipt")?;
        let intent = match answered.status.as_u16() {
            200 => body,
            400 | 402 => match body.remove("error") {
                Some(Value::Object(mut error)) => match error.remove("payment_intent") {
                    Some(Value::Object(intent)) => intent,
                    // A refusal before any intent: nothing was made under the key.
                    _ => return Err("provider_no_intent"),
                },
                _ => return Err("provider_receipt"),
            },
            500..=599 if !current => return Err("provider_replayed_5xx"),
            409 => return Err("provider_key_in_use"),
            _ => return Err("provider_unexpected_status"),
        };
        if !expected.owns(&intent, key) {
            return Err("provider_mismatch");
        }
        Ok(Found { intent, current })
    }

    /// The key's intent through the lookup: exactly one of this request's.
    async fn locate(&self, key: &str, expected: &Expected) -> Result<Found, &'static str> {
        match self.located(key).await?.as_slice() {
            [intent] if expected.owns(intent, key) => Ok(Found {
                intent: intent.clone(),
                current: false,
            }),
            [_] => Err("lookup_mismatch"),
            [] => Err("lookup_not_found"),
            _ => Err("lookup_several"),
        }
    }

    /// `GET /v1/payment_intents/{id}`: read after write, the intent as it is now.
    pub(crate) async fn intent_by_id(
        &self,
        id: &str,
        key: &str,
        expected: &Expected,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        if !object_id(id) {
            return Err("provider_receipt");
        }
        let path = format!("/v1/payment_intents/{id}");
        let answered = self.call(Method::GET, &path, None, None, deadline).await?;
        if answered.status != reqwest::StatusCode::OK {
            return Err("retrieve_status");
        }
        let intent = strict_json::parse_object(&answered.body).map_err(|_| "provider_receipt")?;
        expected
            .owns(&intent, key)
            .then_some(intent)
            .ok_or("provider_mismatch")
    }

    /// `POST /v1/payment_intents/{id}/cancel`: the canceled intent, or
    /// `provider_unexpected_state` when its status no longer allows it ("Returns an
    /// error if the PaymentIntent is already canceled or isn't in a cancelable state":
    /// `https://docs.stripe.com/api/payment_intents/cancel`).
    async fn cancel_intent(
        &self,
        id: &str,
        reason: Option<&'static str>,
        key: &str,
        expected: &Expected,
        deadline: Duration,
    ) -> Result<Map<String, Value>, &'static str> {
        let path = format!("/v1/payment_intents/{id}/cancel");
        let form: Vec<(&'static str, String)> = reason
            .map(|reason| ("cancellation_reason", reason.to_owned()))
            .into_iter()
            .collect();
        let answered = self
            .call(Method::POST, &path, None, Some(&form), deadline)
            .await?;
        match answered.status.as_u16() {
            200 => {
                let intent =
                    strict_json::parse_object(&answered.body).map_err(|_| "provider_receipt")?;
                expected
                    .owns(&intent, key)
                    .then_some(intent)
                    .ok_or("provider_mismatch")
            }
            400 => Err("provider_unexpected_state"),
            _ => Err("provider_unexpected_status"),
        }
    }
}

/// What an intent of this request, read by id, answers now.
fn current(intent: &Map<String, Value>) -> RetrieveAnswer {
    let refused = matches!(intent.get("last_payment_error"), Some(Value::Object(_)));
    match state(intent) {
        IntentState::Succeeded(fields) => RetrieveAnswer::Succeeded(fields),
        // "Once canceled, no additional charges will be made by the PaymentIntent
        // and any operations on the PaymentIntent will fail with an error"
        // (`https://docs.stripe.com/api/payment_intents/cancel`): final. After a refused
        // confirmation, the refusal; otherwise closed with nothing charged.
        IntentState::Refused
            if intent.get("status").and_then(Value::as_str) == Some("canceled") =>
        {
            if refused {
                RetrieveAnswer::Declined("declined")
            } else {
                RetrieveAnswer::Closed
            }
        }
        // A refused confirmation still open (the cancel above was not asked or
        // failed): the customer may retry on it. Not final.
        IntentState::Refused => RetrieveAnswer::Unknown("requires_payment_method"),
        IntentState::Open("requires_action") => customer_step(intent).map_or(
            RetrieveAnswer::Unknown("requires_action"),
            RetrieveAnswer::CustomerMustAct,
        ),
        IntentState::Open(status) => RetrieveAnswer::Unknown(status),
    }
}

/// An object's `id`, if it is one a path can carry.
fn id_of(object: &Map<String, Value>) -> Option<String> {
    object
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| object_id(id))
        .map(str::to_owned)
}

/// Whether `id` has the shape of Stripe's object ids (letters, digits and `_`, at
/// most 255): a path segment as it is.
pub(crate) fn object_id(id: &str) -> bool {
    (1..=255).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

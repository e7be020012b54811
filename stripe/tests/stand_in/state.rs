//! What the stand-in holds, and Stripe's documented semantics over it: PaymentIntents
//! made and confirmed at once, answered by the payment method's behaviour; the first
//! answer of each idempotency key stored (once its execution began) and replayed with
//! `Idempotent-Replayed: true`; 409 while a request with the key executes; 400
//! `idempotency_error` for the key with other parameters; keys pruned 24 h after
//! their first use; a search that sees an intent only `search_lag` seconds after it
//! was made; lists, newest first, read after write.

use serde_json::{Value, json};
use std::collections::HashMap;

/// The prefix of every intent id: a canary, so that a test finds an id in any output
/// it must not reach.
pub const INTENT_PREFIX: &str = "pi_CANARYstandin";

/// How long a key is kept.
pub const KEY_RETENTION_SECONDS: i64 = 86_400;

/// What a create-and-confirm does with its payment method, as Stripe's test payment
/// methods do (the `pm_standin_…` ones are the stand-in's own, for the 200 answers no
/// test card gives on a create).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// `pm_card_visa`: `succeeded`.
    Succeeds,
    /// `pm_card_chargeDeclined`: 402 `card_error`, the intent back in
    /// `requires_payment_method` with its `last_payment_error`.
    Declines,
    /// `pm_card_authenticationRequired`: 200 `requires_action`.
    RequiresAction,
    /// `pm_standin_processing`: 200 `processing`.
    Processing,
    /// `pm_standin_refused`: 200 `requires_payment_method` with a `last_payment_error`.
    Refused,
    /// `pm_standin_canceled`: 200 `canceled`.
    Canceled,
}

impl Behaviour {
    /// The behaviour of a payment method id, if the stand-in knows it.
    pub fn of(payment_method: &str) -> Option<Self> {
        Some(match payment_method {
            "pm_card_visa" => Self::Succeeds,
            "pm_card_chargeDeclined" => Self::Declines,
            "pm_card_authenticationRequired" => Self::RequiresAction,
            "pm_standin_processing" => Self::Processing,
            "pm_standin_refused" => Self::Refused,
            "pm_standin_canceled" => Self::Canceled,
            _ => return None,
        })
    }

    fn status(self) -> &'static str {
        match self {
            Self::Succeeds => "succeeded",
            Self::Declines | Self::Refused => "requires_payment_method",
            Self::RequiresAction => "requires_action",
            Self::Processing => "processing",
            Self::Canceled => "canceled",
        }
    }
}

/// A fault for the first request of the next new key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The endpoint fails with a 500 `api_error` after execution began: the 500 is
    /// stored under the key and replayed. With `create_intent`, the intent was made
    /// (and confirmed as its payment method says) before the failure.
    StoredServerError {
        /// Whether the intent exists after the failure.
        create_intent: bool,
    },
    /// Answered with this status before execution began: nothing made, nothing stored
    /// (a 429 rate limit, a 503 at the edge).
    Unstored(u16),
    /// A 500 stored under the key before the intent was made, which Stripe's incident
    /// remediation completes `after` seconds later (on the stand-in's clock): "if
    /// creating a charge returns a 500 error but we detect that the information has
    /// gone out a payment network, we'll try to roll it forward"
    /// (`https://docs.stripe.com/error-low-level`). The intent is made then, as the
    /// request asked (its `created` is that time); the key still replays the 500.
    StoredServerErrorRolledForward {
        /// Seconds from the stored 500 to the intent.
        after: i64,
    },
}

/// One PaymentIntent.
#[derive(Debug, Clone)]
pub struct Intent {
    pub id: String,
    pub amount: i64,
    pub currency: String,
    /// Its status now (a challenge, a cancel or a hosted page moves it).
    pub status: &'static str,
    /// The error of its last refused confirmation (`last_payment_error`).
    pub last_payment_error: Option<Value>,
    /// When it was canceled, and why.
    pub canceled: Option<(i64, Option<String>)>,
    pub payment_method: Option<String>,
    pub metadata: serde_json::Map<String, Value>,
    pub created: i64,
    /// The Connect account it was made on (`None`: the key's own).
    pub account: Option<String>,
    /// The Checkout Session it pays, if any (Stripe refuses to cancel such an intent).
    pub session: Option<String>,
}

impl Intent {
    /// The client secret Stripe hands out with it (a canary, so that a test finds it
    /// in any output it must not reach).
    pub fn client_secret(&self) -> String {
        format!("{}_secret_CANARYclientSecret", self.id)
    }

    /// The intent as Stripe answers it.
    pub fn json(&self) -> Value {
        let status = self.status;
        json!({
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount,
            "amount_capturable": 0,
            "amount_received": if status == "succeeded" { self.amount } else { 0 },
            "canceled_at": self.canceled.as_ref().map(|(at, _)| *at),
            "cancellation_reason": self.canceled.as_ref().and_then(|(_, why)| why.clone()),
            "capture_method": "automatic",
            "client_secret": self.client_secret(),
            "confirmation_method": "automatic",
            "created": self.created,
            "currency": self.currency,
            "description": null,
            "last_payment_error": self.last_payment_error,
            "livemode": false,
            "metadata": self.metadata,
            "next_action": if status == "requires_action" {
                Some(json!({"type": "use_stripe_sdk", "use_stripe_sdk": {}}))
            } else {
                None
            },
            "payment_method": self.payment_method,
            "payment_method_types": ["card"],
            "status": status,
        })
    }
}

/// The error of a refused card (`pm_card_chargeDeclined`).
pub fn card_declined() -> Value {
    json!({
        "type": "card_error",
        "code": "card_declined",
        "decline_code": "generic_decline",
        "message": "Your card was declined.",
    })
}

/// The error a failed 3-D Secure challenge leaves on the intent: "If the customer
/// fails authentication, the PaymentIntent's status returns to
/// `requires_payment_method`" with this code
/// (`https://docs.stripe.com/payments/3d-secure/authentication-flow`).
pub fn authentication_failed() -> Value {
    json!({
        "type": "card_error",
        "code": "payment_intent_authentication_failure",
        "message": "We are unable to authenticate your payment method. Please choose a different payment method and try again.",
    })
}

/// An error answer's body.
pub fn error(kind: &str, code: Option<&str>, message: &str) -> Value {
    let mut error = json!({"type": kind, "message": message});
    if let Some(code) = code {
        error["code"] = json!(code);
    }
    json!({ "error": error })
}

/// A stored or fresh answer: status and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub replayed: bool,
}

impl Answer {
    /// A fresh answer.
    pub fn new(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            replayed: false,
        }
    }
}

/// An idempotency key's place: the account and the key.
pub type Slot = (Option<String>, String);

/// A `404 resource_missing` for an object of `kind`.
pub fn missing(kind: &str) -> Answer {
    let mut body = error(
        "invalid_request_error",
        Some("resource_missing"),
        &format!("No such {kind}."),
    );
    body["error"]["param"] = json!("id");
    Answer::new(404, body)
}

/// A `400` for an operation the object's status does not allow.
pub fn unexpected_state(message: &str, status: &str) -> Answer {
    Answer::new(
        400,
        error(
            "invalid_request_error",
            Some("payment_intent_unexpected_state"),
            &message.replace("{}", status),
        ),
    )
}

/// An idempotency key's entry.
#[derive(Debug, Clone)]
enum Entry {
    /// A request with the key is executing.
    Executing { parameters: Value, first_used: i64 },
    /// Its first answer, stored.
    Done {
        parameters: Value,
        first_used: i64,
        answer: Answer,
    },
}

impl Entry {
    fn first_used(&self) -> i64 {
        match self {
            Self::Executing { first_used, .. } | Self::Done { first_used, .. } => *first_used,
        }
    }
}

/// What the idempotency layer decided for a request.
#[derive(Debug)]
pub enum Admission {
    /// Answer this now (a replay, a 409, a 400 mismatch, an unstored fault).
    Answer(Answer),
    /// Execute: the key (if any) is now executing.
    Execute,
}

/// Everything the stand-in holds.
#[derive(Debug, Default)]
pub struct State {
    pub intents: Vec<Intent>,
    keys: HashMap<Slot, Entry>,
    /// Faults for the next new keys, in order.
    pub faults: Vec<Fault>,
    /// Seconds before a new intent shows in search results.
    pub search_lag: i64,
    /// Search answers 400, as in a region without it.
    pub search_unavailable: bool,
    pub next_id: u64,
    /// Every Checkout Session made, oldest first.
    pub sessions: Vec<super::session::Session>,
    /// The stand-in's base URL, for a session's hosted page.
    pub base: String,
    /// The pending fault of each key admitted with one.
    pub pending: HashMap<Slot, Fault>,
    /// The events seen so far (`super::events`).
    pub events: super::events::Events,
    /// Stored 500s to roll forward: when, on which account, with which parameters.
    roll_forward: Vec<(i64, Option<String>, Value)>,
}

impl State {
    /// Nothing held yet; search lags 60 s, about what Stripe documents.
    pub fn new() -> Self {
        Self {
            search_lag: 60,
            ..Self::default()
        }
    }

    /// Makes the intents of every stored 500 whose roll-forward is due at `now`.
    pub fn catch_up(&mut self, now: i64) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.roll_forward)
            .into_iter()
            .partition(|(at, _, _)| *at <= now);
        self.roll_forward = later;
        for (at, account, parameters) in due {
            let _ = self.create(at, account.as_deref(), &parameters);
        }
        self.expire_due(now);
    }

    /// The idempotency layer in front of a create under `key` with `parameters`.
    pub fn admit(
        &mut self,
        now: i64,
        account: Option<&str>,
        key: Option<&str>,
        parameters: &Value,
    ) -> Admission {
        self.catch_up(now);
        let Some(key) = key else {
            return Admission::Execute;
        };
        let slot = (account.map(str::to_owned), key.to_owned());
        if self
            .keys
            .get(&slot)
            .is_some_and(|entry| now >= entry.first_used() + KEY_RETENTION_SECONDS)
        {
            // Pruned: the key is new again.
            self.keys.remove(&slot);
        }
        match self.keys.get(&slot) {
            Some(Entry::Executing { .. }) => Admission::Answer(Answer::new(
                409,
                error(
                    "invalid_request_error",
                    Some("idempotency_key_in_use"),
                    "There is currently another in-progress request using this idempotency key.",
                ),
            )),
            Some(Entry::Done {
                parameters: first,
                answer,
                ..
            }) if first == parameters => {
                let mut replay = answer.clone();
                replay.replayed = true;
                Admission::Answer(replay)
            }
            Some(Entry::Done { .. }) => Admission::Answer(Answer::new(
                400,
                error(
                    "idempotency_error",
                    None,
                    "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                ),
            )),
            None => {
                if !self.faults.is_empty() {
                    let fault = self.faults.remove(0);
                    if let Fault::Unstored(status) = fault {
                        return Admission::Answer(Answer::new(status, unstored(status)));
                    }
                    self.pending.insert(slot.clone(), fault);
                }
                self.keys.insert(
                    slot,
                    Entry::Executing {
                        parameters: parameters.clone(),
                        first_used: now,
                    },
                );
                Admission::Execute
            }
        }
    }

    /// Executes an admitted create and stores its answer under `key`.
    pub fn execute(
        &mut self,
        now: i64,
        account: Option<&str>,
        key: Option<&str>,
        parameters: &Value,
    ) -> Answer {
        let slot = key.map(|key| (account.map(str::to_owned), key.to_owned()));
        let fault = slot.as_ref().and_then(|slot| self.pending.remove(slot));
        let answer =
            match fault {
                Some(
                    fault @ (Fault::StoredServerError { .. }
                    | Fault::StoredServerErrorRolledForward { .. }),
                ) => {
                    match fault {
                        Fault::StoredServerError {
                            create_intent: true,
                        } => {
                            let _ = self.create(now, account, parameters);
                        }
                        Fault::StoredServerErrorRolledForward { after } => self
                            .roll_forward
                            .push((now + after, account.map(str::to_owned), parameters.clone())),
                        _ => {}
                    }
                    Answer::new(
                        500,
                        error(
                            "api_error",
                            None,
                            "An unknown error occurred while processing your request.",
                        ),
                    )
                }
                _ => self.create(now, account, parameters),
            };
        self.finish(slot, &answer);
        answer
    }

    /// Stores `answer` as the first answer of `slot`'s key, now that its execution
    /// ran.
    pub fn finish(&mut self, slot: Option<Slot>, answer: &Answer) {
        if let Some(slot) = slot
            && let Some(Entry::Executing {
                parameters,
                first_used,
            }) = self.keys.remove(&slot)
        {
            self.keys.insert(
                slot,
                Entry::Done {
                    parameters,
                    first_used,
                    answer: answer.clone(),
                },
            );
        }
    }

    /// Forgets `slot`'s executing key: its request failed validation, and "no
    /// idempotent result is saved" (`https://docs.stripe.com/api/idempotent_requests`).
    pub fn forget(&mut self, slot: Option<Slot>) {
        if let Some(slot) = slot {
            self.pending.remove(&slot);
            self.keys.remove(&slot);
        }
    }

    /// The intent `id` of `account`.
    pub fn intent_mut(&mut self, account: Option<&str>, id: &str) -> Option<&mut Intent> {
        self.intents
            .iter_mut()
            .find(|intent| intent.id == id && intent.account.as_deref() == account)
    }

    /// `POST /v1/payment_intents/{id}/cancel`: "A PaymentIntent object can be canceled
    /// when it is in one of these statuses: `requires_payment_method`,
    /// `requires_capture`, `requires_confirmation`, `requires_action` or, in rare cases,
    /// `processing`" (never here), and "You cannot cancel the PaymentIntent for a
    /// Checkout Session" (`https://docs.stripe.com/api/payment_intents/cancel`).
    pub fn cancel_intent(
        &mut self,
        now: i64,
        account: Option<&str>,
        id: &str,
        reason: Option<&str>,
    ) -> Answer {
        self.catch_up(now);
        let Some(intent) = self.intent_mut(account, id) else {
            return missing("payment_intent");
        };
        let cancelable = matches!(
            intent.status,
            "requires_payment_method"
                | "requires_capture"
                | "requires_confirmation"
                | "requires_action"
        );
        if !cancelable || intent.session.is_some() {
            return unexpected_state(
                "You cannot cancel this PaymentIntent because it has a status of {}.",
                intent.status,
            );
        }
        intent.status = "canceled";
        intent.canceled = Some((now, reason.map(str::to_owned)));
        Answer::new(200, intent.json())
    }

    /// The customer's answer to the 3-D Secure challenge of the intent whose client
    /// secret is `client_secret`: passed, it succeeds; failed, it goes back to
    /// `requires_payment_method` with `payment_intent_authentication_failure`. `None`
    /// when no intent waits for a challenge under that secret.
    pub fn authenticate(&mut self, client_secret: &str, passed: bool) -> Option<&'static str> {
        let intent = self
            .intents
            .iter_mut()
            .find(|intent| intent.client_secret() == client_secret)?;
        if intent.status != "requires_action" {
            return None;
        }
        if passed {
            intent.status = "succeeded";
        } else {
            intent.status = "requires_payment_method";
            intent.last_payment_error = Some(authentication_failed());
        }
        Some(intent.status)
    }

    /// The customer confirms again, with another card that needs no authentication,
    /// the intent whose client secret is `client_secret` after its confirmation was
    /// refused (back in `requires_payment_method` with a `last_payment_error`), as
    /// Stripe.js's `confirmCardPayment(clientSecret, {payment_method})` does: "If the
    /// payment attempt fails (for example due to a decline), the PaymentIntent's status
    /// returns to `requires_payment_method` so that the payment can be retried"
    /// (https://docs.stripe.com/payments/paymentintents/lifecycle). It succeeds, and
    /// the error of the refused confirmation is cleared. `None` when no refused intent
    /// waits under that secret (a canceled one cannot be confirmed).
    pub fn confirm_again(&mut self, client_secret: &str) -> Option<&'static str> {
        let intent = self
            .intents
            .iter_mut()
            .find(|intent| intent.client_secret() == client_secret)?;
        if intent.status != "requires_payment_method" || intent.last_payment_error.is_none() {
            return None;
        }
        intent.status = "succeeded";
        intent.last_payment_error = None;
        intent.payment_method = Some("pm_card_visa".to_owned());
        Some(intent.status)
    }

    /// Creates and confirms an intent of `parameters` (already validated for shape).
    fn create(&mut self, now: i64, account: Option<&str>, parameters: &Value) -> Answer {
        let payment_method = parameters["payment_method"].as_str().unwrap_or_default();
        let Some(behaviour) = Behaviour::of(payment_method) else {
            let mut body = error(
                "invalid_request_error",
                Some("resource_missing"),
                "No such PaymentMethod.",
            );
            body["error"]["param"] = json!("payment_method");
            return Answer::new(400, body);
        };
        self.next_id += 1;
        let refused = matches!(behaviour, Behaviour::Declines | Behaviour::Refused);
        let intent = Intent {
            id: format!("{INTENT_PREFIX}{:08}", self.next_id),
            amount: parameters["amount"].as_i64().unwrap_or_default(),
            currency: parameters["currency"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            status: behaviour.status(),
            last_payment_error: refused.then(card_declined),
            canceled: (behaviour == Behaviour::Canceled)
                .then(|| (now, Some("automatic".to_owned()))),
            payment_method: Some(payment_method.to_owned()),
            metadata: parameters["metadata"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
            created: now,
            account: account.map(str::to_owned),
            session: None,
        };
        let body = intent.json();
        self.intents.push(intent);
        if behaviour == Behaviour::Declines {
            let mut refusal = json!({"error": card_declined()});
            refusal["error"]["payment_intent"] = body;
            return Answer::new(402, refusal);
        }
        Answer::new(200, body)
    }

    /// The intents of `account`, newest first.
    pub fn newest_first(&self, account: Option<&str>) -> Vec<&Intent> {
        let mut intents: Vec<&Intent> = self
            .intents
            .iter()
            .filter(|intent| intent.account.as_deref() == account)
            .collect();
        intents.reverse();
        intents
    }
}

/// The body of an answer given before execution began.
fn unstored(status: u16) -> Value {
    match status {
        429 => error(
            "invalid_request_error",
            Some("rate_limit"),
            "Too many requests hit the API too quickly.",
        ),
        _ => error("api_error", None, "The service is temporarily unavailable."),
    }
}

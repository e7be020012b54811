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
    pub behaviour: Behaviour,
    pub payment_method: String,
    pub metadata: serde_json::Map<String, Value>,
    pub created: i64,
    /// The Connect account it was made on (`None`: the key's own).
    pub account: Option<String>,
}

impl Intent {
    /// The intent as Stripe answers it.
    pub fn json(&self) -> Value {
        let status = self.behaviour.status();
        let refused = matches!(self.behaviour, Behaviour::Declines | Behaviour::Refused);
        json!({
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount,
            "amount_capturable": 0,
            "amount_received": if status == "succeeded" { self.amount } else { 0 },
            "canceled_at": if status == "canceled" { Some(self.created) } else { None },
            "cancellation_reason": if status == "canceled" { Some("automatic") } else { None },
            "capture_method": "automatic",
            "client_secret": format!("{}_secret_CANARYclientSecret", self.id),
            "confirmation_method": "automatic",
            "created": self.created,
            "currency": self.currency,
            "description": null,
            "last_payment_error": if refused { Some(card_declined()) } else { None },
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

fn card_declined() -> Value {
    json!({
        "type": "card_error",
        "code": "card_declined",
        "decline_code": "generic_decline",
        "message": "Your card was declined.",
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
    fn new(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            replayed: false,
        }
    }
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
    keys: HashMap<(Option<String>, String), Entry>,
    /// Faults for the next new keys, in order.
    pub faults: Vec<Fault>,
    /// Seconds before a new intent shows in search results.
    pub search_lag: i64,
    /// Search answers 400, as in a region without it.
    pub search_unavailable: bool,
    next_id: u64,
    /// The pending fault of each key admitted with one.
    pending: HashMap<(Option<String>, String), Fault>,
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
        answer
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
        let intent = Intent {
            id: format!("{INTENT_PREFIX}{:08}", self.next_id),
            amount: parameters["amount"].as_i64().unwrap_or_default(),
            currency: parameters["currency"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            behaviour,
            payment_method: payment_method.to_owned(),
            metadata: parameters["metadata"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
            created: now,
            account: account.map(str::to_owned),
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

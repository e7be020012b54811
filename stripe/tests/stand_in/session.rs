//! Checkout Sessions as the stand-in holds them, with Stripe's documented semantics
//! (`https://docs.stripe.com/api/checkout/sessions/object`,
//! `https://docs.stripe.com/checkout/fulfillment`): a session in `payment` mode made
//! `open` with **no** PaymentIntent (`payment_intent` null): since API version
//! 2022-08-01 "a PaymentIntent is no longer created during Checkout Session creation
//! in payment mode. Instead, a PaymentIntent is created when the Session is confirmed"
//! (`https://docs.stripe.com/changelog/2022-08-01/deferred-paymentintent-checkout-session`);
//! its intent made (carrying `payment_intent_data[metadata]`) when the customer pays
//! on its hosted page, at once (`complete`, `paid`) or with a delayed method
//! (`complete`, `unpaid`, its intent `processing`, settled later); `expired` at its
//! `expires_at` or by `expire`, with no intent (an unpaid session never had one).

use super::state::{Answer, Intent, State, error, missing, unexpected_state};
use serde_json::{Map, Value, json};

/// The prefix of every session id: a canary, as the intents' is.
pub const SESSION_PREFIX: &str = "cs_test_CANARYstandin";
/// The earliest `expires_at` a session takes, after its creation: "30 minutes".
pub const MIN_EXPIRY_SECONDS: i64 = 30 * 60;
/// The latest: "24 hours" (`https://docs.stripe.com/api/checkout/sessions/create`).
pub const MAX_EXPIRY_SECONDS: i64 = 24 * 3_600;

/// One Checkout Session.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub amount: i64,
    pub currency: String,
    pub metadata: Map<String, Value>,
    pub success_url: String,
    pub cancel_url: String,
    pub expires_at: i64,
    pub created: i64,
    /// `open`, `complete` or `expired`.
    pub status: &'static str,
    /// `paid`, `unpaid` or `no_payment_required`.
    pub payment_status: &'static str,
    /// `None` until the customer pays (made then, as API version 2022-08-01 does).
    pub payment_intent: Option<String>,
    /// The `payment_intent_data[metadata]` its intent is made with.
    pub intent_metadata: Map<String, Value>,
    pub account: Option<String>,
    /// Its hosted page.
    pub url: String,
}

impl Session {
    /// The session as Stripe answers it.
    pub fn json(&self) -> Value {
        json!({
            "id": self.id,
            "object": "checkout.session",
            "amount_total": self.amount,
            "automatic_tax": {"enabled": false, "status": null},
            "cancel_url": self.cancel_url,
            "currency": self.currency,
            "expires_at": self.expires_at,
            "livemode": false,
            "metadata": self.metadata,
            "mode": "payment",
            "payment_intent": self.payment_intent,
            "payment_method_types": ["card"],
            "payment_status": self.payment_status,
            "shipping_options": [],
            "status": self.status,
            "success_url": self.success_url,
            // "This value is only present when the session is active."
            "url": (self.status == "open").then(|| self.url.clone()),
        })
    }
}

/// A `400 invalid_request_error` naming `param`.
fn invalid(param: &str, message: &str) -> Answer {
    let mut body = error("invalid_request_error", Some("parameter_invalid"), message);
    body["error"]["param"] = json!(param);
    Answer::new(400, body)
}

/// What a payer did on the hosted page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payment {
    /// A card, paid at once.
    Card,
    /// A delayed method (a bank debit): `complete` and `unpaid` until it settles.
    Delayed,
}

impl State {
    /// Checks a create's form; `Err` is the 400 Stripe answers before execution
    /// (nothing stored).
    pub fn check_session(now: i64, form: &Value) -> Result<(), Answer> {
        let item = &form["line_items"][0];
        let price = &item["price_data"];
        if form["mode"] != "payment" {
            return Err(invalid("mode", "Only payment mode is offered here."));
        }
        if !form["success_url"].is_string() || !form["cancel_url"].is_string() {
            return Err(invalid(
                "success_url",
                "Missing required param: success_url.",
            ));
        }
        let line = price["currency"].is_string()
            && price["unit_amount"].as_i64().is_some_and(|a| a > 0)
            && price["product_data"]["name"].is_string()
            && item["quantity"].as_i64() == Some(1)
            && form["line_items"]
                .as_array()
                .is_some_and(|items| items.len() == 1);
        if !line {
            return Err(invalid("line_items", "Invalid line_items."));
        }
        if let Some(at) = form.get("expires_at") {
            let at = at.as_i64().unwrap_or_default();
            if at < now + MIN_EXPIRY_SECONDS || at > now + MAX_EXPIRY_SECONDS {
                return Err(invalid(
                    "expires_at",
                    "The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session creation.",
                ));
            }
        }
        Ok(())
    }

    /// Creates an `open` session of a checked `form`, with no intent yet.
    pub fn create_session(&mut self, now: i64, account: Option<&str>, form: &Value) -> Answer {
        let price = &form["line_items"][0]["price_data"];
        let amount = price["unit_amount"].as_i64().unwrap_or_default();
        let currency = price["currency"].as_str().unwrap_or_default().to_owned();
        self.next_id += 1;
        let id = format!("{SESSION_PREFIX}{:08}", self.next_id);
        let session = Session {
            url: format!("{}/stand-in/checkout/{id}", self.base),
            id,
            amount,
            currency,
            metadata: form["metadata"].as_object().cloned().unwrap_or_default(),
            success_url: form["success_url"].as_str().unwrap_or_default().to_owned(),
            cancel_url: form["cancel_url"].as_str().unwrap_or_default().to_owned(),
            expires_at: form["expires_at"]
                .as_i64()
                .unwrap_or(now + MAX_EXPIRY_SECONDS),
            created: now,
            status: "open",
            payment_status: "unpaid",
            payment_intent: None,
            intent_metadata: form["payment_intent_data"]["metadata"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
            account: account.map(str::to_owned),
        };
        let body = session.json();
        self.sessions.push(session);
        Answer::new(200, body)
    }

    /// The intent of the session `id`, made now as the customer confirms its page
    /// (its id: the session's number, as every stand-in id is numbered).
    fn confirm_intent(&mut self, now: i64, id: &str) -> Option<String> {
        let session = self.session_mut(None, id)?;
        let number = id
            .strip_prefix(SESSION_PREFIX)
            .unwrap_or_default()
            .to_owned();
        let intent = Intent {
            id: format!("{}{number}", super::state::INTENT_PREFIX),
            amount: session.amount,
            currency: session.currency.clone(),
            status: "requires_payment_method",
            last_payment_error: None,
            canceled: None,
            payment_method: None,
            metadata: session.intent_metadata.clone(),
            created: now,
            account: session.account.clone(),
            session: Some(session.id.clone()),
        };
        session.payment_intent = Some(intent.id.clone());
        let made = intent.id.clone();
        self.intents.push(intent);
        Some(made)
    }

    /// The session `id` of `account` (`None`: any account, for the hosted page).
    pub fn session_mut(&mut self, account: Option<Option<&str>>, id: &str) -> Option<&mut Session> {
        self.sessions.iter_mut().find(|session| {
            session.id == id && account.is_none_or(|account| session.account.as_deref() == account)
        })
    }

    /// `GET /v1/checkout/sessions/{id}`.
    pub fn retrieve_session(&mut self, now: i64, account: Option<&str>, id: &str) -> Answer {
        self.catch_up(now);
        match self.session_mut(Some(account), id) {
            Some(session) => Answer::new(200, session.json()),
            None => missing("checkout.session"),
        }
    }

    /// `POST /v1/checkout/sessions/{id}/expire`: "A Session can be expired when it is
    /// in one of these statuses: `open`"; its intent is canceled.
    pub fn expire_session(&mut self, now: i64, account: Option<&str>, id: &str) -> Answer {
        self.catch_up(now);
        let Some(session) = self.session_mut(Some(account), id) else {
            return missing("checkout.session");
        };
        if session.status != "open" {
            let status = session.status;
            return unexpected_state(
                "Only Checkout Sessions with a status of `open` can be expired; this one is {}.",
                status,
            );
        }
        let body = self.close(id, now);
        Answer::new(200, body)
    }

    /// Expires the open session `id` and cancels its intent; its JSON.
    fn close(&mut self, id: &str, now: i64) -> Value {
        let Some(session) = self.session_mut(None, id) else {
            return Value::Null;
        };
        session.status = "expired";
        let body = session.json();
        let intent = session.payment_intent.clone();
        if let Some(intent) = self
            .intents
            .iter_mut()
            .find(|i| Some(&i.id) == intent.as_ref())
        {
            intent.status = "canceled";
            intent.canceled = Some((now, Some("abandoned".to_owned())));
        }
        body
    }

    /// Expires every open session whose `expires_at` is past.
    pub fn expire_due(&mut self, now: i64) {
        let due: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| s.status == "open" && s.expires_at <= now)
            .map(|s| s.id.clone())
            .collect();
        for id in due {
            let _ = self.close(&id, now);
        }
    }

    /// The sessions of `account` paid by `intent`, newest first.
    pub fn sessions_of(&self, account: Option<&str>, intent: Option<&str>) -> Vec<Value> {
        let mut found: Vec<Value> = self
            .sessions
            .iter()
            .filter(|s| s.account.as_deref() == account)
            .filter(|s| intent.is_none_or(|intent| s.payment_intent.as_deref() == Some(intent)))
            .map(Session::json)
            .collect();
        found.reverse();
        found
    }

    /// The payer completes the open session `id` on its hosted page; its redirect
    /// (`success_url`, `{CHECKOUT_SESSION_ID}` filled in), or `None` if it is not open.
    pub fn pay_session(&mut self, now: i64, id: &str, payment: Payment) -> Option<String> {
        self.catch_up(now);
        let session = self.session_mut(None, id)?;
        if session.status != "open" {
            return None;
        }
        session.status = "complete";
        session.payment_status = match payment {
            Payment::Card => "paid",
            Payment::Delayed => "unpaid",
        };
        let redirect = session
            .success_url
            .replace("{CHECKOUT_SESSION_ID}", &session.id);
        let intent = self.confirm_intent(now, id);
        if let Some(intent) = self
            .intents
            .iter_mut()
            .find(|i| Some(&i.id) == intent.as_ref())
        {
            intent.payment_method = Some("pm_standin_checkout".to_owned());
            intent.status = match payment {
                Payment::Card => "succeeded",
                Payment::Delayed => "processing",
            };
        }
        Some(redirect)
    }

    /// A delayed payment of the session `id` settles: `succeeded` makes the session
    /// `paid` and its intent `succeeded`; otherwise the intent fails back to
    /// `requires_payment_method` and the session stays `complete` and `unpaid`
    /// (Stripe's `checkout.session.async_payment_failed`). `false` if none waits.
    pub fn settle_session(&mut self, id: &str, succeeded: bool) -> bool {
        let Some(session) = self.session_mut(None, id) else {
            return false;
        };
        if session.status != "complete" || session.payment_status != "unpaid" {
            return false;
        }
        if succeeded {
            session.payment_status = "paid";
        }
        let intent = session.payment_intent.clone();
        let Some(intent) = self
            .intents
            .iter_mut()
            .find(|i| Some(&i.id) == intent.as_ref())
        else {
            return false;
        };
        if succeeded {
            intent.status = "succeeded";
        } else {
            intent.status = "requires_payment_method";
            intent.last_payment_error = Some(super::state::card_declined());
        }
        true
    }
}

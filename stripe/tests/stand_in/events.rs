//! The stand-in's events: what Stripe's Events API and webhook deliveries show of
//! the stand-in's PaymentIntents and Checkout Sessions.
//!
//! An event is made for every change of an object's status seen since the last look
//! (each `GET /v1/events`, [`StandIn::events`] and [`StandIn::deliver_new`] looks;
//! changes between two looks show as their last state, as a late event does),
//! with the object as it is then in `data.object`:
//!
//! - an intent: `payment_intent.created` when first seen, then `.succeeded`,
//!   `.requires_action`, `.processing`, `.canceled`, or `.payment_failed` (back in
//!   `requires_payment_method` with a `last_payment_error`), as its status becomes
//!   one of them (https://docs.stripe.com/api/events/types);
//! - a session: `checkout.session.completed` as it becomes `complete`,
//!   `.async_payment_succeeded` as a `complete` one becomes `paid`, `.expired`.
//!
//! `GET /v1/events` answers them newest first, filtered by `types[]` and
//! `created[gte]`, paged by `limit` and `starting_after`
//! (https://docs.stripe.com/api/events/list). A delivery is a `POST` of the event's
//! JSON with a `Stripe-Signature` of `t=<now>,v1=<HMAC-SHA256 of "t.body">` under
//! the endpoint secret (https://docs.stripe.com/webhooks#verify-manually), which
//! [`signature`] builds.

use super::{Inner, Seen, StandIn, authorize, seen};
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::Arc;

/// The prefix of the stand-in's event ids.
pub const EVENT_PREFIX: &str = "evt_standin";

/// The events made so far, and what each object looked like at the last look.
#[derive(Debug, Default)]
pub struct Events {
    /// Oldest first.
    log: Vec<Value>,
    /// Each object's last status seen (an intent: status and whether it carries an
    /// error; a session: status and payment status).
    seen: HashMap<String, (String, String)>,
    /// How many of `log` were delivered by [`StandIn::deliver_new`].
    delivered: usize,
}

impl Events {
    /// Records an event for every status change of `state`'s objects since the last
    /// look, at `now`.
    pub fn look(&mut self, intents: &[Value], sessions: &[Value], now: i64) {
        for intent in intents {
            let status = intent["status"].as_str().unwrap_or_default().to_owned();
            let failed = (!intent["last_payment_error"].is_null()).to_string();
            let id = intent["id"].as_str().unwrap_or_default().to_owned();
            let before = self.seen.insert(id, (status.clone(), failed.clone()));
            if before.as_ref() == Some(&(status.clone(), failed.clone())) {
                continue;
            }
            if before.is_none() {
                self.push("payment_intent.created", intent, now);
            }
            let kind = match (status.as_str(), failed.as_str()) {
                ("succeeded", _) => "payment_intent.succeeded",
                ("requires_action", _) => "payment_intent.requires_action",
                ("processing", _) => "payment_intent.processing",
                ("canceled", _) => "payment_intent.canceled",
                ("requires_payment_method", "true") => "payment_intent.payment_failed",
                _ => continue,
            };
            self.push(kind, intent, now);
        }
        for session in sessions {
            let status = session["status"].as_str().unwrap_or_default().to_owned();
            let paid = session["payment_status"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let id = session["id"].as_str().unwrap_or_default().to_owned();
            let before = self.seen.insert(id, (status.clone(), paid.clone()));
            let kind = match (before, status.as_str(), paid.as_str()) {
                (Some(before), _, _) if before == (status.clone(), paid.clone()) => continue,
                (Some((was, _)), "complete", "paid") if was == "complete" => {
                    "checkout.session.async_payment_succeeded"
                }
                (_, "complete", _) => "checkout.session.completed",
                (_, "expired", _) => "checkout.session.expired",
                _ => continue,
            };
            self.push(kind, session, now);
        }
    }

    fn push(&mut self, kind: &str, object: &Value, now: i64) {
        let id = format!("{EVENT_PREFIX}{:08}", self.log.len() + 1);
        self.log.push(json!({
            "id": id,
            "object": "event",
            "api_version": "2026-01-01",
            "created": now,
            "data": {"object": object},
            "livemode": false,
            "pending_webhooks": 1,
            "request": {"id": null, "idempotency_key": null},
            "type": kind,
        }));
    }
}

/// The `Stripe-Signature` header Stripe sends with `body` at `timestamp`, signed with
/// the endpoint secret `secret` (the HMAC key is the whole `whsec_…` text).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

impl Inner {
    /// Looks at every object now and answers the events, oldest first.
    fn look(&self) -> Vec<Value> {
        let now = (self.clock)();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.catch_up(now);
        let intents: Vec<Value> = state.intents.iter().map(|i| i.json()).collect();
        let sessions: Vec<Value> = state.sessions.iter().map(|s| s.json()).collect();
        state.events.look(&intents, &sessions, now);
        state.events.log.clone()
    }
}

impl StandIn {
    /// Every event made so far, oldest first (looking at every object first).
    pub fn events(&self) -> Vec<Value> {
        self.inner.look()
    }

    /// Delivers every event made since the last delivery, oldest first, to `url`
    /// signed with `secret` at the stand-in's time: each event's id and the status
    /// the endpoint answered. `drop` events (by type) are skipped, as a delivery
    /// that never arrived.
    pub async fn deliver_new(&self, url: &str, secret: &str, drop: &[&str]) -> Vec<(String, u16)> {
        let events = self.inner.look();
        let from = {
            let mut state = self.state();
            std::mem::replace(&mut state.events.delivered, events.len())
        };
        let mut answered = Vec::new();
        for event in &events[from..] {
            let kind = event["type"].as_str().unwrap_or_default();
            if drop.contains(&kind) {
                continue;
            }
            let status = self.deliver(url, secret, event, self.now()).await;
            answered.push((event["id"].as_str().unwrap_or_default().to_owned(), status));
        }
        answered
    }

    /// Delivers `event` to `url` signed with `secret` at `timestamp`: the status the
    /// endpoint answered (0 when it did not answer).
    pub async fn deliver(&self, url: &str, secret: &str, event: &Value, timestamp: i64) -> u16 {
        let body = serde_json::to_vec(event).expect("an event serialises");
        deliver_signed(url, &signature(secret, timestamp, &body), body).await
    }
}

/// POSTs `body` to `url` with `header` as its `Stripe-Signature` (none when empty), as
/// Stripe's delivery does: the status answered (0 when none came).
pub async fn deliver_signed(url: &str, header: &str, body: Vec<u8>) -> u16 {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json; charset=utf-8");
    if !header.is_empty() {
        request = request.header("stripe-signature", header);
    }
    let sent = request.body(body).send().await;
    sent.map_or(0, |response| response.status().as_u16())
}

/// `GET /v1/events`: the events newest first, of `types[]` when given, created at or
/// after `created[gte]` and before `created[lt]`, after `starting_after`, `limit`
/// (10, at most 100) a page.
pub(super) async fn list(
    Shared(inner): Shared<Arc<Inner>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let types: Vec<&str> = pairs
        .iter()
        .filter(|(name, _)| name == "types[]")
        .map(|(_, value)| value.as_str())
        .collect();
    let query = json!({
        "types": types,
        "created": {"gte": get("created[gte]"), "lt": get("created[lt]")},
        "limit": get("limit"),
        "starting_after": get("starting_after"),
    });
    let account = authorize(&inner, &headers);
    let record = seen("GET", "/v1/events", &headers, account.is_ok(), query);
    if let Err(refused) = account {
        return respond(&inner, record, refused.status, refused.body);
    }
    let since = get("created[gte]")
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(i64::MIN);
    let before = get("created[lt]")
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(i64::MAX);
    let limit = get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let mut events: Vec<Value> = inner
        .look()
        .into_iter()
        .rev()
        .filter(|e| e["created"].as_i64().unwrap_or(0) >= since)
        .filter(|e| e["created"].as_i64().unwrap_or(0) < before)
        .filter(|e| types.is_empty() || types.contains(&e["type"].as_str().unwrap_or_default()))
        .collect();
    // Reverse chronological order by `created` (the log is oldest first already; the
    // sort is stable, so events of one second keep the newest first).
    events.sort_by_key(|e| std::cmp::Reverse(e["created"].as_i64().unwrap_or(0)));
    if let Some(after) = get("starting_after") {
        let from = events
            .iter()
            .position(|e| e["id"] == after.as_str())
            .map_or(events.len(), |at| at + 1);
        events.drain(..from);
    }
    let has_more = events.len() > limit;
    events.truncate(limit);
    let body = json!({"object": "list", "data": events, "has_more": has_more, "url": "/v1/events"});
    respond(&inner, record, 200, body)
}

/// Records the request and answers `body` (not validated: the stand-in's schema
/// subset has no event list).
fn respond(inner: &Inner, mut seen: Seen, status: u16, body: Value) -> Response {
    seen.status = status;
    inner
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(seen);
    inner.answered.send_modify(|n| *n += 1);
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

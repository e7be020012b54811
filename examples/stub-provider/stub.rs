//! A stub payment provider answering the checkout service's provider contract
//! (`docs/providers.md`), shared by the `stub-provider` example and the emulator
//! tests (which include this file by `#[path]`).
//!
//! Like a real provider it deduplicates by `Idempotency-Key`: a second POST with a
//! key it already holds answers the stored charge (or the stored decline) and creates
//! nothing; the same key with another body is refused with 400. Every charge object
//! records the key it was created under in `metadata.journal_key`, as the Stripe
//! mapping's metadata does, and echoes the request's `amount` and `currency`. It
//! records every POST and every lookup. A script, consumed one action per POST, can
//! decline, answer a bare status (503, 429, ...) without creating anything, leave the
//! charge `pending` (answered 200, as a provider that has not finished it), or "lose"
//! the answer: create the charge, then hold the response for [`Stub::hang`], longer
//! than any client waits. Lookups have their own script (a bare status, say).
//!
//! Its lookup is durable (a service in front of it runs with
//! `PROVIDER_LOOKUP=durable`): it answers from the charges it holds, which it keeps
//! for as long as it runs. Nothing removes a charge or a key, nothing expires, and no
//! script or route clears them; a lookup sees a charge as soon as the POST that
//! created it was acted on (no settle window is needed, though the service's default
//! one does no harm).
//!
//! Routes: `POST /v1/charges`, `GET /v1/charges?idempotency_key=…`, and for a person
//! driving it by hand `POST /_stub/script`
//! (`{"charges":["lose","decline","pending",503],"lookups":[503]}`, appended to the
//! scripts) and `GET /_stub/calls` (every POST and lookup, and every charge held).

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// What the stub does with one POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create the charge (status `succeeded`) and answer 200, or answer the charge
    /// already held for the key.
    Charge,
    /// Record a failed charge and answer 402, or answer what the key already holds.
    Decline,
    /// Answer this status with an error body and create nothing.
    Status(u16),
    /// As [`Action::Charge`], then hold the answer for [`Stub::hang`].
    Lose,
    /// Create a charge left `pending` (not final) and answer it with 200, or answer
    /// what the key already holds.
    Pending,
}

impl Action {
    /// `charge`, `decline`, `lose`, `pending`, or a status number.
    pub fn parse(value: &Value) -> Option<Self> {
        match value {
            Value::String(text) => match text.as_str() {
                "charge" => Some(Self::Charge),
                "decline" => Some(Self::Decline),
                "lose" => Some(Self::Lose),
                "pending" => Some(Self::Pending),
                _ => None,
            },
            Value::Number(n) => n
                .as_u64()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|n| (200..=599).contains(n))
                .map(Self::Status),
            _ => None,
        }
    }
}

/// What the stub does with one lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupAction {
    /// Answer 200 with what the key holds.
    Answer,
    /// Answer this status with an error body.
    Status(u16),
}

/// One POST received.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    /// Its `Idempotency-Key` header.
    pub key: Option<String>,
    /// Its JSON body (`null` when it was not JSON).
    pub body: Value,
}

/// One charge held, by idempotency key, for as long as the stub runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// The key it was created under.
    pub key: String,
    /// The body it was created from.
    pub request: Value,
    /// The charge object the stub answers.
    pub object: Value,
}

#[derive(Default)]
struct Book {
    posts: Vec<Post>,
    lookups: Vec<String>,
    charges: Vec<Charge>,
    script: VecDeque<Action>,
    lookup_script: VecDeque<LookupAction>,
}

/// The stub's state: what it holds, what it was asked, what it will do next.
pub struct Stub {
    book: Mutex<Book>,
    default: Action,
    id_prefix: String,
    /// How long a lost answer is held.
    pub hang: Duration,
    /// Notified when a POST arrives (after it is recorded).
    pub arrived: Notify,
    /// When set, every POST waits for a permit before it is acted on.
    gate: Option<Semaphore>,
}

impl Stub {
    /// A stub acting `default` on every POST the script does not cover; charge ids
    /// are `{id_prefix}{n}`.
    pub fn new(default: Action, id_prefix: &str) -> Self {
        Self {
            book: Mutex::new(Book::default()),
            default,
            id_prefix: id_prefix.to_owned(),
            hang: Duration::from_secs(120),
            arrived: Notify::new(),
            gate: None,
        }
    }

    /// The same stub holding every POST until [`release`](Self::release) lets it on.
    pub fn gated(mut self) -> Self {
        self.gate = Some(Semaphore::new(0));
        self
    }

    /// The same stub holding a lost answer for `hang`.
    pub fn hanging_for(mut self, hang: Duration) -> Self {
        self.hang = hang;
        self
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends to the POST script.
    pub fn script(&self, actions: impl IntoIterator<Item = Action>) {
        self.book().script.extend(actions);
    }

    /// Appends to the lookup script.
    pub fn script_lookups(&self, actions: impl IntoIterator<Item = LookupAction>) {
        self.book().lookup_script.extend(actions);
    }

    /// Lets `n` held POSTs on (gated stubs only).
    pub fn release(&self, n: usize) {
        if let Some(gate) = &self.gate {
            gate.add_permits(n);
        }
    }

    /// Every POST received, in order.
    pub fn posts(&self) -> Vec<Post> {
        self.book().posts.clone()
    }

    /// The key of every lookup received, in order.
    pub fn lookups(&self) -> Vec<String> {
        self.book().lookups.clone()
    }

    /// Every charge held, succeeded, pending and failed, in creation order: never
    /// fewer than before (the stub forgets nothing).
    pub fn charges(&self) -> Vec<Charge> {
        self.book().charges.clone()
    }

    /// Creates a charge under `key` directly, as if a POST had created it and its
    /// answer were lost: for a test preparing the provider's side.
    pub fn hold(&self, key: &str, request: &Value) -> Value {
        let mut book = self.book();
        self.create(&mut book, key, request, "succeeded")
    }

    /// As [`hold`](Self::hold), a failed charge: a decline whose answer was lost.
    pub fn hold_declined(&self, key: &str, request: &Value) -> Value {
        let mut book = self.book();
        self.create(&mut book, key, request, "failed")
    }

    /// Moves the charge held for `key` to `status` (a pending charge finishing, say);
    /// false when the stub holds none. The charge stays held.
    pub fn settle(&self, key: &str, status: &str) -> bool {
        let mut book = self.book();
        match book.charges.iter_mut().find(|c| c.key == key) {
            Some(charge) => {
                charge.object["status"] = Value::from(status);
                true
            }
            None => false,
        }
    }

    fn create(&self, book: &mut Book, key: &str, request: &Value, status: &str) -> Value {
        let mut object = json!({
            "id": format!("{}{}", self.id_prefix, book.charges.len() + 1),
            "object": "charge",
            "status": status,
            "metadata": {"journal_key": key},
        });
        for field in ["amount", "currency"] {
            if let Some(value) = request.get(field) {
                object[field] = value.clone();
            }
        }
        book.charges.push(Charge {
            key: key.to_owned(),
            request: request.clone(),
            object: object.clone(),
        });
        object
    }

    /// Acts on one POST: the status and body to answer, and whether to hang first.
    fn charge(&self, key: Option<&str>, body: &Value) -> (u16, Value, bool) {
        let mut book = self.book();
        let action = book.script.pop_front().unwrap_or(self.default);
        let decline = |object: &Value| json!({"error": {"type": "card_error", "code": "card_declined", "charge": object["id"]}});
        if let Action::Status(status) = action {
            return (status, json!({"error": {"type": "api_error"}}), false);
        }
        let Some(key) = key else {
            return (
                400,
                json!({"error": {"type": "invalid_request_error"}}),
                false,
            );
        };
        let held = book.charges.iter().find(|c| c.key == key).cloned();
        let object = match held {
            Some(charge) if charge.request != *body => {
                let error = json!({"error": {"type": "idempotency_error"}});
                return (400, error, false);
            }
            Some(charge) => charge.object,
            None => {
                let status = match action {
                    Action::Decline => "failed",
                    Action::Pending => "pending",
                    _ => "succeeded",
                };
                self.create(&mut book, key, body, status)
            }
        };
        let lost = action == Action::Lose;
        if object["status"] == "failed" {
            (402, decline(&object), lost)
        } else {
            (200, object, lost)
        }
    }

    /// Acts on one lookup.
    fn lookup(&self, key: &str) -> (u16, Value) {
        let mut book = self.book();
        book.lookups.push(key.to_owned());
        match book
            .lookup_script
            .pop_front()
            .unwrap_or(LookupAction::Answer)
        {
            LookupAction::Status(status) => (status, json!({"error": {"type": "api_error"}})),
            LookupAction::Answer => {
                let data: Vec<Value> = book
                    .charges
                    .iter()
                    .filter(|c| c.key == key)
                    .map(|c| c.object.clone())
                    .collect();
                (200, json!({"object": "list", "data": data}))
            }
        }
    }
}

fn answer(status: u16, body: &Value) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [("content-type", "application/json")],
        body.to_string(),
    )
}

async fn post_charge(
    State(stub): State<Arc<Stub>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    stub.book().posts.push(Post {
        key: key.clone(),
        body: body.clone(),
    });
    stub.arrived.notify_one();
    if let Some(gate) = &stub.gate
        && let Ok(permit) = gate.acquire().await
    {
        permit.forget();
    }
    let (status, object, lost) = stub.charge(key.as_deref(), &body);
    if lost {
        tokio::time::sleep(stub.hang).await;
    }
    answer(status, &object)
}

async fn get_charges(
    State(stub): State<Arc<Stub>>,
    uri: Uri,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let query = reqwest::Url::parse(&format!("http://stub{uri}")).ok();
    let key = query.as_ref().and_then(|url| {
        url.query_pairs()
            .find(|(name, _)| name == "idempotency_key")
            .map(|(_, key)| key.into_owned())
    });
    match key {
        Some(key) => {
            let (status, body) = stub.lookup(&key);
            answer(status, &body)
        }
        None => answer(400, &json!({"error": {"type": "invalid_request_error"}})),
    }
}

async fn post_script(
    State(stub): State<Arc<Stub>>,
    body: Bytes,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let script: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let list = |name: &str| script.get(name).and_then(Value::as_array).cloned();
    let charges: Option<Vec<Action>> = list("charges")
        .unwrap_or_default()
        .iter()
        .map(Action::parse)
        .collect();
    let lookups: Option<Vec<LookupAction>> = list("lookups")
        .unwrap_or_default()
        .iter()
        .map(|v| match Action::parse(v) {
            Some(Action::Status(status)) => Some(LookupAction::Status(status)),
            _ => None,
        })
        .collect();
    match (script.is_object(), charges, lookups) {
        (true, Some(charges), Some(lookups)) => {
            stub.script(charges);
            stub.script_lookups(lookups);
            answer(200, &json!({"scripted": true}))
        }
        _ => answer(
            400,
            &json!({"error": "charges: charge|decline|lose|pending|status, lookups: status"}),
        ),
    }
}

async fn get_calls(
    State(stub): State<Arc<Stub>>,
) -> (StatusCode, [(&'static str, &'static str); 1], String) {
    let book = stub.book();
    let posts: Vec<Value> = book
        .posts
        .iter()
        .map(|p| json!({"idempotencyKey": p.key, "body": p.body}))
        .collect();
    let charges: Vec<Value> = book
        .charges
        .iter()
        .map(|c| json!({"idempotencyKey": c.key, "charge": c.object}))
        .collect();
    let body = json!({"posts": posts, "lookups": book.lookups, "charges": charges});
    answer(200, &body)
}

/// The stub's routes over `stub`.
pub fn router(stub: Arc<Stub>) -> Router {
    Router::new()
        .route("/v1/charges", post(post_charge).get(get_charges))
        .route("/_stub/script", post(post_script))
        .route("/_stub/calls", get(get_calls))
        .with_state(stub)
}

/// Serves `stub` on `listener` in the background; its base URL.
pub fn spawn(stub: Arc<Stub>, listener: tokio::net::TcpListener) -> std::io::Result<String> {
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router(stub)).await });
    Ok(url)
}

//! A Stripe stand-in for tests and for a local run: a loopback HTTP server answering
//! PaymentIntents (`POST /v1/payment_intents`, `GET /v1/payment_intents`,
//! `GET /v1/payment_intents/search`, `GET /v1/payment_intents/{id}`,
//! `POST /v1/payment_intents/{id}/cancel`) and Checkout Sessions
//! (`POST`/`GET /v1/checkout/sessions`, `GET /v1/checkout/sessions/{id}`,
//! `POST /v1/checkout/sessions/{id}/expire`) with Stripe's documented semantics
//! ([`state`], [`session`]), every request and answer body validated against Stripe's
//! OpenAPI description ([`schema`]), on a clock the test moves.
//!
//! Faults are injected for the next new keys ([`Fault`]), a create can be held while
//! executing (to meet a concurrent request with the same key), and every request is
//! recorded with the headers that matter.
//!
//! # The customer's pages
//!
//! The stand-in serves, in place of Stripe's, the two pages a customer's browser
//! opens ([`pages`]): plain HTML, a little script, stable element ids. Each page's
//! `<body>` has `data-done="false"`, set to `"true"` once a button's answer came back;
//! `#status` shows the object's status (then the answer's).
//!
//! - **3-D Secure challenge**: `GET {base}/stand-in/authenticate?client_secret=<the
//!   intent's client secret>[&return_url=<url>]`, for an intent in `requires_action`
//!   (a create-and-confirm with `pm_card_authenticationRequired`). Buttons
//!   `#authenticate-pass` (the intent becomes `succeeded`) and `#authenticate-fail`
//!   (it goes back to `requires_payment_method` with `last_payment_error.code`
//!   `payment_intent_authentication_failure`); then the browser goes to `return_url`
//!   if given. Abandoning it is leaving it: the intent stays `requires_action`. The
//!   buttons are absent once the intent no longer waits. Its script posts
//!   `client_secret`, `outcome=pass|fail` and `return_url` to
//!   `POST {base}/stand-in/authenticate` (answer `{"status", "redirect"}`, 409 when
//!   no intent waits under the secret), which a test may call itself.
//! - **Hosted Checkout page**: a session's `url`, `{base}/stand-in/checkout/{id}`, while
//!   it is `open`. `#amount` and `#currency` show what is paid; `#pay-card` pays at
//!   once (the session `complete` and `paid`, its intent `succeeded`); `#pay-delayed`
//!   pays by a delayed method (`complete` and `unpaid`, its intent `processing`);
//!   either then sends the browser to the session's `success_url` with
//!   `{CHECKOUT_SESSION_ID}` replaced by the id. `#cancel` is a link to its
//!   `cancel_url` (the session stays `open`). The buttons are absent once the session is
//!   not open (`#status` says `complete` or `expired`). Its script posts
//!   `outcome=card|delayed` to `POST {base}/stand-in/checkout/{id}` (answer
//!   `{"status", "redirect"}`, 409 when not open). A delayed payment settles by
//!   `POST {base}/stand-in/checkout/{id}/settle` with `outcome=succeeded` (the session
//!   `paid`, its intent `succeeded`) or `outcome=failed` (the session stays `complete`
//!   and `unpaid`, its intent back in `requires_payment_method` with an error).
//!   A session expires at its `expires_at` on the stand-in's clock (its intent is
//!   canceled then).
//!
//! The pages and their `POST`s need no secret key: the browser holds none.

#![allow(dead_code)]

pub mod events;
pub mod pages;
pub mod routes;
pub mod schema;
pub mod session;
pub mod state;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use schema::{Body, Validator, form_object};
use serde_json::{Value, json};
use state::{Admission, Answer, State, error};
pub use state::{Fault, Intent};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{Semaphore, watch};

/// The only secret key the stand-in accepts: a canary, so that a test finds it in any
/// output it must not reach.
pub const SECRET: &str = "sk_test_CANARYstandInSecret7Kq";

/// The stand-in's clock: Unix seconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// One request as the stand-in received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub idempotency_key: Option<String>,
    pub stripe_version: Option<String>,
    pub stripe_account: Option<String>,
    pub authorized: bool,
    /// The form or the query, as its JSON object.
    pub parameters: Value,
    /// The status it was answered.
    pub status: u16,
    /// Whether the answer was a replay.
    pub replayed: bool,
}

struct Inner {
    state: Mutex<State>,
    seen: Mutex<Vec<Seen>>,
    validator: Validator,
    clock: Clock,
    /// Connect accounts the key may act for.
    accounts: Vec<String>,
    hold: AtomicUsize,
    entered: watch::Sender<usize>,
    answered: watch::Sender<usize>,
    release: Semaphore,
}

/// A running stand-in.
#[derive(Clone)]
pub struct StandIn {
    inner: Arc<Inner>,
    manual: Arc<AtomicI64>,
    url: String,
}

/// Where the stand-in's own clock starts: 2030-01-01T00:00:00Z.
pub const START: i64 = 1_893_456_000;

impl StandIn {
    /// A stand-in on its own manual clock, starting at [`START`].
    pub async fn start() -> Self {
        let manual = Arc::new(AtomicI64::new(START));
        let read = Arc::clone(&manual);
        Self::serve(
            Arc::new(move || read.load(Ordering::SeqCst)),
            manual,
            Vec::new(),
        )
        .await
    }

    /// A stand-in reading `clock` (the journal's, say); [`StandIn::advance`] does
    /// nothing then.
    pub async fn with_clock(clock: Clock) -> Self {
        Self::serve(clock, Arc::new(AtomicI64::new(0)), Vec::new()).await
    }

    /// A stand-in on its own clock whose key may also act for `accounts` (Connect).
    pub async fn with_accounts(accounts: &[&str]) -> Self {
        let manual = Arc::new(AtomicI64::new(START));
        let read = Arc::clone(&manual);
        let accounts = accounts.iter().map(|a| (*a).to_owned()).collect();
        Self::serve(
            Arc::new(move || read.load(Ordering::SeqCst)),
            manual,
            accounts,
        )
        .await
    }

    /// A stand-in on `address` (a local run: `127.0.0.1:12111`) reading `clock`.
    pub async fn listen(address: &str, clock: Clock) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(address).await?;
        Ok(Self::serve_on(
            listener,
            clock,
            Arc::new(AtomicI64::new(0)),
            Vec::new(),
        ))
    }

    async fn serve(clock: Clock, manual: Arc<AtomicI64>, accounts: Vec<String>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the stand-in");
        Self::serve_on(listener, clock, manual, accounts)
    }

    fn serve_on(
        listener: tokio::net::TcpListener,
        clock: Clock,
        manual: Arc<AtomicI64>,
        accounts: Vec<String>,
    ) -> Self {
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let mut state = State::new();
        state.base = url.clone();
        let inner = Arc::new(Inner {
            state: Mutex::new(state),
            seen: Mutex::new(Vec::new()),
            validator: Validator::new(),
            clock,
            accounts,
            hold: AtomicUsize::new(0),
            entered: watch::channel(0).0,
            answered: watch::channel(0).0,
            release: Semaphore::new(0),
        });
        let router = Router::new()
            .route("/v1/payment_intents", post(create).get(list))
            .route("/v1/payment_intents/search", get(search))
            .route("/v1/events", get(events::list))
            .route("/v1/payment_intents/{id}", get(routes::retrieve_intent))
            .route(
                "/v1/payment_intents/{id}/cancel",
                post(routes::cancel_intent),
            )
            .route(
                "/v1/checkout/sessions",
                post(routes::create_session).get(routes::list_sessions),
            )
            .route("/v1/checkout/sessions/{id}", get(routes::retrieve_session))
            .route(
                "/v1/checkout/sessions/{id}/expire",
                post(routes::expire_session),
            )
            .route(
                "/stand-in/authenticate",
                get(pages::challenge).post(pages::authenticate),
            )
            .route(
                "/stand-in/checkout/{id}",
                get(pages::hosted).post(pages::pay),
            )
            .route("/stand-in/checkout/{id}/settle", post(pages::settle))
            .with_state(Arc::clone(&inner));
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { inner, manual, url }
    }

    /// The base URL (`STRIPE_API_BASE`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Moves the stand-in's own clock forward.
    pub fn advance(&self, seconds: i64) {
        self.manual.fetch_add(seconds, Ordering::SeqCst);
    }

    /// The stand-in's time.
    pub fn now(&self) -> i64 {
        (self.inner.clock)()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `fault` for the next new key.
    pub fn fault(&self, fault: Fault) {
        self.state().faults.push(fault);
    }

    /// Seconds before a new intent shows in search (60 unless set).
    pub fn search_lag(&self, seconds: i64) {
        self.state().search_lag = seconds;
    }

    /// Makes search answer 400, as in a region without it.
    pub fn search_unavailable(&self) {
        self.state().search_unavailable = true;
    }

    /// Holds the next create once its key is executing, until [`StandIn::release`].
    pub fn hold_next(&self) {
        self.inner.hold.fetch_add(1, Ordering::SeqCst);
    }

    /// Waits until `count` creates have been held in all.
    pub async fn entered(&self, count: usize) {
        let mut entered = self.inner.entered.subscribe();
        entered
            .wait_for(|n| *n >= count)
            .await
            .expect("the stand-in runs");
    }

    /// Waits until `count` requests have been answered in all.
    pub async fn answered(&self, count: usize) {
        let mut answered = self.inner.answered.subscribe();
        answered
            .wait_for(|n| *n >= count)
            .await
            .expect("the stand-in runs");
    }

    /// Lets one held create go on.
    pub fn release(&self) {
        self.inner.release.add_permits(1);
    }

    /// Every intent made, oldest first, as Stripe would answer it now (stored 500s
    /// rolled forward by now included).
    pub fn intents(&self) -> Vec<Value> {
        let now = self.now();
        let mut state = self.state();
        state.catch_up(now);
        state.intents.iter().map(Intent::json).collect()
    }

    /// Every request received, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.inner
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The creates of an intent received (every `POST /v1/payment_intents`).
    pub fn creates(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST" && s.path == "/v1/payment_intents")
            .collect()
    }

    /// Every request to `path` with `method`.
    pub fn requests(&self, method: &str, path: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == method && s.path == path)
            .collect()
    }

    /// Every session made, oldest first, as Stripe would answer it now.
    pub fn sessions(&self) -> Vec<Value> {
        let now = self.now();
        let mut state = self.state();
        state.catch_up(now);
        state.sessions.iter().map(session::Session::json).collect()
    }

    /// The customer answers the challenge of the intent whose client secret is
    /// `client_secret` (what the challenge page's buttons do): its status then, or
    /// `None` if no intent waits under it.
    pub fn authenticate(&self, client_secret: &str, passed: bool) -> Option<&'static str> {
        self.state().authenticate(client_secret, passed)
    }

    /// The customer confirms the refused intent whose client secret is
    /// `client_secret` again with another card (what Stripe.js does for a customer who
    /// picks another payment method after a failed challenge): its status then, or
    /// `None` if no refused intent waits under it.
    pub fn confirm_again(&self, client_secret: &str) -> Option<&'static str> {
        self.state().confirm_again(client_secret)
    }

    /// The customer pays the open session `id` on its hosted page (what its buttons
    /// do): the redirect to its success URL, or `None` if it is not open.
    pub fn pay(&self, id: &str, payment: session::Payment) -> Option<String> {
        let now = self.now();
        self.state().pay_session(now, id, payment)
    }

    /// A delayed payment of the session `id` settles ([`state::State::settle_session`]).
    pub fn settle(&self, id: &str, succeeded: bool) -> bool {
        self.state().settle_session(id, succeeded)
    }

    /// Every body that was off Stripe's schemas so far.
    pub fn schema_failures(&self) -> Vec<String> {
        self.inner.validator.failures()
    }

    /// Asserts that every body passed the schemas, and that some were checked.
    pub fn assert_schemas_held(&self) {
        let failures = self.inner.validator.failures();
        assert!(
            failures.is_empty(),
            "bodies off Stripe's schemas: {failures:#?}"
        );
        assert!(
            self.inner.validator.validated() > 0,
            "no body was validated"
        );
    }
}

/// The account a request acts for, or the refusal of a key that may not.
fn authorize(inner: &Inner, headers: &HeaderMap) -> Result<Option<String>, Answer> {
    let bearer = headers.get("authorization").and_then(|v| v.to_str().ok());
    if bearer != Some(&format!("Bearer {SECRET}")) {
        return Err(refusal(
            401,
            error("invalid_request_error", None, "Invalid API Key provided."),
        ));
    }
    match header(headers, "stripe-account") {
        None => Ok(None),
        Some(account) if inner.accounts.contains(&account) => Ok(Some(account)),
        Some(_) => Err(refusal(
            403,
            error(
                "invalid_request_error",
                Some("account_invalid"),
                "The provided key does not have access to the account.",
            ),
        )),
    }
}

fn refusal(status: u16, body: Value) -> Answer {
    Answer {
        status,
        body,
        replayed: false,
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Records the request, validates the answer and sends it.
fn answer(inner: &Inner, seen: Seen, checked: Body, answer: Answer) -> Response {
    inner.validator.check(checked, &answer.body);
    let mut seen = seen;
    seen.status = answer.status;
    seen.replayed = answer.replayed;
    inner
        .seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(seen);
    inner.answered.send_modify(|n| *n += 1);
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, axum::Json(answer.body)).into_response();
    if answer.replayed {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

fn seen(
    method: &str,
    path: &str,
    headers: &HeaderMap,
    authorized: bool,
    parameters: Value,
) -> Seen {
    Seen {
        method: method.to_owned(),
        path: path.to_owned(),
        idempotency_key: header(headers, "idempotency-key"),
        stripe_version: header(headers, "stripe-version"),
        stripe_account: header(headers, "stripe-account"),
        authorized,
        parameters,
        status: 0,
        replayed: false,
    }
}

/// `POST /v1/payment_intents`. The work runs in a task of its own, as Stripe's goes on
/// when the client stops waiting: a request the client gave up on still makes its
/// intent and stores its answer.
async fn create(Shared(inner): Shared<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let work = tokio::spawn(execute_create(inner, headers, body));
    work.await
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

async fn execute_create(inner: Arc<Inner>, headers: HeaderMap, body: Bytes) -> Response {
    let parameters = form_object(&body);
    inner.validator.check(Body::CreateForm, &parameters);
    let account = authorize(&inner, &headers);
    let record = seen(
        "POST",
        "/v1/payment_intents",
        &headers,
        account.is_ok(),
        parameters.clone(),
    );
    let account = match account {
        Ok(account) => account,
        Err(refused) => return answer(&inner, record, Body::Created(refused.status), refused),
    };
    if !parameters["amount"].is_i64() || !parameters["currency"].is_string() {
        // Validation fails before execution: nothing stored.
        let refused = refusal(
            400,
            error(
                "invalid_request_error",
                Some("parameter_missing"),
                "Missing required param.",
            ),
        );
        return answer(&inner, record, Body::Created(400), refused);
    }
    let key = header(&headers, "idempotency-key");
    let now = (inner.clock)();
    let admitted = inner.state.lock().unwrap_or_else(|e| e.into_inner()).admit(
        now,
        account.as_deref(),
        key.as_deref(),
        &parameters,
    );
    if let Admission::Answer(given) = admitted {
        return answer(&inner, record, Body::Created(given.status), given);
    }
    let held = inner
        .hold
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if held {
        inner.entered.send_modify(|n| *n += 1);
        inner
            .release
            .acquire()
            .await
            .expect("the gate stays open")
            .forget();
    }
    let now = (inner.clock)();
    let executed = inner
        .state
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .execute(now, account.as_deref(), key.as_deref(), &parameters);
    answer(&inner, record, Body::Created(executed.status), executed)
}

fn query_object(uri: &Uri) -> Value {
    form_object(uri.query().unwrap_or_default().as_bytes())
}

async fn list(Shared(inner): Shared<Arc<Inner>>, headers: HeaderMap, uri: Uri) -> Response {
    let query = query_object(&uri);
    inner.validator.check(Body::ListQuery, &query);
    let account = authorize(&inner, &headers);
    let record = seen(
        "GET",
        "/v1/payment_intents",
        &headers,
        account.is_ok(),
        query.clone(),
    );
    let account = match account {
        Ok(account) => account,
        Err(refused) => return answer(&inner, record, Body::Listed(refused.status), refused),
    };
    let since = query["created"]["gte"].as_i64().unwrap_or(i64::MIN);
    let limit = query["limit"].as_u64().unwrap_or(10).clamp(1, 100) as usize;
    let after = query["starting_after"].as_str();
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    state.catch_up((inner.clock)());
    let mut intents: Vec<&Intent> = state
        .newest_first(account.as_deref())
        .into_iter()
        .filter(|intent| intent.created >= since)
        .collect();
    if let Some(after) = after {
        let from = intents
            .iter()
            .position(|i| i.id == after)
            .map_or(intents.len(), |at| at + 1);
        intents.drain(..from);
    }
    let has_more = intents.len() > limit;
    let data: Vec<Value> = intents.iter().take(limit).map(|i| i.json()).collect();
    drop(state);
    let body =
        json!({"object": "list", "data": data, "has_more": has_more, "url": "/v1/payment_intents"});
    answer(&inner, record, Body::Listed(200), refusal(200, body))
}

async fn search(Shared(inner): Shared<Arc<Inner>>, headers: HeaderMap, uri: Uri) -> Response {
    let query = query_object(&uri);
    inner.validator.check(Body::SearchQuery, &query);
    let account = authorize(&inner, &headers);
    let record = seen(
        "GET",
        "/v1/payment_intents/search",
        &headers,
        account.is_ok(),
        query.clone(),
    );
    let account = match account {
        Ok(account) => account,
        Err(refused) => return answer(&inner, record, Body::Searched(refused.status), refused),
    };
    let now = (inner.clock)();
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    state.catch_up(now);
    let wanted = query["query"]
        .as_str()
        .and_then(|q| q.strip_prefix("metadata['journal_key']:'"))
        .and_then(|q| q.strip_suffix('\''))
        .map(str::to_owned);
    let refused = if state.search_unavailable {
        Some(error(
            "invalid_request_error",
            None,
            "Search is not available for this account.",
        ))
    } else if wanted.is_none() {
        Some(error(
            "invalid_request_error",
            Some("parameter_invalid_string"),
            "Invalid search query.",
        ))
    } else {
        None
    };
    if let Some(body) = refused {
        drop(state);
        return answer(&inner, record, Body::Searched(400), refusal(400, body));
    }
    let limit = query["limit"].as_u64().unwrap_or(10).clamp(1, 100) as usize;
    let matching: Vec<&Intent> = state
        .newest_first(account.as_deref())
        .into_iter()
        .filter(|intent| intent.created + state.search_lag <= now)
        .filter(|intent| {
            intent.metadata.get("journal_key").and_then(Value::as_str) == wanted.as_deref()
        })
        .collect();
    let data: Vec<Value> = matching.iter().take(limit).map(|i| i.json()).collect();
    let has_more = matching.len() > limit;
    drop(state);
    let body = json!({
        "object": "search_result",
        "data": data,
        "has_more": has_more,
        "next_page": null,
        "url": "/v1/payment_intents/search",
    });
    answer(&inner, record, Body::Searched(200), refusal(200, body))
}

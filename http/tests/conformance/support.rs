//! The service the conformance tests drive: an axum router whose authentication
//! layer sets a `VerifiedCaller` from a test header, a notes handler that only
//! computes its response (scripted per call), and a charges handler that sends to a
//! scripted provider; the journal on a fresh emulator project with a manual clock; and
//! exact counts of the journal's documents.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::middleware::{Next, from_fn};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::identity::{CallerScopeKind, CommandType, Environment};
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    Clock, Connection, Journal, Provider, ProviderAnswer, ProviderPlan, ProviderPlanRequest,
    ResultEnvelope, SendRequest, Target,
};
use command_journal_http::{
    IdempotencyLayer, IdempotentCommand, VerifiedCaller, execution_response,
};
use gcloud_sdk::google::firestore::v1::ListDocumentsRequest;
use http::{HeaderMap, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tower::ServiceExt as _;

/// The header the test's authentication layer takes the caller id from.
pub const CALLER: &str = "x-test-caller";

/// What the notes handler does on one call.
#[derive(Debug, Clone)]
pub enum Act {
    /// 201 with the note, `Location`, and headers that must never be stored.
    Created,
    /// Signals that it started, then waits to be released before `Created`.
    Gated,
    /// Answers this status with a fixed body.
    Status(u16),
    /// Panics: the handler crashed.
    Crash,
    /// 200 with a body larger than any envelope holds.
    Huge,
    /// 200 `application/octet-stream` with these bytes.
    Bytes(Vec<u8>),
    /// 401 with its challenge, `WWW-Authenticate`.
    Challenge,
    /// 200 at once, with a body that sends a first chunk and then never ends.
    StalledBody,
}

/// The handlers' shared state: the script, the count of runs and sends, the gate.
#[derive(Default)]
pub struct Script {
    acts: Mutex<VecDeque<Act>>,
    answers: Mutex<VecDeque<ProviderAnswer>>,
    /// Handler runs of the notes route.
    pub runs: AtomicUsize,
    /// Provider sends of the charges route.
    pub sends: AtomicUsize,
    /// Notified when a gated act (or send) started.
    pub started: Notify,
    /// Notified to let a gated act (or send) finish.
    pub release: Notify,
}

impl Script {
    /// The next calls of the notes handler do `acts`, then `Created`.
    pub fn acts(&self, acts: impl IntoIterator<Item = Act>) {
        self.acts.lock().expect("script").extend(acts);
    }

    /// The next sends answer `answers` (a `None`-like `Unknown` after them), the first
    /// gated when `gated`.
    pub fn answers(&self, answers: impl IntoIterator<Item = ProviderAnswer>) {
        self.answers.lock().expect("script").extend(answers);
    }

    /// How many times the notes handler ran.
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// How many sends the provider saw.
    pub fn sends(&self) -> usize {
        self.sends.load(Ordering::SeqCst)
    }
}

/// The notes handler: what the script says, counted.
async fn note(script: Arc<Script>, body: Bytes) -> Response {
    script.runs.fetch_add(1, Ordering::SeqCst);
    let act = script.acts.lock().expect("script").pop_front();
    let created = || {
        let note: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let mut response = (
            StatusCode::CREATED,
            [
                ("content-type", "application/json"),
                ("location", "/v1/notes/n_1"),
                ("cache-control", "no-store"),
                ("set-cookie", "session=CANARYcookie"),
                ("x-request-id", "CANARYrequest"),
                ("authorization", "Bearer CANARYauthorization"),
                ("proxy-authorization", "Basic CANARYproxy"),
                ("www-authenticate", "Bearer realm=\"CANARYrealm\""),
                ("proxy-authenticate", "Basic realm=\"CANARYproxyrealm\""),
            ],
            json!({"id": "n_1", "note": note}).to_string(),
        )
            .into_response();
        response.headers_mut().append(
            "link",
            http::HeaderValue::from_static("</v1/notes>; rel=\"up\""),
        );
        response
    };
    match act.unwrap_or(Act::Created) {
        Act::Created => created(),
        Act::Gated => {
            script.started.notify_one();
            script.release.notified().await;
            created()
        }
        Act::Status(status) => (
            StatusCode::from_u16(status).expect("a status"),
            [("content-type", "application/json")],
            format!(r#"{{"error":"scripted {status}"}}"#),
        )
            .into_response(),
        Act::Crash => panic!("the scripted handler crashed"),
        Act::Huge => (StatusCode::OK, "x".repeat(20_000)).into_response(),
        Act::Bytes(bytes) => (
            StatusCode::OK,
            [("content-type", "application/octet-stream")],
            bytes,
        )
            .into_response(),
        Act::StalledBody => {
            let first = stalled_after(Bytes::from_static(b"{\"partial\":"));
            (StatusCode::OK, Body::new(first)).into_response()
        }
        Act::Challenge => (
            StatusCode::UNAUTHORIZED,
            [("www-authenticate", "Bearer error=\"invalid_token\"")],
        )
            .into_response(),
    }
}

/// A body that sends `first`, then never ends.
fn stalled_after(first: Bytes) -> Stalled {
    Stalled(Some(first))
}

/// The body of [`Act::StalledBody`].
struct Stalled(Option<Bytes>);

impl http_body::Body for Stalled {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        match self.0.take() {
            Some(first) => std::task::Poll::Ready(Some(Ok(http_body::Frame::data(first)))),
            None => std::task::Poll::Pending,
        }
    }
}

/// The provider of the charges route: scripted answers, counted, the first send of a
/// gated script held until released.
struct Scripted {
    script: Arc<Script>,
    gated: bool,
}

impl Provider for Scripted {
    async fn send(&self, _: SendRequest) -> ProviderAnswer {
        self.script.sends.fetch_add(1, Ordering::SeqCst);
        if self.gated {
            self.script.started.notify_one();
            self.script.release.notified().await;
        }
        let next = self.script.answers.lock().expect("script").pop_front();
        next.unwrap_or(ProviderAnswer::Unknown)
    }

    async fn lookup(&self, _: LookupRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

/// The plan of a charge body `{"amount", "currency"}`.
fn plan(body: &Value) -> Result<ProviderPlan, command_journal::JournalError> {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_conformance",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: body,
        key_retention_seconds: 86_400,
    })
}

/// The charges handler: the layer's command through `execute_marked`, mapped by the
/// package's table.
async fn charge(
    journal: Journal,
    script: Arc<Script>,
    gated: bool,
    command: IdempotentCommand,
) -> Response {
    let plan = match plan(command.body()) {
        Ok(plan) => plan,
        Err(error) => return command_journal_http::Problem::journal(error).into_response(),
    };
    let provider = Scripted { script, gated };
    execution_response(
        journal
            .execute_marked(command.input(), &plan, &provider)
            .await,
    )
}

/// The authentication layer: the caller from [`CALLER`], none without it.
pub async fn authenticate(mut request: Request, next: Next) -> Response {
    let caller = request
        .headers()
        .get(CALLER)
        .and_then(|value| value.to_str().ok())
        .map(|id| VerifiedCaller::new(CallerScopeKind::Member, id).expect("a caller id"));
    if let Some(caller) = caller {
        request.extensions_mut().insert(caller);
    }
    next.run(request).await
}

/// The service under test, its journal's clock and its script.
pub struct Service {
    pub router: Router,
    pub journal: Journal,
    pub clock: Arc<ManualClock>,
    pub script: Arc<Script>,
}

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_930_000_000, 0).expect("a time")
}

/// A clock that reads its manual clock, `leap` later from the second read on: the
/// time a slow start took, as the lease's remaining time sees it.
struct Leaping {
    base: Arc<ManualClock>,
    leap: TimeDelta,
    reads: AtomicUsize,
}

impl Clock for Leaping {
    fn now(&self) -> DateTime<Utc> {
        let now = self.base.now();
        match self.reads.fetch_add(1, Ordering::SeqCst) {
            0 => now,
            _ => now + self.leap,
        }
    }
}

/// A service on a fresh project: `POST /v1/notes` (stored responses) and
/// `POST /v1/charges` (a provider handler; its sends gated when `gated`).
pub async fn service(gated: bool) -> Service {
    service_with(gated, None).await
}

/// [`service`] whose journal's clock leaps `seconds` after its first read.
pub async fn leaping_service(seconds: i64) -> Service {
    service_with(false, Some(TimeDelta::seconds(seconds))).await
}

async fn service_with(gated: bool, leap: Option<TimeDelta>) -> Service {
    let emulator = match command_journal_emulator::Emulator::shared() {
        Ok(emulator) => emulator,
        Err(error) => panic!("the Firestore emulator is required for these tests: {error}"),
    };
    let project = emulator.new_project_id();
    let connection = Connection::connect(&project, Target::Emulator(emulator.host().to_owned()))
        .await
        .expect("the emulator");
    let clock = Arc::new(ManualClock::new(start()));
    let journal = Journal::new(connection).with_clock(match leap {
        Some(leap) => Arc::new(Leaping {
            base: clock.clone(),
            leap,
            reads: AtomicUsize::new(0),
        }),
        None => clock.clone(),
    });
    let script = Arc::new(Script::default());
    let notes = IdempotencyLayer::new(
        journal.clone(),
        Environment::Emulator,
        CommandType::parse("create_note").expect("a type"),
    );
    let charges = IdempotencyLayer::new(
        journal.clone(),
        Environment::Emulator,
        CommandType::parse("charge").expect("a type"),
    )
    .provider_handlers();
    let (for_notes, for_charges, charging) = (script.clone(), script.clone(), journal.clone());
    let router = Router::new()
        .route(
            "/v1/notes",
            post(move |body: Bytes| note(for_notes.clone(), body)).layer(notes),
        )
        .route(
            "/v1/charges",
            post(move |command: IdempotentCommand| {
                charge(charging.clone(), for_charges.clone(), gated, command)
            })
            .layer(charges),
        )
        .layer(from_fn(authenticate));
    Service {
        router,
        journal,
        clock,
        script,
    }
}

/// An answer as the client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    /// The problem's `code`, or `None` for an answer that is not a problem.
    pub fn problem(&self) -> Option<String> {
        let problem = self.headers.get("content-type")? == "application/problem+json";
        problem.then(|| self.json()["code"].as_str().unwrap_or_default().to_owned())
    }

    /// Whether the answer carries `Idempotent-Replayed: true`.
    pub fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|value| value == "true")
    }

    /// The answer without its replay marker: what a first answer looks like.
    pub fn unmarked(&self) -> Self {
        let mut answer = self.clone();
        answer.headers.remove("idempotent-replayed");
        answer.headers.remove("date");
        answer
    }
}

/// A request to `path` by `caller` (none: `None`) with `key` as the field's raw value
/// (none: `None`) and `body`.
pub struct Call<'a> {
    pub path: &'a str,
    pub caller: Option<&'a str>,
    pub key: Option<&'a str>,
    pub content_type: Option<&'a str>,
    pub body: &'a str,
}

/// A JSON `POST /v1/notes` by `caller` with the quoted `key`.
pub fn note_call<'a>(caller: &'a str, key: &'a str, body: &'a str) -> Call<'a> {
    Call {
        path: "/v1/notes",
        caller: Some(caller),
        key: Some(key),
        content_type: Some("application/json"),
        body,
    }
}

impl Service {
    /// Sends `call` and reads the whole answer.
    pub async fn send(&self, call: &Call<'_>) -> Answer {
        let mut request = http::Request::post(call.path);
        if let Some(caller) = call.caller {
            request = request.header(CALLER, caller);
        }
        if let Some(key) = call.key {
            request = request.header("idempotency-key", key);
        }
        if let Some(media) = call.content_type {
            request = request.header("content-type", media);
        }
        let request = request
            .body(Body::from(call.body.to_owned()))
            .expect("a request");
        self.send_request(request).await
    }

    /// Sends `request` as it is and reads the whole answer.
    pub async fn send_request(&self, request: http::Request<Body>) -> Answer {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("infallible");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("a body").to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    }

    /// Moves the journal's clock on by `seconds`.
    pub fn advance(&self, seconds: i64) {
        self.clock.advance(TimeDelta::seconds(seconds));
    }

    /// The journal's documents, counted exactly.
    pub async fn counts(&self) -> Counts {
        let connection = self.journal.connection();
        let roots = list(connection, "", "checkoutRequests").await;
        let mut counts = Counts {
            roots: roots.len(),
            events: list(connection, "", "auditEvents").await.len(),
            ..Counts::default()
        };
        for root in roots {
            let path = root
                .rsplit_once("/documents/")
                .map(|(_, path)| path.to_owned())
                .expect("a document path");
            counts.lifecycles += list(connection, &path, "lifecycle").await.len();
            counts.results += list(connection, &path, "results").await.len();
            counts.sends += list(connection, &path, "providerSends").await.len();
        }
        counts
    }

    /// Asserts that `verify` finds nothing wrong in the journal.
    pub async fn assert_verified(&self) {
        let report = command_journal::verify(self.journal.connection(), &mut |_| {})
            .await
            .expect("verify");
        assert!(report.clean, "{:?}", report.findings);
    }
}

/// The journal's documents by kind.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub roots: usize,
    pub lifecycles: usize,
    pub results: usize,
    pub sends: usize,
    pub events: usize,
}

/// The names of the documents of `collection` under `parent` ("" for the root).
async fn list(connection: &Connection, parent: &str, collection: &str) -> Vec<String> {
    let parent = if parent.is_empty() {
        connection.documents_path()
    } else {
        format!("{}/{parent}", connection.documents_path())
    };
    let request = ListDocumentsRequest {
        parent,
        collection_id: collection.to_owned(),
        page_size: 300,
        page_token: String::new(),
        order_by: String::new(),
        mask: None,
        show_missing: false,
        consistency_selector: None,
        request_options: None,
    };
    let response = connection
        .raw()
        .list_documents(request)
        .await
        .expect("list")
        .into_inner();
    assert!(response.next_page_token.is_empty(), "more than a page");
    response.documents.into_iter().map(|d| d.name).collect()
}

/// A charge's result envelope.
pub fn charged(id: &str) -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": id, "amount": 1250, "status": "succeeded"}))
        .expect("an envelope")
}

//! `POST /v1/checkouts`, `GET /healthz` and `GET /metrics`.
//!
//! A checkout is the journal command `checkout` (endpoint schema version 1) of the
//! verified caller (scope kind `member`), sent to the provider through
//! `Journal::execute_marked` with the plan from the environment ([`run_command`]).
//! Responses carry fixed statuses and codes only, and a success the stored charge
//! envelope: never a raw id, a hash or a payload value.
//!
//! The token is checked before the body is read (an unauthenticated body is never
//! read, and the connection closes after the 401); the body must then arrive within
//! the body timeout (else 408). A request with an `Idempotency-Key` header then runs
//! through command-journal-http's layer ([`super::keyed`]): the key names the command,
//! the body is its payload. One without runs the body form, kept for one release:
//! `{"commandId", "payload"}` parsed strictly (a duplicate key at any depth is a 400,
//! as in `command_journal::strict_json`). Every request leaves one line
//! ([`super::request_log`]), refused ones (404, 405, 408, 413, ...) included, and
//! its latency covers the body read.

use super::answer::{Answer, Logged, severity};
use super::auth::{AuthError, KeySource, Verifier};
use super::backend::Backend;
use super::called::Called;
use super::config::Config;
use super::logging::{Logger, Severity};
use super::provider::RequestProvider;
use super::request_log::{
    CHECKOUTS, HEALTHZ, METRICS, RequestLine, UNMATCHED, elapsed, method_name,
};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use command_journal::identity::{CommandType, Environment};
use command_journal::sends::Executed;
use command_journal::strict_json::{self, ObjectError};
use command_journal::{
    CommandInput, CommandRequest, Execution, Journal, JournalError, RetryPolicy,
};
use command_journal_http::{IDEMPOTENCY_KEY, IdempotencyLayer, MAX_BODY_LIMIT};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use metrics_exporter_prometheus::PrometheusHandle;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest request body accepted.
pub const BODY_LIMIT: usize = 64 * 1024;
/// The command type and endpoint schema version of a checkout.
pub const COMMAND_TYPE: &str = "checkout";
/// The endpoint schema version of `POST /v1/checkouts`.
pub const ENDPOINT_SCHEMA_VERSION: i64 = 1;

/// Everything a request needs; shared by every request.
pub struct App {
    journal: Journal,
    verifier: Verifier,
    provider: Backend,
    metrics: PrometheusHandle,
    logger: Logger,
    environment: Environment,
    body_timeout: Duration,
    max_checkouts: usize,
    /// The `Idempotency-Key` layer of the header form, for provider handlers.
    keyed: IdempotencyLayer,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("journal", &self.journal)
            .field("environment", &self.environment)
            .finish_non_exhaustive()
    }
}

impl App {
    /// The service over `journal`; token keys come from `keys`, log lines go to
    /// `logger`, `GET /metrics` renders `metrics`. Fails when the provider's HTTP
    /// client could not be built.
    pub fn new(
        config: &Config,
        journal: Journal,
        keys: Arc<dyn KeySource>,
        logger: Logger,
        metrics: PrometheusHandle,
    ) -> Result<Self, &'static str> {
        // Every journal operation is bounded, retries included: with Firestore not
        // answering, a checkout answers 503 within the deadline.
        let policy = RetryPolicy {
            deadline: Some(config.firestore_deadline),
            ..journal.retry_policy()
        };
        let journal = journal.with_retry_policy(policy);
        let command_type =
            CommandType::parse(COMMAND_TYPE).map_err(|_| "the command type is not valid")?;
        let keyed = IdempotencyLayer::new(journal.clone(), config.environment, command_type)
            .body_limit(MAX_BODY_LIMIT)
            .provider_handlers();
        Ok(Self {
            journal,
            verifier: Verifier::new(&config.project, config.auth_emulator, keys),
            provider: Backend::new(config).ok_or("the HTTP client could not be built")?,
            metrics,
            logger,
            environment: config.environment,
            body_timeout: config.http.body_timeout,
            max_checkouts: config.http.max_requests,
            keyed,
        })
    }

    /// The same service, its provider's client reading `clock` ([`Backend::with_clock`]).
    pub fn with_provider_clock(mut self, clock: Arc<dyn command_journal::Clock>) -> Self {
        self.provider = self.provider.with_clock(clock);
        self
    }

    /// The routes; a wrong method (405) or path (404) is answered and logged here.
    /// At most `HTTP_MAX_REQUESTS` checkouts run at once (more wait for a slot);
    /// `/healthz` and `/metrics` are never queued behind them.
    pub fn router(self: Arc<Self>) -> Router {
        let slots = tower::limit::ConcurrencyLimitLayer::new(self.max_checkouts);
        let keyed = super::keyed::router(self.clone(), self.keyed.clone());
        let checkout = move |State(app): State<Arc<App>>, request: Request| {
            let keyed = keyed.clone();
            async move { checkout(app, keyed, request).await }
        };
        Router::new()
            .route(
                CHECKOUTS,
                post(checkout).layer(slots).fallback(not_allowed_checkouts),
            )
            .route(HEALTHZ, get(healthz).fallback(not_allowed_healthz))
            .route(METRICS, get(scrape).fallback(not_allowed_metrics))
            .fallback(not_found)
            .with_state(self)
    }
}

async fn not_found(State(app): State<Arc<App>>, request: Request) -> Response {
    refuse(
        &app,
        &request,
        UNMATCHED,
        StatusCode::NOT_FOUND,
        "not_found",
    )
}

async fn not_allowed_checkouts(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut response = refuse(
        &app,
        &request,
        CHECKOUTS,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    allow(&mut response, "POST");
    response
}

async fn not_allowed_healthz(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut response = refuse(
        &app,
        &request,
        HEALTHZ,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    allow(&mut response, "GET,HEAD");
    response
}

/// The `Allow` header a 405 carries (RFC 9110 §15.5.6).
fn allow(response: &mut Response, methods: &'static str) {
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(methods));
}

/// A refusal before any handler: a fixed body, one log line.
fn refuse(
    app: &App,
    request: &Request,
    route: &'static str,
    status: StatusCode,
    code: &'static str,
) -> Response {
    RequestLine::without_command(
        method_name(request.method()),
        route,
        status.as_u16(),
        code,
        elapsed(request.extensions(), Instant::now()),
    )
    .log(&app.logger, Severity::Info, None);
    reply(status, json!({"error": code}))
}

async fn not_allowed_metrics(State(app): State<Arc<App>>, request: Request) -> Response {
    let mut response = refuse(
        &app,
        &request,
        METRICS,
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    );
    allow(&mut response, "GET,HEAD");
    response
}

/// `GET /healthz`: `{"status":"ok"}`, logged as every request is.
async fn healthz(State(app): State<Arc<App>>, request: Request) -> Response {
    RequestLine::without_command(
        method_name(request.method()),
        HEALTHZ,
        200,
        "ok",
        elapsed(request.extensions(), Instant::now()),
    )
    .log(&app.logger, Severity::Info, None);
    reply(StatusCode::OK, json!({"status": "ok"}))
}

/// The Prometheus text exposition of every metric recorded so far. The scrape is
/// logged and counted before rendering, so it appears in its own answer.
async fn scrape(State(app): State<Arc<App>>, request: Request) -> Response {
    RequestLine::without_command(
        method_name(request.method()),
        METRICS,
        200,
        "scraped",
        elapsed(request.extensions(), Instant::now()),
    )
    .log(&app.logger, Severity::Info, None);
    let mut response = app.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

/// `POST /v1/checkouts`. The work runs in a task of its own: a client that goes away
/// (and its connection with it) drops only the wait for the answer, never the work,
/// so a provider's answer is recorded, logged and counted whether or not anyone still
/// waits for it.
async fn checkout(app: Arc<App>, keyed: Router, request: Request) -> Response {
    let started = Instant::now();
    let work = tokio::spawn(async move {
        let (parts, body) = request.into_parts();
        let trace = app.logger.trace(
            parts
                .headers
                .get("x-cloud-trace-context")
                .and_then(|v| v.to_str().ok()),
        );
        let response = match handle(&app, &parts, body).await {
            Handled::Answered(answer) => answer.into_response(),
            Handled::Keyed(bytes, caller) => {
                super::keyed::checkout(keyed, &parts, bytes, caller).await
            }
        };
        let logged = response.extensions().get::<Logged>().cloned();
        let logged = logged.unwrap_or(Logged {
            outcome: "internal",
            command_key_hash: None,
            provider_called: false,
        });
        let line = RequestLine {
            method: "POST",
            route: CHECKOUTS,
            status: response.status().as_u16(),
            latency: elapsed(&parts.extensions, started),
            outcome: logged.outcome,
            command_key_hash: logged.command_key_hash,
            provider_called: logged.provider_called,
        };
        line.log(&app.logger, severity(response.status()), trace.as_ref());
        response
    });
    match work.await {
        Ok(response) => response,
        // The task panicked: nothing more is known than that.
        Err(_) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "internal"}),
        ),
    }
}

/// Reads the body: at most [`BODY_LIMIT`] bytes within the body timeout.
async fn read_body(app: &App, body: Body) -> Result<Bytes, Answer> {
    let read = tokio::time::timeout(app.body_timeout, Limited::new(body, BODY_LIMIT).collect());
    match read.await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
            let mut answer = Answer::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "payload_too_large"}),
                "payload_too_large",
            );
            answer.close = true;
            Err(answer)
        }
        Ok(Err(_)) => Err(Answer::invalid("body")),
        Err(_) => {
            let mut answer = Answer::new(
                StatusCode::REQUEST_TIMEOUT,
                json!({"error": "body_timeout"}),
                "body_timeout",
            );
            answer.close = true;
            Err(answer)
        }
    }
}

/// How [`handle`] ends: an answer, or a request of the header form, authenticated
/// and read, for the layer.
enum Handled {
    Answered(Answer),
    Keyed(Bytes, String),
}

async fn handle(app: &App, parts: &Parts, body: Body) -> Handled {
    let headers = &parts.headers;
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let caller = match app.verifier.verify(authorization).await {
        Ok(caller) => caller,
        Err(AuthError::KeysUnavailable) => {
            return Handled::Answered(Answer::retry("keys_unavailable", 5));
        }
        Err(error) => {
            let mut answer = Answer::new(
                StatusCode::UNAUTHORIZED,
                json!({"error": "unauthenticated"}),
                error.code(),
            );
            answer.unauthenticated = true;
            return Handled::Answered(answer);
        }
    };
    if !is_json(headers) {
        return Handled::Answered(Answer::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            json!({"error": "unsupported_media_type"}),
            "unsupported_media_type",
        ));
    }
    let body = match read_body(app, body).await {
        Ok(body) => body,
        Err(answer) => return Handled::Answered(answer),
    };
    if headers.contains_key(IDEMPOTENCY_KEY) {
        return Handled::Keyed(body, caller.caller_id().to_owned());
    }
    Handled::Answered(body_form(app, caller.caller_id(), &body).await)
}

/// The body form: `{"commandId", "payload"}` of the verified `caller_id`.
async fn body_form(app: &App, caller_id: &str, body: &[u8]) -> Answer {
    let (command_id, payload) = match parse_body(body) {
        Ok(parts) => parts,
        Err(field) => return Answer::invalid(field),
    };
    let command = match CommandInput::new(CommandRequest {
        environment: app.environment.as_str(),
        caller_scope_kind: "member",
        caller_id,
        command_id: &command_id,
        command_type: COMMAND_TYPE,
        endpoint_schema_version: ENDPOINT_SCHEMA_VERSION,
        payload: &payload,
    }) {
        Ok(command) => command,
        Err(error) => return Answer::journal_error(error),
    };
    let hash = command.identity().command_key_hash().to_string();
    let mut answer = run_command(app, &command, &payload).await;
    answer.command_key_hash = Some(hash);
    answer
}

/// `application/json`, parameters (such as `charset=utf-8`) allowed.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Exactly `{"commandId": string, "payload": ...}` without a duplicate key at any
/// depth; the payload itself is validated by the journal. A rejection names the field
/// (the top-level key a duplicate is under, or `body`), never its value.
fn parse_body(body: &[u8]) -> Result<(String, Value), &'static str> {
    let text = std::str::from_utf8(body).map_err(|_| "body")?;
    let mut object = match strict_json::parse_object(text) {
        Ok(object) => object,
        Err(ObjectError::DuplicateKey(key)) => {
            return Err(match key.as_str() {
                "commandId" => "commandId",
                "payload" => "payload",
                _ => "body",
            });
        }
        Err(ObjectError::NotAnObject) => return Err("body"),
    };
    let command_id = match object.remove("commandId") {
        Some(Value::String(id)) => id,
        _ => return Err("commandId"),
    };
    let payload = object.remove("payload").ok_or("payload")?;
    if !object.is_empty() {
        return Err("body");
    }
    Ok((command_id, payload))
}

/// The checkout's core: the plan the provider's own client binds for the payload
/// (`Stripe::plan`, or the charge contract's), then one `Journal::execute` through
/// this request's provider adapter (which takes a charge as evidence only when it is
/// the payload's amount and currency, under the attempt's key), mapped to its answer.
/// With Stripe, a payload that makes no PaymentIntent (its `amount`, `currency` or
/// `paymentMethod`) is refused before the journal sees it. Everything else (the lease,
/// the permit before the POST, the fence, the cutoff, the lookup, a second attempt,
/// the stored result on a replay, marked as one) is the journal's.
pub(super) async fn run_command(app: &App, command: &CommandInput, payload: &Value) -> Answer {
    let charged = super::plant::charged(payload);
    let payload = charged.as_ref();
    let plan = match app.provider.plan(payload) {
        Ok(plan) => plan,
        // The plan's parameters are the request's payload.
        Err(JournalError::InvalidInput {
            field: "parameters",
        }) => return Answer::invalid("payload"),
        Err(error) => return Answer::journal_error(error),
    };
    match &app.provider {
        Backend::Charges(charges, _) => {
            let provider = RequestProvider::new(charges, payload);
            let execution = app.journal.execute_marked(command, &plan, &provider).await;
            answer(execution, provider.called(), provider.ambiguity())
        }
        Backend::Stripe(stripe) => {
            let provider = stripe.payment(payload);
            let execution = app.journal.execute_marked(command, &plan, &provider).await;
            answer(execution, provider.called(), provider.code())
        }
        Backend::Checkout(stripe, pages) => {
            let provider = Called::new(stripe.checkout(payload, pages));
            let execution = app.journal.execute_marked(command, &plan, &provider).await;
            answer(execution, provider.called(), provider.inner().code())
        }
    }
}

/// The answer of an execution, whose provider was `called` or not, and whose last
/// send stayed unknown for `ambiguity` (a fixed code), if it did; a replay says so.
fn answer(
    execution: Result<Executed, JournalError>,
    called: bool,
    ambiguity: Option<&'static str>,
) -> Answer {
    let replayed = matches!(&execution, Ok(executed) if executed.replayed);
    let execution = execution.map(|executed| executed.execution);
    let mut answer = match execution {
        // Sent (or looked up) now, or a replay of the stored answer.
        Ok(Execution::Succeeded(envelope)) => Answer::charged(
            envelope.canonical(),
            if called { "succeeded" } else { "replayed" },
        ),
        Ok(Execution::SucceededWithoutResult) => Answer::succeeded("replayed"),
        Ok(Execution::Declined) => Answer::failed(if called { "declined" } else { "replayed" }),
        // After the provider was called, another holder took the lease over before
        // this call's answer could be recorded under it: the write was refused.
        Ok(Execution::InProgress) if called => Answer::in_progress("lease_lost"),
        Ok(Execution::InProgress) => Answer::in_progress("lease_busy"),
        // Whole seconds already, rounded up by the journal.
        Ok(Execution::RetryLater { after }) => {
            Answer::retry(ambiguity.unwrap_or("lease_too_short"), after.as_secs())
        }
        Ok(Execution::PendingReconciliation) => Answer::pending_reconciliation(),
        // The customer's browser confirms or pays; the return page's call settles it.
        Ok(Execution::CustomerMustAct(action)) => Answer::customer_must_act(&action),
        Err(error) => Answer::journal_error(error),
    };
    answer.provider_called = called;
    answer.replayed = replayed;
    answer
}

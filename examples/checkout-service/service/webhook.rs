//! `POST /webhooks/stripe`: Stripe's events as signed evidence.
//!
//! No Firebase token: the `Stripe-Signature` alone authenticates a request. The raw
//! body, at most [`command_journal_stripe::webhook::DEFAULT_MAX_BODY_BYTES`], read
//! within the body timeout, is verified before any byte of it is parsed
//! (`Verifier::verify`: HMAC-SHA256 under any of the endpoint's secrets, the signed
//! timestamp within 300 s of the journal's clock). A verified event is then taken as
//! evidence ([`super::webhook_event::take`]).
//!
//! Stripe's webhook page (<https://docs.stripe.com/webhooks>) asks an endpoint to
//! answer with a 2xx quickly, before any work that could time out; says that it
//! retries an event not answered with a 2xx for up to three days with exponential
//! back-off in live mode (a few times over hours in a sandbox), that it does not order
//! events, and that one may arrive more than once. It publishes no exact timeout, so
//! the whole request is bounded by [`WEBHOOK_DEADLINE`] (10 s), well inside any a delivery
//! waits; the work is one or two reads by id and one journal transaction.
//!
//! | the request | answer | why |
//! | --- | --- | --- |
//! | recorded, duplicate, unknown object, not ours, a type not read, nothing to record | 200 `{"received": true}` | final: a retry would change nothing, so Stripe must stop retrying |
//! | unsigned, forged, stale, malformed, too large | 400 `{"error": <code>}` | never Stripe's: nothing is written, no retry helps; logged without its body |
//! | body not within the body timeout | 408 | the request never arrived whole |
//! | the journal or a read by id did not answer in time, or a call in flight holds the command's lease | 503 `{"error": <code>}` | Stripe retries it later: the same event then settles or is a duplicate |
//!
//! Every request leaves one line (`route` `/webhooks/stripe`, a fixed outcome code,
//! never the body, the signature, a key or an id) and is counted
//! ([`super::webhook_metrics`]).

use super::config::{Config, ConfigError};
use super::logging::{Logger, Severity};
use super::request_log::{RequestLine, elapsed, method_name};
use super::webhook_event::{Taken, take};
use super::webhook_metrics as counted;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use command_journal::Journal;
use command_journal_stripe::Stripe;
use command_journal_stripe::webhook::{DEFAULT_MAX_BODY_BYTES, Refusal, Verifier, WebhookSecrets};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The webhook route.
pub const WEBHOOKS: &str = "/webhooks/stripe";
/// The variable holding the endpoint's signing secrets: `whsec_…`, comma-separated
/// (no spaces) during a roll, when Stripe signs with the old secret and the new one.
pub const SECRET_VARIABLE: &str = "STRIPE_WEBHOOK_SECRET";
/// The bound on one webhook request, body read, reads by id and journal included.
pub const WEBHOOK_DEADLINE: Duration = Duration::from_secs(10);

/// The endpoint's configuration. `Debug` shows how many secrets, never one.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    secrets: WebhookSecrets,
}

impl WebhookSettings {
    /// Reads [`SECRET_VARIABLE`] through `get`: `None` when unset or empty (no endpoint
    /// is served); refused when it is not 1 to 4 distinct `whsec_` secrets, or when the
    /// service does not run on Stripe (`PROVIDER_NAME=stripe`). The problem never
    /// echoes a secret.
    pub fn from_lookup(
        get: impl Fn(&str) -> Option<String>,
        config: &Config,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(text) = get(SECRET_VARIABLE).filter(|text| !text.trim().is_empty()) else {
            return Ok(None);
        };
        if config.stripe.is_none() {
            return Err(ConfigError {
                variable: SECRET_VARIABLE,
                problem: "is read only with PROVIDER_NAME=stripe: unset it",
            });
        }
        let secrets = WebhookSecrets::from_list(text.trim()).map_err(|_| ConfigError {
            variable: SECRET_VARIABLE,
            problem: "must be 1 to 4 distinct webhook signing secrets (whsec_ and letters or digits), comma-separated without spaces",
        })?;
        Ok(Some(Self { secrets }))
    }
}

/// Everything the endpoint needs; shared by every delivery.
pub struct Webhooks {
    verifier: Verifier,
    stripe: Stripe,
    journal: Journal,
    logger: Logger,
    livemode: bool,
    body_timeout: Duration,
}

impl std::fmt::Debug for Webhooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhooks")
            .field("verifier", &self.verifier)
            .field("livemode", &self.livemode)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    /// The endpoint of `settings` over `journal`, reading objects with the service's
    /// Stripe client; `None` when the service does not run on Stripe or its client
    /// could not be built. Every journal call is bounded by [`WEBHOOK_DEADLINE`].
    pub fn new(
        settings: WebhookSettings,
        config: &Config,
        journal: Journal,
        logger: Logger,
    ) -> Option<Self> {
        let stripe = Stripe::new(config.stripe.clone()?).ok()?;
        let policy = command_journal::RetryPolicy {
            deadline: Some(WEBHOOK_DEADLINE.min(config.firestore_deadline)),
            ..journal.retry_policy()
        };
        Some(Self {
            verifier: Verifier::new(settings.secrets).with_max_body(DEFAULT_MAX_BODY_BYTES),
            livemode: stripe.mode() == "live",
            stripe,
            journal: journal.with_retry_policy(policy),
            logger,
            body_timeout: config.http.body_timeout,
        })
    }

    /// The route: `POST /webhooks/stripe` (405 for another method), to merge into the
    /// service's router.
    pub fn router(self: Arc<Self>) -> Router {
        Router::new()
            .route(WEBHOOKS, post(receive).fallback(not_allowed))
            .with_state(self)
    }
}

/// A delivery's answer and the fixed code of its line.
struct Answered {
    status: StatusCode,
    code: &'static str,
}

/// `POST /webhooks/stripe`. The work runs in a task of its own: a delivery Stripe
/// stopped waiting for is still recorded.
async fn receive(State(hooks): State<Arc<Webhooks>>, request: Request) -> Response {
    let started = Instant::now();
    counted::received();
    let work = tokio::spawn(async move {
        let (parts, body) = request.into_parts();
        let signature = parts
            .headers
            .get("stripe-signature")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let answered =
            tokio::time::timeout(WEBHOOK_DEADLINE, handle(&hooks, signature.as_deref(), body))
                .await
                .unwrap_or(Answered {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    code: "webhook_deadline",
                });
        let latency = elapsed(&parts.extensions, started);
        let line = RequestLine::without_command(
            "POST",
            WEBHOOKS,
            answered.status.as_u16(),
            answered.code,
            latency,
        );
        let severity = if answered.status.is_server_error() {
            Severity::Warning
        } else {
            Severity::Info
        };
        line.log(&hooks.logger, severity, None);
        answered
    });
    let answered = work.await.unwrap_or(Answered {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        code: "internal",
    });
    let body = if answered.status.is_success() {
        json!({"received": true})
    } else {
        json!({"error": answered.code})
    };
    reply(answered.status, body)
}

/// Reads, verifies and takes one delivery.
async fn handle(hooks: &Webhooks, signature: Option<&str>, body: Body) -> Answered {
    let bytes = match read_body(hooks, body).await {
        Ok(bytes) => bytes,
        Err(answered) => return refused(answered),
    };
    let now = match hooks.journal.now() {
        Ok(now) => now,
        Err(_) => return unavailable("journal_clock"),
    };
    let at = super::plant::verified_at(signature, now);
    let event = match hooks.verifier.verify(signature, &bytes, at) {
        Ok(event) => event,
        Err(refusal) => {
            return refused(Answered {
                status: StatusCode::BAD_REQUEST,
                code: refusal.code(),
            });
        }
    };
    counted::verified();
    let taken = take(&hooks.journal, &hooks.stripe, &event, hooks.livemode).await;
    // A refusal is counted with the refused requests, below.
    if !matches!(taken, Taken::Refused(_)) {
        counted::taken(taken.code());
    }
    if matches!(taken, Taken::Recorded | Taken::LateCharge)
        && let Ok(now) = hooks.journal.now()
    {
        counted::age((now.seconds() - event.created()) as f64);
    }
    match taken {
        Taken::Unavailable(code) => unavailable(code),
        Taken::Refused(code) => refused(Answered {
            status: StatusCode::BAD_REQUEST,
            code,
        }),
        taken => Answered {
            status: StatusCode::OK,
            code: taken.code(),
        },
    }
}

/// The body, at most the verifier's limit, within the body timeout.
async fn read_body(hooks: &Webhooks, body: Body) -> Result<Bytes, Answered> {
    let read = tokio::time::timeout(
        hooks.body_timeout,
        Limited::new(body, DEFAULT_MAX_BODY_BYTES).collect(),
    );
    match read.await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(Answered {
            status: StatusCode::BAD_REQUEST,
            code: Refusal::BodyTooLarge.code(),
        }),
        Ok(Err(_)) => Err(Answered {
            status: StatusCode::BAD_REQUEST,
            code: "webhook_body_unreadable",
        }),
        Err(_) => Err(Answered {
            status: StatusCode::REQUEST_TIMEOUT,
            code: "body_timeout",
        }),
    }
}

/// A refusal, counted by its code.
fn refused(answered: Answered) -> Answered {
    counted::refused(answered.code, answered.status.as_u16());
    answered
}

/// A 503 Stripe retries.
fn unavailable(code: &'static str) -> Answered {
    Answered {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code,
    }
}

/// Another method on the webhook route: 405, logged.
async fn not_allowed(State(hooks): State<Arc<Webhooks>>, request: Request) -> Response {
    RequestLine::without_command(
        method_name(request.method()),
        WEBHOOKS,
        405,
        "method_not_allowed",
        elapsed(request.extensions(), Instant::now()),
    )
    .log(&hooks.logger, Severity::Info, None);
    let mut response = reply(
        StatusCode::METHOD_NOT_ALLOWED,
        json!({"error": "method_not_allowed"}),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

fn reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

//! The header form of `POST /v1/checkouts`, on command-journal-http's layer: the
//! command id from `Idempotency-Key`, the body the checkout's payload.
//!
//! [`super::handler`] verifies the token, checks the media type and reads the body
//! within its size and time first (so the layer never sees an unauthenticated body),
//! then hands the request here with the caller as the layer's `VerifiedCaller`
//! (scope kind `member`). The layer (for provider handlers) reads the key (400
//! problem on a malformed one), parses the body strictly (400 problem
//! `body_malformed` on a duplicate key at any depth), and makes the command:
//! the verified caller, the key's command id, type `checkout`, schema version 1, the
//! payload `{"body", "method", "target"}`. The handler takes that command and runs
//! it through `Journal::execute_marked` with the plan of the body ([`run_command`]),
//! answered by the one table of a checkout, a replay marked `Idempotent-Replayed`.
//! A body that also names a `commandId` carries two command ids: refused, 400
//! `invalid_input` on `commandId`, nothing written.

use super::answer::{Answer, Logged};
use super::handler::{App, run_command};
use super::request_log::CHECKOUTS;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{OriginalUri, Request, State};
use axum::http::request::Parts;
use axum::response::Response;
use axum::routing::post;
use command_journal::identity::CallerScopeKind;
use command_journal_http::problem::problem_type;
use command_journal_http::{IdempotencyLayer, IdempotentCommand, VerifiedCaller};
use serde_json::Value;
use std::sync::Arc;
use tower::ServiceExt as _;

/// The largest problem body of the layer's read back for its code.
const PROBLEM_LIMIT: usize = 4096;

/// The checkout route under `layer`, over `app`.
pub fn router(app: Arc<App>, layer: IdempotencyLayer) -> Router {
    Router::new()
        .route(CHECKOUTS, post(keyed_checkout).layer(layer))
        .with_state(app)
}

/// The request of head `parts` and body `bytes` (read already), of the verified
/// `caller_id`, through `keyed` ([`router`]); what its log line says is in the
/// response's extensions ([`Logged`]), the layer's own refusals included.
pub async fn checkout(keyed: Router, parts: &Parts, bytes: Bytes, caller_id: String) -> Response {
    let caller = match VerifiedCaller::new(CallerScopeKind::Member, &caller_id) {
        Ok(caller) => caller,
        Err(error) => return Answer::journal_error(error).into_response(),
    };
    let mut request = Request::new(Body::from(bytes));
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.headers_mut() = parts.headers.clone();
    request.extensions_mut().insert(caller);
    if let Some(original) = parts.extensions.get::<OriginalUri>() {
        request.extensions_mut().insert(original.clone());
    }
    let response = match keyed.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    if response.extensions().get::<Logged>().is_some() {
        return response;
    }
    refused(response).await
}

/// A refusal of the layer's own (a problem): logged with its problem's code.
async fn refused(response: Response) -> Response {
    let (mut head, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, PROBLEM_LIMIT)
        .await
        .unwrap_or_default();
    let code = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|problem| problem["code"].as_str().map(|code| problem_type(code).code))
        .unwrap_or("internal");
    head.extensions.insert(Logged {
        outcome: code,
        command_key_hash: None,
        provider_called: false,
    });
    Response::from_parts(head, Body::from(bytes))
}

/// The handler under the layer: the layer's command, its body the payload.
async fn keyed_checkout(State(app): State<Arc<App>>, command: IdempotentCommand) -> Response {
    if command.body().get("commandId").is_some() {
        return Answer::invalid("commandId").into_response();
    }
    let hash = command.input().identity().command_key_hash().to_string();
    let mut answer = run_command(&app, command.input(), command.body()).await;
    answer.command_key_hash = Some(hash);
    answer.into_response()
}

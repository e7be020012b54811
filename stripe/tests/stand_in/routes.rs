//! The stand-in's routes beyond a PaymentIntent's create, list and search: an intent
//! read and canceled by id, and Checkout Sessions made, read, listed and expired. Each
//! request is authorized, recorded and validated as the create's is.

use super::schema::{Body, form_object};
use super::state::{Admission, Answer, State};
use super::{Inner, answer, authorize, query_object, refusal, seen};
use axum::body::Bytes;
use axum::extract::{Path, State as Shared};
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::Arc;

fn state(inner: &Inner) -> std::sync::MutexGuard<'_, State> {
    inner.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Authorizes and records one request; runs `work` on the state for an authorized
/// one, and answers it validated as `body(status)`.
fn serve(
    inner: &Inner,
    headers: &HeaderMap,
    (method, path): (&str, &str),
    parameters: Value,
    body: fn(u16) -> Body,
    work: impl FnOnce(&mut State, i64, Option<&str>) -> Answer,
) -> Response {
    let account = authorize(inner, headers);
    let record = seen(method, path, headers, account.is_ok(), parameters);
    let given = match account {
        Ok(account) => {
            let now = (inner.clock)();
            work(&mut state(inner), now, account.as_deref())
        }
        Err(refused) => refused,
    };
    answer(inner, record, body(given.status), given)
}

/// `GET /v1/payment_intents/{id}`: the intent as it is now (read after write).
pub(super) async fn retrieve_intent(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let query = query_object(&uri);
    inner.validator.check(Body::IntentQuery, &query);
    let path = format!("/v1/payment_intents/{id}");
    serve(
        &inner,
        &headers,
        ("GET", &path),
        query,
        Body::IntentRetrieved,
        |state, now, account| {
            state.catch_up(now);
            match state.intent_mut(account, &id) {
                Some(intent) => Answer::new(200, intent.json()),
                None => super::state::missing("payment_intent"),
            }
        },
    )
}

/// `POST /v1/payment_intents/{id}/cancel`.
pub(super) async fn cancel_intent(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = form_object(&body);
    inner.validator.check(Body::CancelForm, &form);
    let path = format!("/v1/payment_intents/{id}/cancel");
    let reason = form["cancellation_reason"].as_str().map(str::to_owned);
    serve(
        &inner,
        &headers,
        ("POST", &path),
        form,
        Body::IntentCanceled,
        |state, now, account| state.cancel_intent(now, account, &id, reason.as_deref()),
    )
}

/// `POST /v1/checkout/sessions`, under the idempotency layer as a create of an intent
/// is (a key first used on another endpoint is "other parameters").
pub(super) async fn create_session(
    Shared(inner): Shared<Arc<Inner>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = form_object(&body);
    inner.validator.check(Body::SessionForm, &form);
    let account = authorize(&inner, &headers);
    let record = seen(
        "POST",
        "/v1/checkout/sessions",
        &headers,
        account.is_ok(),
        form.clone(),
    );
    let account = match account {
        Ok(account) => account,
        Err(refused) => {
            return answer(
                &inner,
                record,
                Body::SessionCreated(refused.status),
                refused,
            );
        }
    };
    let key = super::header(&headers, "idempotency-key");
    let slot = key.clone().map(|key| (account.clone(), key));
    let keyed = json!({ "checkout_session": form });
    let now = (inner.clock)();
    let mut state = state(&inner);
    let given = match state.admit(now, account.as_deref(), key.as_deref(), &keyed) {
        Admission::Answer(given) => given,
        Admission::Execute => match State::check_session(now, &form) {
            Err(refused) => {
                state.forget(slot);
                refused
            }
            Ok(()) => {
                if let Some(slot) = &slot {
                    state.pending.remove(slot);
                }
                let created = state.create_session(now, account.as_deref(), &form);
                state.finish(slot, &created);
                created
            }
        },
    };
    drop(state);
    answer(&inner, record, Body::SessionCreated(given.status), given)
}

/// `GET /v1/checkout/sessions?payment_intent=…`: the sessions paid by that intent.
pub(super) async fn list_sessions(
    Shared(inner): Shared<Arc<Inner>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let query = query_object(&uri);
    inner.validator.check(Body::SessionListQuery, &query);
    let intent = query["payment_intent"].as_str().map(str::to_owned);
    let limit = query["limit"].as_u64().unwrap_or(10).clamp(1, 100) as usize;
    serve(
        &inner,
        &headers,
        ("GET", "/v1/checkout/sessions"),
        query,
        Body::SessionListed,
        |state, now, account| {
            state.catch_up(now);
            let found = state.sessions_of(account, intent.as_deref());
            let has_more = found.len() > limit;
            let data: Vec<Value> = found.into_iter().take(limit).collect();
            refusal(
                200,
                json!({"object": "list", "data": data, "has_more": has_more, "url": "/v1/checkout/sessions"}),
            )
        },
    )
}

/// `GET /v1/checkout/sessions/{id}`.
pub(super) async fn retrieve_session(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let query = query_object(&uri);
    inner.validator.check(Body::SessionQuery, &query);
    let path = format!("/v1/checkout/sessions/{id}");
    serve(
        &inner,
        &headers,
        ("GET", &path),
        query,
        Body::SessionRetrieved,
        |state, now, account| state.retrieve_session(now, account, &id),
    )
}

/// `POST /v1/checkout/sessions/{id}/expire`.
pub(super) async fn expire_session(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = form_object(&body);
    inner.validator.check(Body::ExpireForm, &form);
    let path = format!("/v1/checkout/sessions/{id}/expire");
    serve(
        &inner,
        &headers,
        ("POST", &path),
        form,
        Body::SessionExpired,
        |state, now, account| state.expire_session(now, account, &id),
    )
}

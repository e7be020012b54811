//! The pages the stand-in serves the customer's browser itself, in place of Stripe's:
//! a 3-D Secure challenge and a hosted Checkout page. Plain HTML with a little script;
//! every control has a stable id (the module doc of [`super`] lists them), so that a
//! headless browser completes them as a customer would. What a page does, the test
//! can also do over HTTP (the same `POST`s its script makes).

use super::Inner;
use super::session::Payment;
use axum::body::Bytes;
use axum::extract::{Path, State as Shared};
use axum::http::{StatusCode, Uri};
use axum::response::{Html, IntoResponse, Response};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

/// A form or a query as its fields (the last value of a repeated one).
fn fields(encoded: &[u8]) -> HashMap<String, String> {
    form_urlencoded::parse(encoded).into_owned().collect()
}

/// Text as HTML: `&`, `<`, `>`, `"` and `'` escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The page's script: each button with a `data-outcome` posts it (form-encoded, with
/// the page's hidden fields) to the page's own URL, writes the answer's `status` into
/// `#status`, and follows the answer's `redirect` if any.
const SCRIPT: &str = r#"<script>
for (const button of document.querySelectorAll('button[data-outcome]')) {
  button.addEventListener('click', async () => {
    const form = new URLSearchParams();
    for (const field of document.querySelectorAll('input[type=hidden]')) form.set(field.name, field.value);
    form.set('outcome', button.dataset.outcome);
    for (const b of document.querySelectorAll('button')) b.disabled = true;
    const answer = await fetch(document.body.dataset.action, {method: 'POST', body: form});
    const body = await answer.json();
    document.getElementById('status').textContent = body.status;
    document.body.dataset.done = 'true';
    if (body.redirect) window.location.href = body.redirect;
  });
}
</script>"#;

fn page(title: &str, action: &str, fields: &str, status: &str, buttons: &str) -> Html<String> {
    Html(format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body data-action=\"{action}\" data-done=\"false\"><h1>{title}</h1>{fields}\
         <p>Status: <span id=\"status\">{status}</span></p>{buttons}{SCRIPT}</body></html>",
        title = escape(title),
        action = escape(action),
        status = escape(status),
    ))
}

fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
        escape(name),
        escape(value)
    )
}

/// `GET /stand-in/authenticate?client_secret=…[&return_url=…]`: the challenge of the
/// intent waiting under that secret.
pub(super) async fn challenge(Shared(inner): Shared<Arc<Inner>>, uri: Uri) -> Response {
    let query = fields(uri.query().unwrap_or_default().as_bytes());
    let secret = query.get("client_secret").cloned().unwrap_or_default();
    let state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    let status = state
        .intents
        .iter()
        .find(|intent| intent.client_secret() == secret)
        .map(|intent| intent.status);
    drop(state);
    let Some(status) = status else {
        return (StatusCode::NOT_FOUND, "no such payment").into_response();
    };
    let mut fields = hidden("client_secret", &secret);
    if let Some(back) = query.get("return_url") {
        fields.push_str(&hidden("return_url", back));
    }
    let buttons = if status == "requires_action" {
        "<button id=\"authenticate-pass\" data-outcome=\"pass\">Complete authentication</button>\
         <button id=\"authenticate-fail\" data-outcome=\"fail\">Fail authentication</button>"
    } else {
        ""
    };
    page(
        "3-D Secure challenge",
        "/stand-in/authenticate",
        &fields,
        status,
        buttons,
    )
    .into_response()
}

/// `POST /stand-in/authenticate` (`client_secret`, `outcome` `pass` or `fail`,
/// optional `return_url`): `{"status": <the intent's status>, "redirect": return_url}`,
/// or 409 when no intent waits for a challenge under the secret.
pub(super) async fn authenticate(Shared(inner): Shared<Arc<Inner>>, body: Bytes) -> Response {
    let challenge = fields(&body);
    let secret = challenge.get("client_secret").cloned().unwrap_or_default();
    let passed = match challenge
        .get("outcome")
        .map(String::as_str)
        .unwrap_or_default()
    {
        "pass" => true,
        "fail" => false,
        _ => return StatusCode::BAD_REQUEST.into_response(),
    };
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    match state.authenticate(&secret, passed) {
        Some(status) => {
            axum::Json(json!({"status": status, "redirect": challenge.get("return_url")}))
                .into_response()
        }
        None => (
            StatusCode::CONFLICT,
            axum::Json(json!({"status": "not_waiting"})),
        )
            .into_response(),
    }
}

/// `GET /stand-in/checkout/{id}`: the session's hosted page.
pub(super) async fn hosted(Shared(inner): Shared<Arc<Inner>>, Path(id): Path<String>) -> Response {
    let now = (inner.clock)();
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    state.catch_up(now);
    let Some(session) = state.session_mut(None, &id) else {
        return (StatusCode::NOT_FOUND, "no such session").into_response();
    };
    let (status, amount, currency) = (session.status, session.amount, session.currency.clone());
    let cancel = session.cancel_url.clone();
    drop(state);
    let buttons = if status == "open" {
        format!(
            "<p>Pay <span id=\"amount\">{amount}</span> <span id=\"currency\">{}</span></p>\
             <button id=\"pay-card\" data-outcome=\"card\">Pay by card</button>\
             <button id=\"pay-delayed\" data-outcome=\"delayed\">Pay by bank debit</button>\
             <a id=\"cancel\" href=\"{}\">Cancel</a>",
            escape(&currency),
            escape(&cancel),
        )
    } else {
        String::new()
    };
    page(
        "Checkout",
        &format!("/stand-in/checkout/{id}"),
        "",
        status,
        &buttons,
    )
    .into_response()
}

/// `POST /stand-in/checkout/{id}` (`outcome` `card` or `delayed`):
/// `{"status": "complete", "redirect": <success_url>}`, or 409 when the session is not
/// open.
pub(super) async fn pay(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let outcome = fields(&body).remove("outcome").unwrap_or_default();
    let payment = match outcome.as_str() {
        "card" => Payment::Card,
        "delayed" => Payment::Delayed,
        _ => return StatusCode::BAD_REQUEST.into_response(),
    };
    let now = (inner.clock)();
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    match state.pay_session(now, &id, payment) {
        Some(redirect) => {
            axum::Json(json!({"status": "complete", "redirect": redirect})).into_response()
        }
        None => (
            StatusCode::CONFLICT,
            axum::Json(json!({"status": "not_open"})),
        )
            .into_response(),
    }
}

/// `POST /stand-in/checkout/{id}/settle` (`outcome` `succeeded` or `failed`): a
/// delayed payment settles, as the bank's answer days later; 409 if none waits.
pub(super) async fn settle(
    Shared(inner): Shared<Arc<Inner>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let outcome = fields(&body).remove("outcome").unwrap_or_default();
    let succeeded = match outcome.as_str() {
        "succeeded" => true,
        "failed" => false,
        _ => return StatusCode::BAD_REQUEST.into_response(),
    };
    let mut state = inner.state.lock().unwrap_or_else(|e| e.into_inner());
    if state.settle_session(&id, succeeded) {
        axum::Json(json!({"status": outcome})).into_response()
    } else {
        (
            StatusCode::CONFLICT,
            axum::Json(json!({"status": "not_waiting"})),
        )
            .into_response()
    }
}

//! A request read into its command: the verified caller, the key, the body read
//! strictly within its limit, and the payload the journal fingerprints.
//!
//! The payload is `{"body": <the body's JSON value>, "method": <the method>, "target":
//! <the path and query the client sent (axum's `OriginalUri`: above any nest, so one
//! layer nested under two prefixes sees two targets)>}`, without `body` when the body
//! is empty (so that no body and the JSON value `null` are two payloads), and the same
//! key with another body, method or target is `command_conflict` (422). The target is
//! compared byte for byte: a reordered query or another percent-encoding of it is
//! another target (422), never another request's answer. The
//! journal validates it as every payload (integers within ±(2^53−1), at most 32 deep
//! with the wrapper, at most 65,536 canonical bytes) and hashes its RFC 8785
//! canonical form: member order and spacing of the body never matter, anything else
//! does. It stores only the fingerprint, never the payload.

use crate::caller::VerifiedCaller;
use crate::key::{IdempotencyKey, KeyError};
use crate::problem::Problem;
use crate::settings::Settings;
use axum::body::Body;
use axum::extract::OriginalUri;
use bytes::Bytes;
use command_journal::strict_json;
use command_journal::{CommandInput, CommandRequest};
use http::request::Parts;
use http::{HeaderMap, Request, header};
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use serde_json::{Value, json};

/// A request the layer can run as a command.
pub(crate) struct Prepared {
    /// The request's head.
    pub parts: Parts,
    /// The body's bytes, handed to the handler unchanged.
    pub bytes: Bytes,
    /// The command.
    pub command: CommandInput,
    /// The body's JSON value (null when empty).
    pub body: Value,
}

/// Reads `request` into its command, or the problem that refuses it, in this order:
/// the caller (500), the key (400), the body's size (413), its media type (415), its
/// JSON (400), the command's own rules (400). Nothing is written on a refusal.
pub(crate) async fn prepare(
    settings: &Settings,
    request: Request<Body>,
) -> Result<Prepared, Problem> {
    let (parts, body) = request.into_parts();
    let caller = parts
        .extensions
        .get::<VerifiedCaller>()
        .cloned()
        .ok_or_else(|| Problem::new("caller_missing"))?;
    let key = IdempotencyKey::from_headers(&parts.headers).map_err(|error| match error {
        KeyError::Missing => Problem::new("idempotency_key_missing"),
        KeyError::Malformed => Problem::new("idempotency_key_malformed"),
    })?;
    let bytes = match Limited::new(body, settings.body_limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            return Err(Problem::new("body_too_large"));
        }
        Err(_) => return Err(Problem::new("body_malformed")),
    };
    let body = if bytes.is_empty() {
        Value::Null
    } else if !is_json(&parts.headers) {
        return Err(Problem::new("unsupported_media_type"));
    } else {
        std::str::from_utf8(&bytes)
            .ok()
            .and_then(strict_json::parse)
            .ok_or_else(|| Problem::new("body_malformed"))?
    };
    // The URI the client sent, as axum's router recorded it before any nest took its
    // prefix off; the request's own URI outside an axum router.
    let uri = parts
        .extensions
        .get::<OriginalUri>()
        .map_or(&parts.uri, |original| &original.0);
    let target = uri.path_and_query().map_or("/", |target| target.as_str());
    let mut payload = json!({"method": parts.method.as_str(), "target": target});
    if !bytes.is_empty()
        && let Some(object) = payload.as_object_mut()
    {
        object.insert("body".to_owned(), body.clone());
    }
    let command = CommandInput::new(CommandRequest {
        environment: settings.environment.as_str(),
        caller_scope_kind: caller.kind().as_str(),
        caller_id: caller.id(),
        command_id: &key.command_id(),
        command_type: settings.command_type.as_str(),
        endpoint_schema_version: settings.schema_version,
        payload: &payload,
    })
    .map_err(Problem::journal)?;
    Ok(Prepared {
        parts,
        bytes,
        command,
        body,
    })
}

/// `application/json`, parameters (such as `charset=utf-8`) allowed.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

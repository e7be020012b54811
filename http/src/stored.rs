//! A handler's response as the journal stores it: the result envelope of a command
//! whose handler only computes its answer, replayed on every retry.
//!
//! The envelope is one JSON object, exactly
//! `{"body", "format", "headers", "status"}`: `format` is [`FORMAT`]; `status` the
//! status code; `headers` the response's headers named in [`STORED_HEADERS`], in
//! order, as `[name, value]` pairs of visible ASCII (every other header is dropped,
//! `Set-Cookie` and the authorization headers always); `body` the body's bytes in
//! standard base64. The journal bounds an envelope's canonical text at
//! [`MAX_RESULT_ENVELOPE_BYTES`] (16 KiB), so a body of up to about 12 KiB fits; a
//! response over the bound, or with an allowed header that is not visible ASCII, is
//! refused before anything is written ([`Unstorable`]). Reading one back is strict: any
//! other shape is refused, never repaired.

use axum::body::Body;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use command_journal::ResultEnvelope;
use command_journal::identity::MAX_RESULT_ENVELOPE_BYTES;
use http::{HeaderName, HeaderValue, Response, StatusCode};
use serde_json::{Value, json};

/// The `format` of every stored response.
pub const FORMAT: &str = "command-journal-http/response/1";

/// The headers a stored response keeps: those that describe the answer itself, not
/// the exchange (never `Set-Cookie`, `Authorization`, `WWW-Authenticate`, `Date` or a
/// request id). `Cache-Control` and `Expires` among them: an answer its handler marked
/// `no-store` keeps the mark, never made cacheable by the layer.
pub const STORED_HEADERS: &[&str] = &[
    "content-type",
    "content-encoding",
    "content-language",
    "content-location",
    "location",
    "etag",
    "last-modified",
    "link",
    "cache-control",
    "expires",
];

/// Why a response cannot be stored. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unstorable;

/// Whether a handler's answer with `status` is stored and replayed: every 2xx, 3xx
/// and 4xx but 408, 425 and 429, which ask the client to try again, and 401 and 407,
/// whose challenge (`WWW-Authenticate`, `Proxy-Authenticate`, required by RFC 9110
/// §15.5.2 and §15.5.8) is never stored and whose request runs again with other
/// credentials. A 5xx is never stored: the handler's outcome is unknown, as after a
/// crash, and the request runs again once its lease has expired.
pub fn is_stored(status: StatusCode) -> bool {
    (200..500).contains(&status.as_u16()) && !matches!(status.as_u16(), 401 | 407 | 408 | 425 | 429)
}

/// A response as stored: the status, the allowed headers and the body's bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredResponse {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

impl std::fmt::Debug for StoredResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredResponse")
            .field("status", &self.status.as_u16())
            .finish_non_exhaustive()
    }
}

impl StoredResponse {
    /// The stored form of a response: its status, those of `headers` in
    /// [`STORED_HEADERS`], and `body`.
    pub fn new(status: StatusCode, headers: &http::HeaderMap, body: Bytes) -> Self {
        let headers = headers
            .iter()
            .filter(|(name, _)| STORED_HEADERS.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Self {
            status,
            headers,
            body,
        }
    }

    /// The envelope the journal stores; [`Unstorable`] over the journal's bound or
    /// with a header value that is not visible ASCII.
    pub fn envelope(&self) -> Result<ResultEnvelope, Unstorable> {
        let mut headers = Vec::with_capacity(self.headers.len());
        for (name, value) in &self.headers {
            let value = value.to_str().map_err(|_| Unstorable)?;
            headers.push(json!([name.as_str(), value]));
        }
        let value = json!({
            "body": STANDARD.encode(&self.body),
            "format": FORMAT,
            "headers": headers,
            "status": self.status.as_u16(),
        });
        ResultEnvelope::new(&value).map_err(|_| Unstorable)
    }

    /// The stored response of `envelope`, read strictly: `None` for any other shape,
    /// a header outside the list, a status never stored, or a body that is not
    /// canonical base64.
    pub fn from_envelope(envelope: &ResultEnvelope) -> Option<Self> {
        let object = envelope.value().as_object()?;
        if object.len() != 4 || object.get("format")? != FORMAT {
            return None;
        }
        let status = object.get("status")?.as_u64()?;
        let status = StatusCode::from_u16(u16::try_from(status).ok()?).ok()?;
        if !is_stored(status) {
            return None;
        }
        let text = object.get("body")?.as_str()?;
        let body = STANDARD.decode(text).ok()?;
        if STANDARD.encode(&body) != text {
            return None;
        }
        let mut headers = Vec::new();
        for pair in object.get("headers")?.as_array()? {
            let [Value::String(name), Value::String(value)] = pair.as_array()?.as_slice() else {
                return None;
            };
            if !STORED_HEADERS.contains(&name.as_str()) {
                return None;
            }
            let name = HeaderName::from_bytes(name.as_bytes()).ok()?;
            headers.push((name, HeaderValue::from_str(value).ok()?));
        }
        Some(Self {
            status,
            headers,
            body: Bytes::from(body),
        })
    }

    /// The most body bytes any envelope can hold (before its headers): what the
    /// layer reads of a response before it knows the response cannot be stored.
    pub(crate) fn body_limit() -> usize {
        MAX_RESULT_ENVELOPE_BYTES / 4 * 3
    }

    /// The HTTP response: the status, the stored headers in order, the body.
    pub fn into_response(self) -> Response<Body> {
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        for (name, value) in self.headers {
            headers.append(name, value);
        }
        response
    }
}

#[cfg(test)]
mod tests;

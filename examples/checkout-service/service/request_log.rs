//! One log line per HTTP request, handled or refused before any handler, all in one
//! JSON shape: `severity`, `message` (`checkout` for `POST /v1/checkouts`, `request`
//! otherwise), the trace fields when known, `httpRequest` (`requestMethod`,
//! `requestUrl`, `status`, `latency`), `outcome` (a fixed code), then the checkout's
//! own fields when there are any, and `providerCalled`.
//!
//! `requestUrl` is the route, never the raw path (which may carry ids): one of
//! [`CHECKOUTS`], [`HEALTHZ`], [`METRICS`], [`UNMATCHED`] or [`UNPARSED`]. Every line
//! is also counted in the service's metrics ([`super::metrics::request`]). `requestMethod` is a
//! standard method name, `OTHER` for an extension method, or `-` when the request
//! line could not be parsed.

use super::logging::{Logger, Severity, Trace};
use serde_json::{Map, json};
use std::time::{Duration, Instant};

/// The checkout route.
pub const CHECKOUTS: &str = "/v1/checkouts";
/// The health route.
pub const HEALTHZ: &str = "/healthz";
/// The Prometheus scrape route.
pub const METRICS: &str = "/metrics";
/// A path no route matches.
pub const UNMATCHED: &str = "(unmatched)";
/// A request line hyper refused before any route was looked at.
pub const UNPARSED: &str = "(unparsed)";

/// When the server took the request, before it waited for a request slot: put in
/// the request's extensions by [`super::server::serve`].
#[derive(Debug, Clone, Copy)]
pub struct Received(pub Instant);

/// The time since `extensions`' [`Received`] (since `fallback` without one).
pub fn elapsed(extensions: &axum::http::Extensions, fallback: Instant) -> Duration {
    extensions
        .get::<Received>()
        .map_or(fallback, |received| received.0)
        .elapsed()
}

/// What one line says.
#[derive(Debug, Clone)]
pub struct RequestLine {
    /// The request method, as [`method_name`] gives it.
    pub method: &'static str,
    /// The route, one of the constants of this module.
    pub route: &'static str,
    /// The response status.
    pub status: u16,
    /// From the server taking the request to the answer, the wait for a request slot
    /// and the body read included.
    pub latency: Duration,
    /// A fixed code naming how the request ended.
    pub outcome: &'static str,
    /// The command key hash, once the command is known.
    pub command_key_hash: Option<String>,
    /// Whether the provider was called.
    pub provider_called: bool,
}

impl RequestLine {
    /// A request without a command (refused, a health check, a scrape): no command,
    /// no provider call.
    pub fn without_command(
        method: &'static str,
        route: &'static str,
        status: u16,
        outcome: &'static str,
        latency: Duration,
    ) -> Self {
        Self {
            method,
            route,
            status,
            latency,
            outcome,
            command_key_hash: None,
            provider_called: false,
        }
    }

    /// Writes the line at `severity` and counts the request.
    pub fn log(&self, logger: &Logger, severity: Severity, trace: Option<&Trace>) {
        super::metrics::request(self.route, self.status, self.outcome, self.latency);
        let mut fields = Map::new();
        fields.insert(
            "httpRequest".into(),
            json!({
                "requestMethod": self.method,
                "requestUrl": self.route,
                "status": self.status,
                "latency": format!("{:.6}s", self.latency.as_secs_f64()),
            }),
        );
        fields.insert("outcome".into(), json!(self.outcome));
        if let Some(hash) = &self.command_key_hash {
            fields.insert("commandKeyHash".into(), json!(hash));
        }
        fields.insert("providerCalled".into(), json!(self.provider_called));
        let message = if self.route == CHECKOUTS {
            "checkout"
        } else {
            "request"
        };
        logger.log(severity, message, trace, fields);
    }
}

/// A standard method's name, `OTHER` for an extension method (never echoed).
pub fn method_name(method: &axum::http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        "PATCH" => "PATCH",
        "TRACE" => "TRACE",
        "CONNECT" => "CONNECT",
        _ => "OTHER",
    }
}

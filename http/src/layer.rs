//! The layer a service adds, in tower-http's shape: [`IdempotencyLayer`] (the settings,
//! with a builder), [`Idempotency`] (the `Service` around the handler) and
//! [`ResponseFuture`].
//!
//! ```no_run
//! use axum::Router;
//! use axum::routing::post;
//! use command_journal::{Journal, JournalError};
//! use command_journal::identity::{CommandType, Environment};
//! use command_journal_http::IdempotencyLayer;
//!
//! async fn create_note() -> &'static str {
//!     "{\"id\":\"n_1\"}"
//! }
//!
//! fn routes(journal: Journal) -> Result<Router, command_journal::JournalError> {
//!     let notes = IdempotencyLayer::new(journal, Environment::Production, CommandType::parse("create_note")?);
//!     // The service's authentication layer, outside this one, sets a VerifiedCaller.
//!     Ok(Router::new().route("/v1/notes", post(create_note).layer(notes)))
//! }
//! ```

use crate::run::run;
use crate::settings::{BoxError, Handlers, Settings};
use axum::body::Body;
use bytes::Bytes;
use command_journal::identity::{CommandType, EndpointSchemaVersion, Environment};
use command_journal::{Journal, JournalError};
use http::{HeaderValue, Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The default largest request body, in bytes: its canonical form and the payload's
/// wrapper stay within the journal's 65,536-byte payload bound.
pub const DEFAULT_BODY_LIMIT: usize = 32 * 1024;

/// The largest body limit [`IdempotencyLayer::body_limit`] accepts.
pub const MAX_BODY_LIMIT: usize = 60 * 1024;

/// The `Idempotency-Key` layer: one command type of one environment, over one journal.
#[derive(Clone)]
pub struct IdempotencyLayer {
    settings: Arc<Settings>,
}

impl std::fmt::Debug for IdempotencyLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyLayer")
            .field("environment", &self.settings.environment)
            .field("command_type", &self.settings.command_type.as_str())
            .field("handlers", &self.settings.handlers)
            .finish_non_exhaustive()
    }
}

impl IdempotencyLayer {
    /// Requests under this layer are commands of `command_type` in `environment` on
    /// `journal`, endpoint schema version 1, bodies up to [`DEFAULT_BODY_LIMIT`],
    /// for handlers that only compute their response ([`Handlers::StoredResponse`]).
    pub fn new(journal: Journal, environment: Environment, command_type: CommandType) -> Self {
        Self {
            settings: Arc::new(Settings {
                journal,
                environment,
                command_type,
                schema_version: 1,
                body_limit: DEFAULT_BODY_LIMIT,
                handlers: Handlers::StoredResponse,
                documentation: None,
            }),
        }
    }

    fn with(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = Settings::clone(&self.settings);
        change(&mut settings);
        Self {
            settings: Arc::new(settings),
        }
    }

    /// The same layer with endpoint schema version `version` (part of the command key:
    /// a new version starts every key afresh).
    pub fn schema_version(self, version: EndpointSchemaVersion) -> Self {
        self.with(|settings| settings.schema_version = i64::from(version.get()))
    }

    /// The same layer accepting bodies of at most `bytes` (at most
    /// [`MAX_BODY_LIMIT`]); a larger body is 413.
    pub fn body_limit(self, bytes: usize) -> Self {
        self.with(|settings| settings.body_limit = bytes.min(MAX_BODY_LIMIT))
    }

    /// The same layer whose own problems (the header's 400s, the 422, the 409 and every
    /// other) carry `Link: <uri>; rel="describedby"`, the link to the documentation the
    /// draft asks of them; a handler's answer is left as it is. `invalid_input` on
    /// `documentation` unless `uri` is one absolute URI (a scheme and an authority) of
    /// characters RFC 3986 allows.
    pub fn documentation(self, uri: &str) -> Result<Self, JournalError> {
        let refused = JournalError::invalid("documentation");
        let allowed = |b: u8| b.is_ascii_graphic() && !b"\"<>\\^`{|}".contains(&b);
        if !uri.bytes().all(allowed) {
            return Err(refused);
        }
        let parsed = http::Uri::try_from(uri).map_err(|_| refused)?;
        if parsed.scheme().is_none() || parsed.authority().is_none() {
            return Err(refused);
        }
        let link =
            HeaderValue::try_from(format!("<{uri}>; rel=\"describedby\"")).map_err(|_| refused)?;
        Ok(self.with(|settings| settings.documentation = Some(link)))
    }

    /// The same layer for handlers that send to a provider ([`Handlers::Provider`]).
    pub fn provider_handlers(self) -> Self {
        self.with(|settings| settings.handlers = Handlers::Provider)
    }
}

impl<S> tower::Layer<S> for IdempotencyLayer {
    type Service = Idempotency<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Idempotency {
            inner,
            settings: self.settings.clone(),
        }
    }
}

/// The layer's service around `S`, the handler.
#[derive(Clone)]
pub struct Idempotency<S> {
    inner: S,
    settings: Arc<Settings>,
}

impl<S> std::fmt::Debug for Idempotency<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idempotency")
            .field("handlers", &self.settings.handlers)
            .finish_non_exhaustive()
    }
}

impl<S, B> tower::Service<Request<Body>> for Idempotency<S>
where
    S: tower::Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The service polled ready is the one that runs; a clone takes its place.
        let clone = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, clone);
        ResponseFuture {
            inner: Box::pin(run(self.settings.clone(), ready, request)),
        }
    }
}

/// The future of one request through the layer.
pub struct ResponseFuture<E> {
    inner: Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>,
}

impl<E> std::fmt::Debug for ResponseFuture<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<E> Future for ResponseFuture<E> {
    type Output = Result<Response<Body>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

//! One request through the layer: read it into its command, then run it in a task of
//! its own (a client that goes away drops only its wait, never the work, so an answer
//! is recorded whether or not anyone still waits for it).
//!
//! A handler that only computes its response ([`Handlers::StoredResponse`]):
//!
//! | `Journal::start` answers | the layer |
//! |---|---|
//! | acquired (a new command, or a takeover after the lease expired) | runs the handler within the lease less [`HANDLER_MARGIN`]; stores its response with the success if [`is_stored`] says so, then answers the stored form |
//! | busy | 409 `in_progress`: the first request is still being processed |
//! | succeeded | the stored response, `Idempotent-Replayed: true` |
//! | failed | 500 `no_stored_response` (this layer never fails a command) |
//!
//! After the handler: a response that is not stored (5xx, 401, 407, 408, 425, 429) is
//! answered as the handler gave it, with `Retry-After` until the lease expires if it
//! has none, and the request runs again after that, as after a crash; a handler still
//! running at its deadline (or its response's body still streaming) is cut, 503
//! `handler_timeout`; a response the journal cannot hold is 500 `response_unstorable`,
//! nothing written; a lease lost meanwhile (another request took it over) is 409
//! `in_progress`, this response dropped.

use crate::command::IdempotentCommand;
use crate::problem::{Problem, link_documentation};
use crate::replay::{count, is_replayed, mark_replayed};
use crate::request::{Prepared, prepare};
use crate::settings::{BoxError, Handlers, Settings};
use crate::stored::{StoredResponse, is_stored};
use axum::body::Body;
use bytes::Bytes;
use command_journal::identity::generate_lease_id;
use command_journal::{FenceEpoch, JournalError, LeaseId, LeaseOutput, TerminalOutput, Timestamp};
use http::{HeaderValue, Request, Response, header};
use http_body_util::{BodyExt as _, Limited};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tower::ServiceExt as _;

/// Lease time kept back after a handler's deadline, to store its response.
pub const HANDLER_MARGIN: Duration = Duration::from_secs(10);

/// The request through the layer's `settings` and the handler `inner`.
pub(crate) async fn run<S, B>(
    settings: Arc<Settings>,
    inner: S,
    request: Request<Body>,
) -> Result<Response<Body>, S::Error>
where
    S: tower::Service<Request<Body>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let link = settings.documentation.clone();
    let prepared = match prepare(&settings, request).await {
        Ok(prepared) => prepared,
        Err(problem) => {
            let mut response = problem.into_response();
            link_documentation(&mut response, link.as_ref());
            return Ok(response);
        }
    };
    let work = tokio::spawn(async move {
        match settings.handlers {
            Handlers::Provider => provider(inner, prepared).await,
            Handlers::StoredResponse => stored(&settings, inner, prepared).await,
        }
    });
    let mut response = match work.await {
        Ok(answer) => answer?,
        // The handler panicked: nothing more is known, and nothing was stored.
        Err(_) => Problem::new("internal").into_response(),
    };
    link_documentation(&mut response, link.as_ref());
    Ok(response)
}

/// A provider handler: the command in the request's extensions, its answer as it is.
async fn provider<S, B>(inner: S, prepared: Prepared) -> Result<Response<Body>, S::Error>
where
    S: tower::Service<Request<Body>, Response = Response<B>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let Prepared {
        mut parts,
        bytes,
        command,
        body,
    } = prepared;
    parts
        .extensions
        .insert(IdempotentCommand::new(command, body));
    let response = inner
        .oneshot(Request::from_parts(parts, Body::from(bytes)))
        .await?
        .map(Body::new);
    if is_replayed(&response) {
        count("provider");
    }
    Ok(response)
}

/// A handler that only computes its response: by the table of this module.
async fn stored<S, B>(
    settings: &Settings,
    inner: S,
    prepared: Prepared,
) -> Result<Response<Body>, S::Error>
where
    S: tower::Service<Request<Body>, Response = Response<B>>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let journal = &settings.journal;
    let lease = generate_lease_id();
    let started = match journal.start(&prepared.command, &lease).await {
        Ok(started) => started,
        Err(error) => return Ok(Problem::journal(error).into_response()),
    };
    let (fence, expires_at) = match started.lease {
        LeaseOutput::Acquired {
            fence_epoch,
            lease_expires_at,
        } => (fence_epoch, lease_expires_at),
        LeaseOutput::Busy => return Ok(Problem::new("in_progress").into_response()),
        LeaseOutput::Succeeded => return Ok(replay(settings, &prepared).await),
        LeaseOutput::FailedFinal => return Ok(Problem::new("no_stored_response").into_response()),
    };
    let remaining = match journal.lease_remaining(expires_at) {
        Ok(remaining) => remaining,
        Err(error) => return Ok(Problem::journal(error).into_response()),
    };
    let Prepared {
        parts,
        bytes,
        command,
        ..
    } = prepared;
    let handler = inner.oneshot(Request::from_parts(parts, Body::from(bytes)));
    let deadline = Instant::now() + remaining.saturating_sub(HANDLER_MARGIN);
    let held = Held {
        settings,
        command: &command,
        lease: &lease,
        fence,
        expires_at,
        deadline,
    };
    let response = match tokio::time::timeout_at(deadline, handler).await {
        Ok(answer) => answer?,
        Err(_) => return Ok(held.cut()),
    };
    Ok(held.finish(response).await)
}

/// The lease a request holds while its handler's response is stored.
struct Held<'a> {
    settings: &'a Settings,
    command: &'a command_journal::CommandInput,
    lease: &'a LeaseId,
    fence: FenceEpoch,
    expires_at: Timestamp,
    /// When the handler is cut, its response's body included.
    deadline: Instant,
}

impl Held<'_> {
    /// Stores the handler's `response` and answers its stored form, or answers it as
    /// it is when it is not stored.
    async fn finish<B>(&self, response: Response<B>) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let (head, body) = response.into_parts();
        if !is_stored(head.status) {
            let mut response = Response::from_parts(head, Body::new(body));
            self.retry_after_lease(&mut response);
            return response;
        }
        let collected = Limited::new(body, StoredResponse::body_limit()).collect();
        let bytes = match tokio::time::timeout_at(self.deadline, collected).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(_)) => return Problem::new("response_unstorable").into_response(),
            Err(_) => return self.cut(),
        };
        let stored = StoredResponse::new(head.status, &head.headers, bytes);
        let Ok(envelope) = stored.envelope() else {
            return Problem::new("response_unstorable").into_response();
        };
        let journal = &self.settings.journal;
        let completed = journal
            .complete_with_result(self.command, self.lease, self.fence, &envelope)
            .await;
        match completed {
            Ok(TerminalOutput::Succeeded) => stored.into_response(),
            Ok(TerminalOutput::FailedFinal) => Problem::new("no_stored_response").into_response(),
            Err(
                JournalError::LeaseExpired | JournalError::StaleFence | JournalError::LeaseNotHeld,
            ) => Problem::new("in_progress").into_response(),
            Err(error) => Problem::journal(error).into_response(),
        }
    }

    /// The answer of a handler (or its response's body) still running at its deadline:
    /// 503 `handler_timeout`, with `Retry-After` until the lease expires.
    fn cut(&self) -> Response<Body> {
        let left = self
            .settings
            .journal
            .lease_remaining(self.expires_at)
            .unwrap_or(HANDLER_MARGIN);
        Problem::new("handler_timeout")
            .retry_after(left)
            .into_response()
    }

    /// `Retry-After` until this request's lease expires, unless the handler set one.
    fn retry_after_lease(&self, response: &mut Response<Body>) {
        if response.headers().contains_key(header::RETRY_AFTER) {
            return;
        }
        if let Ok(left) = self.settings.journal.lease_remaining(self.expires_at) {
            let seconds = left.as_secs() + u64::from(left.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
        }
    }
}

/// The stored response of a command that succeeded, marked as a replay.
async fn replay(settings: &Settings, prepared: &Prepared) -> Response<Body> {
    let envelope = match settings.journal.result(&prepared.command).await {
        Ok(Some(envelope)) => envelope,
        Ok(None) => return Problem::new("no_stored_response").into_response(),
        Err(error) => return Problem::journal(error).into_response(),
    };
    let Some(stored) = StoredResponse::from_envelope(&envelope) else {
        return Problem::new("stored_response_unreadable").into_response();
    };
    let mut response = stored.into_response();
    mark_replayed(&mut response);
    count("stored_response");
    response
}

//! The HTTP server: hyper's HTTP/1 connections with a header-read timeout (which is
//! also the idle timeout of a kept-alive connection), a write timeout (a client that
//! stops reading its answers, pipelining or not, loses its connection instead of
//! pinning it past every other timeout), a cap on open connections (the
//! cap on checkouts handled at once is the router's, so that health checks and scrapes
//! never wait behind checkouts), a log line for every request hyper refuses
//! before the router sees it (400, 414, 431) and for every connection closed on the
//! header or the write timeout, and Cloud Run's graceful shutdown: on `stop` the listener closes,
//! the requests in flight finish for at most `drain`, then the server returns.

use super::config::HttpLimits;
use super::logging::{Logger, Severity};
use super::request_log::{Received, RequestLine, UNPARSED};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use serde_json::{Map, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Pause after an accept error that is not about one connection (out of file
/// descriptors, say), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` under `limits` until `stop` resolves, then drains
/// for at most `drain`.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    logger: Logger,
    stop: impl Future<Output = &'static str> + Send + 'static,
    drain: Duration,
) -> std::io::Result<()> {
    let service = tower::ServiceBuilder::new()
        .map_request(|mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(Received(Instant::now()));
            request
        })
        .service(router);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    let signal = loop {
        let permit = tokio::select! {
            signal = &mut stop => break signal,
            permit = Arc::clone(&connections).acquire_owned() => permit,
        };
        let Ok(permit) = permit else {
            // The semaphore is never closed; stop serving rather than spin.
            break "semaphore closed";
        };
        let accepted = tokio::select! {
            signal = &mut stop => break signal,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) if is_connection_error(&error) => continue,
            Err(_) => {
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // hyper stops reading while an answer cannot be written, so neither of its
        // timeouts runs then: the stream's own write timeout ends such a connection.
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let connection = graceful.watch(http.serve_connection(
            TokioIo::new(Box::pin(stream)),
            TowerToHyperService::new(service.clone()),
        ));
        let logger = logger.clone();
        tokio::spawn(async move {
            let opened = Instant::now();
            if let Err(error) = connection.await {
                log_connection_error(&logger, &error, opened.elapsed());
            }
            drop(permit);
        });
    };
    drop(listener);
    let mut fields = Map::new();
    fields.insert("signal".into(), json!(signal));
    fields.insert("drainSeconds".into(), json!(drain.as_secs()));
    logger.log(
        Severity::Info,
        "shutdown started: no new connections",
        None,
        fields,
    );
    tokio::select! {
        () = graceful.shutdown() => {
            logger.info("shutdown complete: every request finished");
        }
        () = tokio::time::sleep(drain) => {
            logger.log(
                Severity::Warning,
                "shutdown deadline passed: requests still in flight were cut off",
                None,
                Map::new(),
            );
        }
    }
    Ok(())
}

/// Errors about one connection only: the loop goes on at once.
fn is_connection_error(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

/// An answer that could not be written within the write timeout.
fn is_write_timeout(error: &hyper::Error) -> bool {
    std::error::Error::source(error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
}

/// A request hyper answered itself (400, 414, 431), or a connection closed on the
/// header timeout; other errors (a client that went away) leave no line.
fn log_connection_error(logger: &Logger, error: &hyper::Error, elapsed: Duration) {
    let refused = if error.is_parse_too_large() {
        // hyper names the two cases only in its message.
        if error.to_string().contains("URI too long") {
            Some((414, "uri_too_long"))
        } else {
            Some((431, "headers_too_large"))
        }
    } else if error.is_parse() {
        Some((400, "malformed_request"))
    } else {
        None
    };
    if let Some((status, outcome)) = refused {
        RequestLine::without_command("-", UNPARSED, status, outcome, elapsed).log(
            logger,
            Severity::Info,
            None,
        );
    } else if error.is_timeout() {
        let mut fields = Map::new();
        fields.insert("outcome".into(), json!("header_timeout"));
        logger.log(Severity::Info, "connection closed", None, fields);
    } else if is_write_timeout(error) {
        let mut fields = Map::new();
        fields.insert("outcome".into(), json!("write_timeout"));
        logger.log(Severity::Info, "connection closed", None, fields);
    }
}

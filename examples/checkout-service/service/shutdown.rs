//! Cloud Run's shutdown contract: on SIGTERM stop accepting connections, let the
//! requests in flight finish for at most [`DRAIN`], then exit 0 (Cloud Run sends
//! SIGKILL ten seconds after SIGTERM).

use super::logging::{Logger, Severity};
use serde_json::{Map, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// How long in-flight requests may run after the signal.
pub const DRAIN: Duration = Duration::from_secs(9);

/// Resolves on SIGTERM (Cloud Run) or SIGINT (Ctrl-C locally) with the signal's
/// name. If a handler cannot be installed, only the other one is awaited.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    tokio::select! {
        Some(()) = async { term.as_mut()?.recv().await } => "SIGTERM",
        Some(()) = async { int.as_mut()?.recv().await } => "SIGINT",
        else => std::future::pending().await,
    }
}

/// Serves `router` on `listener` until `stop` resolves, then drains for at most
/// `drain`.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    logger: Logger,
    stop: impl Future<Output = &'static str> + Send + 'static,
    drain: Duration,
) -> std::io::Result<()> {
    let draining = Arc::new(Notify::new());
    let started = Arc::clone(&draining);
    let log = logger.clone();
    let server = axum::serve(listener, router).with_graceful_shutdown(async move {
        let signal = stop.await;
        let mut fields = Map::new();
        fields.insert("signal".into(), json!(signal));
        fields.insert("drainSeconds".into(), json!(drain.as_secs()));
        log.log(
            Severity::Info,
            "shutdown started: no new connections",
            None,
            fields,
        );
        started.notify_one();
    });
    tokio::select! {
        result = server.into_future() => {
            result?;
            logger.info("shutdown complete: every request finished");
        }
        () = async { draining.notified().await; tokio::time::sleep(drain).await } => {
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

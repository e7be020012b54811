//! Cloud Run's shutdown contract: on SIGTERM stop accepting connections, let the
//! requests in flight finish for at most [`DRAIN`], then exit 0 (Cloud Run sends
//! SIGKILL ten seconds after SIGTERM). The draining itself is
//! [`super::server::serve`]'s.

use std::time::Duration;

/// How long in-flight requests may run after the signal.
pub const DRAIN: Duration = Duration::from_secs(9);

/// How long the shutdown then waits for the journal's reaper to roll back the
/// transactions dropped requests left open (`Journal::reaped`), so that they do not
/// keep their locks for a minute after the process is gone: with [`DRAIN`], within
/// the ten seconds before SIGKILL.
pub const REAPING: Duration = Duration::from_millis(500);

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

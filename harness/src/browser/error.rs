//! What can go wrong driving the browser. No variant carries a URL, a selector's match
//! or a page's text: a checkout URL or a client secret a test opens never reaches an
//! error message.

use std::path::PathBuf;
use std::time::Duration;

/// Why the browser could not be launched or did not do what a test asked.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// No Chromium at the path named by `CHROMIUM` or, without it, `/usr/bin/chromium`.
    #[error(
        "no Chromium at {}: install the Debian package `chromium` (`apt-get install -y chromium`) or set CHROMIUM to the browser's path",
        .0.display()
    )]
    NotFound(PathBuf),
    /// The process could not be started, or its profile directory not created.
    #[error("Chromium could not be started: {0}")]
    Start(#[source] std::io::Error),
    /// Chromium exited, or stayed silent past the deadline, without printing its DevTools
    /// address; the last lines it wrote to stderr are kept.
    #[error("Chromium printed no DevTools address ({reason}); its last stderr lines:\n{stderr}")]
    NoDevTools {
        /// What happened instead.
        reason: String,
        /// The tail of Chromium's stderr.
        stderr: String,
    },
    /// The DevTools protocol failed (a command, a missing element, a lost connection).
    #[error("the DevTools protocol: {0}")]
    Protocol(#[from] chromiumoxide::error::CdpError),
    /// A wait ran past its deadline.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: &'static str,
        /// The deadline.
        after: Duration,
    },
    /// An element or page read gave no text.
    #[error("{0} gave no text")]
    NoText(&'static str),
}

//! Why an emulator could not be started or driven.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// How to install an emulator, for the error when none is found.
pub const INSTALL_HINT: &str = "install one: `apt-get install google-cloud-cli-firestore-emulator` \
     (Google's apt repository, with a Java runtime such as default-jre-headless), \
     `gcloud components install cloud-firestore-emulator`, or \
     `firebase setup:emulators:firestore`; or set COMMAND_JOURNAL_EMULATOR_JAR to a jar";

/// Why an emulator could not be started or driven.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// No `java` binary (or none under `JAVA_HOME`).
    #[error("java was not found: install the Debian package default-jre-headless or set JAVA_HOME")]
    JavaMissing,
    /// No emulator jar was found (see [`discovery`](super::discovery) for the order of the search).
    #[error(
        "no Firestore emulator jar was found; looked at: {}; {}",
        looked.join("; "),
        INSTALL_HINT
    )]
    JarMissing {
        /// Every place looked, in order, with why it did not serve.
        looked: Vec<String>,
    },
    /// The JVM exited before it was ready.
    #[error("the emulator exited during start-up ({status}); its log is at {log}")]
    Exited {
        /// The JVM's exit status.
        status: ExitStatus,
        /// The emulator's log file.
        log: PathBuf,
    },
    /// The JVM did not answer `Ok` in time.
    #[error("the emulator did not answer Ok within {deadline:?}; its log is at {log}")]
    NotReady {
        /// The deadline that passed.
        deadline: Duration,
        /// The emulator's log file.
        log: PathBuf,
    },
    /// An I/O error while starting the JVM.
    #[error("could not start the emulator: {0}")]
    Io(#[from] std::io::Error),
    /// The address asked for is already in use (or not this machine's).
    #[error("cannot listen on {address}: {reason}")]
    AddressUnavailable {
        /// The `HOST:PORT` asked for.
        address: String,
        /// Why (in use, or not an address of this machine), and what to choose instead.
        reason: &'static str,
    },
    /// A request to the emulator's REST control API failed.
    #[error("emulator request failed: {0}")]
    Http(String),
    /// The process-wide emulator failed to start earlier.
    #[error("the shared emulator failed to start: {0}")]
    Shared(String),
}

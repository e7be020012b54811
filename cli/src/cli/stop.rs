//! Ctrl-C and SIGTERM for the subcommands that run until stopped (`emulator`,
//! `demo --keep`).

/// Ctrl-C and SIGTERM, listened for from creation on.
pub struct Stop {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Stop {
    /// Starts listening for Ctrl-C and SIGTERM.
    pub fn listen() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// Waits until either arrives (returns at once if neither could be listened for).
    pub async fn wait(mut self) {
        if self.interrupt.is_none() && self.terminate.is_none() {
            return;
        }
        let interrupt = async {
            match &mut self.interrupt {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        let terminate = async {
            match &mut self.terminate {
                Some(signal) => signal.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate => {}
        }
    }
}

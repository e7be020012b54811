//! The test harness of command-journal, for a service's own tests (a
//! `[dev-dependencies]` line, as docs/emulator.md shows) and for the project's:
//!
//! - [`emulator`]: starts (or reuses) the official Firestore emulator, one JVM per
//!   process tied to it, each test isolated in a project of its own;
//! - [`rules_testing`]: a security-rules test harness, what
//!   `@firebase/rules-unit-testing` offers, in Rust, with the journal's denial matrix;
//! - `browser` (feature `browser`): headless Chromium for the pages a customer's
//!   browser completes, driven through the DevTools protocol.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use command_journal::{Connection, Journal, Target};
//! use command_journal_emulator::Emulator;
//!
//! // FIRESTORE_EMULATOR_HOST when set, otherwise one JVM for the whole test binary.
//! let emulator = Emulator::shared()?;
//! // One project per test: tests share the emulator and run in parallel.
//! let project = emulator.new_project_id();
//! let target = Target::Emulator(emulator.host().to_owned());
//! let journal = Journal::new(Connection::connect(&project, target).await?);
//! # let _ = journal;
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

#[cfg(feature = "browser")]
pub mod browser;
pub mod emulator;
pub mod rules_testing;

pub use emulator::{Emulator, EmulatorError};

//! command-journal: payment and ledger commands that happen at most once in effect on
//! Google Cloud Firestore.
//!
//! A Cloud Run handler registers the command (immutable, exactly once), acquires a
//! fenced 60 s lease for this worker attempt, calls its provider with the command's
//! provider idempotency key, and records the terminal outcome under the fence it
//! holds. Racing, retrying, crashed and stale workers cannot double-act: a second
//! holder is `Busy`, an expired lease is taken over with the fence plus one, and a
//! stale fence can never finish.
//!
//! ```no_run
//! use command_journal::connection::{Connection, Target};
//! use command_journal::identity::{
//!     CommandInput, CommandRequest, LeaseId, OperationSlug, TerminalReferenceFingerprint,
//! };
//! use command_journal::lease::LeaseOutput;
//! use command_journal::{Journal, JournalError};
//!
//! async fn checkout(
//!     journal: &Journal,
//!     uid: &str,
//!     command_id: &str,
//!     payload: &serde_json::Value,
//! ) -> Result<&'static str, JournalError> {
//!     let command = CommandInput::new(CommandRequest {
//!         environment: "production",
//!         caller_scope_kind: "member",
//!         caller_id: uid,
//!         command_id,
//!         command_type: "checkout",
//!         endpoint_schema_version: 1,
//!         payload,
//!     })?;
//!     journal.register_command(&command).await?;
//!     let lease = LeaseId::generate(); // one per worker attempt
//!     match journal.acquire_lease(&command, &lease).await? {
//!         LeaseOutput::Acquired { fence_epoch, .. } => {
//!             let key = command
//!                 .identity()
//!                 .provider_idempotency_key(&OperationSlug::parse("charge")?);
//!             let receipt_sha256 = call_provider(&key).await; // your provider call
//!             let reference = TerminalReferenceFingerprint::parse(&receipt_sha256)?;
//!             journal
//!                 .complete_command(&command, &lease, fence_epoch, &reference)
//!                 .await?;
//!             Ok("charged")
//!         }
//!         LeaseOutput::Busy => Ok("in progress elsewhere, retry later"),
//!         LeaseOutput::Succeeded => Ok("already charged"),
//!         LeaseOutput::FailedFinal => Ok("failed earlier"),
//!     }
//! }
//! # async fn call_provider(_key: &str) -> String { "ab".repeat(32) }
//!
//! # async fn run() -> Result<(), JournalError> {
//! let journal = Journal::new(Connection::connect("my-project", Target::Production).await?);
//! let outcome = checkout(&journal, "member_42", "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
//!     &serde_json::json!({"sku": "tee"})).await?;
//! # let _ = outcome;
//! # Ok(())
//! # }
//! ```
//!
//! Every operation is a pure `decide` over validated inputs, one captured timestamp
//! and strictly parsed documents, run by one transaction runner
//! ([`transaction`]); [`verify`] checks a whole journal without writing.

#![deny(missing_docs)]

pub mod connection;
mod credentials;
pub mod digest;
pub(crate) mod document;
#[cfg(feature = "emulator")]
pub mod emulator;
pub mod error;
pub mod expected;
/// Fuzzing entry points (cargo feature `fuzzing`): harness code with oracle
/// assertions, kept out of the library proper.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod identity;
pub mod journal;
pub mod lease;
pub mod ledger;
pub mod registration;
pub mod runner;
pub mod start;
pub mod strict_json;
pub mod time;
pub mod transaction;
pub mod verify;

pub use credentials::resolve_project;
pub use error::{ConfigCause, ErrorClass, GrpcCode, JournalError};
pub use journal::Journal;
pub use runner::Concurrency;

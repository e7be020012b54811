//! The pure core of command-journal: everything the journal decides, and nothing that
//! does I/O.
//!
//! Every operation of the journal is a transition: the document paths it reads, and a
//! pure `decide` over its validated inputs, one captured [`time::Timestamp`] and the
//! strictly parsed documents read, answering the writes (each with its precondition)
//! and the output. A sans-I/O call machine says what to read, commit, send or answer
//! next; the library's gRPC driver and the in-memory store of `testing` both drive it,
//! so one contract is tested without Firestore and run against it.
//!
//! Purity is a dependency rule, not a convention: this package depends on no async
//! runtime, no gRPC stack and no Firestore client, and builds chrono without `clock`
//! and uuid without `v4` (`.ci/run` checks its tree for tokio, tonic, gcloud-sdk and
//! firestore, chrono's `clock`, uuid's `v4` and getrandom), so a transition cannot do
//! I/O, read the system's clock or draw the system's randomness without a compile
//! error. The clock is a [`time::Clock`] and a lease id's randomness
//! [`identity::LeaseId::from_random_bytes`]'s argument, both the caller's.
//!
//! **Two surfaces.** What the `command-journal` library re-exports, and a reader of its
//! documentation needs, is public here at the same paths: the validated inputs
//! ([`identity`], [`time`], [`strict_json`]), the errors ([`error`], [`expected`]), the
//! outputs at the root, and the types of [`sends`], [`ledger`], [`pending`],
//! [`recovery`] and [`verify`]. What only the shell needs (the transitions, the call
//! machine, the codecs of a command's root, lifecycle and audit documents, `verify`'s
//! checks) is reachable through one module, [`tools`], for the library's driver, the
//! CLI, the harness, the benchmarks and the fuzz targets; everything else is private to
//! this package.
//!
//! This package is the library's engine, not its interface: services use the
//! `command-journal` library.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(unreachable_pub))]

pub mod error;
pub mod evidence;
pub mod expected;
pub mod identity;
pub mod ledger;
pub mod pending;
pub mod recovery;
pub mod sends;
pub mod strict_json;
pub mod time;
pub mod tools;
pub mod verify;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;
#[cfg(all(feature = "plants", not(test)))]
pub mod plants;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

mod attempt;
mod call;
mod digest;
mod document;
mod envelope;
mod execute;
mod fence;
mod key_range;
mod known;
mod lease;
mod proof;
mod registration;
mod settle;
mod start;
mod transaction;

pub use call::Concurrency;
pub use envelope::ResultEnvelope;
pub use execute::{Executed, Execution};
pub use fence::FenceEpoch;
pub use lease::{CommandState, LeaseOutput, StatusOutput, TerminalOutput};
pub use registration::{RegistrationOutcome, RegistrationOutput};
pub use sends::customer::{ActionName, CustomerAction, Handoff};
pub use sends::provider::{Provider, ProviderAnswer, SendRequest};
pub use start::StartOutput;

//! The pure core of command-journal: everything the journal decides, and nothing that
//! does I/O.
//!
//! Every operation of the journal is a [`transaction::Transition`]: the document paths
//! it reads, and a pure `decide` over its validated inputs, one captured
//! [`time::Timestamp`] and the strictly parsed documents read, answering a
//! [`transaction::Decision`] (the writes, each with its precondition, and the output).
//! The sans-I/O [`attempt`] machine says what to read, commit or answer next; the
//! library's gRPC runner and the in-memory store of [`testing`] both drive it, so one
//! contract is tested without Firestore and run against it.
//!
//! Purity is a dependency rule, not a convention: this package depends on no async
//! runtime, no gRPC stack and no Firestore client, and builds chrono without `clock`
//! and uuid without `v4` (`.ci/run` checks its tree for tokio, tonic, gcloud-sdk and
//! firestore, chrono's `clock`, uuid's `v4` and getrandom), so a transition cannot do
//! I/O, read the system's clock or draw the system's randomness without a compile
//! error. The clock is a [`time::Clock`] and a lease id's randomness
//! [`identity::LeaseId::from_random_bytes`]'s argument, both the caller's.
//!
//! - inputs: [`identity`] (each validated input, its limits, the framed digests),
//!   [`digest`], [`strict_json`], [`time`];
//! - documents: [`document`] (the strict codecs and the value type),
//!   [`envelope`] (result envelopes), [`fence`];
//! - transitions: [`registration`], [`lease`], [`start`], [`sends`] (the provider send
//!   layer), [`ledger`], [`transaction`] (the contract), [`attempt`] (the machine),
//!   [`known`] (deciding from what the journal just read or wrote, without a read),
//!   [`proof`] (what a commit proves of the documents it read and does not write),
//!   [`pending`] (the commands that wait for someone, and why), [`key_range`] (the
//!   key-hash space cut into ranges for parallel tasks), [`recovery`] (settling
//!   them from the provider's evidence, by key hash alone);
//! - the one-call protocol's decisions: [`execute`];
//! - the verifier's checks: [`verify`];
//! - errors: [`error`] (one closed [`error::JournalError`] with stable codes) and
//!   [`expected`] (the rule behind every `invalid_input` field).
//!
//! This package is the library's engine, not its interface: services use the
//! `command-journal` library, which re-exports what a handler needs.

#![deny(missing_docs)]

pub mod answer;
pub mod attempt;
pub mod call;
pub mod digest;
pub mod document;
pub mod envelope;
pub mod error;
pub mod execute;
pub mod expected;
pub mod fence;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod identity;
pub mod key_range;
pub mod known;
pub mod lease;
pub mod ledger;
pub mod pending;
pub mod proof;
pub mod recovery;
pub mod registration;
pub mod sends;
pub mod start;
pub mod strict_json;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod then;
pub mod time;
pub mod transaction;
pub mod verify;

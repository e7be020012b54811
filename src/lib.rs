//! command-journal: payment and ledger commands that happen at most once in effect on
//! Google Cloud Firestore.

pub mod connection;
pub mod digest;
pub(crate) mod document;
pub mod emulator;
pub mod error;
pub mod identity;
pub mod journal;
pub mod lease;
pub mod ledger;
pub mod registration;
pub mod strict_json;
pub mod time;
pub mod transaction;
pub mod verify;

pub use error::JournalError;
pub use journal::Journal;

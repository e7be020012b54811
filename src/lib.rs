//! command-journal: payment and ledger commands that happen at most once in effect on
//! Google Cloud Firestore.

pub mod connection;
pub mod digest;
pub mod emulator;
pub mod error;
pub mod identity;
pub mod ledger;
pub mod strict_json;
pub mod time;

pub use error::JournalError;

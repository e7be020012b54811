//! command-journal: payment and ledger commands that happen at most once in effect on
//! Google Cloud Firestore.

pub mod digest;
pub mod error;
pub mod identity;

pub use error::JournalError;

//! Test support shared by the unit tests and the fuzz targets; compiled only for
//! tests and the `fuzzing` feature, and not a supported API.
//!
//! `Store` is the one in-memory stand-in for Firestore: it runs a prepared
//! operation by the runner's rules, without I/O, and refuses (panics) wherever a
//! `decide` breaks them.

mod call;
mod store;

pub use call::CallTrace;

pub use store::{Decided, Ran, Store, StoredDocument, WriteResults};

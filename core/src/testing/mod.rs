//! Test support shared by the unit tests and the fuzz targets; compiled only for
//! tests and the `fuzzing` feature, and not a supported API.
//!
//! `Store` is the one in-memory stand-in for Firestore (`store.rs`). Every operation
//! a test runs on it runs through the call machine, driven by one driver
//! (`call.rs`) that performs the steps the library's driver performs; the store's
//! helpers (`run.rs`) run a prepared operation that way, strictly, and refuse
//! (panic) wherever a `decide` breaks the machine's rules.

mod call;
mod run;
mod store;

pub use call::CallTrace;
pub use run::{Decided, Ran};
pub use store::{Store, StoredDocument, WriteResults};

use crate::identity::LeaseId;
use std::sync::atomic::{AtomicU64, Ordering};

/// A lease id no earlier call in this process returned: the core draws no randomness,
/// so the unit tests number their leases.
pub fn fresh_lease() -> LeaseId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    LeaseId::from_random_bytes((0x7e57_1ea5_u128 << 96 | u128::from(n)).to_be_bytes())
}

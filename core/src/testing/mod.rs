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

use crate::identity::LeaseId;
use std::sync::atomic::{AtomicU64, Ordering};

/// A lease id no earlier call in this process returned: the core draws no randomness,
/// so the unit tests number their leases.
pub fn fresh_lease() -> LeaseId {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    LeaseId::from_random_bytes((0x7e57_1ea5_u128 << 96 | u128::from(n)).to_be_bytes())
}

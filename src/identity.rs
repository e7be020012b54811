//! Each validated input of the journal, its limits, and the digests framed from it
//! (the core's, `command_journal_core::identity`; docs/identity.md is the contract),
//! and, here in the shell, the lease ids drawn from the system's randomness.

pub use command_journal_core::identity::*;

/// A fresh lease id for one logical worker attempt: a version 4 UUID of bytes drawn
/// from the operating system's randomness. Trusted server code generates it; it is
/// never taken from a browser.
pub fn generate_lease_id() -> LeaseId {
    LeaseId::from_random_bytes(uuid::Uuid::new_v4().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_lease_ids_are_distinct() {
        let leases: Vec<LeaseId> = (0..64).map(|_| generate_lease_id()).collect();
        for (i, lease) in leases.iter().enumerate() {
            assert!(
                !leases[..i].contains(lease),
                "lease {i} repeats an earlier one"
            );
        }
    }
}

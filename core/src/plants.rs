//! Planted defects of the journal, for the soak's plant suite only (feature `plants`,
//! which no deployed build enables): each reverts one rule of the send layer in the
//! whole process, so that the soak (`bench/chaos/README.md`, "Planted defects") can
//! show its oracle failing on the defect. A build without the feature has none of
//! this: every rule is always on.

use crate::sends::reverted::{Rule, revert_in_process};

/// A defect the journal can be built to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// Commits no longer prove the lease they read: a holder whose lease was taken
    /// over between its read (or what it knew) and its commit writes under the
    /// superseded fence.
    NoLeaseProof,
    /// An absence is provable from the end of the last permitting lease, without the
    /// plan's settle window after it.
    NoSettleWindow,
    /// The recovery job leaves `ambiguous` attempts alone.
    RecoverySkipsAmbiguous,
}

impl Plant {
    /// Every journal plant.
    pub const ALL: [Self; 3] = [
        Self::NoLeaseProof,
        Self::NoSettleWindow,
        Self::RecoverySkipsAmbiguous,
    ];

    /// Its name in the soak's `--plant`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoLeaseProof => "no_lease_proof",
            Self::NoSettleWindow => "no_settle_window",
            Self::RecoverySkipsAmbiguous => "recovery_skips_ambiguous",
        }
    }

    /// The plant named `name`, if it is one of the journal's.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|plant| plant.as_str() == name)
    }

    fn rule(self) -> Rule {
        match self {
            Self::NoLeaseProof => Rule::LeaseProof,
            Self::NoSettleWindow => Rule::SettleWindow,
            Self::RecoverySkipsAmbiguous => Rule::RecoveryLooksUpAmbiguous,
        }
    }
}

/// Plants `plant` in this whole process, for good: every journal of the process has
/// the defect from now on.
pub fn plant(plant: Plant) {
    revert_in_process(&[plant.rule()]);
}

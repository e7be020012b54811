//! `release_lease`: the holder of a fence gives its lease up before it expires, so
//! that the next holder (the customer's return, a provider's event, the recovery job)
//! takes it over at once instead of waiting out the 60 s. `docs/leases.md` gives the
//! table.
//!
//! Decided over the snapshot every lease operation reads, plus the release record of
//! the caller's fence: only the current holder of that fence, its lease active at
//! `now`, releases. It replaces the lifecycle with its released form (version 2:
//! `leaseExpiresAt == updatedAt == now`) under the update time read and creates the
//! release record (`exists: false`) in one commit. The revision chain gains no event:
//! the record is the release's audit record. Anything else writes nothing.

use super::call::{LeaseCall, Loaded};
use crate::document::lifecycle::{self, Lifecycle, LifecycleState};
use crate::document::release::{self, LeaseRelease};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::transaction::{Decision, Halt, OperationName, Snapshot, Transition, Write};

/// What a release answered; none of them is an error, since a lease that is no
/// longer held needs no release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseOutput {
    /// Released now: the lifecycle is version 2 and the record created.
    Released,
    /// This holder had released this fence already (a lost response): nothing written.
    AlreadyReleased,
    /// The lease had expired at `now`: nothing written (anyone takes it over anyway).
    Expired,
    /// No lease of this holder at this fence (none yet, another holder's, or taken
    /// over): nothing written.
    NotHeld,
    /// The command is terminal: nothing written.
    Terminal,
}

impl ReleaseOutput {
    /// The metric outcome.
    pub fn label(self) -> &'static str {
        match self {
            Self::Released => "released",
            Self::AlreadyReleased => "already_released",
            Self::Expired => "expired",
            Self::NotHeld => "not_held",
            Self::Terminal => "terminal",
        }
    }
}

/// A prepared `release_lease` by the holder in `call` of the fence it holds.
#[derive(Debug, Clone)]
pub struct Release {
    call: LeaseCall,
    fence: FenceEpoch,
}

impl Release {
    /// Prepares the release of `fence` by the holder in `call`, at its captured time.
    pub fn new(call: LeaseCall, fence: FenceEpoch) -> Self {
        Self { call, fence }
    }

    /// The fence it releases.
    #[cfg(test)]
    pub(crate) fn fence(&self) -> FenceEpoch {
        self.fence
    }

    fn record_path(&self) -> String {
        release::path(self.call.hash(), self.fence)
    }

    fn decide_inner(&self, snapshot: &Snapshot) -> Result<Decision<ReleaseOutput>, Halt> {
        let call = &self.call;
        let Loaded { current, .. } = call.load(snapshot)?;
        let Some(current) = current else {
            return Ok(Decision::Observe(ReleaseOutput::NotHeld));
        };
        if current.state != LifecycleState::Leased {
            return Ok(Decision::Observe(ReleaseOutput::Terminal));
        }
        if current.lease_owner_fingerprint != *call.owner() || current.fence_epoch != self.fence {
            return Ok(Decision::Observe(ReleaseOutput::NotHeld));
        }
        let record = snapshot
            .get(&self.record_path())
            .map(|fields| {
                LeaseRelease::parse(call.hash(), &release::id(self.fence), fields)
                    .map_err(Halt::Reject)
            })
            .transpose()?;
        if current.released {
            return match record {
                Some(record) if current.released_at() == Some(record.released_at) => {
                    Ok(Decision::Observe(ReleaseOutput::AlreadyReleased))
                }
                _ => Err(Halt::Reject(JournalError::corrupt(
                    "a released lifecycle without its release record",
                ))),
            };
        }
        if record.is_some() {
            return Err(Halt::Reject(JournalError::corrupt(
                "a release record of a lease still held",
            )));
        }
        let now = call.now();
        if now < current.updated_at {
            return Err(Halt::Reject(JournalError::ClockRegression));
        }
        if now >= current.lease_expires_at {
            return Ok(Decision::Observe(ReleaseOutput::Expired));
        }
        let record = LeaseRelease {
            command_key_hash: call.hash().clone(),
            fence_epoch: self.fence,
            released_at: now,
        };
        let after = Lifecycle {
            lease_expires_at: now,
            updated_at: now,
            released: true,
            ..current
        };
        let writes = vec![
            Write::Replace {
                path: lifecycle::path(call.hash()),
                fields: after.encode(),
            },
            Write::Create {
                path: self.record_path(),
                fields: record.encode(),
            },
        ];
        Ok(Decision::Mutate(writes, ReleaseOutput::Released))
    }
}

impl Transition for Release {
    type Output = ReleaseOutput;

    fn name(&self) -> OperationName {
        OperationName::ReleaseLease
    }

    fn paths(&self) -> Vec<String> {
        let mut paths = self.call.first_read();
        paths.push(self.record_path());
        paths
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<ReleaseOutput> {
        self.decide_inner(snapshot).unwrap_or_else(Halt::decision)
    }
}

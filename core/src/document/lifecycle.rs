//! `checkoutRequests/{commandKeyHash}/lifecycle/current`: the mutable lease and
//! terminal state, kept apart from the immutable root.
//!
//! Version 1 is every state seed 000 defines. Version 2 (the same 12 fields) is a
//! released lease: state `leased`, the holder of its fence gave the lease up at
//! `updatedAt`, which is also its `leaseExpiresAt`; its release record
//! (`super::release`) holds the same instant.

use super::MAX_REVISION;
use super::fields::{self, FieldMap, Strict};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::time::Timestamp;

/// The fixed lease duration, owned by this code; callers cannot set it.
pub const LEASE_SECONDS: i64 = 60;
const KIND: &str = "malformed lifecycle document";
/// The collection id of a command's lifecycle subcollection (and its collection group).
pub const COLLECTION: &str = "lifecycle";

/// The exact field set of a lifecycle document.
pub const FIELDS: [&str; 12] = [
    "lifecycleSchemaVersion",
    "commandKeyHash",
    "state",
    "commandRevision",
    "fenceEpoch",
    "leaseOwnerFingerprint",
    "leaseAcquiredAt",
    "leaseExpiresAt",
    "createdAt",
    "updatedAt",
    "terminalCommitmentKind",
    "terminalCommitmentHash",
];

/// The lifecycle's path relative to the documents root.
pub fn path(hash: &Digest) -> String {
    format!("{}/{hash}/{COLLECTION}/current", super::root::COLLECTION)
}

/// The lifecycle states after registration; serialized as the stored text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleState {
    /// A holder has the lease (active or expired).
    Leased,
    /// Terminal success with a commitment.
    Succeeded,
    /// Terminal final failure.
    FailedFinal,
}

impl LifecycleState {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Leased => "leased",
            Self::Succeeded => "succeeded",
            Self::FailedFinal => "failed_final",
        }
    }

    fn parse(text: &str) -> Result<Self, ()> {
        match text {
            "leased" => Ok(Self::Leased),
            "succeeded" => Ok(Self::Succeeded),
            "failed_final" => Ok(Self::FailedFinal),
            _ => Err(()),
        }
    }
}

/// A parsed lifecycle whose field relations all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    /// Equals the parent root's id.
    pub command_key_hash: Digest,
    /// Current state.
    pub state: LifecycleState,
    /// `fenceEpoch + 1` while leased, `fenceEpoch + 2` once terminal.
    pub command_revision: i64,
    /// 1 for the first lease, +1 per takeover.
    pub fence_epoch: FenceEpoch,
    /// The holder's command-bound lease fingerprint.
    pub lease_owner_fingerprint: Digest,
    /// When the current lease was acquired.
    pub lease_acquired_at: Timestamp,
    /// `leaseAcquiredAt + 60 s`.
    pub lease_expires_at: Timestamp,
    /// When the first lease was acquired.
    pub created_at: Timestamp,
    /// The last transition's time.
    pub updated_at: Timestamp,
    /// The success commitment (`business_record_digest` kind); `None` unless succeeded.
    pub terminal_commitment: Option<Digest>,
    /// Version 2: the holder of this fence released the lease at `updated_at`
    /// (`== lease_expires_at`, before `lease_acquired_at + 60 s`); always `leased`.
    pub released: bool,
}

impl Lifecycle {
    /// Parses strictly; `hash` is the command the document was read under.
    pub fn parse(hash: &Digest, map: &FieldMap) -> Result<Self, JournalError> {
        let f = Strict::new(map, &FIELDS, KIND)?;
        let version = f.int_in("lifecycleSchemaVersion", 1..=2)?;
        let command_key_hash = f.digest("commandKeyHash")?;
        if &command_key_hash != hash {
            return Err(f.corrupt("commandKeyHash"));
        }
        let state = f.parsed("state", LifecycleState::parse)?;
        let command_revision = f.int_in("commandRevision", 2..=MAX_REVISION)?;
        let fence_epoch = f.fence("fenceEpoch")?;
        let kind = f.nullable("terminalCommitmentKind", |k| {
            if k == "business_record_digest" {
                Ok(())
            } else {
                Err(())
            }
        })?;
        let terminal_commitment =
            f.nullable("terminalCommitmentHash", |h| Digest::parse(h).ok_or(()))?;
        let lifecycle = Self {
            command_key_hash,
            state,
            command_revision,
            fence_epoch,
            lease_owner_fingerprint: f.digest("leaseOwnerFingerprint")?,
            lease_acquired_at: f.timestamp("leaseAcquiredAt")?,
            lease_expires_at: f.timestamp("leaseExpiresAt")?,
            created_at: f.timestamp("createdAt")?,
            updated_at: f.timestamp("updatedAt")?,
            terminal_commitment,
            released: version == 2,
        };
        if kind.is_some() != lifecycle.terminal_commitment.is_some() {
            return Err(f.corrupt("terminalCommitmentKind"));
        }
        if !lifecycle.relations_hold() {
            return Err(f.corrupt("relations"));
        }
        Ok(lifecycle)
    }

    /// The state-specific invariants (`docs/documents.md`, lifecycle), plus the exact
    /// revision/fence arithmetic and the fixed lease duration.
    fn relations_hold(&self) -> bool {
        let granted = self.granted_until();
        let expiry_fixed = if self.released {
            // Released at `updatedAt`, within the lease it was granted.
            self.state == LifecycleState::Leased
                && self.lease_expires_at == self.updated_at
                && granted.is_some_and(|granted| self.updated_at < granted)
        } else {
            granted == Some(self.lease_expires_at)
        };
        let created_fits = if self.fence_epoch == FenceEpoch::FIRST {
            self.created_at == self.lease_acquired_at
        } else {
            // Equal only when the first holder released at the instant it acquired
            // and the takeover came at that instant too.
            self.created_at <= self.lease_acquired_at
        };
        let by_state = match self.state {
            LifecycleState::Leased => {
                self.terminal_commitment.is_none()
                    && (self.updated_at == self.lease_acquired_at
                        || (self.released && self.lease_acquired_at <= self.updated_at))
                    && self.command_revision == self.fence_epoch.get() + 1
            }
            LifecycleState::Succeeded | LifecycleState::FailedFinal => {
                (self.state == LifecycleState::Succeeded) == self.terminal_commitment.is_some()
                    && self.lease_acquired_at <= self.updated_at
                    && self.updated_at < self.lease_expires_at
                    && self.command_revision == self.fence_epoch.get() + 2
            }
        };
        expiry_fixed && created_fits && by_state
    }

    /// The expiry the lease was granted with (`leaseAcquiredAt + 60 s`): the one its
    /// acquisition or takeover event carries, released or not.
    pub fn granted_until(&self) -> Option<Timestamp> {
        self.lease_acquired_at.plus_seconds(LEASE_SECONDS)
    }

    /// When the holder released the lease: `Some(updatedAt)` for version 2 only.
    pub fn released_at(&self) -> Option<Timestamp> {
        self.released.then_some(self.updated_at)
    }

    /// The exact stored field map (version 2 when released, else version 1).
    pub fn encode(&self) -> FieldMap {
        let kind = self
            .terminal_commitment
            .as_ref()
            .map(|_| "business_record_digest");
        fields::map([
            (
                "lifecycleSchemaVersion",
                fields::int(if self.released { 2 } else { 1 }),
            ),
            (
                "commandKeyHash",
                fields::string(self.command_key_hash.as_str()),
            ),
            ("state", fields::string(self.state.as_str())),
            ("commandRevision", fields::int(self.command_revision)),
            ("fenceEpoch", fields::int(self.fence_epoch.get())),
            (
                "leaseOwnerFingerprint",
                fields::string(self.lease_owner_fingerprint.as_str()),
            ),
            ("leaseAcquiredAt", fields::timestamp(self.lease_acquired_at)),
            ("leaseExpiresAt", fields::timestamp(self.lease_expires_at)),
            ("createdAt", fields::timestamp(self.created_at)),
            ("updatedAt", fields::timestamp(self.updated_at)),
            ("terminalCommitmentKind", fields::nullable_string(kind)),
            (
                "terminalCommitmentHash",
                fields::nullable_string(self.terminal_commitment.as_ref().map(Digest::as_str)),
            ),
        ])
    }
}

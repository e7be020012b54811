//! What the lease operations answer: [`LeaseOutput`] (`acquire_lease`),
//! [`TerminalOutput`] (`complete_command`, `fail_command`) and [`StatusOutput`]
//! (`status`), with their fixed serialized shapes.

use crate::time::SecondsNanos;
use crate::time::Timestamp;
use serde::ser::{Serialize, SerializeStruct, Serializer};

/// The answer to `acquire_lease`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseOutput {
    /// The caller holds the lease: newly acquired, taken over after expiry, or the
    /// same holder's lost-response retry.
    Acquired {
        /// The fence to present when completing or failing.
        fence_epoch: crate::fence::FenceEpoch,
        /// When the lease expires (exclusive).
        lease_expires_at: Timestamp,
    },
    /// Another holder has an active lease. Exposes no fence or expiry.
    Busy,
    /// The command already succeeded.
    Succeeded,
    /// The command already failed finally.
    FailedFinal,
}

/// The answer to `complete_command` and `fail_command`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalOutput {
    /// `terminal_succeeded`.
    Succeeded,
    /// `terminal_failed_final`.
    FailedFinal,
}

impl From<TerminalOutput> for LeaseOutput {
    fn from(t: TerminalOutput) -> Self {
        match t {
            TerminalOutput::Succeeded => Self::Succeeded,
            TerminalOutput::FailedFinal => Self::FailedFinal,
        }
    }
}

impl LeaseOutput {
    /// The `outcome` field of the fixed output shape.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Acquired { .. } => "lease_acquired",
            Self::Busy => "lease_busy",
            Self::Succeeded => "terminal_succeeded",
            Self::FailedFinal => "terminal_failed_final",
        }
    }

    /// The `state` field of the fixed output shape.
    pub fn state(&self) -> &'static str {
        match self {
            Self::Acquired { .. } | Self::Busy => "leased",
            Self::Succeeded => "succeeded",
            Self::FailedFinal => "failed_final",
        }
    }
}

/// Serializes to exactly these shapes, e.g.
/// `{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_acquired",
/// "state":"leased","fenceEpoch":1,"leaseExpiresAt":{"seconds":…,"nanoseconds":…}}`.
impl Serialize for LeaseOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = if matches!(self, Self::Acquired { .. }) {
            6
        } else {
            4
        };
        let mut s = serializer.serialize_struct("LeaseOutput", len)?;
        s.serialize_field("journalSchemaVersion", &1)?;
        s.serialize_field("lifecycleSchemaVersion", &1)?;
        s.serialize_field("outcome", self.outcome())?;
        s.serialize_field("state", self.state())?;
        if let Self::Acquired {
            fence_epoch,
            lease_expires_at,
        } = self
        {
            s.serialize_field("fenceEpoch", fence_epoch)?;
            s.serialize_field("leaseExpiresAt", &SecondsNanos(*lease_expires_at))?;
        }
        s.end()
    }
}

impl Serialize for TerminalOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        LeaseOutput::from(*self).serialize(serializer)
    }
}

/// A command's state as `status` shows it, serialized as its stored name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandState {
    /// Registered, never leased.
    Registered,
    /// Leased (the lease may have expired).
    Leased,
    /// Ended in success.
    Succeeded,
    /// Ended in final failure.
    FailedFinal,
}

impl CommandState {
    /// The name it serializes as: `registered`, `leased`, `succeeded` or `failed_final`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Registered => "registered",
            Self::Leased => "leased",
            Self::Succeeded => "succeeded",
            Self::FailedFinal => "failed_final",
        }
    }

    /// True once the command has ended, in success or final failure.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::FailedFinal)
    }
}

impl From<crate::document::lifecycle::LifecycleState> for CommandState {
    fn from(state: crate::document::lifecycle::LifecycleState) -> Self {
        use crate::document::lifecycle::LifecycleState;
        match state {
            LifecycleState::Leased => Self::Leased,
            LifecycleState::Succeeded => Self::Succeeded,
            LifecycleState::FailedFinal => Self::FailedFinal,
        }
    }
}

/// The redacted state of a command, for `status`: no holder, no commitment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusOutput {
    pub(super) journal_schema_version: u8,
    /// `registered`, `leased`, `succeeded` or `failed_final`.
    pub state: CommandState,
    /// The command revision (1 while only registered).
    pub command_revision: i64,
    /// The current fence, `None` while only registered.
    pub fence_epoch: Option<crate::fence::FenceEpoch>,
    /// Whether a lease is active at the captured time (false unless leased).
    pub lease_active: bool,
}

#[cfg(test)]
impl StatusOutput {
    /// A status of a leased command at `revision` under `fence`.
    pub(crate) fn leased(revision: i64, fence: crate::fence::FenceEpoch, active: bool) -> Self {
        Self {
            journal_schema_version: 1,
            state: CommandState::Leased,
            command_revision: revision,
            fence_epoch: Some(fence),
            lease_active: active,
        }
    }
}

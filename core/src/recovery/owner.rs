//! The lease-owner fingerprint a recovery job holds a command's lease under.

use crate::digest::{Digest, frame_digest};
use crate::identity::LeaseId;

/// The lease-owner fingerprint of a recovery job's lease `lease` on the command
/// `hash`. Framed under its own domain (`command-journal.recovery-owner`), so it never
/// equals the fingerprint of a client's lease
/// ([`CommandInput::lease_owner`](crate::identity::CommandInput::lease_owner)), and
/// derived from the key hash alone: a recovery job holds no raw command.
pub fn recovery_owner(hash: &Digest, lease: &LeaseId) -> Digest {
    frame_digest(
        "command-journal.recovery-owner",
        1,
        &[hash.as_str().as_bytes(), lease.0.as_bytes()],
    )
}

//! One-call start: registration followed by a lease acquisition, decided together.
//!
//! [`Start`] composes the two existing decisions rather than restating their rules.
//! Over one snapshot it first decides the registration:
//!
//! ```text
//! registration rejects (conflict, corrupt)  -> the same rejection, nothing written
//! registration exists                       -> exactly what acquire decides
//! registration is new                       -> acquire decided over the snapshot as
//!                                              it reads once the registration is in:
//!                                              root + revision-1 event + lifecycle +
//!                                              revision-2 event, one commit
//! ```
//!
//! Both steps share the one captured time, so the documents, outputs and audit events
//! are byte for byte those of `register_command` then `acquire_lease` at that time.
//! A new command therefore costs one read and one commit (2 RPCs) instead of 3, and
//! start plus complete is 4 sequential RPCs instead of 6.
//!
//! The one place where start is stricter than the two calls: when the registration
//! would be new but the acquisition over it is refused (a stray transition event with
//! no registration or lifecycle, or an expiry beyond the representable range), the two
//! calls would leave the registration behind; start writes nothing and returns the
//! acquisition's refusal.

use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::CommandIdentity;
use crate::lease::{Acquire, LeaseCall, LeaseOutput};
use crate::registration::{Registration, RegistrationOutcome, RegistrationOutput};
use crate::time::Timestamp;
use crate::transaction::{Decision, Snapshot, Transition, Write};
use serde::Serialize;

/// The answer to `start`: what registration and then acquisition answer.
///
/// Serializes to `{"registration":<registration output>,"lease":<lease output>}`,
/// each part exactly the shape `register` and `acquire` print, e.g.
/// `{"registration":{"journalSchemaVersion":1,"outcome":"registered_new",
/// "state":"registered"},"lease":{"journalSchemaVersion":1,"lifecycleSchemaVersion":1,
/// "outcome":"lease_acquired","state":"leased","fenceEpoch":1,
/// "leaseExpiresAt":{"seconds":…,"nanoseconds":…}}}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StartOutput {
    /// Whether this call registered the command.
    pub registration: RegistrationOutput,
    /// The lease answer: acquired (with its fence), busy, or the terminal outcome.
    pub lease: LeaseOutput,
}

impl StartOutput {
    /// Whether this call created the registration.
    pub fn registration_outcome(&self) -> RegistrationOutcome {
        self.registration.outcome()
    }
}

/// A prepared `start`: a registration and an acquisition of the same command by the
/// same holder at the same captured time.
#[derive(Debug, Clone)]
pub struct Start {
    registration: Registration,
    acquire: Acquire,
}

impl Start {
    /// Prepares a start of `identity` by the holder whose lease-owner fingerprint is
    /// `owner`, at `now`.
    pub fn new(identity: CommandIdentity, owner: Digest, now: Timestamp) -> Self {
        Self {
            registration: Registration::new(identity.clone(), now),
            acquire: Acquire::new(LeaseCall::new(identity, owner, now)),
        }
    }

    /// The snapshot as it reads once `created` (the registration's creations) is
    /// committed: the state the acquisition of the two separate calls would read.
    fn registered(&self, snapshot: &Snapshot, created: &[Write]) -> Snapshot {
        Snapshot::new(self.paths().into_iter().map(|path| {
            let written = created
                .iter()
                .find(|write| write.path() == path)
                .and_then(|write| write.fields().cloned());
            let doc = written.or_else(|| snapshot.get(&path).cloned());
            (path, doc)
        }))
    }
}

/// Pairs an acquisition decision with the registration answer before it.
fn after_registration(
    registration: RegistrationOutput,
    acquisition: Decision<LeaseOutput>,
) -> Decision<StartOutput> {
    let output = |lease| StartOutput {
        registration,
        lease,
    };
    match acquisition {
        Decision::Observe(lease) => Decision::Observe(output(lease)),
        Decision::Mutate(writes, lease) => Decision::Mutate(writes, output(lease)),
        Decision::Reject(error) => Decision::Reject(error),
        Decision::Read(paths) => Decision::Read(paths),
    }
}

impl Transition for Start {
    type Output = StartOutput;

    /// The acquisition's first read, which includes every document registration reads.
    fn name(&self) -> crate::transaction::OperationName {
        crate::transaction::OperationName::Start
    }

    /// A new command's start creates the root, the revision-1 and revision-2 events
    /// and the lifecycle, and depends on nothing but the absence of every document it
    /// reads (the speculative events 3 and 4 are proven absent by absence guards).
    fn blind_create(&self) -> bool {
        true
    }

    /// Read after a refused blind creation, a start usually creates the lifecycle
    /// of a registered command or observes; a takeover is taken again in a
    /// transaction.
    fn first_read_unlocked(&self) -> bool {
        true
    }

    fn paths(&self) -> Vec<String> {
        self.acquire.paths()
    }

    fn decide(&self, snapshot: &Snapshot) -> Decision<StartOutput> {
        match self.registration.decide(snapshot) {
            Decision::Observe(registration) => {
                after_registration(registration, self.acquire.decide(snapshot))
            }
            Decision::Mutate(created, registration) => {
                let registered = self.registered(snapshot, &created);
                match self.acquire.decide(&registered) {
                    Decision::Mutate(writes, lease) => {
                        let mut all = created;
                        all.extend(writes);
                        Decision::Mutate(
                            all,
                            StartOutput {
                                registration,
                                lease,
                            },
                        )
                    }
                    // Only the registration to write (not reached: a new registration
                    // has no lifecycle, so acquisition always creates one).
                    Decision::Observe(lease) => Decision::Mutate(
                        created,
                        StartOutput {
                            registration,
                            lease,
                        },
                    ),
                    // All or nothing: a refused acquisition leaves no registration.
                    Decision::Reject(error) => Decision::Reject(error),
                    // Everything acquisition reads about a command without a lifecycle
                    // is in the first read; asking for more is a bug: fail closed.
                    Decision::Read(_) => Decision::Reject(JournalError::corrupt(
                        "a new registration asked for a follow-up read",
                    )),
                }
            }
            Decision::Reject(error) => Decision::Reject(error),
            Decision::Read(paths) => Decision::Read(paths),
        }
    }
}

#[cfg(test)]
mod tests;

//! Pure unit tests of the lease state machine (`docs/leases.md`) over a simulated store.
//!
//! Every operation goes through the shared in-memory [`Store`](crate::testing::Store),
//! which runs it by the transaction runner's rules: it reads the operation's paths,
//! serves `Decision::Read` follow-ups, decides (twice, to prove `decide` repeatable)
//! and commits a mutation under the runner's preconditions (a created document must
//! not exist, a replaced one must be unchanged since it was read). Expected documents
//! are spelled out here field by field, independently of the codecs under test.

mod acquisition;
mod corruption;
mod follow_up;
mod outputs;
mod property;
mod races;
mod release;
mod terminal;

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::document::value::Value;
use crate::document::value::ValueType;
use crate::identity::CommandIdentity;
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::registration::{Registration, RegistrationOutcome};
use crate::testing::{Ran, Store};
use crate::time::Timestamp;
use proptest::prelude::*;
use serde_json::json;
use std::fmt::Debug;
use std::sync::LazyLock;

// ---------------------------------------------------------------------------------
// Canary inputs and times
// ---------------------------------------------------------------------------------

const CALLER_ID: &str = "CANARYcaller1";
const COMMAND_ID: &str = "ca1a0000-c0de-4bad-8eed-00000000ca1a";
const PAYLOAD_CANARY: &str = "CANARYsku";
/// Lease ids of holders 0, 1 and 2.
const LEASE_IDS: [&str; 3] = [
    "1ea5e0aa-aaaa-4aaa-8aaa-0000000000aa",
    "1ea5e0bb-bbbb-4bbb-9bbb-0000000000bb",
    "1ea5e0cc-cccc-4ccc-accc-0000000000cc",
];
/// Already-redacted terminal reference fingerprints 0 and 1.
const REFERENCES: [&str; 2] = [
    "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface",
    "0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c",
];

const SEC: i64 = 1_000_000;
/// The fixed lease duration in microseconds.
const LEASE: i64 = 60 * SEC;
/// The registration time: 1_800_000_000 s + 123_456 µs.
const REGISTERED: i64 = 1_800_000_000_123_456;
/// The first acquisition time: 1_800_000_002 s + 623_456 µs.
const T0: i64 = REGISTERED + 2 * SEC + 500_000;
const MAX_REV: i64 = 9_999_999_999;

static INPUT: LazyLock<CommandInput> =
    LazyLock::new(|| input_with(json!({"sku": PAYLOAD_CANARY, "qty": 2})));
static OWNERS: LazyLock<Vec<Digest>> = LazyLock::new(|| (0..24).map(owner_of).collect());

fn input_with(payload: serde_json::Value) -> CommandInput {
    input_for(COMMAND_ID, payload)
}

fn input_for(command_id: &str, payload: serde_json::Value) -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: CALLER_ID,
        command_id,
        command_type: "checkout",
        endpoint_schema_version: 3,
        payload: &payload,
    })
    .expect("valid command")
}

fn identity() -> CommandIdentity {
    INPUT.identity()
}

fn hash() -> Digest {
    identity().command_key_hash().clone()
}

/// The lease id of holder `i`: the canaries for 0..3, generated ones beyond.
fn lease_id(i: usize) -> String {
    LEASE_IDS.get(i).map_or_else(
        || format!("1ea5e0{i:02x}-0000-4000-8000-0000000000{i:02x}"),
        |s| (*s).to_owned(),
    )
}

fn owner_of(i: usize) -> Digest {
    let lease = LeaseId::parse(&lease_id(i)).expect("lease id");
    INPUT.lease_owner(&identity(), &lease).expect("lease owner")
}

/// The lease-owner fingerprint of holder `i`.
fn owner(i: usize) -> Digest {
    OWNERS[i].clone()
}

/// The command-bound commitment of terminal reference `r`.
fn commitment(r: usize) -> Digest {
    let reference = TerminalReferenceFingerprint::parse(REFERENCES[r]).expect("reference");
    identity().terminal_commitment(&reference)
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("in range")
}

// ---------------------------------------------------------------------------------
// Prepared operations
// ---------------------------------------------------------------------------------

fn call(holder: usize, now: i64) -> LeaseCall {
    LeaseCall::new(identity(), owner(holder), at(now))
}

fn acquire(holder: usize, now: i64) -> Acquire {
    Acquire::new(call(holder, now))
}

fn complete(holder: usize, fence: i64, reference: usize, now: i64) -> Terminal {
    Terminal::new(
        call(holder, now),
        FenceEpoch::stored(fence),
        TerminalRequest::Succeed(commitment(reference)),
    )
}

fn fail(holder: usize, fence: i64, now: i64) -> Terminal {
    Terminal::new(
        call(holder, now),
        FenceEpoch::stored(fence),
        TerminalRequest::Fail,
    )
}

fn status(now: i64) -> StatusRead {
    StatusRead::new(call(0, now).command().clone())
}

fn held(fence: i64, expires: i64) -> LeaseOutput {
    LeaseOutput::Acquired {
        fence_epoch: crate::fence::FenceEpoch::stored(fence),
        lease_expires_at: at(expires),
    }
}

fn corrupt(reason: &'static str) -> JournalError {
    JournalError::corrupt(reason)
}

const MALFORMED_LIFECYCLE: &str = "malformed lifecycle document";
const MALFORMED_EVENT: &str = "malformed transition audit event";
const PARTNER_DISAGREES: &str = "lifecycle disagrees with its current audit event";
const PARTNER_MISSING: &str = "lifecycle without its current audit event";
const NEXT_EXISTS: &str = "the next audit event already exists";
const EVENT_WITHOUT_LIFECYCLE: &str = "transition audit event without a lifecycle";

// ---------------------------------------------------------------------------------
// Expected documents, built independently of the codecs
// ---------------------------------------------------------------------------------

fn root_path() -> String {
    format!("checkoutRequests/{}", hash())
}

fn lifecycle_path() -> String {
    format!("checkoutRequests/{}/lifecycle/current", hash())
}

fn audit_path(revision: i64) -> String {
    format!("auditEvents/commerce_command_{}_{revision:010}", hash())
}

/// A Firestore timestamp value, computed here rather than by `Timestamp::to_value_time`.
fn ts(micros: i64) -> Value {
    Value {
        value_type: Some(ValueType::TimestampValue(
            crate::document::value::ValueTime {
                seconds: micros.div_euclid(SEC),
                nanos: i32::try_from(micros.rem_euclid(SEC) * 1_000).expect("nanos"),
            },
        )),
    }
}

/// The expected lifecycle document (times in microseconds).
#[derive(Debug, Clone, PartialEq)]
struct Life {
    state: &'static str,
    revision: i64,
    fence: i64,
    owner: Digest,
    acquired: i64,
    expires: i64,
    created: i64,
    updated: i64,
    commitment: Option<Digest>,
}

impl Life {
    /// `registered + acquire`: fence 1, revision 2.
    fn first(holder: usize, now: i64) -> Self {
        Self {
            state: "leased",
            revision: 2,
            fence: 1,
            owner: owner(holder),
            acquired: now,
            expires: now + LEASE,
            created: now,
            updated: now,
            commitment: None,
        }
    }

    /// A leased lifecycle at any fence (revision `fence + 1`).
    fn leased_at(holder: usize, fence: i64, acquired: i64, created: i64) -> Self {
        Self {
            state: "leased",
            revision: fence + 1,
            fence,
            owner: owner(holder),
            acquired,
            expires: acquired + LEASE,
            created,
            updated: acquired,
            commitment: None,
        }
    }

    /// An expired takeover by `holder` at `now`.
    fn taken_over(&self, holder: usize, now: i64) -> Self {
        Self {
            state: "leased",
            revision: self.revision + 1,
            fence: self.fence + 1,
            owner: owner(holder),
            acquired: now,
            expires: now + LEASE,
            created: self.created,
            updated: now,
            commitment: None,
        }
    }

    fn succeeded(&self, now: i64, reference: usize) -> Self {
        Self {
            state: "succeeded",
            revision: self.revision + 1,
            updated: now,
            commitment: Some(commitment(reference)),
            ..self.clone()
        }
    }

    fn failed(&self, now: i64) -> Self {
        Self {
            state: "failed_final",
            revision: self.revision + 1,
            updated: now,
            commitment: None,
            ..self.clone()
        }
    }

    fn held(&self) -> LeaseOutput {
        held(self.fence, self.expires)
    }

    fn fields(&self) -> FieldMap {
        let (kind, digest) = match &self.commitment {
            Some(c) => (
                fields::string("business_record_digest"),
                fields::string(c.as_str()),
            ),
            None => (fields::null(), fields::null()),
        };
        fields::map([
            ("lifecycleSchemaVersion", fields::int(1)),
            ("commandKeyHash", fields::string(hash().as_str())),
            ("state", fields::string(self.state)),
            ("commandRevision", fields::int(self.revision)),
            ("fenceEpoch", fields::int(self.fence)),
            ("leaseOwnerFingerprint", fields::string(self.owner.as_str())),
            ("leaseAcquiredAt", ts(self.acquired)),
            ("leaseExpiresAt", ts(self.expires)),
            ("createdAt", ts(self.created)),
            ("updatedAt", ts(self.updated)),
            ("terminalCommitmentKind", kind),
            ("terminalCommitmentHash", digest),
        ])
    }

    /// `(eventType, fromState, toState)` of the transition that produced this state.
    fn transition(&self) -> (&'static str, &'static str, &'static str) {
        match (self.state, self.fence) {
            ("leased", 1) => ("command_lease_acquired", "registered", "leased"),
            ("leased", _) => ("command_lease_taken_over", "leased", "leased"),
            ("succeeded", _) => ("command_succeeded", "leased", "succeeded"),
            _ => ("command_failed_final", "leased", "failed_final"),
        }
    }

    /// The exact current-revision audit event of this state.
    fn event(&self) -> FieldMap {
        let (event_type, from, to) = self.transition();
        fields::map([
            ("auditSchemaVersion", fields::int(2)),
            ("aggregateType", fields::string("commerce_command")),
            ("commandKeyHash", fields::string(hash().as_str())),
            ("commandRevision", fields::int(self.revision)),
            ("eventType", fields::string(event_type)),
            ("fromState", fields::string(from)),
            ("toState", fields::string(to)),
            ("environment", fields::string("test")),
            ("callerScopeKind", fields::string("member")),
            ("commandType", fields::string("checkout")),
            ("fenceEpoch", fields::int(self.fence)),
            ("leaseExpiresAt", ts(self.expires)),
            ("occurredAt", ts(self.updated)),
        ])
    }

    /// Stores this lifecycle and its exact audit partner (not the earlier history).
    fn seed(&self, store: &mut Store) {
        store.insert(lifecycle_path(), self.fields());
        store.insert(audit_path(self.revision), self.event());
    }
}

/// The writes of a first acquisition to `life`.
fn create_writes(life: &Life) -> Vec<Write> {
    vec![
        Write::Create {
            path: lifecycle_path(),
            fields: life.fields(),
        },
        Write::Create {
            path: audit_path(life.revision),
            fields: life.event(),
        },
    ]
}

/// The writes of a takeover or terminal transition to `life`.
fn replace_writes(life: &Life) -> Vec<Write> {
    vec![
        Write::Replace {
            path: lifecycle_path(),
            fields: life.fields(),
        },
        Write::Create {
            path: audit_path(life.revision),
            fields: life.event(),
        },
    ]
}

// ---------------------------------------------------------------------------------
// The runner, over the shared in-memory store
// ---------------------------------------------------------------------------------

/// Runs `op` against an uncontended store.
fn run<T>(op: &T, store: &mut Store) -> Ran<T::Output>
where
    T: Transition,
    T::Output: Debug + PartialEq,
{
    store.run(op)
}

#[track_caller]
fn mutated<O: Debug + PartialEq>(ran: Ran<O>, output: O, writes: Vec<Write>) {
    assert_eq!(ran.result, Ok(output));
    assert_eq!(ran.writes, writes);
}

#[track_caller]
fn observed<O: Debug + PartialEq>(ran: Ran<O>, output: O) {
    assert_eq!(ran.result, Ok(output));
    assert!(ran.writes.is_empty(), "observation wrote {:?}", ran.writes);
}

/// `error` without the parse detail a corrupt error carries: the matrices name the
/// document kind and the broken rule, not the field (the codecs' tests do).
fn without_detail(error: JournalError) -> JournalError {
    match error {
        JournalError::JournalCorrupt { reason, .. } => JournalError::corrupt(reason),
        other => other,
    }
}

#[track_caller]
fn rejected<O: Debug>(ran: Ran<O>, error: JournalError, case: &str) {
    match ran.result {
        Err(got) => assert_eq!(without_detail(got), error, "{case}"),
        Ok(output) => panic!("{case}: expected {error:?}, got {output:?}"),
    }
    assert!(
        ran.writes.is_empty(),
        "{case}: rejection wrote {:?}",
        ran.writes
    );
}

/// A store holding exactly the registration written by `Registration` at `REGISTERED`.
fn registered_store() -> Store {
    let mut store = Store::new();
    let ran = run(&Registration::new(identity(), at(REGISTERED)), &mut store);
    assert_eq!(
        ran.result.map(|o| o.outcome()),
        Ok(RegistrationOutcome::RegisteredNew)
    );
    let mut paths: Vec<&String> = store.keys().collect();
    paths.sort();
    assert_eq!(paths, [&audit_path(1), &root_path()]);
    store
}

/// Registration plus `life` and its audit partner.
fn store_with(life: &Life) -> Store {
    let mut store = registered_store();
    life.seed(&mut store);
    store
}

/// Registration plus a real first acquisition by holder 0 at `T0`.
fn leased_store() -> (Store, Life) {
    let mut store = registered_store();
    let life = Life::first(0, T0);
    mutated(
        run(&acquire(0, T0), &mut store),
        life.held(),
        create_writes(&life),
    );
    (store, life)
}

/// The audit revisions stored for the command, ascending.
fn audit_revisions(store: &Store) -> Vec<i64> {
    let prefix = format!("auditEvents/commerce_command_{}_", hash());
    let mut revisions: Vec<i64> = store
        .keys()
        .filter_map(|k| k.strip_prefix(&prefix))
        .map(|suffix| {
            assert_eq!(suffix.len(), 10, "audit ids pad to 10 digits");
            suffix.parse().expect("revision")
        })
        .collect();
    revisions.sort_unstable();
    revisions
}

/// Every lease operation, by every holder, at an active and an expired time, with
/// either fence, rejects with `error` and writes nothing.
#[track_caller]
fn every_op_rejects(store: &mut Store, error: JournalError, case: &str) {
    let before = store.clone();
    for now in [T0 + SEC, T0 + 1_000 * SEC] {
        for holder in 0..3 {
            let case = format!("{case} (holder {holder} at {now})");
            rejected(run(&acquire(holder, now), store), error, &case);
            for fence in [1, 2] {
                rejected(run(&complete(holder, fence, 0, now), store), error, &case);
                rejected(run(&fail(holder, fence, now), store), error, &case);
            }
        }
        rejected(run(&status(now), store), error, case);
    }
    assert!(*store == before, "{case}: the store changed");
}

//! Fuzz target `documents`: corrupted stores and every operation's `decide`.

use super::bytes::*;
use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, RegistrationEvent, TransitionEvent};
use crate::document::fields::FieldMap;
use crate::document::lifecycle::{self, Lifecycle};
use crate::document::release::{self as release_record, LeaseRelease};
use crate::document::root::{self, RootDocument};
use crate::document::value::ValueType;
use crate::document::value::{ArrayValue, MapValue, Value};
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{
    CommandIdentity, CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint,
};
use crate::lease::{
    Acquire, LeaseCall, LeaseOutput, Release, ReleaseOutput, StatusRead, Terminal, TerminalOutput,
    TerminalRequest,
};
use crate::registration::{Registration, RegistrationOutcome};
use crate::start::Start;
use crate::testing::{Decided, Store};
use crate::time::Timestamp;
use crate::transaction::{Decision, Transition, Write};
use std::collections::HashMap;

/// Every field name a codec knows, plus near misses.
const FIELD_NAMES: &[&str] = &[
    "journalSchemaVersion",
    "commandKeyHash",
    "state",
    "commandRevision",
    "environment",
    "callerScopeKind",
    "commandType",
    "endpointSchemaVersion",
    "payloadFingerprint",
    "registeredAt",
    "auditSchemaVersion",
    "aggregateType",
    "eventType",
    "fromState",
    "toState",
    "occurredAt",
    "fenceEpoch",
    "leaseExpiresAt",
    "lifecycleSchemaVersion",
    "leaseOwnerFingerprint",
    "leaseAcquiredAt",
    "createdAt",
    "updatedAt",
    "terminalCommitmentKind",
    "terminalCommitmentHash",
    "leaseReleaseSchemaVersion",
    "releasedAt",
    "",
    "fenceepoch",
    "commandRevision ",
];

/// Every enum text a codec knows, plus near misses.
const STRINGS: &[&str] = &[
    "registered",
    "leased",
    "succeeded",
    "failed_final",
    "commerce_command",
    "command_registered",
    "command_lease_acquired",
    "command_lease_taken_over",
    "command_succeeded",
    "command_failed_final",
    "business_record_digest",
    "emulator",
    "test",
    "staging",
    "production",
    "member",
    "guest",
    "officer",
    "service",
    "checkout",
    "",
    "Registered",
    "leased\0",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "ABCDEF0000000000000000000000000000000000000000000000000000000000",
];

const INTEGERS: &[i64] = &[
    0,
    1,
    2,
    3,
    4,
    5,
    -1,
    9999,
    10_000,
    MAX_REVISION - 1,
    MAX_REVISION,
    MAX_REVISION + 1,
    i64::MIN,
    i64::MAX,
];

/// Offsets from [`BASE_MICROS`] that sit on the boundaries the state machine compares.
const OFFSETS: &[i64] = &[
    0,
    1,
    -1,
    LEASE_MICROS - 1,
    LEASE_MICROS,
    LEASE_MICROS + 1,
    2 * LEASE_MICROS,
    2 * LEASE_MICROS + 1,
    3 * LEASE_MICROS + 7,
    -LEASE_MICROS,
];

/// The fixed command every generated document belongs to, and its derived values.
struct Fixture {
    identity: CommandIdentity,
    owners: Vec<Digest>,
    commitments: Vec<Digest>,
    other_hash: Digest,
    base: Timestamp,
}

impl Fixture {
    fn new() -> Option<Self> {
        let payload = serde_json::json!({"sku": "tee", "quantity": 1});
        let command = CommandInput::new(CommandRequest {
            environment: "emulator",
            caller_scope_kind: "member",
            caller_id: "fuzz",
            command_id: "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
            command_type: "checkout",
            endpoint_schema_version: 1,
            payload: &payload,
        })
        .ok()?;
        let identity = command.identity();
        let mut owners = Vec::new();
        for lease in [
            "00000000-0000-4000-8000-000000000001",
            "00000000-0000-4000-8000-000000000002",
            "00000000-0000-4000-8000-000000000003",
        ] {
            owners.push(
                command
                    .lease_owner(&identity, &LeaseId::parse(lease).ok()?)
                    .ok()?,
            );
        }
        let mut commitments = Vec::new();
        for reference in ["00", "ab"] {
            let reference = TerminalReferenceFingerprint::parse(&reference.repeat(32)).ok()?;
            commitments.push(identity.terminal_commitment(&reference));
        }
        let other_hash = Digest::parse(&"e".repeat(64))?;
        Some(Self {
            identity,
            owners,
            commitments,
            other_hash,
            base: Timestamp::from_micros(BASE_MICROS)?,
        })
    }

    fn hash(&self) -> &Digest {
        self.identity.command_key_hash()
    }

    /// Every path a decide function reads or a corruption writes.
    fn path(&self, input: &mut Bytes) -> String {
        let hash = self.hash();
        match input.below(5) {
            0 => root::path(hash),
            1 => lifecycle::path(hash),
            2 => audit::path(hash, input.below(4) as i64 + 1),
            3 => release_record::path(hash, FenceEpoch::stored(input.below(4) as i64 + 1)),
            _ => audit::path(hash, (input.below(MAX_PATH_REVISION as usize) as i64) + 1),
        }
    }

    fn time(&self, input: &mut Bytes) -> Timestamp {
        let micros = match input.below(5) {
            0 | 1 => BASE_MICROS + input.pick(OFFSETS),
            2 => BASE_MICROS + i64::from(i32::from_le_bytes(input.bytes())),
            3 => BASE_MICROS + i64::from(u16::from_le_bytes(input.bytes())) * 1_000_000,
            _ => input.i64(),
        };
        Timestamp::from_micros(micros).unwrap_or(self.base)
    }

    fn string(&self, input: &mut Bytes) -> String {
        match input.below(6) {
            0 | 1 => (*input.pick(STRINGS)).to_owned(),
            2 => self.hash().as_str().to_owned(),
            3 => {
                let digests: Vec<&Digest> = self
                    .owners
                    .iter()
                    .chain(&self.commitments)
                    .chain([&self.other_hash])
                    .collect();
                input.pick(&digests).as_str().to_owned()
            }
            4 => self.identity.payload_fingerprint().as_str().to_owned(),
            _ => String::from_utf8_lossy(input.take(MAX_STRING)).into_owned(),
        }
    }

    fn value(&self, input: &mut Bytes, depth: usize) -> Value {
        let value_type = match input.below(12) {
            0 => ValueType::NullValue(i32::from(input.u8() % 2)),
            1 => ValueType::BooleanValue(input.u8() % 2 == 1),
            2 => ValueType::IntegerValue(*input.pick(INTEGERS)),
            3 => ValueType::IntegerValue(input.i64()),
            4 => ValueType::DoubleValue(f64::from_le_bytes(input.bytes())),
            5 => {
                let time = self.time(input);
                let nanos = match input.below(4) {
                    0 => i32::from_le_bytes(input.bytes()),
                    _ => i32::try_from(time.subsec_nanos()).unwrap_or(0),
                };
                ValueType::TimestampValue(crate::document::value::ValueTime {
                    seconds: time.seconds(),
                    nanos,
                })
            }
            6..=8 => ValueType::StringValue(self.string(input)),
            9 => ValueType::BytesValue(input.take(MAX_STRING).to_vec()),
            10 if depth < MAX_VALUE_DEPTH => ValueType::ArrayValue(ArrayValue {
                values: (0..input.below(4))
                    .map(|_| self.value(input, depth + 1))
                    .collect(),
            }),
            11 if depth < MAX_VALUE_DEPTH => ValueType::MapValue(MapValue {
                fields: self.map(input, depth + 1),
            }),
            _ => ValueType::ReferenceValue(self.string(input)),
        };
        Value {
            value_type: (input.below(64) != 0).then_some(value_type),
        }
    }

    fn map(&self, input: &mut Bytes, depth: usize) -> HashMap<String, Value> {
        (0..input.below(MAX_FIELDS + 1))
            .map(|_| (self.field_name(input), self.value(input, depth)))
            .collect()
    }

    fn field_name(&self, input: &mut Bytes) -> String {
        if input.below(8) == 0 {
            String::from_utf8_lossy(input.take(24)).into_owned()
        } else {
            (*input.pick(FIELD_NAMES)).to_owned()
        }
    }
}

/// Runs a byte-driven sequence over an in-memory journal of one command: real
/// operations (registration, acquisitions by three holders, completions and failures
/// at chosen fences and commitments, status), each decided over the stored documents
/// exactly as the transaction runner reads them and its writes applied, interleaved
/// with corruptions (a field removed, replaced by an arbitrary Firestore value or by
/// another document's value, a document deleted, copied, or replaced by an arbitrary
/// map). After every step every stored document goes through every strict codec.
///
/// Asserts that each `Mutate` only creates documents it saw absent, only replaces
/// documents it read, writes documents that its own codecs accept, and answers what
/// it wrote.
pub fn parse_documents(bytes: &[u8]) {
    let Some(fixture) = Fixture::new() else {
        return;
    };
    let mut input = Bytes::new(bytes);
    let mut store = Store::new();
    for _ in 0..MAX_STEPS {
        if input.exhausted() {
            break;
        }
        match input.below(8) {
            0..=4 => operation(&fixture, &mut input, &mut store),
            _ => corrupt(&fixture, &mut input, &mut store),
        }
        parse_every_document(&fixture, &store);
    }
}

fn corrupt(fixture: &Fixture, input: &mut Bytes, store: &mut Store) {
    let path = fixture.path(input);
    match input.below(7) {
        0 => {
            store.remove(&path);
        }
        1 => {
            let map = fixture.map(input, 0);
            store.insert(path, map);
        }
        2 => {
            let from = fixture.path(input);
            if let Some(doc) = store.get(&from).cloned() {
                store.insert(path, doc);
            }
        }
        3 => {
            let name = fixture.field_name(input);
            if let Some(doc) = store.get_mut(&path) {
                doc.remove(&name);
            }
        }
        4 => {
            let other = fixture.path(input);
            let name = fixture.field_name(input);
            let value = store.get(&other).and_then(|d| d.get(&name)).cloned();
            if let (Some(doc), Some(value)) = (store.get_mut(&path), value) {
                doc.insert(name, value);
            }
        }
        5 => {
            // Nudge an integer or timestamp by a small step, which keeps the type and
            // tests the relations between fields.
            let name = fixture.field_name(input);
            let step = i8::from_le_bytes(input.bytes());
            if let Some(Value {
                value_type: Some(value),
            }) = store.get_mut(&path).and_then(|d| d.get_mut(&name))
            {
                match value {
                    ValueType::IntegerValue(v) => *v = v.wrapping_add(i64::from(step)),
                    ValueType::TimestampValue(ts) => {
                        ts.nanos = ts.nanos.wrapping_add(i32::from(step) * 1_000);
                    }
                    _ => {}
                }
            }
        }
        _ => {
            let name = fixture.field_name(input);
            let value = fixture.value(input, 0);
            if let Some(doc) = store.get_mut(&path) {
                doc.insert(name, value);
            }
        }
    }
}

fn operation(fixture: &Fixture, input: &mut Bytes, store: &mut Store) {
    let now = fixture.time(input);
    let owner = input.pick(&fixture.owners).clone();
    let call = LeaseCall::new(fixture.identity.clone(), owner.clone(), now);
    match input.below(6) {
        0 => {
            let op = Registration::new(fixture.identity.clone(), now);
            if let Some(Mutation {
                attempt,
                writes,
                output,
            }) = decide(&op, store)
            {
                assert_eq!(output.outcome(), RegistrationOutcome::RegisteredNew);
                assert_eq!(writes.len(), 2, "a registration writes its root and event");
                apply(fixture, store, &attempt, &writes);
            }
        }
        1 => {
            start_composes(fixture, store, &owner, now);
            let op = Acquire::new(call);
            if let Some(Mutation {
                attempt,
                writes,
                output,
            }) = decide(&op, store)
            {
                let LeaseOutput::Acquired {
                    fence_epoch,
                    lease_expires_at,
                } = output
                else {
                    panic!("an acquisition wrote but did not answer lease_acquired");
                };
                let written = written_lifecycle(fixture, &writes);
                assert_eq!(
                    (written.fence_epoch, written.lease_expires_at),
                    (fence_epoch, lease_expires_at),
                    "the answer differs from the lease written"
                );
                assert_eq!(written.lease_owner_fingerprint, owner);
                apply(fixture, store, &attempt, &writes);
            }
        }
        2 | 3 => {
            let fence = match input.below(3) {
                0 => *input.pick(INTEGERS),
                _ => i64::from(input.u8() % 6),
            };
            let request = if input.below(3) == 0 {
                TerminalRequest::Fail
            } else {
                TerminalRequest::Succeed(input.pick(&fixture.commitments).clone())
            };
            let op = Terminal::new(call, FenceEpoch::stored(fence), request.clone());
            if let Some(Mutation {
                attempt,
                writes,
                output,
            }) = decide(&op, store)
            {
                let written = written_lifecycle(fixture, &writes);
                assert_eq!(written.fence_epoch, fence, "finalized under another fence");
                assert_eq!(written.lease_owner_fingerprint, owner);
                match (&request, output) {
                    (TerminalRequest::Succeed(c), TerminalOutput::Succeeded) => {
                        assert_eq!(written.terminal_commitment.as_ref(), Some(c));
                    }
                    (TerminalRequest::Fail, TerminalOutput::FailedFinal) => {
                        assert_eq!(written.terminal_commitment, None);
                    }
                    _ => panic!("a terminal call answered another outcome than it wrote"),
                }
                apply(fixture, store, &attempt, &writes);
            }
        }
        4 => {
            let fence = FenceEpoch::stored(i64::from(input.u8() % 6));
            let op = Release::new(call, fence);
            if let Some(Mutation {
                attempt,
                writes,
                output,
            }) = decide(&op, store)
            {
                assert_eq!(output, ReleaseOutput::Released, "wrote without releasing");
                let written = written_lifecycle(fixture, &writes);
                assert_eq!(written.fence_epoch, fence, "released another fence");
                assert_eq!(written.lease_owner_fingerprint, owner);
                assert_eq!(written.lease_expires_at, now, "released at another time");
                apply(fixture, store, &attempt, &writes);
            }
        }
        _ => {
            let op = StatusRead::new(call.command().clone());
            if decide(&op, store).is_some() {
                panic!("status wrote");
            }
        }
    }
}

/// Over any store, however corrupt, `start` writes exactly what registration then
/// acquisition at the same time write, answering the same lease, or writes nothing.
fn start_composes(fixture: &Fixture, store: &Store, owner: &Digest, now: Timestamp) {
    let identity = &fixture.identity;
    let started = decide(&Start::new(identity.clone(), owner.clone(), now), store);
    let registered = decide(&Registration::new(identity.clone(), now), store);
    let mut after = store.clone();
    let mut expected = Vec::new();
    if let Some(Mutation {
        attempt, writes, ..
    }) = registered
    {
        assert!(after.commit(&attempt), "an uncontended commit failed");
        expected = writes;
    }
    let call = LeaseCall::new(identity.clone(), owner.clone(), now);
    let acquired = decide(&Acquire::new(call), &after);
    match (started, acquired) {
        (
            Some(Mutation { writes, output, .. }),
            Some(Mutation {
                writes: acquisition,
                output: lease,
                ..
            }),
        ) => {
            expected.extend(acquisition);
            assert_eq!(
                writes, expected,
                "start wrote other documents than the two calls"
            );
            assert_eq!(output.lease, lease, "start answered another lease");
        }
        (None, None) => {}
        (Some(_), None) => panic!("start wrote where the acquisition did not"),
        (None, Some(_)) => panic!("the two calls acquired where start did not"),
    }
}

/// A decided mutation, not yet committed.
struct Mutation<O> {
    attempt: Decided<O>,
    writes: Vec<Write>,
    output: O,
}

/// One attempt of `op` over `store` by the runner's rules (the shared store asserts
/// that every write targets a document read in the state its precondition requires,
/// and that `decide` answers the same twice); `Some` for a `Mutate`, `None` for an
/// observation or a refusal.
fn decide<T>(op: &T, store: &Store) -> Option<Mutation<T::Output>>
where
    T: Transition,
    T::Output: std::fmt::Debug + PartialEq + Clone,
{
    let attempt = store.attempt(op);
    let Decision::Mutate(writes, output) = &attempt.decision else {
        return None;
    };
    let (writes, output) = (writes.clone(), output.clone());
    Some(Mutation {
        attempt,
        writes,
        output,
    })
}

/// The lifecycle among `writes`, which must parse strictly.
fn written_lifecycle(fixture: &Fixture, writes: &[Write]) -> Lifecycle {
    let path = lifecycle::path(fixture.hash());
    let fields = writes
        .iter()
        .find(|write| write.path() == path)
        .and_then(Write::fields);
    match fields.map(|fields| Lifecycle::parse(fixture.hash(), fields)) {
        Some(Ok(lifecycle)) => lifecycle,
        Some(Err(error)) => panic!("wrote a lifecycle its codec rejects: {error}"),
        None => panic!("a lease transition wrote no lifecycle"),
    }
}

/// Commits an attempt's writes, checking each against its own codec first.
fn apply<O>(fixture: &Fixture, store: &mut Store, attempt: &Decided<O>, writes: &[Write]) {
    for write in writes {
        let (Write::Create { path, fields } | Write::Replace { path, fields }) = write else {
            continue;
        };
        if let Err(error) = parse_at(fixture, path, fields) {
            panic!("wrote a document its own codec rejects: {error}");
        }
    }
    assert!(store.commit(attempt), "an uncontended commit failed");
}

/// Parses `fields` with the codec that owns `path`.
fn parse_at(fixture: &Fixture, path: &str, fields: &FieldMap) -> Result<(), JournalError> {
    let hash = fixture.hash();
    if path == root::path(hash) {
        return RootDocument::parse(hash.as_str(), fields).map(|_| ());
    }
    if path == lifecycle::path(hash) {
        return Lifecycle::parse(hash, fields).map(|_| ());
    }
    if path == audit::path(hash, 1) {
        return RegistrationEvent::parse(&audit::id(hash, 1), fields).map(|_| ());
    }
    for fence in 1..=5 {
        let fence = FenceEpoch::stored(fence);
        if path == release_record::path(hash, fence) {
            return LeaseRelease::parse(hash, &release_record::id(fence), fields).map(|_| ());
        }
    }
    for revision in 2..=MAX_PATH_REVISION + 1 {
        if path == audit::path(hash, revision) {
            return TransitionEvent::parse(&audit::id(hash, revision), fields).map(|_| ());
        }
    }
    Err(JournalError::corrupt("unknown path"))
}

/// Every codec over every stored document, under its own id and a foreign one.
fn parse_every_document(fixture: &Fixture, store: &Store) {
    let hashes = [fixture.hash(), &fixture.other_hash];
    for fields in store.values() {
        for hash in hashes {
            let _ = RootDocument::parse(hash.as_str(), fields);
            let _ = Lifecycle::parse(hash, fields);
            let _ = LeaseRelease::parse(hash, &release_record::id(FenceEpoch::FIRST), fields);
            for revision in [1, 2, 3, 7] {
                let id = audit::id(hash, revision);
                let _ = RegistrationEvent::parse(&id, fields);
                let _ = TransitionEvent::parse(&id, fields);
            }
        }
    }
}

#[cfg(test)]
mod tests;

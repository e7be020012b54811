//! Entry points for the fuzz targets in `fuzz/` and for the stable property tests
//! below. Not part of the public API: hidden from the docs and free to change.
//!
//! Every function takes arbitrary bytes and must return normally for every input. A
//! panic is a finding: either a codec, validator or `decide` that panics on hostile
//! input, or one of the invariants asserted here broken (a `decide` that creates a
//! document it did not see absent, replaces one it did not read, or writes a document
//! its own strict codec rejects; a validator that accepts a value it then rejects; a
//! canonical form that is not a fixed point; a secret that prints unredacted).
//!
//! Inputs are bounded: the byte decoder below caps every count and nesting depth,
//! so no input can make these functions allocate more than a few kilobytes beyond
//! the size of the input itself.

use crate::digest::Digest;
use crate::document::MAX_REVISION;
use crate::document::audit::{self, RegistrationEvent, TransitionEvent};
use crate::document::fields::FieldMap;
use crate::document::lifecycle::{self, Lifecycle};
use crate::document::root::{self, RootDocument};
use crate::error::JournalError;
use crate::identity::{
    CallerId, CallerScopeKind, CommandId, CommandIdentity, CommandInput, CommandRequest,
    CommandType, EndpointSchemaVersion, Environment, LeaseId, LedgerKey, OperationSlug, Payload,
    TerminalReferenceFingerprint,
};
use crate::lease::{
    Acquire, LeaseCall, LeaseOutput, Status, Terminal, TerminalOutput, TerminalRequest,
};
use crate::ledger::fingerprint::{Amount, CommandFamily, FingerprintInput};
use crate::registration::{Registration, RegistrationOutcome};
use crate::start::Start;
use crate::time::Timestamp;
use crate::transaction::{Decision, MAX_FOLLOW_UP_READS, Snapshot, Transition, Write};
use gcloud_sdk::google::firestore::v1::value::ValueType;
use gcloud_sdk::google::firestore::v1::{ArrayValue, MapValue, Value};
use gcloud_sdk::prost_types;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};

/// Largest number of operations and corruptions one `parse_documents` input runs.
const MAX_STEPS: usize = 48;
/// Largest number of fields in a generated map.
const MAX_FIELDS: usize = 16;
/// Deepest generated array or map value.
const MAX_VALUE_DEPTH: usize = 3;
/// Longest generated raw string, in bytes.
const MAX_STRING: usize = 96;
/// Highest audit revision a generated path names.
const MAX_PATH_REVISION: i64 = 12;
/// 2030-03-17T17:46:40Z, the base instant of generated times.
const BASE_MICROS: i64 = 1_900_000_000_000_000;
const LEASE_MICROS: i64 = 60_000_000;

/// Reads fuzz bytes front to back; past the end every read is zero, so any input,
/// the empty one included, decodes to something.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Bytes<'a> {
    fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    fn exhausted(&self) -> bool {
        self.pos >= self.data.len()
    }

    fn u8(&mut self) -> u8 {
        let byte = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        byte
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0; N];
        for byte in &mut out {
            *byte = self.u8();
        }
        out
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::from(u16::from_le_bytes(self.bytes())) % n
    }

    fn pick<'t, T>(&mut self, table: &'t [T]) -> &'t T {
        &table[self.below(table.len())]
    }

    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.bytes())
    }

    fn take(&mut self, max: usize) -> &'a [u8] {
        let len = self.below(max + 1);
        let start = self.pos.min(self.data.len());
        let end = start.saturating_add(len).min(self.data.len());
        self.pos = self.pos.saturating_add(len);
        &self.data[start..end]
    }
}

// ---------------------------------------------------------------------------------
// documents and decide functions
// ---------------------------------------------------------------------------------

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
        match input.below(4) {
            0 => root::path(hash),
            1 => lifecycle::path(hash),
            2 => audit::path(hash, input.below(4) as i64 + 1),
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
                ValueType::TimestampValue(prost_types::Timestamp {
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

/// An in-memory documents root: path → fields.
type Store = BTreeMap<String, FieldMap>;

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
    match input.below(5) {
        0 => {
            let op = Registration::new(fixture.identity.clone(), now);
            if let Some((writes, output)) = decide(&op, store) {
                assert_eq!(output.outcome(), RegistrationOutcome::RegisteredNew);
                assert_eq!(writes.len(), 2, "a registration writes its root and event");
                apply(fixture, store, writes);
            }
        }
        1 => {
            start_composes(fixture, store, &owner, now);
            let op = Acquire::new(call);
            if let Some((writes, output)) = decide(&op, store) {
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
                apply(fixture, store, writes);
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
            let op = Terminal::new(call, fence, request.clone());
            if let Some((writes, output)) = decide(&op, store) {
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
                apply(fixture, store, writes);
            }
        }
        _ => {
            let op = Status::new(call);
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
    if let Some((writes, _)) = registered {
        for write in writes {
            let (Write::Create { path, fields } | Write::Replace { path, fields }) = write.clone();
            after.insert(path, fields);
            expected.push(write);
        }
    }
    let call = LeaseCall::new(identity.clone(), owner.clone(), now);
    let acquired = decide(&Acquire::new(call), &after);
    match (started, acquired) {
        (Some((writes, output)), Some((acquisition, lease))) => {
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

/// Decides `op` over `store` as the runner does (first read, follow-up reads at the
/// same snapshot); `Some` with the writes of a `Mutate`, after checking that every
/// write targets a document read in the state its precondition will require.
fn decide<T: Transition>(op: &T, store: &Store) -> Option<(Vec<Write>, T::Output)> {
    let read = |paths: Vec<String>, docs: &mut Vec<(String, Option<FieldMap>)>| {
        for path in paths {
            let doc = store.get(&path).cloned();
            docs.push((path, doc));
        }
    };
    let mut docs = Vec::new();
    read(op.paths(), &mut docs);
    for _ in 0..=MAX_FOLLOW_UP_READS {
        let snapshot = Snapshot::new(docs.clone());
        match op.decide(&snapshot) {
            Decision::Observe(_) | Decision::Reject(_) => return None,
            Decision::Mutate(writes, output) => {
                for write in &writes {
                    match write {
                        Write::Create { path, .. } => assert!(
                            snapshot.was_read(path) && snapshot.get(path).is_none(),
                            "created a document not seen absent"
                        ),
                        Write::Replace { path, .. } => {
                            assert!(snapshot.get(path).is_some(), "replaced a document not read")
                        }
                    }
                }
                return Some((writes, output));
            }
            Decision::Read(more) => {
                let more: Vec<String> =
                    more.into_iter().filter(|p| !snapshot.was_read(p)).collect();
                if more.is_empty() {
                    return None;
                }
                read(more, &mut docs);
            }
        }
    }
    None
}

/// The lifecycle among `writes`, which must parse strictly.
fn written_lifecycle(fixture: &Fixture, writes: &[Write]) -> Lifecycle {
    let path = lifecycle::path(fixture.hash());
    let fields = writes.iter().find_map(|write| match write {
        Write::Create { path: p, fields } | Write::Replace { path: p, fields } if *p == path => {
            Some(fields)
        }
        _ => None,
    });
    match fields.map(|fields| Lifecycle::parse(fixture.hash(), fields)) {
        Some(Ok(lifecycle)) => lifecycle,
        Some(Err(error)) => panic!("wrote a lifecycle its codec rejects: {error}"),
        None => panic!("a lease transition wrote no lifecycle"),
    }
}

/// Applies committed writes, checking each against its own codec first.
fn apply(fixture: &Fixture, store: &mut Store, writes: Vec<Write>) {
    for write in writes {
        let (Write::Create { path, fields } | Write::Replace { path, fields }) = write;
        if let Err(error) = parse_at(fixture, &path, &fields) {
            panic!("wrote a document its own codec rejects: {error}");
        }
        store.insert(path, fields);
    }
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
            for revision in [1, 2, 3, 7] {
                let id = audit::id(hash, revision);
                let _ = RegistrationEvent::parse(&id, fields);
                let _ = TransitionEvent::parse(&id, fields);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// identity input
// ---------------------------------------------------------------------------------

/// Runs every identity validator on the input text and, when the text is one JSON
/// object in the CLI's `identity` shape, the full derivation. Asserts that a value a
/// validator accepts is accepted again, that every rejection is `invalid_input`, that
/// derived digests are 64 lowercase hex characters, and that secrets print redacted.
pub fn identity_input(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    single_fields(text);
    let Some(Json::Object(map)) = crate::strict_json::parse(text) else {
        return;
    };
    let string = |key: &str| map.get(key).and_then(Json::as_str).unwrap_or_default();
    for value in map.values() {
        if let Json::String(value) = value {
            single_fields(value);
        }
    }
    let version = map
        .get("endpointSchemaVersion")
        .and_then(Json::as_i64)
        .unwrap_or(0);
    let payload = map.get("payload").cloned().unwrap_or(Json::Null);
    let request = CommandRequest {
        environment: string("environment"),
        caller_scope_kind: string("callerScopeKind"),
        caller_id: string("callerId"),
        command_id: string("commandId"),
        command_type: string("commandType"),
        endpoint_schema_version: version,
        payload: &payload,
    };
    let command = match CommandInput::new(request) {
        Ok(command) => command,
        Err(error) => {
            assert_invalid_input(&error);
            return;
        }
    };
    assert_eq!(format!("{command:?}"), "CommandInput(<redacted>)");
    let identity = command.identity();
    assert_digest(identity.command_key_hash().as_str());
    assert_digest(identity.payload_fingerprint().as_str());
    assert_eq!(command.identity(), identity, "identity is deterministic");
    if let Ok(lease) = LeaseId::parse(string("leaseId")) {
        match command.lease_owner(&identity, &lease) {
            Ok(owner) => assert_digest(owner.as_str()),
            Err(error) => assert_invalid_input(&error),
        }
    }
    if let Ok(reference) =
        TerminalReferenceFingerprint::parse(string("terminalReferenceFingerprint"))
    {
        assert_digest(identity.terminal_commitment(&reference).as_str());
    }
    if let Ok(operation) = OperationSlug::parse(string("operation")) {
        let key = identity.provider_idempotency_key(&operation);
        assert!(key.starts_with("cj1-"), "provider key prefix");
        assert_digest(&key[4..]);
    }
}

/// Each single-value validator on `text`: acceptance is stable and secrets redact.
fn single_fields(text: &str) {
    let stable = |a: bool, b: bool| assert_eq!(a, b, "a validator changed its mind");
    if let Ok(env) = Environment::parse(text) {
        assert_eq!(env.as_str(), text);
    }
    if let Ok(kind) = CallerScopeKind::parse(text) {
        assert_eq!(kind.as_str(), text);
    }
    if let Ok(id) = CallerId::parse(text) {
        assert_eq!(format!("{id:?}"), "CallerId(<redacted>)");
        assert!((1..=128).contains(&text.len()));
    }
    if let Ok(id) = CommandId::parse(text) {
        assert_eq!(format!("{id:?}"), "CommandId(<redacted>)");
        assert_eq!(text.len(), 36);
    }
    if let Ok(id) = LeaseId::parse(text) {
        assert_eq!(format!("{id:?}"), "LeaseId(<redacted>)");
        stable(true, CommandId::parse(text).is_ok());
    }
    if let Ok(command_type) = CommandType::parse(text) {
        assert_eq!(command_type.as_str(), text);
        stable(true, OperationSlug::parse(text).is_ok());
    }
    if let Ok(reference) = TerminalReferenceFingerprint::parse(text) {
        assert_eq!(
            format!("{reference:?}"),
            "TerminalReferenceFingerprint(<redacted>)"
        );
        stable(true, Digest::parse(text).is_some());
    }
    if let Ok(number) = text.trim().parse::<i64>()
        && let Ok(version) = EndpointSchemaVersion::new(number)
    {
        assert_eq!(i64::from(version.get()), number);
    }
    let (a, rest) = text.split_at(char_floor(text, text.len() / 2));
    let (b, c) = rest.split_at(char_floor(rest, rest.len() / 2));
    if let Ok(key) = LedgerKey::new(a, b, c) {
        assert_digest(key.reservation_id().as_str());
        assert_eq!(format!("{key:?}"), "LedgerKey(<redacted>)");
    }
    for error in [
        Environment::parse(text).err(),
        CallerScopeKind::parse(text).err(),
        CallerId::parse(text).err(),
        CommandId::parse(text).err(),
        LeaseId::parse(text).err(),
        CommandType::parse(text).err(),
        OperationSlug::parse(text).err(),
        TerminalReferenceFingerprint::parse(text).err(),
    ]
    .into_iter()
    .flatten()
    {
        assert_invalid_input(&error);
    }
}

/// The largest char boundary of `text` at or below `index`.
fn char_floor(text: &str, index: usize) -> usize {
    (0..=index.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn assert_invalid_input(error: &JournalError) {
    assert!(
        matches!(error, JournalError::InvalidInput { .. }),
        "a validation failure that is not invalid_input: {error:?}"
    );
}

fn assert_digest(text: &str) {
    assert!(
        Digest::parse(text).is_some(),
        "a derived value is not 64 lowercase hex characters"
    );
}

// ---------------------------------------------------------------------------------
// canonical payloads
// ---------------------------------------------------------------------------------

/// Validates the input as a command payload (strict JSON, then the payload rules) and
/// asserts that an accepted payload's RFC 8785 text is within the size limit, parses
/// back strictly, and is a fixed point of canonicalization. The same value read by
/// plain `serde_json` (which keeps the last of duplicate keys) goes through the same
/// checks.
pub fn canonical_payload(bytes: &[u8]) {
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Some(value) = crate::strict_json::parse(text)
    {
        payload_round_trip(&value);
    }
    if let Ok(value) = serde_json::from_slice::<Json>(bytes) {
        payload_round_trip(&value);
    }
}

fn payload_round_trip(value: &Json) {
    let payload = match Payload::from_value(value) {
        Ok(payload) => payload,
        Err(error) => {
            assert_eq!(error, JournalError::invalid("payload"));
            return;
        }
    };
    assert_eq!(format!("{payload:?}"), "Payload(<redacted>)");
    let canonical = payload.canonical();
    assert!(canonical.len() <= crate::identity::MAX_CANONICAL_PAYLOAD_BYTES);
    let Some(reparsed) = crate::strict_json::parse(canonical) else {
        panic!("canonical payload text is not strict JSON");
    };
    assert_eq!(
        &reparsed, value,
        "canonical text reads back as another value"
    );
    match Payload::from_value(&reparsed) {
        Ok(again) => assert_eq!(again.canonical(), canonical, "not a fixed point"),
        Err(error) => panic!("a canonical payload is rejected when read back: {error}"),
    }
}

// ---------------------------------------------------------------------------------
// ledger plans
// ---------------------------------------------------------------------------------

/// Parses the input as a `ledger fingerprint` object with
/// [`FingerprintInput::from_json`]; for an accepted plan computes both fingerprints
/// and asserts the digest is the SHA-256 of the canonical text, the canonical text
/// is strict JSON and a fixed point, and the declared version serializes. Also runs
/// [`Amount::parse`] and [`CommandFamily::parse`] on the raw text.
pub fn ledger_plan(bytes: &[u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    amount_and_family(text);
    let Some(value) = crate::strict_json::parse(text) else {
        return;
    };
    let plan = match FingerprintInput::from_json(&value) {
        Ok(plan) => plan,
        Err(error) => {
            assert!(
                matches!(
                    error,
                    JournalError::InvalidInput { .. } | JournalError::UnsupportedFingerprintVersion
                ),
                "unexpected ledger error {error:?}"
            );
            return;
        }
    };
    assert!(matches!(plan.version(), 4 | 5));
    assert_eq!(plan.family().is_effect_plan(), plan.transfer().is_none());
    for version in [4, 5] {
        let fingerprint = match plan.fingerprint(version) {
            Ok(fingerprint) => fingerprint,
            Err(error) => panic!("an accepted plan does not serialize under v{version}: {error}"),
        };
        use sha2::Digest as _;
        let expected = hex::encode(sha2::Sha256::digest(fingerprint.canonical.as_bytes()));
        assert_eq!(fingerprint.digest.as_str(), expected);
        let Some(reparsed) = crate::strict_json::parse(&fingerprint.canonical) else {
            panic!("canonical ledger text is not strict JSON");
        };
        let again = serde_json_canonicalizer::to_string(&reparsed).ok();
        assert_eq!(
            again.as_deref(),
            Some(fingerprint.canonical.as_str()),
            "not a fixed point"
        );
    }
    for version in [0, 1, 3, 6, u32::MAX] {
        assert_eq!(
            plan.fingerprint(version).err(),
            Some(JournalError::UnsupportedFingerprintVersion)
        );
    }
}

fn amount_and_family(text: &str) {
    if let Some(amount) = Amount::parse(text) {
        let normalized = amount.as_str();
        assert_eq!(
            Amount::parse(normalized).as_ref(),
            Some(&amount),
            "a normalized amount is not a fixed point"
        );
        let (_, fraction) = normalized.split_once('.').unwrap_or_default();
        assert_eq!(fraction.len(), 2, "not two decimals");
    }
    if let Ok(family) = CommandFamily::parse(text) {
        assert_eq!(family.as_str(), text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Replays every committed fuzz corpus file through its entry point.
    #[test]
    fn the_committed_corpus_never_panics() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
        type Entry = (&'static str, fn(&[u8]));
        let targets: [Entry; 4] = [
            ("documents", parse_documents),
            ("identity_input", identity_input),
            ("canonical_payload", canonical_payload),
            ("ledger_plan", ledger_plan),
        ];
        for (target, entry) in targets {
            let dir = root.join(target);
            let mut files = 0;
            for file in std::fs::read_dir(&dir).expect("corpus directory") {
                let bytes = std::fs::read(file.expect("entry").path()).expect("corpus file");
                entry(&bytes);
                files += 1;
            }
            assert!(files > 0, "{target} has no corpus");
        }
    }

    #[test]
    fn a_plain_history_reaches_every_state() {
        // register, acquire, takeover after expiry, complete: the decoder builds a
        // valid history from bytes without corruption.
        let fixture = Fixture::new().expect("fixture");
        let mut store = Store::new();
        let run =
            |store: &mut Store, bytes: &[u8]| operation(&fixture, &mut Bytes::new(bytes), store);
        // time mode, offset index, holder, operation kind (u16 each), then arguments
        run(&mut store, &[0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(store.len(), 2, "root and registration event");
        run(&mut store, &[0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(store.len(), 4, "lifecycle and acquisition event");
        run(&mut store, &[0, 0, 6, 0, 1, 0, 1, 0]);
        assert_eq!(store.len(), 5, "takeover event");
        // fence: mode 1 then byte 2; request: success with commitment 0
        run(&mut store, &[0, 0, 7, 0, 1, 0, 2, 0, 1, 0, 2, 1, 0, 0, 0]);
        assert_eq!(store.len(), 6, "terminal event");
        let lifecycle = store
            .get(&lifecycle::path(fixture.hash()))
            .map(|f| Lifecycle::parse(fixture.hash(), f).expect("valid"))
            .expect("lifecycle");
        assert_eq!(
            (
                lifecycle.state,
                lifecycle.fence_epoch,
                lifecycle.command_revision
            ),
            (crate::document::lifecycle::LifecycleState::Succeeded, 2, 4)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn no_entry_point_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            parse_documents(&bytes);
            identity_input(&bytes);
            canonical_payload(&bytes);
            ledger_plan(&bytes);
        }

        #[test]
        fn no_entry_point_panics_on_arbitrary_text(text in ".{0,256}") {
            identity_input(text.as_bytes());
            canonical_payload(text.as_bytes());
            ledger_plan(text.as_bytes());
        }

        #[test]
        fn json_shaped_inputs_never_panic(value in json(3)) {
            let text = value.to_string();
            canonical_payload(text.as_bytes());
            ledger_plan(text.as_bytes());
            identity_input(text.as_bytes());
        }
    }

    fn json(depth: u32) -> impl Strategy<Value = Json> {
        let key = prop_oneof![
            Just("family".to_owned()),
            Just("fingerprintVersion".to_owned()),
            Just("effects".to_owned()),
            Just("intent".to_owned()),
            Just("transfer".to_owned()),
            Just("amount".to_owned()),
            Just("payload".to_owned()),
            "[a-z_]{1,8}",
        ];
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<f64>().prop_map(Json::from),
            "[0-9.-]{0,8}".prop_map(Json::String),
            ".{0,12}".prop_map(Json::String),
            Just(Json::from("effect_plan")),
            Just(Json::from(5)),
        ];
        leaf.prop_recursive(depth, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                proptest::collection::btree_map(key.clone(), inner, 0..6)
                    .prop_map(|m| Json::Object(m.into_iter().collect())),
            ]
        })
    }
}

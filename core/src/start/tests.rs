//! Pure tests of `start` over a simulated store: in every state reachable through the
//! real operations (explored exhaustively over short histories), in deep histories and
//! in conflicting and corrupt states, `start` at a captured time answers and stores
//! exactly what `Registration` then `Acquire` at that same time answer and store, with
//! a single read for a new command.

use super::*;
use crate::document::fields::{self, FieldMap};
use crate::document::value::ValueType;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use crate::lease::{Terminal, TerminalRequest};
use crate::testing::{Ran, Store};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::LazyLock;

const CALLER_ID: &str = "CANARYcaller_start";
const COMMAND_ID: &str = "5a1a7000-c0de-4bad-8eed-00000000051a";
const PAYLOAD_CANARY: &str = "CANARYpayload_start";
const LEASE_IDS: [&str; 3] = [
    "5ea5e0aa-aaaa-4aaa-8aaa-0000000000aa",
    "5ea5e0bb-bbbb-4bbb-9bbb-0000000000bb",
    "5ea5e0cc-cccc-4ccc-accc-0000000000cc",
];
const REFERENCE: &str = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface";

const SEC: i64 = 1_000_000;
const LEASE: i64 = 60 * SEC;
const REGISTERED: i64 = 1_800_000_000_123_456;
const T0: i64 = REGISTERED + 2 * SEC + 500_000;

static INPUT: LazyLock<CommandInput> =
    LazyLock::new(|| input_with(json!({"sku": PAYLOAD_CANARY, "qty": 2})));
static IDENTITY: LazyLock<CommandIdentity> = LazyLock::new(|| INPUT.identity());
static OWNERS: LazyLock<Vec<Digest>> = LazyLock::new(|| {
    LEASE_IDS
        .iter()
        .map(|id| {
            let lease = LeaseId::parse(id).expect("lease id");
            INPUT.lease_owner(&IDENTITY, &lease).expect("owner")
        })
        .collect()
});

fn input_with(payload: serde_json::Value) -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: CALLER_ID,
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 3,
        payload: &payload,
    })
    .expect("valid command")
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("in range")
}

fn hash() -> Digest {
    IDENTITY.command_key_hash().clone()
}

fn root_path() -> String {
    format!("checkoutRequests/{}", hash())
}

fn lifecycle_path() -> String {
    format!("checkoutRequests/{}/lifecycle/current", hash())
}

fn audit_path(revision: i64) -> String {
    format!("auditEvents/commerce_command_{}_{revision:010}", hash())
}

fn start(holder: usize, now: i64) -> Start {
    Start::new(IDENTITY.clone(), OWNERS[holder].clone(), at(now))
}

fn register(now: i64) -> Registration {
    Registration::new(IDENTITY.clone(), at(now))
}

fn acquire(holder: usize, now: i64) -> Acquire {
    Acquire::new(LeaseCall::new(
        IDENTITY.clone(),
        OWNERS[holder].clone(),
        at(now),
    ))
}

fn terminal(holder: usize, fence: i64, succeed: bool, now: i64) -> Terminal {
    let call = LeaseCall::new(IDENTITY.clone(), OWNERS[holder].clone(), at(now));
    let request = if succeed {
        let reference = TerminalReferenceFingerprint::parse(REFERENCE).expect("reference");
        TerminalRequest::Succeed(IDENTITY.terminal_commitment(&reference))
    } else {
        TerminalRequest::Fail
    };
    Terminal::new(call, FenceEpoch::stored(fence), request)
}

// ---------------------------------------------------------------------------------
// The runner, over the shared in-memory store
// ---------------------------------------------------------------------------------

/// Runs `op` once, uncontended, by the runner's rules (the shared in-memory store).
fn run<T>(op: &T, store: &mut Store) -> Ran<T::Output>
where
    T: Transition,
    T::Output: Debug + PartialEq,
{
    store.run(op)
}

/// `register_command` then `acquire_lease` at the same captured time, as a caller
/// does: the acquisition runs only when registration answered.
fn register_then_acquire(
    store: &mut Store,
    holder: usize,
    now: i64,
) -> (Result<StartOutput, JournalError>, Vec<Write>) {
    let registered = run(&register(now), store);
    let mut writes = registered.writes;
    let registration = match registered.result {
        Ok(output) => output,
        Err(error) => return (Err(error), writes),
    };
    let acquired = run(&acquire(holder, now), store);
    writes.extend(acquired.writes);
    let result = acquired.result.map(|lease| StartOutput {
        registration,
        lease,
    });
    (result, writes)
}

/// A canonical, comparable text of a store (field maps have no stable order).
fn canonical(store: &Store) -> String {
    let sorted: BTreeMap<&String, BTreeMap<&String, String>> = store
        .iter()
        .map(|(path, doc)| {
            let fields = doc.iter().map(|(k, v)| (k, format!("{v:?}"))).collect();
            (path, fields)
        })
        .collect();
    format!("{sorted:?}")
}

/// Start by `holder` at `now` on `store` answers and stores exactly what the two
/// calls do; a refusal writes nothing at all. Returns start's answer.
#[track_caller]
fn assert_equivalent(case: &str, store: &Store, holder: usize, now: i64) -> Ran<StartOutput> {
    let case = format!("{case} (holder {holder} at {now})");
    let mut by_start = store.clone();
    let started = run(&start(holder, now), &mut by_start);
    let mut by_two = store.clone();
    let (result, writes) = register_then_acquire(&mut by_two, holder, now);
    assert_eq!(started.result, result, "{case}: answers differ");
    if started.result.is_ok() {
        assert_eq!(started.writes, writes, "{case}: writes differ");
        assert_eq!(
            canonical(&by_start),
            canonical(&by_two),
            "{case}: stores differ"
        );
    } else {
        assert!(started.writes.is_empty(), "{case}: a refusal wrote");
        assert_eq!(
            canonical(&by_start),
            canonical(store),
            "{case}: store changed"
        );
        // The two calls may have left a registration behind, nothing else.
        for path in by_two.keys().filter(|p| !store.contains_key(p)) {
            assert!(
                *path == root_path() || *path == audit_path(1),
                "{case}: the two calls wrote {path}"
            );
        }
    }
    let first_read_covers = !store.contains_key(&lifecycle_path());
    if first_read_covers {
        // A new command reads nothing: its blind creation commits.
        let new = store.is_empty();
        assert_eq!(started.blind, new, "{case}: blind creation");
        assert_eq!(
            started.reads(),
            usize::from(!new),
            "{case}: one read without a lifecycle, none for a new command"
        );
    }
    started
}

/// Holders and captured times start is tried with in every state.
const HOLDERS: [usize; 3] = [0, 1, 2];
const TIMES: [i64; 8] = [
    REGISTERED - 1,
    REGISTERED,
    T0,
    T0 + SEC,
    T0 + LEASE - 1,
    T0 + LEASE,
    T0 + LEASE + 3 * SEC,
    T0 + 10 * LEASE,
];

fn assert_equivalent_everywhere(case: &str, store: &Store) -> usize {
    let mut checked = 0;
    for holder in HOLDERS {
        for now in TIMES {
            assert_equivalent(case, store, holder, now);
            checked += 1;
        }
    }
    checked
}

// ---------------------------------------------------------------------------------
// Reachable states, explored exhaustively
// ---------------------------------------------------------------------------------

/// The operations histories are built from.
#[derive(Debug, Clone, Copy)]
enum Op {
    Register(i64),
    Acquire(usize, i64),
    Terminal(usize, i64, bool, i64),
}

fn alphabet() -> Vec<Op> {
    let mut ops = vec![Op::Register(REGISTERED)];
    for holder in [0, 1] {
        for now in [T0, T0 + LEASE + SEC] {
            ops.push(Op::Acquire(holder, now));
        }
        for fence in [1, 2] {
            for succeed in [true, false] {
                for now in [T0 + SEC, T0 + LEASE + 2 * SEC] {
                    ops.push(Op::Terminal(holder, fence, succeed, now));
                }
            }
        }
    }
    ops
}

fn apply(op: Op, store: &mut Store) {
    match op {
        Op::Register(now) => drop(run(&register(now), store)),
        Op::Acquire(holder, now) => drop(run(&acquire(holder, now), store)),
        Op::Terminal(holder, fence, succeed, now) => {
            drop(run(&terminal(holder, fence, succeed, now), store));
        }
    }
}

/// Every distinct store reachable from empty by any sequence of the alphabet's
/// operations: explored breadth first until no operation yields a new store.
fn reachable() -> Vec<Store> {
    let mut seen: BTreeMap<String, Store> = BTreeMap::new();
    seen.insert(canonical(&Store::new()), Store::new());
    let mut frontier = vec![Store::new()];
    let mut depth = 0;
    while !frontier.is_empty() {
        depth += 1;
        assert!(depth < 20, "the state space should close quickly");
        let mut next = Vec::new();
        for store in &frontier {
            for op in alphabet() {
                let mut after = store.clone();
                apply(op, &mut after);
                let key = canonical(&after);
                if let std::collections::btree_map::Entry::Vacant(slot) = seen.entry(key) {
                    slot.insert(after.clone());
                    next.push(after);
                }
            }
        }
        frontier = next;
    }
    seen.into_values().collect()
}

fn state_name(store: &Store) -> String {
    if !store.contains_key(&root_path()) {
        return "absent".into();
    }
    let Some(doc) = store.get(&lifecycle_path()) else {
        return "registered".into();
    };
    let value = |name: &str| match doc.get(name).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::StringValue(text)) => text.clone(),
        Some(ValueType::IntegerValue(n)) => n.to_string(),
        other => format!("{other:?}"),
    };
    format!(
        "{} revision {} fence {}",
        value("state"),
        value("commandRevision"),
        value("fenceEpoch")
    )
}

/// Exhaustive: the states are the closure of the alphabet (20 of them), and start is
/// tried in each by three holders at eight captured times around every boundary.
#[test]
fn start_equals_register_then_acquire_in_every_reachable_state() {
    let states = reachable();
    let names: std::collections::BTreeSet<String> = states
        .iter()
        .map(|s| state_name(s).split(' ').next().unwrap_or("").to_owned())
        .collect();
    // absent, registered, and the leased, succeeded and failed lifecycles.
    assert_eq!(names.len(), 5, "{names:?}");
    assert_eq!(states.len(), 20, "the closure of the alphabet");
    println!("{} reachable states: {names:?}", states.len());
    let mut checked = 0;
    for store in &states {
        checked += assert_equivalent_everywhere(&state_name(store), store);
    }
    assert_eq!(checked, states.len() * HOLDERS.len() * TIMES.len());
}

#[test]
fn a_new_command_is_one_blind_commit_of_four_documents() {
    let mut store = Store::new();
    let ran = run(&start(0, T0), &mut store);
    let expires = at(T0 + LEASE);
    assert_eq!(
        ran.result.map(|o| (o.registration_outcome(), o.lease)),
        Ok((
            RegistrationOutcome::RegisteredNew,
            LeaseOutput::Acquired {
                fence_epoch: crate::fence::FenceEpoch::stored(1),
                lease_expires_at: expires
            }
        ))
    );
    assert!(ran.blind, "a new command commits before any read");
    assert_eq!(ran.reads(), 0);
    let paths: Vec<&str> = ran
        .writes
        .iter()
        .map(|w| match w {
            Write::Create { path, .. } => path.as_str(),
            Write::Replace { .. } | Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {
                panic!("a new command only creates")
            }
        })
        .collect();
    assert_eq!(
        paths,
        [root_path(), audit_path(1), lifecycle_path(), audit_path(2)]
    );
    // Everything at the one captured time.
    let time = fields::timestamp(at(T0));
    assert_eq!(store[&root_path()]["registeredAt"], time);
    assert_eq!(store[&audit_path(1)]["occurredAt"], time);
    assert_eq!(store[&lifecycle_path()]["createdAt"], time);
    assert_eq!(store[&audit_path(2)]["occurredAt"], time);
}

#[test]
fn an_already_registered_command_behaves_as_acquire_alone() {
    let mut store = Store::new();
    run(&register(REGISTERED), &mut store)
        .result
        .expect("register");
    let mut by_acquire = store.clone();
    let started = run(&start(1, T0), &mut store);
    let acquired = run(&acquire(1, T0), &mut by_acquire);
    assert_eq!(
        started.result.map(|o| (o.registration_outcome(), o.lease)),
        acquired
            .result
            .map(|l| (RegistrationOutcome::RegisteredExisting, l))
    );
    assert_eq!(started.writes, acquired.writes);
    assert_eq!(started.reads(), 1);
}

#[test]
fn deep_histories_with_follow_up_reads_stay_equivalent() {
    let mut store = Store::new();
    run(&register(REGISTERED), &mut store)
        .result
        .expect("register");
    // Six takeovers put the current audit event beyond the speculative window.
    for k in 0..7 {
        let now = T0 + k * (LEASE + SEC);
        let ran = run(
            &acquire(usize::try_from(k % 2).expect("small"), now),
            &mut store,
        );
        assert!(matches!(ran.result, Ok(LeaseOutput::Acquired { .. })));
    }
    let last = T0 + 6 * (LEASE + SEC);
    let mut follow_ups = 0;
    for holder in HOLDERS {
        for now in [last, last + SEC, last + LEASE, last + 5 * LEASE] {
            let ran = assert_equivalent("fence 7", &store, holder, now);
            assert!(ran.result.is_ok());
            follow_ups += usize::from(ran.reads() > 1);
        }
    }
    assert_eq!(
        follow_ups,
        HOLDERS.len() * 4,
        "every start read beyond the window"
    );
}

// ---------------------------------------------------------------------------------
// Conflicting and corrupt states fail closed
// ---------------------------------------------------------------------------------

fn registered_store() -> Store {
    let mut store = Store::new();
    run(&register(REGISTERED), &mut store)
        .result
        .expect("register");
    store
}

fn leased_store() -> Store {
    let mut store = registered_store();
    run(&acquire(0, T0), &mut store).result.expect("acquire");
    store
}

fn with_extra_field(mut doc: FieldMap) -> FieldMap {
    doc.insert("note".into(), fields::string("x"));
    doc
}

/// Every corrupt or conflicting state, named.
fn refused_states() -> Vec<(&'static str, Store)> {
    let mut states = Vec::new();
    let registered = registered_store();
    let leased = leased_store();

    let mut other_payload = Store::new();
    let other = input_with(json!({"sku": "other"})).identity();
    assert_eq!(other.command_key_hash(), &hash(), "same command key");
    run(
        &Registration::new(other, at(REGISTERED)),
        &mut other_payload,
    )
    .result
    .expect("register");
    states.push(("registered with another payload", other_payload.clone()));
    let mut other_leased = other_payload;
    for path in [lifecycle_path(), audit_path(2)] {
        other_leased.insert(path.clone(), leased[&path].clone());
    }
    states.push(("leased with another payload", other_leased));

    let mut s = registered.clone();
    s.remove(&audit_path(1));
    states.push(("root without its audit event", s));
    let mut s = registered.clone();
    s.remove(&root_path());
    states.push(("audit event without its root", s));
    let mut s = registered.clone();
    s.insert(
        root_path(),
        with_extra_field(registered[&root_path()].clone()),
    );
    states.push(("malformed root", s));
    let mut s = registered.clone();
    s.insert(
        audit_path(1),
        with_extra_field(registered[&audit_path(1)].clone()),
    );
    states.push(("malformed registration event", s));
    let mut s = leased.clone();
    s.remove(&root_path());
    s.remove(&audit_path(1));
    states.push(("orphan lifecycle", s));
    let mut s = Store::new();
    s.insert(lifecycle_path(), leased[&lifecycle_path()].clone());
    states.push(("lifecycle alone", s));
    let mut s = registered.clone();
    s.insert(audit_path(2), leased[&audit_path(2)].clone());
    states.push(("registered with a stray transition event", s));
    let mut s = Store::new();
    s.insert(audit_path(2), leased[&audit_path(2)].clone());
    states.push(("a stray transition event alone", s));
    let mut s = leased.clone();
    s.insert(
        lifecycle_path(),
        with_extra_field(leased[&lifecycle_path()].clone()),
    );
    states.push(("malformed lifecycle", s));
    let mut s = leased.clone();
    s.remove(&audit_path(2));
    states.push(("lifecycle without its current event", s));
    let mut s = leased.clone();
    s.insert(audit_path(3), leased[&audit_path(2)].clone());
    states.push(("preseeded next event", s));
    states
}

#[test]
fn conflicting_and_corrupt_states_refuse_as_the_two_calls_do_and_write_nothing() {
    for (case, store) in refused_states() {
        for holder in HOLDERS {
            for now in TIMES {
                let ran = assert_equivalent(case, &store, holder, now);
                let expected_conflict = case.contains("another payload");
                match ran.result {
                    Err(JournalError::CommandConflict) if expected_conflict => {}
                    Err(JournalError::JournalCorrupt { .. }) if !expected_conflict => {}
                    other => panic!("{case}: unexpected {other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_stray_event_without_registration_leaves_no_registration_behind() {
    // The two calls would register and then refuse; start refuses before writing.
    let mut store = Store::new();
    store.insert(audit_path(2), leased_store()[&audit_path(2)].clone());
    let mut by_two = store.clone();
    let (result, writes) = register_then_acquire(&mut by_two, 0, T0);
    assert!(matches!(result, Err(JournalError::JournalCorrupt { .. })));
    assert_eq!(writes.len(), 2, "the two calls registered");
    let before = canonical(&store);
    let ran = run(&start(0, T0), &mut store);
    assert_eq!(ran.result, result);
    assert!(ran.writes.is_empty());
    assert_eq!(canonical(&store), before);
}

#[test]
fn a_refused_acquisition_after_a_new_registration_writes_nothing() {
    // The last representable instant: the registration fits, its 60 s lease does not.
    let last = 253_402_300_799_999_999;
    let mut store = Store::new();
    let ran = run(&start(0, last), &mut store);
    assert_eq!(ran.result, Err(JournalError::ClockRegression));
    assert!(ran.writes.is_empty());
    assert!(store.is_empty(), "nothing written");
    let mut by_two = Store::new();
    let (result, writes) = register_then_acquire(&mut by_two, 0, last);
    assert_eq!(ran.result, result);
    assert_eq!(writes.len(), 2, "the two calls leave the registration");
}

// ---------------------------------------------------------------------------------
// Races, shapes and canaries
// ---------------------------------------------------------------------------------

#[test]
fn twenty_four_racing_starts_register_once_and_lease_once() {
    let mut store = Store::new();
    let ops: Vec<Start> = (0..24)
        .map(|i| start(i % 3, T0 + i64::try_from(i).expect("i")))
        .collect();
    // Every op decides on the same empty store; commits land in order, losers rerun.
    for op in &ops {
        let Decision::Mutate(..) = store.attempt(op).decision else {
            panic!("every racer first wants to create");
        };
    }
    let results = store.race(&ops);
    let new = results
        .iter()
        .filter(|r| {
            matches!(r, Ok(o) if o.registration_outcome() == RegistrationOutcome::RegisteredNew)
        })
        .count();
    let acquired = results
        .iter()
        .filter(|r| matches!(r, Ok(o) if matches!(o.lease, LeaseOutput::Acquired { .. })))
        .count();
    // Holder 0 won; its two later starts (i = 3, 6, …) recover the same lease.
    let winner = results[0].expect("winner");
    assert_eq!(
        winner.registration_outcome(),
        RegistrationOutcome::RegisteredNew
    );
    assert_eq!(new, 1);
    assert_eq!(
        acquired, 8,
        "holder 0's starts recover its lease: {results:?}"
    );
    let busy = results
        .iter()
        .filter(|r| matches!(r, Ok(o) if o.lease == LeaseOutput::Busy))
        .count();
    assert_eq!(busy, 16);
    let mut paths: Vec<&String> = store.keys().collect();
    paths.sort();
    let mut expected = [root_path(), audit_path(1), lifecycle_path(), audit_path(2)];
    expected.sort();
    assert_eq!(paths, expected.iter().collect::<Vec<_>>());
}

#[test]
fn start_reads_everything_registration_reads() {
    let op = start(0, T0);
    let paths = op.paths();
    for path in register(T0).paths() {
        assert!(paths.contains(&path), "{path}");
    }
}

#[test]
fn output_serializes_as_the_two_outputs_side_by_side() {
    let mut store = Store::new();
    let first = run(&start(0, T0), &mut store).result.expect("start");
    let again = run(&start(1, T0 + SEC), &mut store).result.expect("start");
    let seconds = (T0 + LEASE).div_euclid(SEC);
    let nanos = (T0 + LEASE).rem_euclid(SEC) * 1_000;
    assert_eq!(
        serde_json::to_string(&first).expect("json"),
        format!(
            "{{\"registration\":{{\"journalSchemaVersion\":1,\"outcome\":\"registered_new\",\
             \"state\":\"registered\"}},\"lease\":{{\"journalSchemaVersion\":1,\
             \"lifecycleSchemaVersion\":1,\"outcome\":\"lease_acquired\",\"state\":\"leased\",\
             \"fenceEpoch\":1,\"leaseExpiresAt\":{{\"seconds\":{seconds},\"nanoseconds\":{nanos}}}}}}}"
        )
    );
    assert_eq!(
        serde_json::to_value(again).expect("json"),
        json!({
            "registration": {"journalSchemaVersion":1,"outcome":"registered_existing","state":"registered"},
            "lease": {"journalSchemaVersion":1,"lifecycleSchemaVersion":1,"outcome":"lease_busy","state":"leased"},
        })
    );
    assert_eq!(
        serde_json::to_value(first.registration).expect("json"),
        serde_json::to_value(first).expect("json")["registration"]
    );
}

#[test]
fn canaries_never_appear_in_outputs_debug_errors_or_storage() {
    let mut store = Store::new();
    let mut seen = String::new();
    for (holder, now) in [(0, T0), (1, T0 + SEC), (1, T0 + 2 * LEASE)] {
        let ran = run(&start(holder, now), &mut store);
        seen += &format!("{ran:?}");
        if let Ok(output) = ran.result {
            seen += &serde_json::to_string(&output).expect("json");
        }
    }
    seen += &format!("{:?}", start(2, T0));
    seen += &canonical(&store);
    for (_, refused) in refused_states() {
        let mut refused = refused;
        seen += &format!("{:?}", run(&start(0, T0), &mut refused).result);
    }
    let mut canaries = vec![CALLER_ID, COMMAND_ID, PAYLOAD_CANARY, REFERENCE];
    canaries.extend(LEASE_IDS);
    for canary in canaries {
        assert!(!seen.contains(canary), "{canary} leaked");
    }
    assert!(seen.contains("lease_acquired") || seen.contains("Acquired"));
}

//! Criterion benchmarks of the pure core: identity derivation, RFC 8785 canonical
//! JSON, and the `decide` functions of registration and the lease state machine.
//! No Firestore: snapshots are read from the shared in-memory store, after the real
//! operations ran against it.
//!
//! `cargo bench --bench core`

use command_journal::Timestamp;
use command_journal::identity::Payload;
use command_journal::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use command_journal_core::testing::Store;
use command_journal_core::tools::lease::{Acquire, LeaseCall, Terminal, TerminalRequest};
use command_journal_core::tools::registration::Registration;
use command_journal_core::tools::transaction::Transition;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

const COMMAND_ID: &str = "3f2504e0-4f89-41d3-9a0c-0305e82c3301";
const LEASE_A: &str = "5eed0000-0001-4000-8000-000000000001";
const LEASE_B: &str = "5eed0000-0001-4000-8000-000000000002";
const REFERENCE: &str = "abababababababababababababababababababababababababababababababab";
/// 2026-01-01T00:00:00Z in microseconds.
const T0: i64 = 1_767_225_600_000_000;

fn small_payload() -> Value {
    json!({"sku": "tee", "quantity": 1})
}

/// A checkout-sized payload: a cart of 20 lines with nested options.
fn cart_payload() -> Value {
    let lines: Vec<Value> = (0..20)
        .map(|i| {
            json!({"sku": format!("sku-{i:04}"), "quantity": i % 3 + 1, "unitPriceCents": 1999 + i,
                   "options": {"size": "M", "colour": "navy", "gift": i % 2 == 0}})
        })
        .collect();
    json!({"cartId": "c-01HZX", "currency": "EUR", "lines": lines,
           "shipping": {"method": "standard", "country": "DE", "postcode": "10115"},
           "discounts": ["WELCOME10"], "totalCents": 48_765})
}

fn command(payload: &Value) -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "production",
        caller_scope_kind: "member",
        caller_id: "member_8f2a",
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload,
    })
    .expect("valid command")
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("in range")
}

fn identity(c: &mut Criterion) {
    let payload = small_payload();
    let lease = LeaseId::parse(LEASE_A).expect("lease");
    let reference = TerminalReferenceFingerprint::parse(REFERENCE).expect("reference");
    c.bench_function("identity/validate+derive (small payload)", |b| {
        b.iter(|| {
            let input = command(black_box(&payload));
            let identity = input.identity();
            black_box(input.lease_owner(&identity, &lease).expect("owner"));
            black_box(identity.terminal_commitment(&reference));
        })
    });
    let input = command(&payload);
    c.bench_function("identity/derive command key + payload fingerprint", |b| {
        b.iter(|| black_box(black_box(&input).identity()))
    });
}

fn canonical_json(c: &mut Criterion) {
    let small = small_payload();
    let cart = cart_payload();
    c.bench_function("canonical JSON/small payload", |b| {
        b.iter(|| black_box(Payload::from_value(black_box(&small)).expect("payload")))
    });
    c.bench_function("canonical JSON/20-line cart", |b| {
        b.iter(|| black_box(Payload::from_value(black_box(&cart)).expect("payload")))
    });
}

fn decide(c: &mut Criterion) {
    let input = command(&small_payload());
    let identity = input.identity();
    let owner = |lease: &str| {
        let lease = LeaseId::parse(lease).expect("lease");
        input.lease_owner(&identity, &lease).expect("owner")
    };
    let reference = TerminalReferenceFingerprint::parse(REFERENCE).expect("reference");

    // Registration over an empty snapshot: create root + revision-1 audit.
    let register = Registration::new(identity.clone(), at(T0));
    let mut store = Store::new();
    let empty = store.snapshot(&register.paths());
    c.bench_function("decide/register (new)", |b| {
        b.iter(|| black_box(register.decide(black_box(&empty))))
    });

    // The registered state, as registration wrote it.
    store.run(&register).result.expect("registered");
    let acquire_a = Acquire::new(LeaseCall::new(
        identity.clone(),
        owner(LEASE_A),
        at(T0 + 1_000),
    ));
    let registered = store.snapshot(&acquire_a.paths());
    c.bench_function("decide/acquire (first lease)", |b| {
        b.iter(|| black_box(acquire_a.decide(black_box(&registered))))
    });

    // Leased by A: B is busy; A completes.
    store.run(&acquire_a).result.expect("acquired");
    let acquire_b = Acquire::new(LeaseCall::new(
        identity.clone(),
        owner(LEASE_B),
        at(T0 + 2_000),
    ));
    let leased = store.snapshot(&acquire_b.paths());
    c.bench_function("decide/acquire (busy)", |b| {
        b.iter(|| black_box(acquire_b.decide(black_box(&leased))))
    });
    let complete = Terminal::new(
        LeaseCall::new(identity.clone(), owner(LEASE_A), at(T0 + 3_000)),
        command_journal::FenceEpoch::stored(1),
        TerminalRequest::Succeed(identity.terminal_commitment(&reference)),
    );
    c.bench_function("decide/complete", |b| {
        b.iter(|| black_box(complete.decide(black_box(&leased))))
    });
}

criterion_group!(benches, identity, canonical_json, decide);
criterion_main!(benches);

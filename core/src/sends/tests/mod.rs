//! Pure tables of the send layer (`docs/providers.md`) over the shared in-memory
//! [`Store`](crate::testing::Store), which runs every operation by the runner's rules
//! (follow-up reads, `decide` twice per snapshot, guarded commits).
//!
//! Each case is a sequence of one-line steps: the operation, the answer expected
//! (`permit <attempt> <resend>`, an outcome, or an error code) and the number of
//! documents the step writes.

mod adversary;
mod codecs;
mod customer;
mod late;
mod model;
mod opening;
mod proven;
mod provider;
mod races;
mod replayed;
mod resend_after_release;
mod retries;
mod tables;
mod window;

use super::begin::BeginSend;
use super::guard::Guarded;
use super::plan::{ProviderPlan, ProviderPlanRequest, attempt_key};
use super::record::Record;
use super::status::SendStatusRead;
use super::{AttemptNumber, BeginSendOutput, SendOutcomeOutput};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{
    CommandIdentity, CommandInput, CommandRequest, LeaseId, OperationSlug,
    TerminalReferenceFingerprint,
};
use crate::lease::{Acquire, LeaseCall, LeaseOutput, Terminal, TerminalOutput, TerminalRequest};
use crate::registration::Registration;
use crate::sends::provider::Closing;
use crate::testing::Store;
use crate::time::Timestamp;
use crate::transaction::Transition;
use serde_json::json;
use std::fmt::Debug;
use std::sync::LazyLock;

const CALLER_ID: &str = "CANARYcaller7";
const COMMAND_ID: &str = "ca1a0000-c0de-4bad-8eed-00000000ca1b";
pub(crate) const ACCOUNT: &str = "acct_CANARYaccount";
const PARAMETER: &str = "CANARYparameter";
const REFERENCES: [&str; 2] = [
    "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface",
    "0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c0ddba11c",
];

pub(crate) const SEC: i64 = 1_000_000;
/// The registration time.
pub(crate) const REGISTERED: i64 = 1_800_000_000_123_456;
/// The first acquisition and first send.
pub(crate) const T0: i64 = REGISTERED + SEC;
/// The key retention of the plan (24 h) and its cutoff offset (18 h).
const RETENTION: i64 = 86_400;
pub(crate) const CUTOFF: i64 = T0 + 64_800 * SEC;
/// The first instant at which an absence of attempt 1, sent once at `T0`, is
/// provable: its lease (60 s) and the default settle window (300 s) after `T0`.
pub(crate) const PROVABLE: i64 = T0 + 360 * SEC;

static INPUT: LazyLock<CommandInput> = LazyLock::new(|| {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: CALLER_ID,
        command_id: COMMAND_ID,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .expect("valid command")
});

fn identity() -> CommandIdentity {
    INPUT.identity()
}

pub(crate) fn hash() -> Digest {
    identity().command_key_hash().clone()
}

fn lease_id(i: usize) -> String {
    format!("1ea5e0{i:02x}-0000-4000-8000-0000000000{i:02x}")
}

fn owner(i: usize) -> Digest {
    let lease = LeaseId::parse(&lease_id(i)).expect("lease id");
    INPUT.lease_owner(&identity(), &lease).expect("owner")
}

pub(crate) fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("in range")
}

fn call(holder: usize, now: i64) -> LeaseCall {
    LeaseCall::new(identity(), owner(holder), at(now))
}

/// Plan 0 (the usual one) and plan 1 (another amount).
pub(crate) fn plan(which: u8) -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stripe",
        account: ACCOUNT,
        mode: "test",
        api_version: "2024-06-20",
        operation: "charge",
        endpoint: "POST /v1/payment_intents",
        parameters: &json!({"amount": 1250 + i64::from(which), "note": PARAMETER}),
        key_retention_seconds: RETENTION,
    })
    .expect("valid plan")
}

pub(crate) fn commitment(r: usize) -> Digest {
    let reference = TerminalReferenceFingerprint::parse(REFERENCES[r]).expect("reference");
    identity().terminal_commitment(&reference)
}

/// The key attempt `n` must carry.
pub(crate) fn key(n: AttemptNumber) -> String {
    attempt_key(
        &identity(),
        &OperationSlug::parse("charge").expect("slug"),
        n,
    )
}

/// One operation of a case.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// `acquire_lease` by holder h at t.
    Acquire(usize, i64),
    /// `begin_send` by holder h, fence f, at t, with plan 0.
    Begin(usize, i64, i64),
    /// `begin_send` with plan 1.
    BeginOther(usize, i64, i64),
    /// `record_send_outcome` by h, f, attempt n, finding, at t.
    Outcome(usize, i64, i64, Closing, i64),
    /// `reconcile_send` by h, f, attempt n, finding, at t.
    Reconcile(usize, i64, i64, Closing, i64),
    /// `record_send_outcome` naming plan 1.
    OutcomeOther(usize, i64, i64, Closing, i64),
    /// `reconcile_send` naming plan 1.
    ReconcileOther(usize, i64, i64, Closing, i64),
    /// Guarded `complete_command` (reference 0) by h, f at t.
    Complete(usize, i64, i64),
    /// Guarded `fail_command` by h, f at t.
    Fail(usize, i64, i64),
    /// Status with the send layer at t.
    Status(i64),
    /// `record_late_charge` of attempt n's charge with reference r, at t.
    LateCharge(i64, usize, i64),
}

pub(crate) use Closing::{Absent, Ambiguous, Declined, Indeterminate, ReplayedUnknown};

/// Success with reference `r`.
pub(crate) fn succeeded(r: usize) -> Closing {
    Closing::Succeeded(commitment(r))
}

fn summary<O: Debug>(result: Result<O, JournalError>, show: impl Fn(&O) -> String) -> String {
    match result {
        Ok(output) => show(&output),
        Err(error) => error.code().to_owned(),
    }
}

fn lease_summary(o: &LeaseOutput) -> String {
    match o {
        LeaseOutput::Acquired { fence_epoch, .. } => format!("acquired {fence_epoch}"),
        other => other.outcome().to_owned(),
    }
}

fn terminal(t: TerminalOutput) -> String {
    LeaseOutput::from(t).outcome().to_owned()
}

fn begin_summary(o: &BeginSendOutput) -> String {
    match o {
        BeginSendOutput::Permitted(p) => {
            assert_eq!(
                p.provider_idempotency_key,
                key(p.attempt),
                "key of the permit"
            );
            format!("permit {} {}", p.attempt, p.resend)
        }
        BeginSendOutput::Terminal(t) => terminal(*t),
    }
}

fn outcome_summary(o: &SendOutcomeOutput) -> String {
    match o {
        SendOutcomeOutput::Terminal(t) => terminal(*t),
        SendOutcomeOutput::Ambiguous { attempt } => format!("send_ambiguous {attempt}"),
        SendOutcomeOutput::Absent { attempt } => format!("send_absent {attempt}"),
        SendOutcomeOutput::AwaitingCustomer { attempt } => {
            format!("send_awaiting_customer {attempt}")
        }
    }
}

fn ran<T>(store: &mut Store, op: &T, show: impl Fn(&T::Output) -> String) -> (String, usize)
where
    T: Transition,
    T::Output: Debug + PartialEq,
{
    let ran = store.run(op);
    let stored = ran.writes.iter().filter(|w| w.fields().is_some()).count();
    (summary(ran.result, show), stored)
}

/// Attempt `n` of a case's row.
pub(crate) fn nth(n: i64) -> AttemptNumber {
    AttemptNumber::new(n).expect("a case's attempt")
}

/// Runs `op` on `store`: its summary and how many documents it wrote.
pub(crate) fn apply(store: &mut Store, op: &Op) -> (String, usize) {
    match op.clone() {
        Op::Acquire(h, t) => ran(store, &Acquire::new(call(h, t)), lease_summary),
        Op::Begin(h, f, t) => ran(
            store,
            &BeginSend::new(call(h, t), FenceEpoch::stored(f), plan(0)),
            begin_summary,
        ),
        Op::BeginOther(h, f, t) => ran(
            store,
            &BeginSend::new(call(h, t), FenceEpoch::stored(f), plan(1)),
            begin_summary,
        ),
        Op::Outcome(h, f, n, finding, t) => ran(
            store,
            &Record::outcome(call(h, t), FenceEpoch::stored(f), nth(n), finding, plan(0)),
            outcome_summary,
        ),
        Op::Reconcile(h, f, n, finding, t) => ran(
            store,
            &Record::reconciliation(call(h, t), FenceEpoch::stored(f), nth(n), finding, plan(0)),
            outcome_summary,
        ),
        Op::OutcomeOther(h, f, n, finding, t) => ran(
            store,
            &Record::outcome(call(h, t), FenceEpoch::stored(f), nth(n), finding, plan(1)),
            outcome_summary,
        ),
        Op::ReconcileOther(h, f, n, finding, t) => ran(
            store,
            &Record::reconciliation(call(h, t), FenceEpoch::stored(f), nth(n), finding, plan(1)),
            outcome_summary,
        ),
        Op::Complete(h, f, t) => {
            let op = Terminal::new(
                call(h, t),
                FenceEpoch::stored(f),
                TerminalRequest::Succeed(commitment(0)),
            );
            ran(store, &Guarded::new(op, &hash()), |o| terminal(*o))
        }
        Op::Fail(h, f, t) => {
            let op = Terminal::new(call(h, t), FenceEpoch::stored(f), TerminalRequest::Fail);
            ran(store, &Guarded::new(op, &hash()), |o| terminal(*o))
        }
        Op::Status(t) => ran(
            store,
            &SendStatusRead::new(call(0, t).command().clone()),
            |o| serde_json::to_string(o).expect("status serializes"),
        ),
        Op::LateCharge(n, r, t) => ran(
            store,
            &super::late::RecordLateCharge::new(
                call(0, t).command().clone(),
                nth(n),
                commitment(r),
            ),
            |o| match o {
                super::late::LateChargeOutput::Recorded { reason, new, .. } => {
                    format!(
                        "{} {}",
                        if *new { "late" } else { "late again" },
                        reason.as_str()
                    )
                }
                super::late::LateChargeOutput::OwnCharge => "own_charge".to_owned(),
            },
        ),
    }
}

/// A registered command with holder 0 leased at `T0` (fence 1).
pub(crate) fn leased() -> Store {
    let mut store = Store::new();
    store
        .run(&Registration::new(identity(), at(REGISTERED)))
        .result
        .expect("registered");
    let (answer, _) = apply(&mut store, &Op::Acquire(0, T0));
    assert_eq!(answer, "acquired 1");
    store
}

/// Runs the steps of one case from `leased()`, checking every answer and write count.
pub(crate) fn case(name: &str, steps: &[(Op, &str, usize)]) -> Store {
    let mut store = leased();
    for (i, (op, answer, writes)) in steps.iter().enumerate() {
        let before = store.clone();
        let got = apply(&mut store, op);
        assert_eq!(
            (got.0.as_str(), got.1),
            (*answer, *writes),
            "{name}, step {i}: {op:?}"
        );
        if *writes == 0 {
            assert_eq!(
                store, before,
                "{name}, step {i}: a read-only step changed the store"
            );
        }
    }
    assert_no_canary(&store);
    store
}

/// No raw input reaches a stored document.
pub(crate) fn assert_no_canary(store: &Store) {
    for (path, doc) in store.iter() {
        let text = format!("{path} {doc:?}");
        for canary in [
            "CANARY",
            COMMAND_ID,
            REFERENCES[0],
            REFERENCES[1],
            &lease_id(0),
        ] {
            assert!(!text.contains(canary), "{path} holds a raw value");
        }
    }
}

/// Documents under the command's send collection, and send audit events.
pub(crate) fn send_counts(store: &Store) -> (usize, usize) {
    let sends = format!("checkoutRequests/{}/providerSends", hash());
    let events = format!("auditEvents/provider_send_{}", hash());
    let count = |prefix: &str| store.keys().filter(|k| k.starts_with(prefix)).count();
    (count(&sends), count(&events))
}

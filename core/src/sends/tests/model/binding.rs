//! The model's actions bound to the call machine's steps: `execute` runs through the
//! real call machine over the in-memory store (`crate::testing::call`, the machine's
//! in-memory driver), and at every transition its program asks for, the operation the
//! model performs for that step ([`op_of`], what the model's `Step` action runs) must
//! build exactly the transition the machine runs (its read set, its captured time,
//! fence, attempt, finding and envelope); at every lookup and send, the key the model
//! asks or sends must be the machine's. Together with the model driving the same
//! program (`worker`), a model action is the machine's step.

use super::super::{identity, owner};
use super::ops::{Caller, Op, Output, Visit, visit};
use super::worker::op_of;
use super::world::{KeyId, PlanChoice, micros, plan};
use crate::call::{Answered, CallOptions, Concurrency, Input, Io, Next, Now, Program};
use crate::error::JournalError;
use crate::execute::program::{ExecuteOp, ExecuteOutput, ExecuteProgram};
use crate::execute::{Executed, Execution};
use crate::sends::AttemptNumber;
use crate::sends::provider::ProviderAnswer;
use crate::settle::SettleOp;
use crate::testing::Store;
use crate::time::Timestamp;
use crate::transaction::{OperationName, Transition};
use std::fmt::Debug;
use std::num::NonZeroU32;

/// The machine's program, each transition it asks for checked against the model's.
struct Bound<'a> {
    program: ExecuteProgram,
    holder: usize,
    /// The operations checked, in order.
    checked: &'a mut Vec<Op>,
}

/// What a transition reads first and how it prints.
#[derive(Debug, PartialEq)]
struct Built {
    paths: Vec<String>,
    debug: String,
}

/// The model's transition for an operation, as it builds it.
struct Builds;

impl Visit for Builds {
    type Out = Built;

    fn visit<T>(
        self,
        op: &T,
        paths: Vec<String>,
        _wrap: fn(Result<T::Output, JournalError>) -> Output,
    ) -> Built
    where
        T: Transition + Debug,
        T::Output: Debug + PartialEq,
    {
        Built {
            paths,
            debug: format!("{op:?}"),
        }
    }
}

/// The transition the machine runs for `op`, read first on `first_read` (or its own
/// paths).
fn machine(op: &ExecuteOp, first_read: Option<Vec<String>>) -> Built {
    let (debug, paths) = match op {
        ExecuteOp::Start(start) | ExecuteOp::Settle(SettleOp::Start(start)) => {
            (format!("{start:?}"), start.paths())
        }
        ExecuteOp::BeginSend(begin) => (format!("{begin:?}"), begin.paths()),
        // Storing no envelope, the wrapper is exactly its record (`WithResult::optional`).
        ExecuteOp::Settle(SettleOp::Record(record)) => match record.parts() {
            (inner, None) => (format!("{inner:?}"), record.paths()),
            (_, Some(_)) => (format!("{record:?}"), record.paths()),
        },
        ExecuteOp::Settle(SettleOp::Status(status)) => (format!("{status:?}"), status.paths()),
        ExecuteOp::Result(result) => (format!("{result:?}"), result.paths()),
        ExecuteOp::Settle(SettleOp::LateCharge(late)) => (format!("{late:?}"), late.paths()),
        ExecuteOp::Release(release) => (format!("{release:?}"), release.paths()),
        other => panic!("the model runs no {other:?}"),
    };
    Built {
        paths: first_read.unwrap_or(paths),
        debug,
    }
}

impl Program for Bound<'_> {
    type Op = ExecuteOp;
    type Output = Executed;

    fn name(&self) -> Option<OperationName> {
        self.program.name()
    }

    fn remembers(&self) -> bool {
        self.program.remembers()
    }

    fn next(
        &mut self,
        last: Answered<ExecuteOp>,
        now: Now,
    ) -> Result<Next<ExecuteOp, Executed>, JournalError> {
        let next = self.program.next(last, now)?;
        if let Next::Run(run) = &next {
            let op = op_of(&run.op, self.checked.is_empty());
            let caller = Caller {
                owner: self.holder,
                plan: PlanChoice::Right,
                now: super::world::seconds(now.at),
            };
            assert_eq!(
                visit(caller, op, Builds),
                machine(&run.op, run.first_read.clone()),
                "the model's {op:?} is the machine's step"
            );
            self.checked.push(op);
        }
        Ok(next)
    }

    fn chained(&self, first: &ExecuteOp, output: &ExecuteOutput, now: Now) -> Option<ExecuteOp> {
        self.program.chained(first, output, now)
    }
}

/// Runs one `execute` by holder `holder` through the machine over `store`, at `at`
/// seconds until the provider's first answer and `later` seconds after it, each send
/// answered `sent`, each lookup `looked_up`; the answer, the operations checked and
/// the machine's steps.
fn bound(
    store: &mut Store,
    holder: usize,
    (at, later): (i64, i64),
    sent: &ProviderAnswer,
    looked_up: &ProviderAnswer,
) -> (Result<Execution, JournalError>, Vec<Op>, Vec<&'static str>) {
    let program = ExecuteProgram::new(
        identity(),
        owner(holder),
        plan(PlanChoice::Right).clone(),
        Concurrency::Preconditions,
        true,
    )
    .expect("a model plan");
    let options = CallOptions {
        concurrency: Concurrency::Preconditions,
        attempts: NonZeroU32::new(10).expect("ten"),
        fast_paths: true,
        deadline: None,
    };
    let mut checked = Vec::new();
    let bound = Bound {
        program,
        holder,
        checked: &mut checked,
    };
    let late = std::cell::Cell::new(false);
    let clock = || {
        let seconds = if late.get() { later } else { at };
        Timestamp::from_micros(micros(seconds)).expect("in range")
    };
    let (result, trace) = store.call_with_clock(bound, options, clock, |_, io| {
        let answer = match io {
            // The model's wire and lookups name the keys the machine sends and asks.
            Io::Send(request) => {
                KeyId::of(&request.key);
                Input::Sent(sent.clone())
            }
            Io::Lookup(request) => {
                KeyId::of(&request.key);
                Input::LookedUp(looked_up.clone())
            }
            _ => return None,
        };
        late.set(true);
        Some(answer)
    });
    (
        result.map(|executed| executed.execution),
        checked,
        trace.steps,
    )
}

fn charge(attempt: i64) -> ProviderAnswer {
    let attempt = AttemptNumber::new(attempt).expect("attempt");
    ProviderAnswer::Succeeded(KeyId::new(PlanChoice::Right, attempt).envelope())
}

/// The model's operations, by name.
fn names(ops: &[Op]) -> Vec<&'static str> {
    ops.iter()
        .map(|op| match op {
            Op::Open | Op::Start => "start",
            Op::BeginSend { .. } => "begin_send",
            Op::Record { .. } => "record",
            Op::Reconcile { .. } => "reconcile",
            Op::Status => "status",
            Op::Result => "result",
            Op::LateCharge { .. } => "record_late_charge",
            Op::Release { .. } => "release_lease",
        })
        .collect()
}

#[test]
fn a_new_command_charged_declined_or_unknown_is_the_machines_opening_send_and_record() {
    for (sent, answer) in [
        (
            charge(1),
            Execution::Succeeded(KeyId::new(PlanChoice::Right, AttemptNumber::FIRST).envelope()),
        ),
        (ProviderAnswer::Declined, Execution::Declined),
        (
            ProviderAnswer::Unknown,
            Execution::RetryLater {
                after: std::time::Duration::from_secs(60),
            },
        ),
    ] {
        let mut store = Store::new();
        let (result, ops, steps) = bound(&mut store, 1, (0, 0), &sent, &ProviderAnswer::Unknown);
        assert_eq!(result, Ok(answer), "{sent:?}");
        // The opening chained with its permit (one blind commit), then the record
        // planned from it; an unanswered send releases its lease after.
        let unanswered = sent == ProviderAnswer::Unknown;
        let (expected_ops, expected_steps): (&[&str], &[&str]) = if unanswered {
            (
                &["start", "record", "release_lease"],
                &["blind", "send", "planned", "read", "commit"],
            )
        } else {
            (&["start", "record"], &["blind", "send", "planned"])
        };
        assert_eq!(names(&ops), expected_ops, "{sent:?}");
        assert_eq!(steps, expected_steps, "{sent:?}");
    }
}

#[test]
fn a_replay_a_takeover_and_a_settlement_are_the_machines_steps() {
    let mut store = Store::new();
    // The key's stored 5xx replayed: recorded, the status read, the charge looked up
    // and reconciled.
    let (result, ops, _) = bound(
        &mut store,
        1,
        (0, 1),
        &ProviderAnswer::ReplayedUnknown,
        &charge(1),
    );
    assert!(matches!(result, Ok(Execution::Succeeded(_))), "{result:?}");
    assert_eq!(names(&ops), ["start", "record", "status", "reconcile"]);
    // A replay of the finished command: its result, from what the start read.
    let (result, ops, steps) = bound(&mut store, 2, (10, 10), &charge(1), &charge(1));
    assert!(matches!(result, Ok(Execution::Succeeded(_))), "{result:?}");
    assert_eq!(names(&ops), ["start", "result"]);
    // The opening refused, its read (following the send events up) answers all.
    assert_eq!(steps[..3], ["blind", "wait_now", "read"]);
    assert!(steps[3..].iter().all(|s| *s == "read"), "{steps:?}");
}

#[test]
fn past_the_cutoff_an_absence_and_the_next_attempt_are_the_machines_steps() {
    let mut store = Store::new();
    // Attempt 1 sent and unanswered at 0 s.
    let (result, _, _) = bound(
        &mut store,
        1,
        (0, 0),
        &ProviderAnswer::Unknown,
        &ProviderAnswer::Unknown,
    );
    assert!(
        matches!(result, Ok(Execution::RetryLater { .. })),
        "{result:?}"
    );
    // At the key retention's end nothing is found: the absence, attempt 2 sent and
    // charged, in one call whose holder took the lease over.
    let end = super::world::CUTOFF + 400;
    let (result, ops, _) = bound(
        &mut store,
        2,
        (end, end),
        &charge(2),
        &ProviderAnswer::NotFound,
    );
    assert!(matches!(result, Ok(Execution::Succeeded(_))), "{result:?}");
    assert_eq!(
        names(&ops),
        [
            "start",
            "begin_send",
            "status",
            "reconcile",
            "begin_send",
            "record"
        ]
    );
}

#[test]
fn an_answer_heard_after_its_lease_is_the_machines_second_start() {
    let mut store = Store::new();
    let (result, ops, _) = bound(&mut store, 1, (0, 61), &charge(1), &ProviderAnswer::Unknown);
    assert!(matches!(result, Ok(Execution::Succeeded(_))), "{result:?}");
    assert_eq!(
        names(&ops),
        ["start", "record", "reconcile", "start", "reconcile"]
    );
}

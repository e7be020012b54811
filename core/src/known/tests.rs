//! Planning without reading, checked against the in-memory store's read-and-decide
//! runs (the runner's own attempt machine, strict): a chained start and `begin_send`
//! write what the two run one after the other at the same time write, an outcome
//! planned from the state they left writes and answers what reading would, and every
//! state the plan cannot prove is refused.

use super::*;
use crate::envelope::ResultEnvelope;
use crate::envelope::record::WithResult;
use crate::fence::FenceEpoch;
use crate::identity::{CommandInput, CommandRequest, LeaseId};
use crate::lease::LeaseCall;
use crate::sends::AttemptNumber;
use crate::sends::begin::BeginSend;
use crate::sends::load::first_read;
use crate::sends::provider::ProviderAnswer;
use crate::sends::record::Record;
use crate::sends::{BeginSendOutput, ProviderPlan, ProviderPlanRequest};
use crate::start::{Start, StartOutput};
use crate::testing::{Store, fresh_lease};
use crate::time::Timestamp;
use serde_json::json;

const T0: i64 = 1_800_000_000_123_456;

fn input() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1b",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .expect("valid command")
}

fn provider_plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_known",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("time")
}

/// The holder's call at `now`.
fn call(lease: &LeaseId, now: Timestamp) -> LeaseCall {
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, lease).expect("owner");
    LeaseCall::new(identity, owner, now)
}

fn start(lease: &LeaseId, now: Timestamp) -> Start {
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, lease).expect("owner");
    Start::new(identity, owner, now)
}

fn fence(out: &StartOutput) -> Option<FenceEpoch> {
    match out.lease {
        crate::lease::LeaseOutput::Acquired { fence_epoch, .. } => Some(fence_epoch),
        _ => None,
    }
}

type Chained = Planned<(StartOutput, BeginSendOutput), u64>;

fn chained(lease: &LeaseId, now: Timestamp) -> Chained {
    let holder = call(lease, now);
    let mut paths = first_read(holder.command());
    paths.push(crate::sends::begin::first_index(
        holder.identity(),
        &provider_plan(),
    ));
    chain(&start(lease, now), &paths, |out| {
        Some(BeginSend::new(holder.clone(), fence(out)?, provider_plan()))
    })
    .expect("a new command chains")
}

fn fields(store: &Store) -> Vec<(String, crate::document::fields::FieldMap)> {
    store
        .iter()
        .map(|(path, fields)| (path.clone(), fields.clone()))
        .collect()
}

/// The outcome `answer` of attempt 1, recorded by `holder` under `fence`.
fn first_outcome(holder: LeaseCall, fence: FenceEpoch, answer: ProviderAnswer) -> Record {
    let (finding, _) = answer.closing(holder.identity());
    Record::outcome(
        holder,
        fence,
        AttemptNumber::FIRST,
        finding,
        provider_plan(),
    )
}

/// The chained writes as one commit of `store` (every precondition `exists: false`
/// checked), and the state it leaves known, with the store's logical times.
fn commit_chained(store: &mut Store, plan: &Chained) -> Known<u64> {
    for write in &plan.writes {
        assert_eq!(write.precondition, Precondition::Absent);
        assert!(!store.contains_key(write.write.path()));
    }
    let created: Vec<(String, crate::document::fields::FieldMap)> = plan
        .writes
        .iter()
        .filter_map(|w| Some((w.write.path().to_owned(), w.write.fields()?.clone())))
        .collect();
    store.insert_together(created);
    let results = stamps(store, &plan.writes);
    let written: Vec<Write> = plan.writes.iter().map(|w| w.write.clone()).collect();
    plan.base.clone().committed(&written, &results)
}

/// The update time the store answers for each write, as Firestore's write results.
fn stamps(store: &Store, writes: &[GuardedWrite<u64>]) -> Vec<Option<(u64, CommitTime)>> {
    writes
        .iter()
        .map(|w| match w.write {
            Write::AssertAbsent { .. } => None,
            _ => {
                let time = store.update_time(w.write.path())?;
                Some((time, (i64::try_from(time).ok()?, 0)))
            }
        })
        .collect()
}

#[test]
fn a_chained_start_and_begin_send_write_what_two_sequential_runs_write() {
    let lease = fresh_lease();
    let now = at(T0);
    let plan_ = chained(&lease, now);

    let mut sequential = Store::new();
    let started = sequential.answer(&start(&lease, now)).expect("start");
    let fence = fence(&started).expect("acquired");
    let began = sequential
        .answer(&BeginSend::new(call(&lease, now), fence, provider_plan()))
        .expect("begin_send");
    assert_eq!(plan_.output, (started, began));

    let mut chained_store = Store::new();
    commit_chained(&mut chained_store, &plan_);
    assert_eq!(fields(&chained_store), fields(&sequential));
    // Every other path read is proven absent by the same commit.
    let read = first_read(call(&lease, now).command());
    for path in &read {
        assert!(
            plan_.writes.iter().any(|w| w.write.path() == path),
            "{path} is neither created nor guarded"
        );
    }
}

#[test]
fn an_outcome_planned_from_the_chained_state_writes_and_answers_what_reading_does() {
    let envelope = ResultEnvelope::new(&json!({"id": "ch_1"})).expect("envelope");
    let outcomes = [
        ProviderAnswer::Succeeded(envelope),
        ProviderAnswer::Declined,
        ProviderAnswer::Unknown,
    ];
    for outcome in outcomes {
        let lease = fresh_lease();
        let plan_ = chained(&lease, at(T0));
        let fence = fence(&plan_.output.0).expect("acquired");
        let mut store = Store::new();
        let known = commit_chained(&mut store, &plan_);

        let later = at(T0 + 2_000_000);
        let holder = call(&lease, later);
        let (finding, result) = outcome.closing(holder.identity());
        let hash = holder.hash().clone();
        let record = Record::outcome(
            holder,
            fence,
            AttemptNumber::FIRST,
            finding,
            provider_plan(),
        );
        let (planned_writes, planned_output, read) = match result {
            Some(envelope) => {
                let op = WithResult::new(record, &hash, later, envelope);
                let planned = plan(&op, &known).expect("planned");
                let read = store.clone().run(&op);
                (planned.writes, planned.output, (read.result, read.writes))
            }
            None => {
                let planned = plan(&record, &known).expect("planned");
                let read = store.clone().run(&record);
                (planned.writes, planned.output, (read.result, read.writes))
            }
        };
        assert_eq!(Ok(planned_output), read.0, "{outcome:?}");
        let writes: Vec<Write> = planned_writes.iter().map(|w| w.write.clone()).collect();
        assert_eq!(writes, read.1, "{outcome:?}");
        // Each replacement, and the lifecycle where the outcome does not replace it
        // (an ambiguous answer), is guarded by the update time the chained commit
        // answered.
        let proofs = writes
            .iter()
            .filter(|w| matches!(w, Write::AssertUnchanged { .. }))
            .count();
        let ambiguous = outcome == ProviderAnswer::Unknown;
        assert_eq!(proofs, usize::from(ambiguous), "{outcome:?}");
        for write in &planned_writes {
            match (&write.write, &write.precondition) {
                (
                    Write::Replace { path, .. } | Write::AssertUnchanged { path, .. },
                    Precondition::UpdatedAt(version),
                ) => {
                    assert_eq!(Some(*version), store.update_time(path.as_str()));
                }
                (Write::Create { path, .. }, Precondition::Absent) => {
                    assert!(!store.contains_key(path.as_str()));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn nothing_is_planned_from_a_state_not_known_or_not_a_mutation() {
    let lease = fresh_lease();
    let plan_ = chained(&lease, at(T0));
    let fence = fence(&plan_.output.0).expect("acquired");
    let mut store = Store::new();
    let known = commit_chained(&mut store, &plan_);
    let outcome = Record::outcome(
        call(&lease, at(T0 + 1)),
        fence,
        AttemptNumber::FIRST,
        ProviderAnswer::Declined
            .closing(call(&lease, at(T0)).identity())
            .0,
        provider_plan(),
    );
    assert!(plan(&outcome, &known).is_some());

    // A path it reads is unknown: nothing planned.
    let mut partial = known.clone();
    let some_path = outcome.paths()[0].clone();
    partial.state.docs.remove(&some_path);
    assert!(plan(&outcome, &partial).is_none());

    // A document it replaces is known without an update time: nothing planned.
    let mut unversioned = known.clone();
    unversioned.versions.clear();
    assert!(plan(&outcome, &unversioned).is_none());

    // An observation (the same holder's permit asked again) is not planned, but a
    // read-only operation answers it.
    let again = BeginSend::new(call(&lease, at(T0 + 1)), fence, provider_plan());
    assert!(plan(&again, &known).is_none());
    assert_eq!(
        observe(&again, &known),
        Some(plan_.output.1.clone()),
        "the permit, from what is known"
    );

    // A stale holder's fence decides a refusal: nothing planned.
    let stale = Record::outcome(
        call(&fresh_lease(), at(T0 + 1)),
        fence,
        AttemptNumber::FIRST,
        ProviderAnswer::Declined
            .closing(call(&lease, at(T0)).identity())
            .0,
        provider_plan(),
    );
    assert!(plan(&stale, &known).is_none());

    // Without every path of the first transition, or when `then` declines: no chain.
    let holder = call(&lease, at(T0));
    let read = first_read(holder.command());
    let short = &read[..2];
    let op = start(&lease, at(T0));
    assert!(
        chain(&op, short, |_: &StartOutput| Some(BeginSend::new(
            holder.clone(),
            fence,
            provider_plan()
        )))
        .map(|p: Chained| p.output)
        .is_none()
    );
    assert!(
        chain(&op, &read, |_: &StartOutput| None::<BeginSend>)
            .map(|p: Chained| p.output)
            .is_none()
    );
}

#[test]
fn a_commit_result_updates_what_is_known() {
    let doc = |n: i64| crate::document::fields::map([("n", crate::document::fields::int(n))]);
    let known = Known::<u64>::absent(["a".to_owned(), "b".to_owned(), "c".to_owned()]);
    let created = known.committed(
        &[
            Write::Create {
                path: "a".into(),
                fields: doc(1),
            },
            Write::Create {
                path: "b".into(),
                fields: doc(1),
            },
            Write::AssertAbsent { path: "c".into() },
        ],
        &[Some((7, (7, 0))), None, None],
    );
    assert_eq!(created.snapshot().get("a"), Some(&doc(1)));
    assert_eq!(
        created.snapshot().stamps("a"),
        Some(CommitStamps {
            created: (7, 0),
            updated: (7, 0)
        })
    );
    // A write without an answered update time leaves its document unknown.
    assert!(!created.knows("b"));
    assert!(created.knows("c") && created.snapshot().get("c").is_none());
    let replaced = created.committed(
        &[Write::Replace {
            path: "a".into(),
            fields: doc(2),
        }],
        &[Some((9, (9, 0)))],
    );
    assert_eq!(replaced.versions.get("a"), Some(&9));
    assert_eq!(
        replaced.snapshot().stamps("a"),
        Some(CommitStamps {
            created: (7, 0),
            updated: (9, 0)
        })
    );
}

/// Whether a planned commit of `writes` lands on `store` as it stands: every
/// precondition is checked there (`exists: false`, or the known update time).
fn lands(store: &Store, writes: &[GuardedWrite<u64>]) -> bool {
    writes.iter().all(|w| match &w.precondition {
        Precondition::Absent => !store.contains_key(w.write.path()),
        Precondition::UpdatedAt(time) => store.update_time(w.write.path()) == Some(*time),
    })
}

const LEASE: i64 = 60_000_000;

#[test]
fn a_stale_holders_planned_outcome_is_refused_after_a_takeover_by_a_clock_that_runs_ahead() {
    let lease = fresh_lease();
    let plan_ = chained(&lease, at(T0));
    let held = fence(&plan_.output.0).expect("acquired");
    let mut store = Store::new();
    let known = commit_chained(&mut store, &plan_);
    // Holder B's clock runs 61 s ahead: to it the lease has expired, and it takes over.
    let taken = store.answer(&start(&fresh_lease(), at(T0 + LEASE + 1_000_000)));
    assert_eq!(
        taken.ok().and_then(|out| fence(&out)).map(|f| f.get()),
        Some(2)
    );
    // Holder A, at its own clock 2 s after its start, records an ambiguous answer.
    let record = || {
        let holder = call(&lease, at(T0 + 2_000_000));
        first_outcome(holder, held, ProviderAnswer::Unknown)
    };
    let planned = plan(&record(), &known).expect("planned from what A knows");
    assert!(
        planned.writes.iter().any(|w| matches!(
            &w.write,
            Write::AssertUnchanged { path, .. } if path == &crate::document::lifecycle::path(
                call(&lease, at(T0)).hash()
            )
        )),
        "the outcome proves the lease it was decided under"
    );
    assert!(
        !lands(&store, &planned.writes),
        "refused: the lifecycle moved on"
    );
    // Reading instead, A is told its lease is lost and writes nothing.
    let before = fields(&store);
    let read = store.run(&record());
    assert!(
        read.result.is_err() && read.writes.is_empty(),
        "{:?}",
        read.result
    );
    assert_eq!(fields(&store), before);
    // Without the proof the stale outcome would land under fence 1.
    let stale =
        crate::sends::reverted::with_reverted(&[crate::sends::reverted::Rule::LeaseProof], || {
            plan(&record(), &known).expect("planned")
        });
    assert!(lands(&store, &stale.writes));
}

#[test]
fn a_read_path_commit_is_refused_when_a_takeover_lands_between_its_read_and_its_commit() {
    let lease = fresh_lease();
    let plan_ = chained(&lease, at(T0));
    let fence = fence(&plan_.output.0).expect("acquired");
    let mut store = Store::new();
    commit_chained(&mut store, &plan_);
    // A reads just before its lease's end (no clock skew at all) and decides.
    let holder = call(&lease, at(T0 + LEASE - 1));
    let record = first_outcome(holder, fence, ProviderAnswer::Unknown);
    let decided = store.attempt(&record);
    assert!(matches!(decided.decision, Decision::Mutate(..)));
    // The lease ends and another holder takes it over before A's commit arrives.
    store
        .answer(&start(&fresh_lease(), at(T0 + LEASE)))
        .expect("takeover");
    let before = fields(&store);
    assert!(
        !store.commit(&decided),
        "the commit proves the lease it read"
    );
    assert_eq!(fields(&store), before);
}

/// Runs `op` by reading and deciding on `store` and commits it: its answer and what
/// the journal knows after it (the read, updated by the commit's write results), as
/// the runner leaves it for the call's next operation.
fn run_known<T>(store: &mut Store, op: &T) -> (T::Output, Known<u64>)
where
    T: Transition,
    T::Output: std::fmt::Debug + PartialEq + Clone,
{
    let decided = store.attempt(op);
    let output = match &decided.decision {
        Decision::Mutate(_, output) | Decision::Observe(output) => output.clone(),
        other => panic!("{other:?}"),
    };
    let guarded = decided.guarded();
    let results = store.commit_guarded(&guarded).expect("uncontended");
    let written: Vec<Write> = guarded.iter().map(|w| w.write.clone()).collect();
    (
        output,
        decided.known().clone().committed(&written, &results),
    )
}

fn permitted(output: &BeginSendOutput) -> (AttemptNumber, bool) {
    match output {
        BeginSendOutput::Permitted(permit) => (permit.attempt, permit.resend),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_stale_known_state_never_re_sends_a_key_that_replayed_an_unknown() {
    let a = fresh_lease();
    let opening = chained(&a, at(T0));
    let fence_a = fence(&opening.output.0).expect("acquired");
    let mut store = Store::new();
    commit_chained(&mut store, &opening);
    // B's clock runs 61 s ahead: it starts, reading everything `begin_send` reads.
    let b = fresh_lease();
    let tb = at(T0 + LEASE + 1_000_000);
    let mut paths = first_read(call(&b, tb).command());
    paths.push(crate::sends::begin::first_index(
        call(&b, tb).identity(),
        &provider_plan(),
    ));
    let taking = store.attempt_reading(&start(&b, tb), paths);
    let Decision::Mutate(_, started) = &taking.decision else {
        panic!("{:?}", taking.decision);
    };
    let fence_b = fence(started).expect("a takeover");
    // Meanwhile A, at its own clock, hears the replay and records it: its lease runs.
    let holder = call(&a, at(T0 + 2_000_000));
    let record = first_outcome(holder, fence_a, ProviderAnswer::ReplayedUnknown);
    assert!(store.run(&record).result.is_ok());
    // B's takeover lands after it (the lifecycle did not change).
    let guarded = taking.guarded();
    let results = store.commit_guarded(&guarded).expect("the takeover lands");
    let written: Vec<Write> = guarded.iter().map(|w| w.write.clone()).collect();
    let known = taking.known().clone().committed(&written, &results);
    // What B knows says `sending`: a re-send is planned, and refused at the commit.
    let again = BeginSend::new(call(&b, tb), fence_b, provider_plan());
    let planned = plan(&again, &known).expect("a re-send planned from the stale state");
    assert_eq!(permitted(&planned.output), (AttemptNumber::FIRST, true));
    assert!(!lands(&store, &planned.writes), "the send record moved on");
    // Reading instead, B gets no permit for the key: it looks it up.
    let before = fields(&store);
    let read = store.run(&again);
    assert_eq!(
        read.result,
        Err(crate::error::JournalError::SendCutoffPassed)
    );
    assert_eq!(fields(&store), before);
}

#[test]
fn a_superseded_holder_gets_no_permit_for_the_next_attempt_from_what_it_knows() {
    let a = fresh_lease();
    let opening = chained(&a, at(T0));
    let mut store = Store::new();
    commit_chained(&mut store, &opening);
    // Holder C takes over once attempt 1's absence is provable, records it, and knows
    // the state its commit left.
    let c = fresh_lease();
    let provable = T0 + 360_000_000;
    let (started, _) = run_known(&mut store, &start(&c, at(provable)));
    let fence_c = fence(&started).expect("a takeover");
    let holder = call(&c, at(provable));
    let (finding, _) = ProviderAnswer::NotFound.closing(holder.identity());
    let absent = Record::reconciliation(
        holder,
        fence_c,
        AttemptNumber::FIRST,
        finding,
        provider_plan(),
    );
    let (_, known) = run_known(&mut store, &absent);
    // Holder D's clock runs 61 s ahead of C's: to it C's lease has expired.
    let d = fresh_lease();
    let taken = store.answer(&start(&d, at(provable + LEASE + 1_000_000)));
    assert_eq!(taken.ok().and_then(|o| fence(&o)).map(|f| f.get()), Some(3));
    // C, at its own clock, plans attempt 2 (a new key) from what it knows ...
    let next = || BeginSend::new(call(&c, at(provable + 2_000_000)), fence_c, provider_plan());
    let planned = plan(&next(), &known).expect("attempt 2 planned");
    assert_eq!(
        permitted(&planned.output),
        (AttemptNumber::new(2).unwrap(), false)
    );
    assert!(
        !lands(&store, &planned.writes),
        "refused: the lease it was decided under is gone"
    );
    // ... and, reading, is told the lease is another's; nothing is written.
    let before = fields(&store);
    let read = store.run(&next());
    assert_eq!(read.result, Err(crate::error::JournalError::LeaseNotHeld));
    assert_eq!(fields(&store), before);
    // Without the proof, the new key would be sent under the superseded fence.
    let stale =
        crate::sends::reverted::with_reverted(&[crate::sends::reverted::Rule::LeaseProof], || {
            plan(&next(), &known).expect("planned")
        });
    assert!(lands(&store, &stale.writes));
}

#[test]
fn a_chained_opening_whose_answer_was_lost_is_answered_again_writing_nothing() {
    let lease = fresh_lease();
    let opening = chained(&lease, at(T0));
    let fence = fence(&opening.output.0).expect("acquired");
    let mut store = Store::new();
    commit_chained(&mut store, &opening);
    // The retry reads: the same lease (no takeover of its own lease) ...
    let before = fields(&store);
    let started = store.run(&start(&lease, at(T0)));
    assert!(started.writes.is_empty());
    let started = started.result.expect("start");
    assert_eq!(started.lease, opening.output.0.lease);
    // ... and the same permit, even later in the lease: nothing is written.
    for now in [T0, T0 + 5_000_000] {
        let again = store.run(&BeginSend::new(
            call(&lease, at(now)),
            fence,
            provider_plan(),
        ));
        assert!(again.writes.is_empty());
        assert_eq!(again.result, Ok(opening.output.1.clone()));
    }
    assert_eq!(fields(&store), before);
}

#[test]
fn an_unchanged_rewrite_fails_on_a_document_deleted_and_recreated_identical() {
    let lease = fresh_lease();
    let opening = chained(&lease, at(T0));
    let fence = fence(&opening.output.0).expect("acquired");
    let mut store = Store::new();
    let known = commit_chained(&mut store, &opening);
    let holder = call(&lease, at(T0 + 2_000_000));
    let record = first_outcome(holder, fence, ProviderAnswer::Unknown);
    let planned = plan(&record, &known).expect("planned");
    assert!(lands(&store, &planned.writes));
    // Another writer deletes the lifecycle and puts the same fields back: the content
    // is as known, the update time is not, and the proof is on the update time.
    let path = crate::document::lifecycle::path(call(&lease, at(T0)).hash());
    let same = store.remove(&path).expect("lifecycle");
    store.insert(path.clone(), same);
    assert!(!lands(&store, &planned.writes));
}

#[test]
fn after_a_replay_recorded_the_lookups_evidence_is_planned_from_what_its_commit_left() {
    let lease = fresh_lease();
    let opening = chained(&lease, at(T0));
    let fence = fence(&opening.output.0).expect("acquired");
    let mut store = Store::new();
    let known = commit_chained(&mut store, &opening);
    // The replay, recorded by a commit planned from the opening: it proves the lease.
    let holder = call(&lease, at(T0 + 2_000_000));
    let record = first_outcome(holder, fence, ProviderAnswer::ReplayedUnknown);
    let planned = plan(&record, &known).expect("the replay planned");
    let results = store.commit_guarded(&planned.writes).expect("lands");
    let written: Vec<Write> = planned.writes.iter().map(|w| w.write.clone()).collect();
    let known = planned.base.committed(&written, &results);
    // The lookup finds the charge: its reconciliation is planned from that state,
    // and writes and answers what reading and deciding would.
    let now = at(T0 + 3_000_000);
    let holder = call(&lease, now);
    let envelope = ResultEnvelope::new(&json!({"id": "pi_1"})).expect("envelope");
    let found = ProviderAnswer::Succeeded(envelope.clone());
    let (finding, _) = found.closing(holder.identity());
    let hash = holder.hash().clone();
    let reconcile = WithResult::new(
        Record::reconciliation(
            holder,
            fence,
            AttemptNumber::FIRST,
            finding,
            provider_plan(),
        ),
        &hash,
        now,
        &envelope,
    );
    let planned = plan(&reconcile, &known).expect("the evidence planned");
    let read = store.clone().run(&reconcile);
    assert_eq!(Ok(planned.output), read.result);
    let writes: Vec<Write> = planned.writes.iter().map(|w| w.write.clone()).collect();
    assert_eq!(writes, read.writes);
    assert!(lands(&store, &planned.writes));
}

//! The settle program driven through the call machine over the in-memory store, as
//! production drives it: under a lease its caller holds (the sender's answer, a
//! lookup past the cutoff, an answer given) and under a lease it takes itself (a
//! lookup, an answer given), each source's refusals beside the cases that must still
//! pass, and what each writes.

use super::*;
use crate::call::{CallOptions, Concurrency, Input, Io, Program, Single};
use crate::digest::Digest;
use crate::error::JournalError;
use crate::identity::{CommandIdentity, CommandInput, CommandRequest};
use crate::lease::{CommandCall, LeaseCall};
use crate::recovery::owner::recovery_owner;
use crate::sends::begin::BeginSend;
use crate::sends::status::SendStatusRead;
use crate::sends::{AttemptNumber, AttemptState, BeginSendOutput, ProviderAccount, ProviderPlan};
use crate::start::Start;
use crate::testing::{CallTrace, Store, fresh_lease};
use crate::transaction::Transition;
use serde_json::json;
use std::num::NonZeroU32;

const T0: i64 = 1_800_000_000_123_456;
const SEC: i64 = 1_000_000;
/// The first attempt's cutoff: three quarters of a day's key retention after `T0`.
const CUTOFF: i64 = T0 + 18 * 3600 * SEC;

fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("time")
}

fn request() -> CommandRequest<'static> {
    static PAYLOAD: std::sync::LazyLock<serde_json::Value> =
        std::sync::LazyLock::new(|| json!({"sku": "CANARYsku"}));
    CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1e",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &PAYLOAD,
    }
}

fn input() -> CommandInput {
    CommandInput::new(request()).expect("valid command")
}

fn identity() -> CommandIdentity {
    input().identity()
}

fn hash() -> Digest {
    identity().command_key_hash().clone()
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(crate::sends::ProviderPlanRequest {
        provider: "stub",
        account: "acct_settle",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250}),
        key_retention_seconds: 86_400,
    })
    .expect("valid plan")
}

fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_settle", "test").expect("valid account")
}

fn envelope() -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": "ch_CANARY", "status": "succeeded"})).expect("envelope")
}

fn options() -> CallOptions {
    CallOptions {
        concurrency: Concurrency::Preconditions,
        attempts: NonZeroU32::new(10).expect("ten"),
        fast_paths: true,
        deadline: None,
    }
}

/// Runs one transition through the call machine at `now`.
fn run<T>(store: &mut Store, op: T, now: i64) -> Result<T::Output, JournalError>
where
    T: Transition,
    T::Output: Labelled,
{
    store
        .call(Single::new(op), options(), at(now), |_, _| None)
        .0
}

/// A client that takes the lease at `now` as a fresh holder and is permitted to send
/// the current attempt: its lease, as the settle program holds it.
fn client_permitted(store: &mut Store, now: i64) -> (Digest, Held) {
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let started = run(store, Start::new(identity(), owner.clone(), at(now)), now).expect("start");
    let lease = Held::of(started.lease, Now::unstepped(at(now))).expect("acquired");
    let call = LeaseCall::new(identity(), owner.clone(), at(now));
    match run(store, BeginSend::new(call, lease.fence, plan()), now).expect("begin") {
        BeginSendOutput::Permitted(_) => (owner, lease),
        other => panic!("{other:?}"),
    }
}

/// A holder that takes the lease at `now` (a takeover past the cutoff asks for no
/// permit): its lease.
fn client_leased(store: &mut Store, now: i64) -> (Digest, Held) {
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let started = run(store, Start::new(identity(), owner.clone(), at(now)), now).expect("start");
    let heard = Now::unstepped(at(now));
    (owner, Held::of(started.lease, heard).expect("acquired"))
}

/// The command's send state at `now`.
fn state(store: &mut Store, now: i64) -> crate::sends::CommandStatus {
    run(
        store,
        SendStatusRead::new(CommandCall::new(identity(), at(now))),
        now,
    )
    .expect("status")
}

/// Runs `settle` at `now` on a clock that never steps, the provider's lookups
/// answered from `lookups` (in order, `Unknown` once they run out), every key asked
/// recorded.
fn settle_at(
    store: &mut Store,
    settle: Settle,
    now: i64,
    lookups: &[ProviderAnswer],
) -> (Result<Settled, JournalError>, CallTrace, usize) {
    let mut asked = 0;
    let clocks = || Now::unstepped(at(now));
    let (result, trace) = store.call_with_clocks(settle, options(), clocks, |_, io| match io {
        Io::Lookup(_) => {
            let answer = lookups
                .get(asked)
                .cloned()
                .unwrap_or(ProviderAnswer::Unknown);
            asked += 1;
            Some(Input::LookedUp(answer))
        }
        _ => None,
    });
    (result, trace, asked)
}

/// The provider idempotency key of attempt `n`, as the stored plan derives it.
fn key(n: i64) -> String {
    let attempt = AttemptNumber::new(n).expect("attempt");
    crate::sends::plan::attempt_key(&identity(), plan().operation(), attempt)
}

/// `answer` given with the key of attempt `n`.
fn given_as(n: i64, answer: ProviderAnswer) -> Source {
    Source::Given(Given {
        key: key(n),
        answer,
        indexed: None,
        read_at: None,
    })
}

/// The settle program under the caller's `lease` from `source`.
fn under(owner: &Digest, lease: Held, source: Source) -> Settle {
    Settle::under(identity(), owner.clone(), plan(), lease, source)
}

/// The settle program of a job declaring the plan's account, from `source`.
fn job(source: Source) -> Settle {
    let owner = recovery_owner(&hash(), &fresh_lease());
    Settle::taking(hash(), owner, Some(account()), source)
}

#[test]
fn under_the_lease_the_senders_evidence_is_recorded_with_its_envelope() {
    for (answer, settled, command) in [
        (
            ProviderAnswer::Succeeded(envelope()),
            Settled::Succeeded(Some(envelope())),
            CommandState::Succeeded,
        ),
        (
            ProviderAnswer::Declined,
            Settled::Declined,
            CommandState::FailedFinal,
        ),
    ] {
        let mut store = Store::new();
        let (owner, lease) = client_permitted(&mut store, T0);
        let sent = Source::Sent {
            resend: false,
            attempt: AttemptNumber::FIRST,
            answer: answer.clone(),
        };
        let (result, trace, asked) =
            settle_at(&mut store, under(&owner, lease, sent), T0 + SEC, &[]);
        assert_eq!(result, Ok(settled), "{answer:?}");
        assert_eq!(trace.began, ["journal.record_send_outcome"]);
        assert_eq!(asked, 0, "nothing looked up");
        assert_eq!(state(&mut store, T0 + 2 * SEC).command.state, command);
    }
}

#[test]
fn under_the_lease_the_senders_unknown_is_kept_open_and_a_replay_looked_up_at_once() {
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let sent = |answer| Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer,
    };
    let (result, _, asked) = settle_at(
        &mut store,
        under(&owner, lease, sent(ProviderAnswer::Unknown)),
        T0 + SEC,
        &[],
    );
    assert_eq!((result, asked), (Ok(Settled::Open), 0));
    let send = state(&mut store, T0 + 2 * SEC).send.expect("send");
    assert_eq!(send.state, AttemptState::Ambiguous);
    // A "not found" from a send tells nothing: taken as unknown.
    let (result, _, _) = settle_at(
        &mut store,
        under(&owner, lease, sent(ProviderAnswer::NotFound)),
        T0 + 2 * SEC,
        &[],
    );
    assert_eq!(result, Ok(Settled::Open));
    // The key's stored unknown replayed: recorded, then the status and the lookup in
    // the same program, which finds the charge.
    let (result, trace, asked) = settle_at(
        &mut store,
        under(&owner, lease, sent(ProviderAnswer::ReplayedUnknown)),
        T0 + 3 * SEC,
        &[ProviderAnswer::Succeeded(envelope())],
    );
    assert_eq!(result, Ok(Settled::Succeeded(Some(envelope()))));
    assert_eq!(asked, 1);
    assert_eq!(
        trace.began,
        [
            "journal.record_send_outcome",
            "journal.status",
            "journal.reconcile_send"
        ]
    );
}

#[test]
fn under_the_lease_an_unknown_past_the_cutoff_is_looked_up_and_a_charge_recorded() {
    // Permitted just before the cutoff; the unknown answer arrives after it.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let (owner, lease) = {
        // The first holder's lease ran out long ago: a later holder re-sends before
        // the cutoff.
        client_permitted(&mut store, CUTOFF - 30 * SEC)
    };
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Unknown,
    };
    // Nothing found yet (and not provable: that lease is still running).
    let before = store.documents();
    let (result, _, asked) = settle_at(
        &mut store,
        under(&owner, lease, sent.clone()),
        CUTOFF + 10 * SEC,
        &[ProviderAnswer::NotFound],
    );
    assert_eq!((result, asked), (Ok(Settled::NotFound), 1));
    assert_eq!(store.documents(), before, "nothing written");
    // The charge found is recorded.
    let (result, _, _) = settle_at(
        &mut store,
        under(&owner, lease, sent),
        CUTOFF + 11 * SEC,
        &[ProviderAnswer::Succeeded(envelope())],
    );
    assert_eq!(result, Ok(Settled::Succeeded(Some(envelope()))));
}

#[test]
fn under_a_lease_lost_the_senders_evidence_is_recorded_under_one_more() {
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Succeeded(envelope()),
    };
    // Heard after its lease ran out: refused as the outcome and as evidence, then
    // recorded under a second lease of the same holder.
    let (result, trace, _) = settle_at(&mut store, under(&owner, lease, sent), T0 + 61 * SEC, &[]);
    assert_eq!(result, Ok(Settled::Succeeded(Some(envelope()))));
    assert_eq!(
        trace.began,
        [
            "journal.record_send_outcome",
            "journal.reconcile_send",
            "journal.start",
            "journal.reconcile_send"
        ]
    );
    // A lookup's evidence whose lease runs out during the lookup is left to the next
    // holder, which can find it again: nothing written.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let (owner, lease) = client_leased(&mut store, CUTOFF);
    let before = store.documents();
    let late = std::cell::Cell::new(false);
    let settle = under(&owner, lease, Source::Lookup);
    let (result, _) = store.call_with_clock(
        settle,
        options(),
        || {
            at(if late.get() {
                CUTOFF + 61 * SEC
            } else {
                CUTOFF + SEC
            })
        },
        |_, io| match io {
            Io::Lookup(_) => {
                late.set(true);
                Some(Input::LookedUp(ProviderAnswer::Succeeded(envelope())))
            }
            _ => None,
        },
    );
    assert_eq!(result, Ok(Settled::InProgress));
    assert_eq!(store.documents(), before);
}

#[test]
fn under_the_lease_a_lookup_records_only_evidence_and_a_provable_absence() {
    // The caller took the lease after the cutoff (the sender's long expired): the
    // absence is provable, the lookup is made under the lease.
    let cases = [
        (
            ProviderAnswer::Declined,
            Settled::Declined,
            AttemptState::Declined,
        ),
        (
            ProviderAnswer::NotFound,
            Settled::Absent,
            AttemptState::Absent,
        ),
        (
            ProviderAnswer::Unknown,
            Settled::Unavailable,
            AttemptState::Sending,
        ),
        (
            ProviderAnswer::ReplayedUnknown,
            Settled::Unavailable,
            AttemptState::Sending,
        ),
    ];
    for (found, settled, after) in cases {
        let mut store = Store::new();
        client_permitted(&mut store, T0);
        let (owner, lease) = client_leased(&mut store, CUTOFF);
        let (result, _, asked) = settle_at(
            &mut store,
            under(&owner, lease, Source::Lookup),
            CUTOFF + SEC,
            std::slice::from_ref(&found),
        );
        assert_eq!((result, asked), (Ok(settled), 1), "{found:?}");
        let send = state(&mut store, CUTOFF + 2 * SEC).send.expect("send");
        assert_eq!(send.state, after, "{found:?}");
    }
}

#[test]
fn under_the_lease_a_lookup_refuses_another_plan_and_asks_nothing_before_the_cutoff() {
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    // Before the cutoff the holder re-sends: nothing to look up.
    let (result, _, asked) = settle_at(
        &mut store,
        under(&owner, lease, Source::Lookup),
        T0 + SEC,
        &[],
    );
    assert_eq!((result, asked), (Ok(Settled::InProgress), 0));
    // Another plan: refused before any other rule, nothing asked.
    let other = plan().with_lookup(crate::sends::ProviderLookup::Durable, 300);
    let other = Settle::under(
        identity(),
        owner,
        other.expect("fits"),
        lease,
        Source::Lookup,
    );
    let (result, _, asked) = settle_at(&mut store, other, T0 + SEC, &[]);
    assert_eq!((result, asked), (Err(JournalError::PlanConflict), 0));
}

#[test]
fn under_the_lease_an_answer_given_is_recorded_whenever_it_arrives_but_proves_no_absence() {
    // Before the cutoff, no lookup asked: the charge given is recorded.
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let given = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, trace, asked) = settle_at(&mut store, under(&owner, lease, given), T0 + SEC, &[]);
    assert_eq!(result, Ok(Settled::Succeeded(Some(envelope()))));
    assert_eq!(asked, 0);
    assert_eq!(trace.began, ["journal.status", "journal.reconcile_send"]);
    // A "not found" or an unknown given writes nothing, even once an absence is
    // provable.
    for (given, settled) in [
        (ProviderAnswer::NotFound, Settled::NotFound),
        (ProviderAnswer::Unknown, Settled::Unavailable),
    ] {
        let mut store = Store::new();
        client_permitted(&mut store, T0);
        let (owner, lease) = client_leased(&mut store, CUTOFF + 400 * SEC);
        let before = store.documents();
        let (result, _, asked) = settle_at(
            &mut store,
            under(&owner, lease, given_as(1, given.clone())),
            CUTOFF + 401 * SEC,
            &[],
        );
        assert_eq!((result, asked), (Ok(settled), 0), "{given:?}");
        assert_eq!(store.documents(), before, "{given:?} wrote");
    }
}

#[test]
fn a_taken_lease_is_taken_only_for_evidence_and_an_absence_confirmed_under_it() {
    // The sender crashed at T0; long after, a job finds nothing, takes the lease, and
    // finds nothing again under it: the absence is recorded.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let (result, trace, asked) = settle_at(
        &mut store,
        job(Source::Lookup),
        T0 + 400 * SEC,
        &[ProviderAnswer::NotFound, ProviderAnswer::NotFound],
    );
    assert_eq!((result, asked), (Ok(Settled::Absent), 2));
    // The absence's commit reads its attempt's late charge (what lets the next
    // attempt's permit prove there is none), which the status read did not.
    assert_eq!(
        trace.steps,
        [
            "read", "lookup", "read", "commit", "read", "lookup", "read", "commit"
        ]
    );
    // A lookup that finds nothing provable takes no lease and writes nothing.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    let (result, trace, _) = settle_at(
        &mut store,
        job(Source::Lookup),
        T0 + 100 * SEC,
        &[ProviderAnswer::NotFound],
    );
    assert_eq!(result, Ok(Settled::NotFound));
    assert_eq!(trace.steps, ["read", "lookup"]);
    assert_eq!(store.documents(), before);
}

#[test]
fn a_taken_lease_records_an_answer_given_with_the_same_fence_and_proofs() {
    // An answer given to a job (an event, later): read, the takeover, the
    // reconciliation planned from the takeover's read, nothing asked of the provider.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let given = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, trace, asked) = settle_at(&mut store, job(given), T0 + 61 * SEC, &[]);
    assert_eq!(
        (result, asked),
        (Ok(Settled::Succeeded(Some(envelope()))), 0)
    );
    assert_eq!(trace.steps, ["read", "read", "commit", "planned"]);
    assert_eq!(
        state(&mut store, T0 + 62 * SEC).command.state,
        CommandState::Succeeded
    );
    // Given to the job again: the command has ended, nothing written.
    let before = store.documents();
    let given = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(&mut store, job(given), T0 + 63 * SEC, &[]);
    assert_eq!(result, Ok(Settled::Ended(CommandState::Succeeded)));
    assert_eq!(store.documents(), before);
}

#[test]
fn a_taken_lease_refuses_what_it_cannot_prove() {
    // A running lease: in progress, nothing written.
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let before = store.documents();
    let given = given_as(1, ProviderAnswer::Declined);
    let (result, _, _) = settle_at(&mut store, job(given), T0 + 30 * SEC, &[]);
    assert_eq!(result, Ok(Settled::InProgress));
    assert_eq!(store.documents(), before);
    // A "not found" given proves no absence, however late.
    let given = given_as(1, ProviderAnswer::NotFound);
    let (result, trace, _) = settle_at(&mut store, job(given), T0 + 400 * SEC, &[]);
    assert_eq!(result, Ok(Settled::NotFound));
    assert_eq!(trace.steps, ["read"], "no lease taken");
    assert_eq!(store.documents(), before);
    // Another account: nothing asked, nothing written.
    let other = ProviderAccount::new("stub", "acct_other", "test").expect("account");
    let owner = recovery_owner(&hash(), &fresh_lease());
    let elsewhere = Settle::taking(hash(), owner, Some(other), Source::Lookup);
    let (result, _, asked) = settle_at(&mut store, elsewhere, T0 + 400 * SEC, &[]);
    assert_eq!((result, asked), (Ok(Settled::OtherAccount), 0));
    assert_eq!(store.documents(), before);
    // A job never sends: a send's answer is refused before anything is read.
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Succeeded(envelope()),
    };
    let (result, trace, _) = settle_at(&mut store, job(sent), T0 + 400 * SEC, &[]);
    assert!(matches!(result, Err(JournalError::Internal { .. })));
    assert!(trace.steps.is_empty());
}

#[test]
fn a_lease_that_passes_the_margin_asks_the_provider_nothing() {
    let mut store = Store::new();
    client_permitted(&mut store, T0);
    let (owner, lease) = client_permitted(&mut store, CUTOFF - 5 * SEC);
    // Cutoff passed, 55 s left: a lookup. 10.5 s left: too little after the margin.
    let (result, _, asked) = settle_at(
        &mut store,
        under(&owner, lease, Source::Lookup),
        CUTOFF + 44 * SEC + SEC / 2,
        &[],
    );
    assert_eq!((result, asked), (Ok(Settled::LeaseEnding), 0));
    assert_eq!(
        lease.retry_after(Now::unstepped(at(CUTOFF + 44 * SEC + SEC / 2))),
        std::time::Duration::from_secs(11)
    );
}

#[test]
fn a_program_answered_out_of_turn_ends_with_an_internal_error() {
    let mut settle = job(Source::Lookup);
    assert!(matches!(
        settle.next(
            crate::call::Answered::LookedUp(ProviderAnswer::NotFound),
            Now::unstepped(at(T0))
        ),
        Err(JournalError::Internal { .. })
    ));
    // Its first read asked, a send's answer is out of turn too.
    let mut settle = job(Source::Lookup);
    assert!(matches!(
        settle.next(crate::call::Answered::Nothing, Now::unstepped(at(T0))),
        Ok(crate::call::Next::Run(_))
    ));
    assert!(matches!(
        settle.next(
            crate::call::Answered::Sent(ProviderAnswer::Declined),
            Now::unstepped(at(T0))
        ),
        Err(JournalError::Internal { .. })
    ));
}

#[test]
fn a_senders_charge_for_an_attempt_moved_on_is_recorded_late_while_another_holds_the_lease() {
    // The sender of attempt 1 pauses past its lease with a charge in hand; attempt 1 is
    // proven absent meanwhile and another holder opens attempt 2 under a new key.
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let (result, _, _) = settle_at(
        &mut store,
        job(Source::Lookup),
        T0 + 400 * SEC,
        &[ProviderAnswer::NotFound, ProviderAnswer::NotFound],
    );
    assert_eq!(result, Ok(Settled::Absent));
    client_permitted(&mut store, T0 + 470 * SEC);
    let send = state(&mut store, T0 + 471 * SEC).send.expect("send");
    assert_eq!((send.attempt.get(), send.state), (2, AttemptState::Sending));
    // The charge for attempt 1's key heard now, while attempt 2's holder runs: the
    // command can no longer take it, and no one else holds it (attempt 1 is never
    // looked up again): recorded as a late charge, not dropped.
    let late = crate::sends::late::path(&hash(), AttemptNumber::FIRST);
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Succeeded(envelope()),
    };
    let (result, _, _) = settle_at(&mut store, under(&owner, lease, sent), T0 + 472 * SEC, &[]);
    assert_eq!(result, Ok(Settled::LateCharge(None)));
    assert!(store.get(&late).is_some(), "the late charge is recorded");
    // A charge for the attempt the running holder is settling is its own to record:
    // nothing late, in progress.
    let before = store.documents();
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::new(2).expect("two"),
        answer: ProviderAnswer::Succeeded(envelope()),
    };
    let (result, _, _) = settle_at(&mut store, under(&owner, lease, sent), T0 + 473 * SEC, &[]);
    assert_eq!(result, Ok(Settled::InProgress));
    assert_eq!(store.documents(), before, "nothing written");
}

#[test]
fn no_next_key_is_issued_for_an_attempt_the_provider_charged_after_its_absence() {
    // The sender of attempt 1 pauses past its lease with a charge in hand; attempt 1 is
    // proven absent meanwhile, and no attempt 2 is open yet.
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let (result, _, _) = settle_at(
        &mut store,
        job(Source::Lookup),
        T0 + 400 * SEC,
        &[ProviderAnswer::NotFound, ProviderAnswer::NotFound],
    );
    assert_eq!(result, Ok(Settled::Absent));
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Succeeded(envelope()),
    };
    let (result, _, _) = settle_at(&mut store, under(&owner, lease, sent), T0 + 470 * SEC, &[]);
    assert_eq!(result, Ok(Settled::LateCharge(None)));
    assert!(
        store
            .get(&crate::sends::late::path(&hash(), AttemptNumber::FIRST))
            .is_some()
    );
    // The journal knows the customer was charged under attempt 1's key: the next
    // holder is refused a permit for attempt 2 (a second charge), nothing written.
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    let now = T0 + 540 * SEC;
    let started = run(
        &mut store,
        Start::new(identity(), owner.clone(), at(now)),
        now,
    );
    let lease = Held::of(started.expect("start").lease, Now::unstepped(at(now))).expect("lease");
    let before = store.documents();
    let call = LeaseCall::new(identity(), owner, at(now));
    let began = run(&mut store, BeginSend::new(call, lease.fence, plan()), now);
    assert_eq!(began, Err(JournalError::SendCutoffPassed));
    assert_eq!(store.documents(), before, "no attempt 2");
    let send = state(&mut store, now).send.expect("send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Absent)
    );
}

/// Attempt 1 sent at `T0` and proven absent by a job at `T0 + 400 s`.
fn first_attempt_absent(store: &mut Store) {
    client_permitted(store, T0);
    let (result, _, _) = settle_at(
        store,
        job(Source::Lookup),
        T0 + 400 * SEC,
        &[ProviderAnswer::NotFound, ProviderAnswer::NotFound],
    );
    assert_eq!(result, Ok(Settled::Absent));
}

fn late_charge(store: &Store, n: i64) -> bool {
    let attempt = AttemptNumber::new(n).expect("attempt");
    store
        .get(&crate::sends::late::path(&hash(), attempt))
        .is_some()
}

#[test]
fn an_earlier_attempts_charge_given_while_the_next_is_open_is_late_never_its_success() {
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    let (owner, lease) = client_permitted(&mut store, T0 + 470 * SEC);
    // Attempt 1's charge, given to a job and to attempt 2's holder: a late charge under
    // attempt 1, attempt 2 left open.
    let charge = || given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, trace, asked) = settle_at(&mut store, job(charge()), T0 + 471 * SEC, &[]);
    assert_eq!((result, asked), (Ok(Settled::LateCharge(None)), 0));
    assert_eq!(
        trace.began,
        ["journal.recover", "journal.record_late_charge"]
    );
    assert!(late_charge(&store, 1), "attempt 1's late charge");
    let before = store.documents();
    let settle = under(&owner, lease, charge());
    let (result, _, _) = settle_at(&mut store, settle, T0 + 472 * SEC, &[]);
    assert_eq!(result, Ok(Settled::LateCharge(None)), "recorded already");
    assert_eq!(store.documents(), before, "nothing written twice");
    let send = state(&mut store, T0 + 473 * SEC).send.expect("send");
    assert_eq!((send.attempt.get(), send.state), (2, AttemptState::Sending));
    // Attempt 2's own charge is then its success, not refused.
    let own = given_as(2, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(&mut store, under(&owner, lease, own), T0 + 474 * SEC, &[]);
    assert_eq!(result, Ok(Settled::Succeeded(Some(envelope()))));
    let after = state(&mut store, T0 + 475 * SEC);
    assert_eq!(after.command.state, CommandState::Succeeded);
    assert!(
        !late_charge(&store, 2),
        "attempt 2's charge is the command's own"
    );
}

#[test]
fn a_charge_given_for_the_current_attempt_recorded_absent_is_recorded_late() {
    // No attempt is open: a job and a caller both met "nothing open" before.
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    let charge = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(&mut store, job(charge), T0 + 470 * SEC, &[]);
    assert_eq!(result, Ok(Settled::LateCharge(None)));
    assert!(late_charge(&store, 1));
    let send = state(&mut store, T0 + 471 * SEC).send.expect("send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Absent)
    );
    // A caller's lease over the same command: the same late charge, written once.
    let (owner, lease) = client_leased(&mut store, T0 + 480 * SEC);
    let before = store.documents();
    let charge = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(
        &mut store,
        under(&owner, lease, charge),
        T0 + 481 * SEC,
        &[],
    );
    assert_eq!(result, Ok(Settled::LateCharge(None)));
    assert_eq!(store.documents(), before);
}

#[test]
fn a_charge_given_after_the_command_ended_without_it_is_recorded_late() {
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let sent = Source::Sent {
        resend: false,
        attempt: AttemptNumber::FIRST,
        answer: ProviderAnswer::Declined,
    };
    let (result, _, _) = settle_at(&mut store, under(&owner, lease, sent), T0 + SEC, &[]);
    assert_eq!(result, Ok(Settled::Declined));
    // A refusal given again writes nothing.
    let before = store.documents();
    let declined = given_as(1, ProviderAnswer::Declined);
    let (result, _, _) = settle_at(&mut store, job(declined), T0 + 100 * SEC, &[]);
    assert_eq!(result, Ok(Settled::Ended(CommandState::FailedFinal)));
    assert_eq!(store.documents(), before);
    // A charge for the declined attempt's key: recorded late, the command as it ended.
    let charge = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(&mut store, job(charge), T0 + 101 * SEC, &[]);
    assert_eq!(
        result,
        Ok(Settled::LateCharge(Some(TerminalOutput::FailedFinal)))
    );
    assert!(late_charge(&store, 1));
    assert_eq!(
        state(&mut store, T0 + 102 * SEC).command.state,
        CommandState::FailedFinal
    );
}

#[test]
fn a_key_of_no_attempt_of_the_command_is_refused_without_writing() {
    let refused = Err(JournalError::invalid("providerIdempotencyKey"));
    let other_operation = {
        let operation = crate::identity::OperationSlug::parse("refund").expect("slug");
        crate::sends::plan::attempt_key(&identity(), &operation, AttemptNumber::FIRST)
    };
    let other_command = {
        let other = CommandInput::new(CommandRequest {
            command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1f",
            ..request()
        })
        .expect("valid command");
        crate::sends::plan::attempt_key(&other.identity(), plan().operation(), AttemptNumber::FIRST)
    };
    let mut store = Store::new();
    let (owner, lease) = client_permitted(&mut store, T0);
    let before = store.documents();
    // A later attempt's key, another operation's, another command's, none at all.
    for key in [key(2), other_operation, other_command, String::new()] {
        let given = || {
            Source::Given(Given {
                key: key.clone(),
                answer: ProviderAnswer::Succeeded(envelope()),
                indexed: None,
                read_at: None,
            })
        };
        let (result, _, _) = settle_at(&mut store, job(given()), T0 + 61 * SEC, &[]);
        assert_eq!(result, refused);
        let (result, _, _) = settle_at(&mut store, under(&owner, lease, given()), T0 + SEC, &[]);
        assert_eq!(result, refused);
        assert_eq!(store.documents(), before, "nothing written");
    }
    // No plan bound yet: no attempt has a key.
    let mut store = Store::new();
    let owner = input()
        .lease_owner(&identity(), &fresh_lease())
        .expect("owner");
    run(&mut store, Start::new(identity(), owner, at(T0)), T0).expect("start");
    let before = store.documents();
    let charge = given_as(1, ProviderAnswer::Succeeded(envelope()));
    let (result, _, _) = settle_at(&mut store, job(charge), T0 + 61 * SEC, &[]);
    assert_eq!(result, refused);
    assert_eq!(store.documents(), before);
}

#[test]
fn other_answers_for_an_attempt_no_longer_open_write_nothing() {
    let answers = [
        ProviderAnswer::Declined,
        ProviderAnswer::NotFound,
        ProviderAnswer::Unknown,
    ];
    // Attempt 1 recorded absent, then attempt 2 open.
    let mut store = Store::new();
    first_attempt_absent(&mut store);
    let before = store.documents();
    for answer in answers.clone() {
        let given = given_as(1, answer.clone());
        let (result, _, _) = settle_at(&mut store, job(given), T0 + 401 * SEC, &[]);
        assert_eq!(result, Ok(Settled::NothingOpen), "{answer:?}");
    }
    assert_eq!(store.documents(), before);
    let (owner, lease) = client_permitted(&mut store, T0 + 470 * SEC);
    let before = store.documents();
    for answer in answers {
        let given = || given_as(1, answer.clone());
        let (result, _, _) = settle_at(&mut store, job(given()), T0 + 471 * SEC, &[]);
        assert_eq!(result, Ok(Settled::NothingOpen), "{answer:?}");
        let settle = under(&owner, lease, given());
        let (result, _, _) = settle_at(&mut store, settle, T0 + 472 * SEC, &[]);
        assert_eq!(result, Ok(Settled::NothingOpen), "{answer:?}");
    }
    assert_eq!(store.documents(), before);
    assert!(!late_charge(&store, 1));
}

#[test]
fn the_debug_of_an_answer_given_never_shows_its_key() {
    let canary = "cj1-CANARYkey";
    let source = Source::Given(Given {
        key: canary.to_owned(),
        answer: ProviderAnswer::Declined,
        indexed: None,
        read_at: None,
    });
    let shown = format!("{source:?} {:?}", job(source.clone()));
    assert!(!shown.contains("CANARY"), "{shown}");
    assert!(shown.contains("Declined"), "{shown}");
    let derived = key(1);
    let shown = format!("{:?}", job(given_as(1, ProviderAnswer::Declined)));
    assert!(!shown.contains(&derived), "{shown}");
}

#[test]
fn a_customers_answer_or_a_closed_object_is_no_verdict_until_the_core_weighs_them() {
    // Looked up by a job, long past the settle window, or given: nothing written, no
    // lease taken, never an absence.
    for answer in [
        ProviderAnswer::Closed,
        ProviderAnswer::CustomerMustAct(crate::sends::CustomerAction::Open {
            url: crate::sends::Handoff::new("https://pay.example/CANARYpage"),
        }),
    ] {
        let mut store = Store::new();
        client_permitted(&mut store, T0);
        let before = store.documents();
        let looked_up = [answer.clone(), answer.clone()];
        let (result, trace, asked) =
            settle_at(&mut store, job(Source::Lookup), T0 + 400 * SEC, &looked_up);
        assert_eq!((result, asked), (Ok(Settled::Unavailable), 1), "{answer:?}");
        assert_eq!(trace.steps, ["read", "lookup"], "{answer:?}");
        let (result, _, _) = settle_at(&mut store, job(given_as(1, answer)), T0 + 400 * SEC, &[]);
        assert_eq!(result, Ok(Settled::Unavailable));
        assert_eq!(store.documents(), before);
    }
}

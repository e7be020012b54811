//! The recovery program driven through the call machine over the in-memory store, as
//! the library's driver drives it against Firestore: a crash after the send settles
//! from the provider's evidence with nothing of the raw command; nothing is written
//! without evidence; a running lease, a settled command and a broken registration are
//! answered as such; a "not found" is recorded only at the plan's own account, from
//! the instant the absence is provable, and a job for another account asks nothing.

use super::owner::recovery_owner;
use super::program::RecoveryProgram;
use super::*;
use crate::call::{CallOptions, Concurrency, Input, Io};
use crate::digest::Digest;
use crate::document::{audit, root};
use crate::envelope::ResultEnvelope;
use crate::error::JournalError;
use crate::fence::FenceEpoch;
use crate::identity::{CommandIdentity, CommandInput, CommandRequest, LeaseId};
use crate::lease::{CommandCall, LeaseCall};
use crate::lease::{CommandState, LeaseOutput};
use crate::sends::begin::BeginSend;
use crate::sends::provider::ProviderAnswer;
use crate::sends::record::Record;
use crate::sends::status::SendStatusRead;
use crate::sends::{AttemptNumber, AttemptState, ProviderAccount};
use crate::sends::{BeginSendOutput, CommandStatus, ProviderPlan, ProviderPlanRequest};
use crate::settle::registered::RegisteredIdentity;
use crate::start::Start;
use crate::testing::CallTrace;
use crate::testing::{Store, fresh_lease};
use crate::time::Timestamp;
use serde_json::json;
use std::cell::Cell;
use std::num::NonZeroU32;

const T0: i64 = 1_800_000_000_123_456;
const SEC: i64 = 1_000_000;

fn input() -> CommandInput {
    CommandInput::new(CommandRequest {
        environment: "test",
        caller_scope_kind: "member",
        caller_id: "CANARYcaller",
        command_id: "ca1a0000-c0de-4bad-8eed-00000000ca1c",
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &json!({"sku": "CANARYsku"}),
    })
    .expect("valid command")
}

fn plan() -> ProviderPlan {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_recovery",
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

fn hash() -> Digest {
    input().identity().command_key_hash().clone()
}

fn envelope() -> ResultEnvelope {
    ResultEnvelope::new(&json!({"id": "ch_CANARY1", "status": "succeeded"})).expect("envelope")
}

/// A client that started the command at `T0`, was permitted attempt 1 and crashed
/// during the send: the attempt is `sending`, its lease expires at `T0 + 60 s`.
fn crashed_mid_send(store: &mut Store) -> String {
    client_sends(store, &plan(), T0)
}

/// A client that takes the lease at `now` (over an expired one) and is permitted to
/// send `plan`'s current attempt: its key.
fn client_sends(store: &mut Store, plan: &ProviderPlan, now: i64) -> String {
    let input = input();
    let identity = input.identity();
    let lease = fresh_lease();
    let owner = input.lease_owner(&identity, &lease).expect("owner");
    let started = store
        .answer(&Start::new(identity.clone(), owner.clone(), at(now)))
        .expect("start");
    let LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
        panic!("{started:?}");
    };
    let call = LeaseCall::new(identity, owner, at(now));
    match store
        .answer(&BeginSend::new(call, fence_epoch, plan.clone()))
        .expect("begin_send")
    {
        BeginSendOutput::Permitted(permit) => permit.provider_idempotency_key,
        other => panic!("{other:?}"),
    }
}

/// The plan with a lookup that sees a charge at once (no settle window).
fn prompt_plan() -> ProviderPlan {
    plan()
        .with_lookup(crate::sends::ProviderLookup::KeyStore, 0)
        .expect("fits")
}

/// What happens to the journal while a lookup is out (another client).
type Meanwhile = Box<dyn FnOnce(&mut Store)>;

/// What the provider answers each lookup, and the keys it was asked.
struct Provider {
    answers: Vec<ProviderAnswer>,
    asked: Vec<String>,
    /// What happens to the journal while the first lookup is out.
    meanwhile: Option<Meanwhile>,
}

impl Provider {
    fn answering(answers: Vec<ProviderAnswer>) -> Self {
        Self {
            answers,
            asked: Vec::new(),
            meanwhile: None,
        }
    }
}

/// The account the plan sends to, as a job declares it.
fn account() -> ProviderAccount {
    ProviderAccount::new("stub", "acct_recovery", "test").expect("valid account")
}

/// The recovery of the command by a job that declares the plan's own account, every
/// step at `now`.
fn recover(
    store: &mut Store,
    provider: &mut Provider,
    now: i64,
) -> Result<Recovered, JournalError> {
    drive(store, provider, Some(account()), now, now)
}

/// The recovery of the command by a job declaring `account`: the first read at
/// `read_at`, every step after the first lookup (the confirming read included) at
/// `write_at`.
fn drive(
    store: &mut Store,
    provider: &mut Provider,
    account: Option<ProviderAccount>,
    read_at: i64,
    write_at: i64,
) -> Result<Recovered, JournalError> {
    traced(store, provider, account, &[read_at, write_at], |_, _| None).0
}

/// [`drive`], the clock at `times[n]` once `n` lookups were answered (the last time
/// thereafter), `hook` seeing every step first (with the store) as the machine's
/// in-memory driver lets it.
fn traced(
    store: &mut Store,
    provider: &mut Provider,
    account: Option<ProviderAccount>,
    times: &[i64],
    mut hook: impl FnMut(&mut Store, &Io<Recovered, u64>) -> Option<Input<u64>>,
) -> (Result<Recovered, JournalError>, CallTrace) {
    let owner = recovery_owner(&hash(), &fresh_lease());
    let program = RecoveryProgram::new(hash(), owner, account);
    let options = CallOptions {
        concurrency: Concurrency::Preconditions,
        attempts: NonZeroU32::new(10).expect("ten"),
        fast_paths: true,
        deadline: None,
    };
    let looked_up = Cell::new(0);
    let clock = || at(times[looked_up.get().min(times.len() - 1)]);
    store.call_with_clock(program, options, clock, |store, io| {
        if let Some(input) = hook(store, io) {
            return Some(input);
        }
        let Io::Lookup(request) = io else {
            return None;
        };
        looked_up.set(looked_up.get() + 1);
        provider.asked.push(request.key.clone());
        if let Some(meanwhile) = provider.meanwhile.take() {
            meanwhile(store);
        }
        Some(Input::LookedUp(if provider.answers.is_empty() {
            ProviderAnswer::Unknown
        } else {
            provider.answers.remove(0)
        }))
    })
}

fn state(store: &mut Store, now: i64) -> CommandStatus {
    store
        .answer(&SendStatusRead::new(CommandCall::new(
            input().identity(),
            at(now),
        )))
        .expect("status")
}

#[test]
fn the_registered_identity_is_the_commands_own() {
    let mut store = Store::new();
    assert_eq!(
        store.answer(&RegisteredIdentity::new(hash(), at(T0))).err(),
        Some(JournalError::NotRegistered)
    );
    crashed_mid_send(&mut store);
    let registered = store
        .answer(&RegisteredIdentity::new(hash(), at(T0 + SEC)))
        .expect("identity");
    let identity: CommandIdentity = registered.identity;
    assert_eq!(identity, input().identity());
    // The same batch answers the send status, as `send_status` does.
    assert_eq!(registered.status, state(&mut store, T0 + SEC));

    // A root without its revision-1 event, or with a forged field, fails closed.
    let event = store.remove(&audit::path(&hash(), 1)).expect("event");
    assert!(matches!(
        store.answer(&RegisteredIdentity::new(hash(), at(T0))),
        Err(JournalError::JournalCorrupt { .. })
    ));
    store.insert(audit::path(&hash(), 1), event);
    store.forge(&root::path(&hash())).expect("root").insert(
        "commandType".into(),
        crate::document::fields::string("refund"),
    );
    assert!(matches!(
        store.answer(&RegisteredIdentity::new(hash(), at(T0))),
        Err(JournalError::JournalCorrupt { .. })
    ));
}

#[test]
fn the_recovery_owner_is_its_own_domain() {
    let input = input();
    let lease = LeaseId::parse("7d1c9e0a-1111-4222-8333-444455556666").expect("lease");
    let client = input.lease_owner(&input.identity(), &lease).expect("owner");
    assert_ne!(recovery_owner(&hash(), &lease), client);
    assert_eq!(
        recovery_owner(&hash(), &lease),
        recovery_owner(&hash(), &lease)
    );
    assert_ne!(
        recovery_owner(&hash(), &lease),
        recovery_owner(&hash(), &fresh_lease())
    );
}

#[test]
fn a_charge_found_after_a_crash_settles_the_command_with_its_result() {
    let mut store = Store::new();
    let key = crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    let recovered = recover(&mut store, &mut provider, T0 + 61 * SEC).expect("recover");
    assert_eq!(recovered, Recovered::Succeeded);
    assert_eq!(provider.asked, [key], "the attempt's own key, once");
    let status = state(&mut store, T0 + 62 * SEC);
    assert_eq!(status.command.state, CommandState::Succeeded);
    assert_eq!(status.send.map(|s| s.state), Some(AttemptState::Succeeded));
    let stored = store
        .answer(&crate::envelope::read::ResultRead::new(CommandCall::new(
            input().identity(),
            at(T0 + 62 * SEC),
        )))
        .expect("result");
    assert_eq!(stored, Some(envelope()));
    // Takeover (revision 3) and the terminal transition (revision 4).
    assert!(store.contains_key(&audit::path(&hash(), 4)));
    assert!(!store.contains_key(&audit::path(&hash(), 5)));

    // Once more: already settled, nothing asked.
    let mut again = Provider::answering(vec![]);
    assert_eq!(
        recover(&mut store, &mut again, T0 + 63 * SEC),
        Ok(Recovered::AlreadySettled)
    );
    assert!(again.asked.is_empty());
}

#[test]
fn a_decline_found_fails_the_command_for_good() {
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Declined]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 61 * SEC),
        Ok(Recovered::Declined)
    );
    assert_eq!(
        state(&mut store, T0 + 62 * SEC).command.state,
        CommandState::FailedFinal
    );
}

#[test]
fn nothing_is_written_without_evidence() {
    for answer in [ProviderAnswer::Unknown, ProviderAnswer::NotFound] {
        let mut store = Store::new();
        crashed_mid_send(&mut store);
        let before = store.documents();
        let mut provider = Provider::answering(vec![answer.clone()]);
        let expected = match answer {
            ProviderAnswer::NotFound => Recovered::NotFound,
            _ => Recovered::LookupUnavailable,
        };
        // Right after the lease: the absence is not provable yet.
        assert_eq!(
            recover(&mut store, &mut provider, T0 + 61 * SEC),
            Ok(expected)
        );
        assert_eq!(store.documents(), before, "{answer:?} wrote");
    }
}

/// A client that started at `T0`, was permitted attempt 1 and heard the provider
/// replay the key's stored unknown answer, which it recorded: the key's.
fn client_heard_a_replay(store: &mut Store) -> String {
    client_heard(store, crate::sends::provider::Closing::ReplayedUnknown)
}

/// A client that started at `T0`, was permitted attempt 1 and recorded `heard`, an
/// unknown outcome: the key's.
fn client_heard(store: &mut Store, heard: crate::sends::provider::Closing) -> String {
    client_heard_under(store, heard, &plan())
}

/// [`client_heard`] under `plan`.
fn client_heard_under(
    store: &mut Store,
    heard: crate::sends::provider::Closing,
    plan: &ProviderPlan,
) -> String {
    let input = input();
    let identity = input.identity();
    let lease = fresh_lease();
    let owner = input.lease_owner(&identity, &lease).expect("owner");
    let started = store
        .answer(&Start::new(identity.clone(), owner.clone(), at(T0)))
        .expect("start");
    let LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
        panic!("{started:?}");
    };
    let call = LeaseCall::new(identity.clone(), owner.clone(), at(T0));
    let BeginSendOutput::Permitted(permit) = store
        .answer(&BeginSend::new(call, fence_epoch, plan.clone()))
        .expect("begin_send")
    else {
        panic!("no permit");
    };
    let call = LeaseCall::new(identity, owner, at(T0 + SEC));
    store
        .answer(&Record::outcome(
            call,
            fence_epoch,
            AttemptNumber::FIRST,
            heard,
            plan.clone(),
        ))
        .expect("recorded");
    permit.provider_idempotency_key
}

#[test]
fn a_replayed_unknown_is_looked_up_and_a_replay_from_the_lookup_proves_nothing() {
    use ProviderAnswer::{NotFound, ReplayedUnknown};
    // (when, the lookups' answers, the outcome, lookups asked, the state after)
    let usual = T0 + 361 * SEC;
    let cases = [
        // A replay from the lookup is no evidence.
        (
            T0 + 61 * SEC,
            vec![ReplayedUnknown],
            Recovered::LookupUnavailable,
            1,
        ),
        // Stripe may still complete a stored 500: a "not found" proves nothing, before
        // the usual window, after it, or days later; nothing is written.
        (T0 + 61 * SEC, vec![NotFound], Recovered::NotFound, 1),
        (usual, vec![NotFound], Recovered::NotFound, 1),
        (
            T0 + 3 * 86_400 * SEC,
            vec![NotFound],
            Recovered::NotFound,
            1,
        ),
        // A charge found settles it at once.
        (
            T0 + 61 * SEC,
            vec![ProviderAnswer::Succeeded(envelope())],
            Recovered::Succeeded,
            1,
        ),
    ];
    for (now, answers, outcome, asked) in cases {
        let mut store = Store::new();
        let key = client_heard_a_replay(&mut store);
        let before = store.documents();
        let mut provider = Provider::answering(answers.clone());
        assert_eq!(
            recover(&mut store, &mut provider, now),
            Ok(outcome),
            "{answers:?}"
        );
        assert_eq!(provider.asked, vec![key; asked], "{answers:?}");
        let send = state(&mut store, now).send.expect("send");
        let expected = match outcome {
            Recovered::Absent => AttemptState::Absent,
            Recovered::Succeeded => AttemptState::Succeeded,
            _ => AttemptState::ReplayedUnknown,
        };
        assert_eq!(
            (send.attempt, send.state),
            (AttemptNumber::FIRST, expected),
            "{answers:?}"
        );
        if asked == 1 && !outcome.settled() {
            assert_eq!(store.documents(), before, "{answers:?} wrote");
        }
    }
}

#[test]
fn an_ambiguous_attempt_is_looked_up_and_left_alone_only_with_the_rule_reverted() {
    use crate::sends::reverted::{Rule, with_reverted};
    let mut store = Store::new();
    let key = client_heard(&mut store, crate::sends::provider::Closing::Ambiguous);
    let before = store.documents();
    // Reverted (the soak's planted defect), the job asks nothing and writes nothing.
    let mut skipped = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    let recovered = with_reverted(&[Rule::RecoveryLooksUpAmbiguous], || {
        recover(&mut store, &mut skipped, T0 + 61 * SEC)
    });
    assert_eq!(recovered, Ok(Recovered::NothingToLookUp));
    assert!(skipped.asked.is_empty());
    assert_eq!(store.documents(), before);
    // The rule on, the charge is found and settles the command.
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 61 * SEC),
        Ok(Recovered::Succeeded)
    );
    assert_eq!(provider.asked, [key]);
}

#[test]
fn without_the_settle_window_an_absence_is_recorded_at_the_leases_end() {
    use crate::sends::reverted::{Rule, with_reverted};
    // 61 s after the send: the lease has ended, the settle window (300 s) has not.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 61 * SEC),
        Ok(Recovered::NotFound)
    );
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    let recovered = with_reverted(&[Rule::SettleWindow], || {
        recover(&mut store, &mut provider, T0 + 61 * SEC)
    });
    assert_eq!(recovered, Ok(Recovered::Absent));
}

#[test]
fn a_running_lease_is_left_to_its_holder() {
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let before = store.documents();
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 30 * SEC),
        Ok(Recovered::InProgress)
    );
    assert_eq!(store.documents(), before);
}

#[test]
fn a_command_that_never_sent_has_nothing_to_look_up() {
    let mut store = Store::new();
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, &fresh_lease()).expect("owner");
    store
        .answer(&Start::new(identity, owner, at(T0)))
        .expect("start");
    let before = store.documents();
    let mut provider = Provider::answering(vec![]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 61 * SEC),
        Ok(Recovered::NothingToLookUp)
    );
    assert!(provider.asked.is_empty());
    assert_eq!(store.documents(), before);
}

#[test]
fn a_not_found_at_the_plans_account_records_the_absence_once_provable() {
    // Provable from the lease's end (60 s) plus the settle window (300 s), until the
    // key store's retention (24 h) ends.
    for late in [361 * SEC, 20 * 3600 * SEC] {
        let mut store = Store::new();
        let key = crashed_mid_send(&mut store);
        let mut provider =
            Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
        assert_eq!(
            recover(&mut store, &mut provider, T0 + late),
            Ok(Recovered::Absent)
        );
        // Once before the lease, once under it.
        assert_eq!(provider.asked, [key.clone(), key.clone()]);
        let send = state(&mut store, T0 + late).send.expect("send");
        assert_eq!(
            (send.attempt, send.state),
            (AttemptNumber::FIRST, AttemptState::Absent)
        );
        // The takeover (revision 3) and the absence, nothing else: the command stays
        // leased, for its client to open the next attempt.
        assert!(store.contains_key(&audit::path(&hash(), 3)));
        assert!(!store.contains_key(&audit::path(&hash(), 4)));
        let status = state(&mut store, T0 + late);
        assert_eq!(status.command.state, CommandState::Leased);

        // Recovered again: nothing to look up, nothing asked.
        let mut again = Provider::answering(vec![]);
        assert_eq!(
            recover(&mut store, &mut again, T0 + late + 61 * SEC),
            Ok(Recovered::NothingToLookUp)
        );
        assert!(again.asked.is_empty());

        // The client's next call, once the job's lease ran out, opens attempt 2 under
        // a new key.
        let input = input();
        let identity = input.identity();
        let owner = input.lease_owner(&identity, &fresh_lease()).expect("owner");
        let now = at(T0 + late + 61 * SEC);
        let started = store
            .answer(&Start::new(identity.clone(), owner.clone(), now))
            .expect("start");
        let LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
            panic!("{started:?}");
        };
        let call = LeaseCall::new(identity, owner, now);
        match store
            .answer(&BeginSend::new(call, fence_epoch, plan()))
            .expect("begin_send")
        {
            BeginSendOutput::Permitted(permit) => {
                assert_eq!(permit.attempt, 2);
                assert_ne!(permit.provider_idempotency_key, key);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_not_found_that_proves_nothing_writes_nothing() {
    let other = ProviderAccount::new("stub", "acct_other", "test").expect("valid account");
    let live = ProviderAccount::new("stub", "acct_recovery", "live").expect("valid account");
    // (declared account, first read, later steps, the outcome, whether the provider
    // is asked)
    let cases = [
        // Before the settle window has passed since the lease that sent it.
        (Some(account()), 359, 359, Recovered::NotFound, true),
        // Looked up before then, even with the lease taken after it.
        (Some(account()), 359, 400, Recovered::NotFound, true),
        // Past the key store's retention: the provider may have forgotten the key.
        (
            Some(account()),
            24 * 3600,
            24 * 3600,
            Recovered::NotFound,
            true,
        ),
        (
            Some(account()),
            30 * 3600,
            30 * 3600,
            Recovered::NotFound,
            true,
        ),
        // No account declared: the job cannot prove where it asked, however late.
        (None, 400, 400, Recovered::NotFound, true),
        (None, 20 * 3600, 20 * 3600, Recovered::NotFound, true),
        // Another account, or another mode: nothing asked at all.
        (Some(other), 400, 400, Recovered::OtherAccount, false),
        (Some(live), 400, 400, Recovered::OtherAccount, false),
    ];
    for (declared, read, write, expected, asked) in cases {
        let (read, late) = (read * SEC, write * SEC);
        let mut store = Store::new();
        crashed_mid_send(&mut store);
        let before = store.documents();
        let mut provider = Provider::answering(vec![ProviderAnswer::NotFound]);
        assert_eq!(
            drive(
                &mut store,
                &mut provider,
                declared.clone(),
                T0 + read,
                T0 + late
            ),
            Ok(expected),
            "{declared:?} at {read}, {late}"
        );
        assert_eq!(provider.asked.len(), usize::from(asked));
        assert_eq!(store.documents(), before, "{declared:?} at {late} wrote");
        let send = state(&mut store, T0 + late).send.expect("send");
        assert_eq!(
            (send.attempt, send.state),
            (AttemptNumber::FIRST, AttemptState::Sending)
        );
    }
}

#[test]
fn a_key_store_lookup_proves_no_absence_for_a_durable_plan() {
    use crate::sends::ProviderLookup::{Durable, FinalState, KeyStore};
    let durable = plan().with_lookup(Durable, 300).expect("fits");
    let final_state = plan().with_lookup(FinalState, 300).expect("fits");
    // (the plan's lookup, what the job declares its lookups answer from, how late,
    // the outcome)
    let cases = [
        // A listing of recent charges sees no further back than the key store: past
        // the key's retention its "not found" says nothing of a durable plan's charge.
        (Durable, Some(KeyStore), 30 * 3600, Recovered::NotFound),
        (Durable, Some(KeyStore), 400, Recovered::NotFound),
        // A durable lookup, or none declared (taken to answer as the plan says).
        (Durable, Some(Durable), 30 * 3600, Recovered::Absent),
        (Durable, None, 30 * 3600, Recovered::Absent),
        // A durable lookup covers a key-store plan, within its retention.
        (KeyStore, Some(Durable), 400, Recovered::Absent),
        (KeyStore, Some(KeyStore), 400, Recovered::Absent),
        // A plan whose provider may still complete what it never answered (Stripe's):
        // no lookup proves the unanswered attempt absent, whatever the job declares
        // and however late; its lookups still ask (a charge found settles it).
        (FinalState, None, 400, Recovered::NotFound),
        (FinalState, Some(Durable), 30 * 3600, Recovered::NotFound),
        (FinalState, Some(FinalState), 400, Recovered::NotFound),
    ];
    for (bound, declared, late, expected) in cases {
        let mut store = Store::new();
        let bound_plan = match bound {
            Durable => durable.clone(),
            FinalState => final_state.clone(),
            KeyStore => plan(),
        };
        let key = client_sends(&mut store, &bound_plan, T0);
        let before = store.documents();
        let job = match declared {
            Some(lookup) => account().with_lookup(lookup),
            None => account(),
        };
        let mut provider =
            Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
        let now = T0 + late * SEC;
        assert_eq!(
            drive(&mut store, &mut provider, Some(job), now, now),
            Ok(expected),
            "{bound:?} plan, {declared:?} job, at {late} s"
        );
        let send = state(&mut store, now).send.expect("send");
        if expected == Recovered::Absent {
            assert_eq!(provider.asked, [key.clone(), key]);
            assert_eq!(send.state, AttemptState::Absent);
        } else {
            assert_eq!(provider.asked, [key]);
            assert_eq!(store.documents(), before, "{declared:?} at {late} wrote");
            assert_eq!(send.state, AttemptState::Sending);
        }
    }
}

#[test]
fn another_account_is_refused_even_with_evidence() {
    // A job for another account asks nothing: a charge it would find there is not
    // this command's.
    let other = ProviderAccount::new("stub", "acct_other", "test").expect("valid account");
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let before = store.documents();
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    assert_eq!(
        drive(
            &mut store,
            &mut provider,
            Some(other),
            T0 + 61 * SEC,
            T0 + 61 * SEC
        ),
        Ok(Recovered::OtherAccount)
    );
    assert!(provider.asked.is_empty());
    assert_eq!(store.documents(), before);
}

#[test]
fn a_plan_bound_before_the_account_fingerprint_proves_no_absence() {
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    // The plan document as version 2 wrote it: no account fingerprint.
    let plan = store
        .forge(&crate::sends::bound_plan::path(&hash()))
        .expect("plan");
    plan.remove("accountFingerprint");
    plan.insert(
        "sendSchemaVersion".to_owned(),
        crate::document::fields::int(2),
    );
    let before = store.documents();
    for declared in [Some(account()), None] {
        let mut provider = Provider::answering(vec![ProviderAnswer::NotFound]);
        assert_eq!(
            drive(
                &mut store,
                &mut provider,
                declared,
                T0 + 400 * SEC,
                T0 + 400 * SEC
            ),
            Ok(Recovered::NotFound)
        );
        assert_eq!(store.documents(), before, "nothing written");
    }
    // Its evidence is still recorded.
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 400 * SEC),
        Ok(Recovered::Succeeded)
    );
}

#[test]
fn an_absence_provable_at_the_first_lookup_but_not_under_the_lease_writes_nothing() {
    // (A lookup that started before the absence was provable is a case of
    // `a_not_found_that_proves_nothing_writes_nothing`.)
    // The first lookup starts just before the key store's retention ends; the lease
    // is taken after it: under it the absence is no longer provable, so the second
    // lookup (which could still find a charge) proves nothing, and nothing is
    // recorded.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let before = store.documents();
    let retention = 24 * 3600 * SEC;
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    assert_eq!(
        drive(
            &mut store,
            &mut provider,
            Some(account()),
            T0 + retention - SEC,
            T0 + retention + SEC
        ),
        Ok(Recovered::NotFound)
    );
    assert_eq!(provider.asked.len(), 2);
    // The takeover is written (the lease was taken to confirm it) and its release
    // (the record beside the released lifecycle), the absence not.
    let send = state(&mut store, T0 + retention + SEC).send.expect("send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Sending)
    );
    assert_eq!(store.documents().len(), before.len() + 2);
    assert!(store.contains_key(&crate::document::release::path(
        &hash(),
        FenceEpoch::new(2).expect("fence")
    )));
    assert!(store.contains_key(&audit::path(&hash(), 3)));
    assert!(!store.contains_key(&audit::path(&hash(), 4)));
}

#[test]
fn a_not_found_is_confirmed_under_the_lease_so_a_resend_since_the_first_read_is_seen() {
    // A plan whose lookup sees a charge at once: an absence is provable from the end
    // of the lease that sent it.
    let plan = prompt_plan();
    let mut store = Store::new();
    let key = client_sends(&mut store, &plan, T0);
    // The job's first read, after that lease: the absence is provable. Meanwhile the
    // client comes back and re-sends the same key; its request has not reached the
    // provider when the job's first lookup arrives ("not found"). The job takes the
    // lease once the client's has run out (at T0 + 122 s), does not record its "not
    // found", reads and looks up again under it: the client's re-send was processed
    // before its lease ended, and the charge is found.
    let mut provider = Provider::answering(vec![
        ProviderAnswer::NotFound,
        ProviderAnswer::Succeeded(envelope()),
    ]);
    let mut resent = None;
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[T0 + 61 * SEC, T0 + 123 * SEC],
        |store, io| {
            if matches!(io, Io::Lookup(_)) && resent.is_none() {
                resent = Some(client_sends(store, &plan, T0 + 62 * SEC));
            }
            None
        },
    );
    assert_eq!(recovered, Ok(Recovered::Succeeded));
    assert_eq!(resent, Some(key.clone()), "the same key re-sent");
    assert_eq!(provider.asked, [key.clone(), key]);
    // The status read and the lookup under the lease; the re-send moved the send
    // record on, so each read follows it up to its latest event.
    assert_eq!(
        trace.steps,
        [
            "read", "lookup", "read", "commit", "read", "read", "lookup", "read", "read", "commit"
        ]
    );
    assert_eq!(
        state(&mut store, T0 + 124 * SEC).command.state,
        CommandState::Succeeded
    );
}

#[test]
fn an_absence_refused_at_the_commit_is_a_not_found() {
    // Provable at the first read and at the confirming read under the lease, not any
    // more at the commit (the key store's retention ran out meanwhile): nothing but
    // the takeover is written.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let retention = 24 * 3600 * SEC;
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    let times = [
        T0 + retention - 2 * SEC,
        T0 + retention - SEC,
        T0 + retention,
    ];
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &times,
        |_, _| None,
    );
    assert_eq!(recovered, Ok(Recovered::NotFound));
    assert_eq!(provider.asked.len(), 2);
    assert_eq!(
        trace.began,
        [
            "journal.recover",
            "journal.recover",
            "journal.acquire",
            "journal.recover",
            "journal.reconcile_send",
            "journal.release_lease"
        ]
    );
    let send = state(&mut store, T0 + retention).send.expect("send");
    assert_eq!(send.state, AttemptState::Sending);
    assert!(store.contains_key(&audit::path(&hash(), 3)));
    assert!(!store.contains_key(&audit::path(&hash(), 4)));
}

#[test]
fn a_second_recovery_holding_stale_evidence_loses_to_the_fence() {
    // Two jobs look up before either takes the lease; the first records; the
    // second's acquisition sees the command settled.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut late = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    let mut first_recovered = None;
    let (recovered, trace) = traced(
        &mut store,
        &mut late,
        Some(account()),
        &[T0 + 61 * SEC],
        |store, io| {
            if matches!(io, Io::Lookup(_)) && first_recovered.is_none() {
                let mut first = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
                first_recovered = Some(recover(store, &mut first, T0 + 61 * SEC));
            }
            None
        },
    );
    assert_eq!(first_recovered, Some(Ok(Recovered::Succeeded)));
    assert_eq!(recovered, Ok(Recovered::AlreadySettled));
    // The charge it holds is checked against the settled command: its own, so
    // nothing is late.
    assert_eq!(
        trace.began,
        [
            "journal.recover",
            "journal.recover",
            "journal.acquire",
            "journal.record_late_charge"
        ]
    );
    assert!(trace.metrics.iter().any(|metric| {
        metric.name == crate::transaction::OperationName::RecordLateCharge
            && metric.outcome == "own_charge"
    }));
    assert!(
        !store.contains_key(&crate::sends::late::path(&hash(), AttemptNumber::FIRST)),
        "no late charge"
    );
}

#[test]
fn outcomes_serialize_as_their_labels() {
    for outcome in Recovered::ALL {
        assert_eq!(
            serde_json::to_value(outcome).expect("json"),
            json!(outcome.as_str())
        );
    }
    assert!(Recovered::ALL.iter().filter(|o| o.settled()).count() == 3);
}

/// A charge found while another client ended the command without it (here: a decline
/// recorded for the same attempt meanwhile) is recorded as a late charge, never
/// dropped; found while the client settled it with that same charge, it is the
/// command's own.
#[test]
fn a_charge_found_for_a_command_that_ended_without_it_is_a_late_charge() {
    use crate::sends::late::{LateCharge, path};
    let ends = |answer: ProviderAnswer| -> Meanwhile {
        Box::new(move |store: &mut Store| {
            let input = input();
            let identity = input.identity();
            let lease = fresh_lease();
            let owner = input.lease_owner(&identity, &lease).expect("owner");
            let now = at(T0 + 61 * SEC);
            let started = store
                .answer(&Start::new(identity.clone(), owner.clone(), now))
                .expect("start");
            let LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
                panic!("{started:?}");
            };
            let call = LeaseCall::new(identity.clone(), owner, now);
            store
                .answer(&BeginSend::new(call.clone(), fence_epoch, plan()))
                .expect("a re-send");
            let (finding, envelope) = answer.closing(&identity);
            let op = Record::outcome(call, fence_epoch, AttemptNumber::FIRST, finding, plan());
            match envelope {
                None => store.answer(&op).expect("recorded"),
                Some(envelope) => store
                    .answer(&crate::envelope::record::WithResult::new(
                        op,
                        &hash(),
                        now,
                        envelope,
                    ))
                    .expect("recorded"),
            };
        })
    };
    // Declined meanwhile: the charge found is late.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    provider.meanwhile = Some(ends(ProviderAnswer::Declined));
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 62 * SEC),
        Ok(Recovered::LateCharge)
    );
    let doc = store
        .get(&path(&hash(), AttemptNumber::FIRST))
        .expect("the late charge");
    let late = LateCharge::parse(&hash(), AttemptNumber::FIRST, doc).expect("parses");
    assert_eq!(late.reason, crate::sends::LateReason::AttemptDeclined);
    let commitment = input()
        .identity()
        .terminal_commitment(&envelope().reference());
    assert_eq!(late.commitment, commitment);
    assert_eq!(
        state(&mut store, T0 + 63 * SEC).command.state,
        CommandState::FailedFinal
    );
    // Settled meanwhile with that same charge: the command's own, nothing late.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    provider.meanwhile = Some(ends(ProviderAnswer::Succeeded(envelope())));
    assert_eq!(
        recover(&mut store, &mut provider, T0 + 62 * SEC),
        Ok(Recovered::AlreadySettled)
    );
    assert!(store.get(&path(&hash(), AttemptNumber::FIRST)).is_none());
}

#[test]
fn a_recovery_jobs_planned_reconciliation_is_refused_when_a_stale_holder_wrote_before_its_takeover()
{
    // The client starts at T0 and is permitted attempt 1; its clock runs 61 s behind.
    let mut store = Store::new();
    let input = input();
    let identity = input.identity();
    let client = input.lease_owner(&identity, &fresh_lease()).expect("owner");
    store
        .answer(&Start::new(identity.clone(), client.clone(), at(T0)))
        .expect("start");
    let fence = FenceEpoch::stored(1);
    let call = LeaseCall::new(identity.clone(), client.clone(), at(T0));
    store
        .answer(&BeginSend::new(call, fence, plan()))
        .expect("begin_send");
    // The job found a charge and takes the lease over at T0 + 61 s; while its
    // takeover is in flight, the client, to whom its lease still runs, records an
    // ambiguous answer. The takeover lands after it; the job's reconciliation, planned
    // from what the takeover left known, is refused (the send record moved on), and
    // the job reads and records the charge over the client's ambiguous answer.
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    let mut wrote = false;
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[T0 + 61 * SEC],
        |store, io| {
            if matches!(io, Io::Commit { .. }) && !wrote {
                wrote = true;
                let late = LeaseCall::new(identity.clone(), client.clone(), at(T0 + 30 * SEC));
                let (unknown, _) = ProviderAnswer::Unknown.closing(late.identity());
                store
                    .answer(&Record::outcome(
                        late,
                        fence,
                        AttemptNumber::FIRST,
                        unknown,
                        plan(),
                    ))
                    .expect("the client's lease runs by its clock");
            }
            None
        },
    );
    assert_eq!(recovered, Ok(Recovered::Succeeded));
    assert_eq!(
        trace.steps,
        [
            "read", "lookup", "read", "commit", "planned", "wait_now", "read", "commit"
        ]
    );
    assert_eq!(
        state(&mut store, T0 + 62 * SEC).send.map(|s| s.state),
        Some(AttemptState::Succeeded)
    );
}

/// The run's lookup tally and the protocol class every lookup answer alike: exactly
/// those the tally counts unavailable end the command as `lookup_unavailable`, so a
/// run whose every command met an unavailable lookup is `provider_unavailable`.
#[test]
fn the_tally_counts_unavailable_exactly_the_lookups_the_protocol_ends_unavailable() {
    use crate::recovery::schedule::Lookups;
    for answer in [
        ProviderAnswer::Unknown,
        ProviderAnswer::ReplayedUnknown,
        ProviderAnswer::NotFound,
        ProviderAnswer::Declined,
        ProviderAnswer::Succeeded(envelope()),
    ] {
        let mut store = Store::new();
        crashed_mid_send(&mut store);
        let mut provider = Provider::answering(vec![answer.clone()]);
        let outcome = recover(&mut store, &mut provider, T0 + 61 * SEC);
        assert_eq!(
            outcome == Ok(Recovered::LookupUnavailable),
            !Lookups::is_answer(&answer),
            "{answer:?}: {outcome:?}"
        );
    }
}

/// A customer who never came back: before the customer's window (the attempt's stored
/// cutoff) ends, a job only reads the object by id (no lease taken, no cancel, nothing
/// written while the object waits; a closed one, closed by the provider or the
/// customer, is recorded under a lease taken then); once the window ended, the job takes the lease first and reads under it with
/// `cancel`, so the payment the customer abandoned ends by itself: the closed object
/// fails the command with nothing charged; an object still waiting (the cancel did not
/// take) leaves it waiting, under the job's lease.
#[test]
fn a_job_cancels_an_abandoned_customers_object_only_under_a_lease_once_its_window_ended() {
    use crate::sends::customer::{ActionName, CustomerAction, Handoff};
    use crate::sends::provider::Closing;
    let action = || {
        ProviderAnswer::CustomerMustAct(CustomerAction::Confirm {
            client_secret: Handoff::new("pi_1_secret_canary"),
            next_action: ActionName::new("use_stripe_sdk").expect("name"),
        })
    };
    let cutoff = {
        let mut store = Store::new();
        client_heard(&mut store, Closing::AwaitingCustomer);
        let send = state(&mut store, T0 + SEC).send.expect("send");
        assert_eq!(send.state, AttemptState::AwaitingCustomer);
        send.send_cutoff_at
    };
    let micros = |t: Timestamp| t.micros();
    // (when, the read's answer, the outcome, cancel asked, the fence while reading,
    // the command's state after)
    let cases = [
        (
            T0 + 61 * SEC,
            action(),
            Recovered::AwaitingCustomer,
            false,
            1,
            CommandState::Leased,
        ),
        (
            micros(cutoff) - 1,
            ProviderAnswer::Closed,
            Recovered::Declined,
            false,
            1,
            CommandState::FailedFinal,
        ),
        (
            micros(cutoff),
            ProviderAnswer::Closed,
            Recovered::Declined,
            true,
            2,
            CommandState::FailedFinal,
        ),
        (
            micros(cutoff),
            action(),
            Recovered::AwaitingCustomer,
            true,
            2,
            CommandState::Leased,
        ),
        (
            micros(cutoff) + 3_600 * SEC,
            ProviderAnswer::Succeeded(envelope()),
            Recovered::Succeeded,
            true,
            2,
            CommandState::Succeeded,
        ),
    ];
    for (now, answer, outcome, cancel, fence_reading, after) in cases {
        let mut store = Store::new();
        let key = client_heard(&mut store, Closing::AwaitingCustomer);
        let before = store.documents();
        let mut provider = Provider::answering(Vec::new());
        let mut asked = Vec::new();
        let (recovered, _) = traced(
            &mut store,
            &mut provider,
            Some(account()),
            &[now],
            |store, io| {
                let Io::Retrieve(request) = io else {
                    return None;
                };
                let fence = state(store, now).command.fence_epoch.map(FenceEpoch::get);
                asked.push((
                    request.key.clone(),
                    request.replayable,
                    request.cancel,
                    fence,
                ));
                Some(Input::Retrieved(answer.clone()))
            },
        );
        let case = format!("at {now}, {answer:?}");
        assert_eq!(recovered, Ok(outcome), "{case}");
        assert!(
            provider.asked.is_empty(),
            "{case}: a waiting attempt was looked up"
        );
        assert_eq!(asked, [(key, false, cancel, Some(fence_reading))], "{case}");
        assert_eq!(state(&mut store, now).command.state, after, "{case}");
        if outcome == Recovered::AwaitingCustomer && !cancel {
            assert_eq!(store.documents(), before, "{case}: wrote without evidence");
        }
    }
}

mod adversary;
mod release;
mod window;

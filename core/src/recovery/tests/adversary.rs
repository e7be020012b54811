//! Attacks on the `final_state` absence rule from the recovery job's side: a job never
//! proves an unanswered attempt of a `final_state` plan absent, however late, and every
//! run asks the provider again (the cost of the rule); a plan bound `durable` before
//! plans were `final_state` is still proven absent by a job that declares a durable
//! lookup (Stripe's search job does), and the new client's plan conflicts with it.

use super::*;
use crate::sends::ProviderLookup::{Durable, FinalState};

const HOUR: i64 = 3600 * SEC;

/// The plan as every Stripe client binds it now.
fn final_state() -> ProviderPlan {
    plan().with_lookup(FinalState, 300).expect("fits")
}

/// The same plan as a client of the previous release bound it.
fn durable() -> ProviderPlan {
    plan().with_lookup(Durable, 300).expect("fits")
}

/// A job declaring what Stripe's search job declares (`Stripe::account` with the
/// search method: `durable`).
fn search_job() -> ProviderAccount {
    account().with_lookup(Durable)
}

/// The client's request timed out and it never came back. The job runs after the
/// settle window, past the cutoff, and forty days later: each run asks the provider
/// once, hears "not found", writes nothing and leaves the attempt `sending`, so the
/// command is a candidate of every later run (its lookup is paid again each time). A
/// charge found at last settles it under the one key.
#[test]
fn adversary_a_final_state_attempt_is_looked_up_by_every_run_and_never_proven_absent() {
    let mut store = Store::new();
    let key = client_sends(&mut store, &final_state(), T0);
    let before = store.documents();
    let runs = [400 * SEC, 18 * HOUR + SEC, 40 * 24 * HOUR];
    for (n, late) in runs.into_iter().enumerate() {
        let mut provider = Provider::answering(vec![ProviderAnswer::NotFound]);
        let now = T0 + late;
        assert_eq!(
            drive(&mut store, &mut provider, Some(search_job()), now, now),
            Ok(Recovered::NotFound),
            "run {n}"
        );
        assert_eq!(
            provider.asked,
            std::slice::from_ref(&key),
            "run {n}: one lookup"
        );
        assert_eq!(store.documents(), before, "run {n}: nothing written");
        let send = state(&mut store, now).send.expect("send");
        assert_eq!(
            (send.attempt, send.state, send.absence_provable_from),
            (AttemptNumber::FIRST, AttemptState::Sending, None),
            "run {n}"
        );
    }
    let now = T0 + 41 * 24 * HOUR;
    let mut provider = Provider::answering(vec![
        ProviderAnswer::Succeeded(envelope()),
        ProviderAnswer::Succeeded(envelope()),
    ]);
    assert_eq!(
        drive(&mut store, &mut provider, Some(search_job()), now, now),
        Ok(Recovered::Succeeded)
    );
    let send = state(&mut store, now).send.expect("send");
    assert_eq!(
        (send.attempt, send.state),
        (AttemptNumber::FIRST, AttemptState::Succeeded)
    );
}

/// A command in flight at the upgrade: bound `durable` by the previous release, its
/// request timed out. The new client's plan (`final_state`) conflicts with it, so it
/// can neither re-send the key nor open attempt 2 (no second key from the new
/// release); the stored plan alone decides the absence rule.
#[test]
fn adversary_a_plan_bound_durable_before_the_change_conflicts_with_the_new_clients_plan() {
    let mut store = Store::new();
    client_sends(&mut store, &durable(), T0);
    let identity = input().identity();
    let lease = fresh_lease();
    let owner = input().lease_owner(&identity, &lease).expect("owner");
    let taken = store
        .answer(&crate::lease::Acquire::new(LeaseCall::new(
            identity.clone(),
            owner.clone(),
            at(T0 + 61 * SEC),
        )))
        .expect("acquired");
    let LeaseOutput::Acquired { fence_epoch, .. } = taken else {
        panic!("{taken:?}");
    };
    let before = store.documents();
    let call = LeaseCall::new(identity, owner, at(T0 + 62 * SEC));
    assert_eq!(
        store.answer(&BeginSend::new(call, fence_epoch, final_state())),
        Err(JournalError::PlanConflict)
    );
    assert_eq!(store.documents(), before, "nothing written");
}

/// The same command, the recovery job of the new release running (a job that
/// declared `durable`, as Stripe's search job did): its "not found" 400 s after the send proves the attempt
/// absent under the stored `durable` plan, the very rule the change withdrew for
/// Stripe (a request whose answer was lost may have met a stored 500 that Stripe
/// rolls forward). Any instance of the previous release still serving (a rolling
/// deploy) then opens attempt 2 under a new key: two charges. The contract: no
/// Stripe lookup's "not found" proves any Stripe attempt absent, whatever the plan
/// bound; a job whose lookups answer as `final_state` must cover no plan.
#[test]
fn adversary_a_final_state_job_proves_no_absence_of_a_plan_bound_durable_before() {
    let declared = FinalState;
    let mut store = Store::new();
    let key = client_sends(&mut store, &durable(), T0);
    let before = store.documents();
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    let now = T0 + 400 * SEC;
    let job = account().with_lookup(declared);
    assert_eq!(
        drive(&mut store, &mut provider, Some(job), now, now),
        Ok(Recovered::NotFound),
        "{declared:?} job"
    );
    assert_eq!(provider.asked, [key]);
    assert_eq!(store.documents(), before, "nothing written");
}

/// The case that must still pass: a job that declares `durable` lookups (another
/// provider's, one that never completes what it did not answer) still proves a
/// `durable` plan's attempt absent; only a `final_state` declaration covers nothing.
#[test]
fn adversary_the_search_job_still_proves_a_durable_plans_attempt_absent() {
    let mut store = Store::new();
    client_sends(&mut store, &durable(), T0);
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    let now = T0 + 400 * SEC;
    assert_eq!(
        drive(&mut store, &mut provider, Some(search_job()), now, now),
        Ok(Recovered::Absent)
    );
    let send = state(&mut store, now).send.expect("send");
    assert_eq!(send.state, AttemptState::Absent);
}

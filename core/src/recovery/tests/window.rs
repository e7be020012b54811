//! A plan that binds a customer window: a recovery job ends an abandoned customer's
//! object at `act_by` = `firstSentAt + customerWindowSeconds` (before the attempt's
//! cutoff), computed from the stored plan and attempt, and not one microsecond before.

use super::*;
use crate::sends::customer::{ActionName, CustomerAction, Handoff};
use crate::sends::provider::Closing;

/// One hour.
const WINDOW: i64 = 3_600;

fn windowed() -> ProviderPlan {
    plan().with_customer_window(WINDOW).expect("fits")
}

fn action() -> ProviderAnswer {
    ProviderAnswer::CustomerMustAct(CustomerAction::Confirm {
        client_secret: Handoff::new("pi_1_secret_canary"),
        next_action: ActionName::new("use_stripe_sdk").expect("name"),
    })
}

/// One retrieve a job asked: the key, replayable, cancel, act_by, the fence while
/// reading.
type Asked = (String, bool, bool, Timestamp, Option<i64>);

/// What a job did: the retrieves it asked, its outcome, the command's state after and
/// attempt 1's key.
type Job = (
    Vec<Asked>,
    Result<Recovered, JournalError>,
    CommandState,
    String,
);

/// The job at `now` whose read by id answers `answer`.
fn job_at(now: i64, answer: &ProviderAnswer) -> Job {
    let mut store = Store::new();
    let key = client_heard_under(&mut store, Closing::AwaitingCustomer, &windowed());
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
                request.act_by,
                fence,
            ));
            Some(Input::Retrieved(answer.clone()))
        },
    );
    assert!(provider.asked.is_empty(), "a waiting attempt was looked up");
    let after = state(&mut store, now).command.state;
    (asked, recovered, after, key)
}

#[test]
fn a_job_cancels_at_the_end_of_the_plans_window_and_not_a_microsecond_before() {
    // The window's end, from the journal's own records: the attempt's first send was
    // at T0 (attempt 1 opened by the client's begin_send).
    let act_by = at(T0 + WINDOW * SEC);
    let cutoff = {
        let mut store = Store::new();
        client_heard_under(&mut store, Closing::AwaitingCustomer, &windowed());
        let send = state(&mut store, T0 + SEC).send.expect("send");
        assert_eq!(send.state, AttemptState::AwaitingCustomer);
        assert_eq!(send.act_by, act_by, "act_by from the stored window");
        send.send_cutoff_at
    };
    assert!(act_by < cutoff, "the window ends before the cutoff");
    // One microsecond before: a read without a lease, never a cancel; the customer
    // may still act.
    let (asked, recovered, after, key) = job_at(act_by.micros() - 1, &action());
    assert_eq!(recovered, Ok(Recovered::AwaitingCustomer));
    assert_eq!(asked, [(key, false, false, act_by, Some(1))]);
    assert_eq!(after, CommandState::Leased);
    // At act_by: the lease taken first (fence 2), then the read with cancel; the
    // closed object fails the command with nothing charged.
    let (asked, recovered, after, key) = job_at(act_by.micros(), &ProviderAnswer::Closed);
    assert_eq!(recovered, Ok(Recovered::Declined));
    assert_eq!(asked, [(key, false, true, act_by, Some(2))]);
    assert_eq!(after, CommandState::FailedFinal);
}

#[test]
fn without_a_window_the_same_job_waits_for_the_cutoff() {
    // The same instant under the plan without a window: nothing cancelled.
    let mut store = Store::new();
    client_heard(&mut store, Closing::AwaitingCustomer);
    let send = state(&mut store, T0 + SEC).send.expect("send");
    assert_eq!(send.act_by, send.send_cutoff_at);
    let now = T0 + WINDOW * SEC;
    let mut provider = Provider::answering(Vec::new());
    let mut cancels = Vec::new();
    let (recovered, _) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[now],
        |_, io| {
            let Io::Retrieve(request) = io else {
                return None;
            };
            cancels.push(request.cancel);
            Some(Input::Retrieved(action()))
        },
    );
    assert_eq!(recovered, Ok(Recovered::AwaitingCustomer));
    assert_eq!(cancels, [false]);
}

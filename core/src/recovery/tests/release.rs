//! A job that took the lease and ends without settling the command (a "not found"
//! that proves nothing under the lease, a customer's object that still waits) releases
//! it before it answers, so the client's next call takes it over at once; its answer
//! is the same whatever the release answered, but a corrupt journal; a job that took
//! no lease, or settled the command, releases nothing.

use super::*;
use crate::document::{lifecycle, release};

/// Whether `io` is the release's read (the only one that reads a release record).
fn releases(io: &Io<Recovered, u64>) -> bool {
    matches!(io, Io::Read { paths, .. } if paths.iter().any(|p| p.contains(release::COLLECTION)))
}

const RETENTION: i64 = 24 * 3600 * SEC;

/// The job's lookups straddle the key store's retention: the lease is taken, the
/// "not found" under it proves nothing (as in
/// `an_absence_provable_at_the_first_lookup_but_not_under_the_lease_writes_nothing`).
fn not_found_under_the_lease(
    store: &mut Store,
    hook: impl FnMut(&mut Store, &Io<Recovered, u64>) -> Option<Input<u64>>,
) -> (Result<Recovered, JournalError>, CallTrace) {
    let mut provider =
        Provider::answering(vec![ProviderAnswer::NotFound, ProviderAnswer::NotFound]);
    let times = [T0 + RETENTION - SEC, T0 + RETENTION + SEC];
    traced(store, &mut provider, Some(account()), &times, hook)
}

fn fence(n: i64) -> FenceEpoch {
    FenceEpoch::new(n).expect("fence")
}

/// The lifecycle as stored.
fn lifecycle(store: &Store) -> crate::document::lifecycle::Lifecycle {
    let fields = store.get(&lifecycle::path(&hash())).expect("lifecycle");
    crate::document::lifecycle::Lifecycle::parse(&hash(), fields).expect("strict")
}

/// The client's `start` at `now`: what its acquisition answered.
fn client_starts(store: &mut Store, now: i64) -> LeaseOutput {
    let input = input();
    let identity = input.identity();
    let owner = input.lease_owner(&identity, &fresh_lease()).expect("owner");
    store
        .answer(&Start::new(identity, owner, at(now)))
        .expect("start")
        .lease
}

#[test]
fn a_not_found_under_the_lease_releases_it_and_the_client_takes_it_over_at_once() {
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let (recovered, trace) = not_found_under_the_lease(&mut store, |_, _| None);
    assert_eq!(recovered, Ok(Recovered::NotFound));
    assert_eq!(trace.began.last().copied(), Some("journal.release_lease"));
    // The job's fence 2 is released at the job's time: the version-2 lifecycle and
    // its record agree.
    let now = at(T0 + RETENTION + SEC);
    let held = lifecycle(&store);
    assert_eq!(
        (held.fence_epoch, held.released_at(), held.lease_expires_at),
        (fence(2), Some(now), now)
    );
    let record = store
        .get(&release::path(&hash(), fence(2)))
        .expect("release record");
    let record =
        release::LeaseRelease::parse(&hash(), &release::id(fence(2)), record).expect("strict");
    assert_eq!(record.released_at, now);
    // The client's return at that same instant takes it over with fence 3.
    assert!(matches!(
        client_starts(&mut store, T0 + RETENTION + SEC),
        LeaseOutput::Acquired { fence_epoch, .. } if fence_epoch == fence(3)
    ));
}

#[test]
fn without_the_release_the_client_would_wait_the_lease_out() {
    // The same job whose release is refused (its read's deadline passed): the answer
    // is the job's, the lease is still held, and the client's return is told Busy.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut releasing = false;
    let (recovered, _) = not_found_under_the_lease(&mut store, |_, io| {
        releasing |= releases(io);
        releases(io).then_some(Input::DeadlinePassed)
    });
    assert!(releasing, "no release asked");
    assert_eq!(recovered, Ok(Recovered::NotFound));
    assert!(!lifecycle(&store).released);
    assert!(!store.contains_key(&release::path(&hash(), fence(2))));
    assert_eq!(
        client_starts(&mut store, T0 + RETENTION + SEC),
        LeaseOutput::Busy
    );
}

#[test]
fn a_corrupt_journal_found_by_the_release_is_the_jobs_error() {
    // A release record of the job's fence planted while the job held the lease: the
    // release refuses it as corrupt, writes nothing, and the job answers the error.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let planted = release::LeaseRelease {
        command_key_hash: hash(),
        fence_epoch: fence(2),
        released_at: at(T0 + RETENTION),
    };
    let mut before = None;
    let (recovered, _) = not_found_under_the_lease(&mut store, |store, io| {
        if releases(io) && before.is_none() {
            store.insert(release::path(&hash(), fence(2)), planted.encode());
            before = Some(store.documents());
        }
        None
    });
    assert!(
        matches!(recovered, Err(JournalError::JournalCorrupt { .. })),
        "{recovered:?}"
    );
    assert_eq!(Some(store.documents()), before, "the release wrote");
    assert!(!lifecycle(&store).released);
}

#[test]
fn a_job_that_took_no_lease_or_settled_releases_nothing() {
    // Unknown before any lease: nothing taken, nothing released.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Unknown]);
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[T0 + 61 * SEC],
        |_, _| None,
    );
    assert_eq!(recovered, Ok(Recovered::LookupUnavailable));
    assert!(!trace.began.contains(&"journal.release_lease"));
    // A charge found: the command succeeded under the job's lease, nothing to give up.
    let mut store = Store::new();
    crashed_mid_send(&mut store);
    let mut provider = Provider::answering(vec![ProviderAnswer::Succeeded(envelope())]);
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[T0 + 61 * SEC],
        |_, _| None,
    );
    assert_eq!(recovered, Ok(Recovered::Succeeded));
    assert!(!trace.began.contains(&"journal.release_lease"));
    assert_eq!(store.count(release::COLLECTION), 0);
}

#[test]
fn a_customers_object_still_waiting_past_its_window_leaves_the_lease_released() {
    use crate::sends::customer::{ActionName, CustomerAction, Handoff};
    use crate::sends::provider::Closing;
    let mut store = Store::new();
    client_heard(&mut store, Closing::AwaitingCustomer);
    let cutoff = state(&mut store, T0 + SEC)
        .send
        .expect("send")
        .send_cutoff_at
        .micros();
    let waiting = ProviderAnswer::CustomerMustAct(CustomerAction::Confirm {
        client_secret: Handoff::new("pi_1_secret_canary"),
        next_action: ActionName::new("use_stripe_sdk").expect("name"),
    });
    let mut provider = Provider::answering(Vec::new());
    let (recovered, trace) = traced(
        &mut store,
        &mut provider,
        Some(account()),
        &[cutoff],
        |_, io| match io {
            Io::Retrieve(_) => Some(Input::Retrieved(waiting.clone())),
            _ => None,
        },
    );
    assert_eq!(recovered, Ok(Recovered::AwaitingCustomer));
    assert_eq!(trace.began.last().copied(), Some("journal.release_lease"));
    let held = lifecycle(&store);
    assert_eq!(
        (held.fence_epoch, held.released_at()),
        (fence(2), Some(at(cutoff)))
    );
    assert!(matches!(
        client_starts(&mut store, cutoff),
        LeaseOutput::Acquired { fence_epoch, .. } if fence_epoch == fence(3)
    ));
}

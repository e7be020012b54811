//! A seeded randomized model check of `Journal::execute` against a simulated payment
//! provider whose own ledger is the oracle.
//!
//! Six workers call `execute` on a few commands at a time through a provider that
//! behaves as the plan's contract allows and no better:
//!
//! - it deduplicates by key like a real provider (per account: the same key gives the
//!   same charge or decline while it remembers the key) and forgets a key
//!   `keyRetentionSeconds` (3,600 s; the cutoff is at 2,700 s) after it first saw it: a
//!   lookup then answers "none", and a new request with the key would charge again;
//! - it processes a request when it likes: at once, after it answered (a lost answer),
//!   after the sender gave up or crashed (a queue of accepted, unprocessed requests a
//!   later step processes), or never (lost on the way); a request reaching it at or
//!   after the end of the lease it was permitted under is never processed;
//! - its lookup answers from an index that lags: a charge becomes visible some time
//!   after it was made, but always by the contract's bound, the end of the lease
//!   under which the request could be sent plus `lookupSettleSeconds` (300 s). Before
//!   the clock passes that bound, the provider processes the request or drops it for
//!   good. A lookup is evaluated when it arrives or when it is answered, and answered
//!   within its deadline or not at all (the caller's timeout: unavailable);
//! - it stores and replays 5xx, as Stripe does once its endpoint began executing: for
//!   one command in twelve (which one, and whether it charged first, fixed by the
//!   seed), processing attempt 1's key for the first time stores a 5xx for the key,
//!   after making the charge or before any; that request's sender hears a fresh 500
//!   (`Unknown`), every later request with the key while it is retained hears the
//!   replay (`ReplayedUnknown`) and charges nothing, and the lookup shows the charge,
//!   if one was made, after the index lag;
//! - it waits for the customer for one command in five (`customer`): a new key leaves
//!   an object the customer pays late, pays twice (the second act changes nothing),
//!   fails, or abandons until it expires at its `act_by`; a read by id answers its
//!   current state at once, cancels it when asked, and is sometimes lost;
//! - it is sometimes reached with a misconfigured plan (another account or another
//!   operation, as a bad deploy of `PROVIDER_*` gives).
//!
//! In three rounds of ten a recovery job (`Journal::recover`) runs beside the workers:
//! it lists the pending commands of every generation and looks up each open attempt's
//! key through the same provider (its lookups parked and answered like the workers',
//! its run crashed like theirs), and what it settles is checked against the ledger as
//! a client's answer is. It is deployed like a worker: mostly with the service's
//! account, declared (its "not found" may record an absence, which lets the next
//! worker open attempt n + 1 under the oracle's watch), sometimes with a stale
//! deployment's account, declared (it must leave the other account's commands alone),
//! sometimes declaring none. It must never send, never fail, and never look up a key of
//! no command. A lookup never answers `ReplayedUnknown` (the journal would read it as
//! unavailable).
//!
//! The test decides every answer: a send or lookup parks until the driver, once every
//! running call is parked or done, answers it (the truth, a lost answer, a timeout),
//! crashes its worker (the `execute` future is dropped mid-call), or lets it wait while
//! the manual clock jumps (a second to 45 s, a lease, the settle window, 15 min, or to
//! an instant next to a lease end, a settle bound, a cutoff or a key's retention).
//! Rarely, the clock jumps or a worker crashes while other calls are in the journal.
//! After each generation of commands a drain, with the provider answering everything
//! at once, drives every command as far as it can go. No sleeps: nothing waits for
//! time, only for the calls it drives.
//!
//! Oracle: the provider's ledger. At most one charge per command, ever, over every key
//! and account the command's requests used; no attempt n + 1 is sent while the
//! provider holds an outcome for attempt n or may still process a request of it; every
//! `Succeeded` answer and every stored result is the command's one charge; every
//! `Declined` answer is a command the provider declined and never charged;
//! `plan_conflict` only for a plan other than the bound one; after the drain every
//! command is terminal as the ledger says, or its `send_status` explains why not (the
//! outcome is unknown past the cutoff and the key may have been forgotten, or the
//! provider answered the attempt as indeterminate and holds no charge: it waits for
//! evidence or an operator). Once the journal is seen to hold an attempt
//! `replayed_unknown`, its key never reaches the provider again. `verify` is clean at
//! the end. The replay path is reached: a sender heard a replay and the journal
//! recorded it (the default seed's short form meets one); the summary counts the
//! commands settled after a replay before their cutoff, by the charge found or by
//! attempt n + 1.
//!
//! - `cargo test --all-features --test emulator provider_model` runs the short form
//!   (240 `execute` calls, about 10 s in a debug build; the `emulator-transaction`
//!   binary runs 60 in transaction mode, where contention makes each call slower).
//! - `CJ_LONG=1 cargo test --release --all-features --test emulator provider_model --
//!   --nocapture` runs 25,000 calls and prints a summary; the long form is four seeds
//!   of it, 100,000 calls (`emulator-tests/RELIABILITY.md` gives the loop and figures).
//! - `CJ_OPERATIONS=<n>` runs at least `n` calls; `CJ_RANDOM_SEED=<n>` replays a seed; a
//!   failing run prints its seed and the violating command's history;
//!   `CJ_MODEL_TRACE=1` prints every generation's history.
//!
//! The seed fixes the driver's and the provider's choices for the same sequence of
//! events; the emulator's interleaving of concurrent calls is not fixed, so a replay
//! makes the same choices only as long as it sees the same events.
//!
//! The parts: `plans` (the deployments and commands), `world` (the provider's
//! requests, key store, index and ledger) with `customer` (the objects that wait for
//! a customer) and `instants` (the boundaries the clock
//! jumps to), `provider` (what one call talks to), `driver` (generations, rounds,
//! moods, jumps) with `answers` (how a parked call is answered), `recovery`, `drain`,
//! and `oracle` (every answer and every drained command against the ledger).

mod answers;
mod customer;
mod drain;
mod driver;
mod instants;
mod oracle;
mod plans;
mod provider;
mod recovery;
mod replays;
mod world;

use super::support;
use chrono::{DateTime, TimeDelta};
use command_journal::sends::AttemptNumber;
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{Execution, Provider, ProviderAnswer, SendRequest};
use driver::{MOODS, Run, Tally};
use plans::{Variant, command};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use world::World;

const WORKERS: usize = 6;
/// Percent of rounds that also run a recovery job beside the workers.
const RECOVERY_PERCENT: u32 = 30;
const COMMANDS_AT_ONCE: u64 = 4;
const ROUNDS_PER_GENERATION: u64 = 50;
/// Rounds a generation runs at least, terminal or not (replays, late processing).
const MIN_ROUNDS: u64 = 4;
const SHORT_CALLS: u64 = 240;
/// The short form in transaction mode, where six workers on a few commands hold each
/// other's locks and every ABORTED backs off about a second.
const SHORT_CALLS_TRANSACTION: u64 = 60;
const LONG_CALLS: u64 = 25_000;
const DEFAULT_SEED: u64 = 102;
const SECOND: i64 = 1_000_000;
/// The plan's key retention: the cutoff is at 2,700 s, the key forgotten at 3,600 s.
const RETENTION: i64 = 3_600;
const CUTOFF: i64 = 2_700;
/// The plan's `lookupSettleSeconds` (the default).
const SETTLE: i64 = 300;
const LEASE: i64 = 60;
/// `execute` keeps this much of the lease after a send's deadline (its `SEND_MARGIN`).
const MARGIN: i64 = 10;
/// Percent of newly processed keys the provider declines.
const DECLINE_PERCENT: u32 = 8;
/// One command in this many (8%) meets a provider that stores a 5xx for its attempt
/// 1's key, half of them after making the charge.
const STORED_ERROR_EVERY: usize = 12;

/// Prints the seed if the test panics, so the run can be replayed.
struct SeedReport(u64);

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "provider model check failed; replay with CJ_RANDOM_SEED={}",
                self.0
            );
        }
    }
}

fn seed() -> u64 {
    match std::env::var("CJ_RANDOM_SEED") {
        Ok(text) => text.trim().parse().expect("CJ_RANDOM_SEED is a u64"),
        Err(_) => DEFAULT_SEED,
    }
}

fn target_calls() -> u64 {
    if let Some(n) = std::env::var("CJ_OPERATIONS")
        .ok()
        .and_then(|n| n.trim().parse().ok())
    {
        return n;
    }
    match (std::env::var("CJ_LONG").as_deref(), support::mode()) {
        (Ok("1"), _) => LONG_CALLS,
        (_, command_journal::Concurrency::Transaction) => SHORT_CALLS_TRANSACTION,
        _ => SHORT_CALLS,
    }
}

fn micros(duration: Duration) -> i64 {
    i64::try_from(duration.as_micros()).expect("a duration in range")
}

fn lock(world: &Mutex<World>) -> MutexGuard<'_, World> {
    world
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The last characters of a key: enough to tell keys apart in a history.
fn short(key: &str) -> &str {
    &key[key.len().saturating_sub(8)..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn provider_model_execute_never_charges_a_command_twice() {
    let seed = seed();
    let _report = SeedReport(seed);
    let target = target_calls();
    let began = Instant::now();
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_930_000_000, 0).expect("time"),
    ));
    let connection = support::fresh_connection().await;
    let journal = support::clocked_journal(connection.clone(), clock.clone());
    let (tx, rx) = mpsc::unbounded_channel();
    let mut run = Run {
        journal,
        world: Arc::new(Mutex::new(World::new(clock.clone(), seed))),
        rng: fastrand::Rng::with_seed(seed),
        commands: Vec::new(),
        tx,
        rx,
        next_call: 0,
        mood: MOODS[0].1,
        tally: Tally::default(),
    };
    while run.tally.calls < target {
        let generation = run.new_generation();
        for round in 0..ROUNDS_PER_GENERATION {
            if run.rng.u32(..100) < 4 {
                run.change_mood();
            }
            run.jump(&generation, "between rounds");
            run.round(&generation).await;
            let settled = generation
                .iter()
                .all(|&c| run.commands[c].terminal.is_some());
            if (settled && round + 1 >= MIN_ROUNDS) || run.tally.calls >= target {
                break;
            }
        }
        run.drain(&generation).await;
        run.check_generation(&generation).await;
    }
    let ran = began.elapsed();
    let report = command_journal::verify(&connection, &mut |_| {})
        .await
        .expect("verify");
    assert!(report.clean, "verify: {:?}", report.findings);
    let world = lock(&run.world);
    let p = &world.tally;
    let t = &run.tally;
    let charged_commands = world.charge_of.len();
    assert_eq!(
        p.charges as usize, charged_commands,
        "one charge per command"
    );
    assert_eq!(
        p.reprocessed_forgotten, 0,
        "a request processed after its key was forgotten: sent after the cutoff"
    );
    println!(
        "provider model seed={seed} execute_calls={} drain_calls={} rounds={} generations={} \
         commands={} charges={} second_charges=0 declines={} terminal_succeeded={} \
         terminal_failed={} pending_forgotten={} (with a charge: {}; indeterminate before retention: {}) never_sent={} \
         attempt_2_plus_commands={} max_attempt={} wrong_plan_bound={} plan_conflicts={} \
         answers={:?} sends={} resends={} sends_attempt_2_plus={} processed={} \
         processed_after_sender_left={} deduplicated={} dropped={} forced_by_clock={} \
         sent_after_lease={} lookups={} lookups_not_visible_yet={} lookups_forgotten={} sends_near_cutoff={} lookups_before_settle={} \
         lookups_unavailable={} lookups_answered_stale={} stale_not_found_across_settle={} race_jumps={} lookup_timeouts={} \
         send_timeouts={} lost_answers={} gave_up={} crashes_parked={} crashes_running={} \
         jumps={} targeted_jumps={} mid_flight_jumps={} recovery_jobs={} recovered={:?} \
         verify=clean ran={ran:?} total={:?}",
        t.calls,
        t.drain_calls,
        t.rounds,
        t.generations,
        run.commands.len(),
        p.charges,
        p.declines,
        t.succeeded,
        t.failed,
        t.pending_forgotten,
        t.pending_forgotten_charged,
        t.pending_indeterminate,
        t.never_sent,
        t.commands_with_attempt_2,
        t.max_attempt,
        t.wrong_plan_bound,
        t.plan_conflicts,
        t.answers,
        p.sends,
        p.resends,
        p.sends_attempt_2_plus,
        p.processed,
        p.processed_late,
        p.deduplicated,
        p.dropped,
        p.forced,
        p.sent_after_lease,
        p.lookups,
        p.lookups_not_visible_yet,
        p.lookups_forgotten,
        p.sends_near_cutoff,
        p.lookups_before_settle,
        t.lookups_unavailable,
        t.lookups_answered_stale,
        t.stale_not_found_across_settle,
        t.race_jumps,
        t.lookup_timeouts,
        t.send_timeouts,
        t.lost_answers,
        t.gave_up,
        t.crashes_parked,
        t.crashes_running,
        t.jumps,
        t.targeted_jumps,
        t.mid_flight_jumps,
        t.recoveries,
        t.recovered,
        began.elapsed(),
    );
    let r = &t.replays;
    println!(
        "provider model stored 5xx: stored={} (after the charge {}, before any {}) \
         replays_processed={} replays_heard={} replayed_commands={} seen_recorded={} \
         resends_after_replay={} lookups_behind_a_5xx: charge_found={} no_charge={} \
         settled_before_cutoff={} (the charge found {}, attempt n+1 sent {}) \
         longest_replay_to_settlement={}s",
        p.stored_errors_charged + p.stored_errors_uncharged,
        p.stored_errors_charged,
        p.stored_errors_uncharged,
        p.replays,
        p.replays_heard,
        r.commands,
        r.recorded,
        p.resends_after_replay,
        p.lookups_stored_found,
        p.lookups_stored_uncharged,
        r.settled(),
        r.settled_found,
        r.settled_next_attempt,
        r.settle_max_seconds,
    );
    let k = &world.customers;
    println!(
        "provider model customer: objects={} paid={} failed={} cancelled={} expired={} \
         open={} acts_ignored={} retrieves={} (cancelling {}, lost {}) handed={}",
        k.objects,
        k.paid,
        k.failed,
        k.cancelled,
        k.expired,
        k.objects - k.paid - k.failed - k.cancelled - k.expired,
        k.acts_ignored,
        k.retrieves,
        k.retrieves_cancelling,
        k.retrieves_lost,
        t.answers.get("customer_must_act").copied().unwrap_or(0),
    );
    // At most one paid object per command, and every paid object is one of the
    // ledger's charges.
    for c in 0..run.commands.len() {
        assert!(world.paid_objects(c) <= 1, "c{c}: two paid objects");
    }
    assert!(k.paid <= p.charges, "a paid object beyond the ledger");
    // The customer's path is exercised: an object made, handed over and read by id
    // (the default seed's short form meets one); and, once enough commands met one,
    // objects paid, failed and closed (cancelled or expired).
    let handed = t.answers.get("customer_must_act").copied().unwrap_or(0);
    assert!(
        k.objects > 0 && handed > 0 && k.retrieves > 0,
        "the customer's path was not reached in {} calls: {k:?} (a short run of another \
         seed may meet none: give it more calls with CJ_OPERATIONS)",
        t.calls
    );
    assert!(
        k.objects < 20 || (k.paid > 0 && k.failed > 0 && k.cancelled + k.expired > 0),
        "{} objects, not every ending reached: {k:?}",
        k.objects
    );
    // The stored-5xx path is exercised: a sender heard a replay and the journal
    // recorded it; and, once enough commands met one, some settled before their
    // cutoff (about half of them do: the others meet the replay too near it).
    assert!(
        p.replays_heard > 0 && r.recorded > 0,
        "the replay path was not reached in {} calls: no stored 5xx replayed to a \
         sender and recorded (a short run of another seed may meet none: give it more \
         calls with CJ_OPERATIONS)",
        t.calls
    );
    assert!(
        r.commands < 10 || r.settled() > 0,
        "{} commands heard a replay, none settled before its cutoff",
        r.commands
    );
}

/// The sequence the long form found before `execute` judged a lookup by when it was
/// asked (seeds 3, 4, 8, 9 and 10 of its first run), minimized: one worker, three
/// calls. The re-send at 2,400 s is charged, its answer lost, and the provider's lookup
/// may miss that charge until the contract's bound, the re-send's lease end plus the
/// settle window (2,460 + 300 = 2,760 s). A lookup asked at 2,740 s, past the cutoff,
/// is evaluated then ("none") and answers 21 s later, within its deadline. Judged at the
/// reconciliation (2,761 s, past `absenceProvableFrom` = 2,400 + 60 + 300), attempt 1
/// was recorded absent and the same call sent attempt 2 under a new key: a second
/// charge. Now the "none" of a lookup asked before `absenceProvableFrom` writes nothing.
#[tokio::test]
async fn provider_model_a_lookup_asked_before_the_absence_is_provable_proves_nothing() {
    struct Slow {
        clock: Arc<ManualClock>,
        sends: Mutex<Vec<(AttemptNumber, bool)>>,
        charges: Mutex<u32>,
    }
    impl Provider for Slow {
        async fn send(&self, request: SendRequest) -> ProviderAnswer {
            let mut sends = self.sends.lock().expect("sends");
            sends.push((request.attempt, request.resend));
            // The first request is lost; every later one is processed (attempt 1's
            // re-send, and any other attempt), its answer lost.
            if sends.len() >= 2 {
                *self.charges.lock().expect("charges") += 1;
            }
            ProviderAnswer::Unknown
        }
        async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
            // Evaluated on arrival, before the re-send's charge is visible; the
            // response takes 21 s (the lookup's deadline is 50 s).
            self.clock.advance(TimeDelta::seconds(21));
            ProviderAnswer::NotFound
        }
    }
    let clock = Arc::new(ManualClock::new(
        DateTime::from_timestamp(1_930_000_000, 0).expect("time"),
    ));
    let journal = support::clocked_journal(support::fresh_connection().await, clock.clone());
    let cmd = command(1_000_000);
    let plan = Variant::Right.plan(&cmd.parameters);
    let provider = Slow {
        clock: clock.clone(),
        sends: Mutex::new(Vec::new()),
        charges: Mutex::new(0),
    };
    let retry = Execution::RetryLater {
        after: Duration::from_secs(60),
    };
    assert_eq!(
        journal.execute(&cmd.input, &plan, &provider).await,
        Ok(retry.clone())
    );
    clock.advance(TimeDelta::seconds(2_400));
    assert_eq!(
        journal.execute(&cmd.input, &plan, &provider).await,
        Ok(retry)
    );
    clock.advance(TimeDelta::seconds(340));
    let answer = journal.execute(&cmd.input, &plan, &provider).await;
    let sends = provider.sends.lock().expect("sends").clone();
    let charges = *provider.charges.lock().expect("charges");
    assert_eq!(
        (charges, answer),
        (1, Ok(Execution::PendingReconciliation)),
        "sends (attempt, resend): {sends:?}"
    );
}

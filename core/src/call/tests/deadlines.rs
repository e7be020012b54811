//! The call's own deadline and the deadlines derived from its lease, on a simulated
//! driver whose clocks the test moves: every RPC takes a second, the provider as long
//! as the test says, and the driver cuts whatever would pass the call's deadline at
//! the deadline, as the library's does (each RPC's timeout and each backoff cut to
//! it). No wall-clock time is measured: each step's start is read off the simulated
//! monotonic clock.

use super::*;
use crate::lease::CommandState;
use std::cell::{Cell, RefCell};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

/// The simulated driver: its two clocks, how long the provider takes, and what it
/// saw.
struct Driver {
    /// The trusted clock, in microseconds (a test may step it).
    wall: Cell<i64>,
    /// The call's monotonic time.
    elapsed: Cell<Duration>,
    deadline: Option<Duration>,
    /// How long the provider takes to answer a send, and what it answers.
    provider: (Duration, ProviderAnswer),
    /// Each I/O step with the monotonic time it started at.
    steps: RefCell<Vec<(&'static str, Duration)>>,
    /// Each send: its key, whether it re-sends, its deadline.
    sends: RefCell<Vec<(String, bool, Duration)>>,
    /// Seconds the trusted clock steps back once the first commit (the one that
    /// holds the permit) has landed.
    step_back_after_permit: Cell<Option<i64>>,
    /// Seconds the trusted clock steps back once this many reads and commits have
    /// been answered.
    step_back_after_rpcs: Cell<Option<(usize, i64)>>,
}

impl Driver {
    fn new(deadline: Option<Duration>, provider: (Duration, ProviderAnswer)) -> Self {
        Self {
            wall: Cell::new(NOW),
            elapsed: Cell::new(Duration::ZERO),
            deadline,
            provider,
            steps: RefCell::default(),
            sends: RefCell::default(),
            step_back_after_permit: Cell::new(None),
            step_back_after_rpcs: Cell::new(None),
        }
    }

    /// The trusted clock, its steady time (the system clock's, the monotonic one) and
    /// the call's elapsed time.
    fn clocks(&self) -> Now {
        Now {
            at: Timestamp::from_micros(self.wall.get()).unwrap(),
            steady: self.elapsed.get(),
            elapsed: self.elapsed.get(),
        }
    }

    /// `by` passes on both clocks.
    fn advance(&self, by: Duration) {
        self.elapsed.set(self.elapsed.get() + by);
        let micros = i64::try_from(by.as_micros()).unwrap();
        self.wall.set(self.wall.get() + micros);
    }

    /// Takes `io`: the store performs it (`None`) once its time has passed, unless
    /// it would end past the deadline, where the driver cuts it.
    fn take<O>(&self, io: &Io<O, u64>) -> Option<Input<u64>> {
        let start = self.elapsed.get();
        let (name, takes) = match io {
            Io::Read { .. } => ("read", SECOND),
            Io::Commit { .. } => ("commit", SECOND),
            Io::Rollback(_) => ("rollback", SECOND / 20),
            Io::Retry { .. } => ("retry", SECOND / 2),
            Io::Send(send) => ("send", send.deadline.min(self.provider.0)),
            Io::Lookup(lookup) => ("lookup", lookup.deadline),
            Io::Retrieve(retrieve) => ("retrieve", retrieve.deadline),
            Io::Began(_) | Io::Ended { .. } | Io::Done(_) => return None,
        };
        self.steps.borrow_mut().push((name, start));
        let left = self.deadline.map(|d| d.saturating_sub(start));
        if let Io::Send(send) = io {
            self.sends
                .borrow_mut()
                .push((send.key.clone(), send.resend, send.deadline));
            self.advance(takes);
            return Some(Input::Sent(match takes < self.provider.0 {
                // Not answered by its deadline.
                true => ProviderAnswer::Unknown,
                false => self.provider.1.clone(),
            }));
        }
        if name != "rollback" && left.is_some_and(|left| takes > left) {
            self.advance(left.unwrap_or_default());
            return Some(Input::DeadlinePassed);
        }
        self.advance(takes);
        if matches!(io, Io::Commit { .. })
            && let Some(back) = self.step_back_after_permit.take()
        {
            self.wall.set(self.wall.get() - back * 1_000_000);
        }
        if matches!(io, Io::Read { .. } | Io::Commit { .. })
            && let Some((rpcs, back)) = self.step_back_after_rpcs.get()
        {
            match rpcs {
                1 => {
                    self.step_back_after_rpcs.set(None);
                    self.wall.set(self.wall.get() - back * 1_000_000);
                }
                _ => self.step_back_after_rpcs.set(Some((rpcs - 1, back))),
            }
        }
        None
    }

    /// The steps after `at` on the monotonic clock, rollbacks apart.
    fn started_from(&self, at: Duration) -> Vec<&'static str> {
        let steps = self.steps.borrow();
        let late = steps
            .iter()
            .filter(|(name, start)| *start >= at && *name != "rollback");
        late.map(|(name, _)| *name).collect()
    }
}

fn execute(
    store: &mut Store,
    holder: usize,
    options: CallOptions,
    driver: &Driver,
) -> Result<Execution, JournalError> {
    let program = ExecuteProgram::new(
        identity(),
        owner(holder),
        plan(),
        options.concurrency,
        options.fast_paths,
    )
    .unwrap();
    let (answer, _) = store.call_with_clocks(
        program,
        options,
        || driver.clocks(),
        |_, io| driver.take(io),
    );
    answer.map(|executed| executed.execution)
}

fn bounded(concurrency: Concurrency, deadline: Duration) -> CallOptions {
    CallOptions {
        deadline: Some(deadline),
        ..options(concurrency, 10)
    }
}

fn succeeded() -> ProviderAnswer {
    ProviderAnswer::Succeeded(envelope())
}

#[test]
fn a_fifteen_second_policy_bounds_a_whole_execute_provider_included() {
    let deadline = Duration::from_secs(15);
    for concurrency in [Concurrency::Preconditions, Concurrency::Transaction] {
        // The provider would take 30 s: its call is given what is left of the 15 s
        // (the lease would allow 50 s), times out, and the call ends there, nothing
        // recorded after it.
        let mut store = Store::new();
        let driver = Driver::new(Some(deadline), (Duration::from_secs(30), succeeded()));
        let answer = execute(&mut store, 1, bounded(concurrency, deadline), &driver);
        assert_eq!(
            answer,
            Err(JournalError::unavailable(None, 0, true)),
            "{concurrency:?}"
        );
        let opening = match concurrency {
            Concurrency::Preconditions => 1,
            Concurrency::Transaction => 2,
        };
        let sends = driver.sends.borrow().clone();
        assert_eq!(sends.len(), 1, "{concurrency:?}");
        assert_eq!(
            sends[0].2,
            deadline - opening * SECOND,
            "{concurrency:?}: cut to the call's deadline"
        );
        assert_eq!(
            driver.elapsed.get(),
            deadline,
            "{concurrency:?}: ended at its deadline"
        );
        assert_eq!(
            driver.started_from(deadline),
            Vec::<&str>::new(),
            "{concurrency:?}"
        );
        // Without a deadline the same provider is given the lease less its margin.
        let mut store = Store::new();
        let driver = Driver::new(None, (Duration::from_secs(30), succeeded()));
        let answer = execute(&mut store, 1, options(concurrency, 10), &driver);
        assert_eq!(
            answer,
            Ok(Execution::Succeeded(envelope())),
            "{concurrency:?}"
        );
        let lease_less_margin = Duration::from_secs(50) - opening * SECOND;
        assert_eq!(
            driver.sends.borrow()[0].2,
            lease_less_margin,
            "{concurrency:?}"
        );
    }
}

#[test]
fn every_step_of_a_bounded_execute_starts_before_its_deadline() {
    // Deadlines that fall in each step of a new command's execute, the provider
    // answering in 3 s (and a zero deadline, under which nothing starts): nothing but
    // a rollback starts at or after the deadline, and the call ends at it at the
    // latest.
    for concurrency in [Concurrency::Preconditions, Concurrency::Transaction] {
        for tenths in 0..80 {
            let deadline = Duration::from_millis(tenths * 100);
            let mut store = Store::new();
            let driver = Driver::new(Some(deadline), (3 * SECOND, succeeded()));
            let answer = execute(&mut store, 1, bounded(concurrency, deadline), &driver);
            let case = format!("{concurrency:?}, {deadline:?}");
            assert!(
                matches!(
                    answer,
                    Ok(Execution::Succeeded(_))
                        | Err(JournalError::Unavailable { deadline: true, .. })
                ),
                "{case}: {answer:?}"
            );
            assert_eq!(driver.started_from(deadline), Vec::<&str>::new(), "{case}");
            let rollbacks = driver
                .steps
                .borrow()
                .iter()
                .filter(|(name, _)| *name == "rollback")
                .count();
            let bound = deadline + SECOND / 20 * u32::try_from(rollbacks).unwrap();
            assert!(
                driver.elapsed.get() <= bound,
                "{case}: ended at {:?}",
                driver.elapsed.get()
            );
        }
    }
}

#[test]
fn a_deadline_between_the_provider_s_answer_and_its_recording_loses_nothing() {
    for concurrency in [Concurrency::Preconditions, Concurrency::Transaction] {
        // The provider charges and answers with 0.5 s of the call left; recording it
        // takes a read and a commit, which do not fit: the call ends `unavailable`,
        // nothing recorded, the permit standing.
        let deadline = Duration::from_secs(15);
        let opening = match concurrency {
            Concurrency::Preconditions => 1,
            Concurrency::Transaction => 2,
        };
        let answering = deadline - opening * SECOND - SECOND / 2;
        let mut store = Store::new();
        let driver = Driver::new(Some(deadline), (answering, succeeded()));
        let answer = execute(&mut store, 1, bounded(concurrency, deadline), &driver);
        assert!(
            matches!(
                answer,
                Err(JournalError::Unavailable { deadline: true, .. })
            ),
            "{concurrency:?}: {answer:?}"
        );
        assert_eq!(
            driver.started_from(deadline),
            Vec::<&str>::new(),
            "{concurrency:?}"
        );
        let (read, _) = store.call(status(), options(concurrency, 10), now(), store_does);
        assert_eq!(
            read.unwrap().state,
            CommandState::Leased,
            "{concurrency:?}: nothing recorded"
        );
        // The next call, once the lease ran out, re-sends under the same key; the
        // provider answers the charge it made, and that is recorded: one charge,
        // recorded once.
        let later = Driver::new(None, (SECOND, succeeded()));
        later.wall.set(NOW + 61_000_000);
        let answer = execute(&mut store, 2, options(concurrency, 10), &later);
        assert_eq!(
            answer,
            Ok(Execution::Succeeded(envelope())),
            "{concurrency:?}"
        );
        let (first, second) = (
            driver.sends.borrow()[0].clone(),
            later.sends.borrow()[0].clone(),
        );
        assert_eq!(
            (first.0 == second.0, first.1, second.1),
            (true, false, true),
            "{concurrency:?}"
        );
        let at = Timestamp::from_micros(NOW + 120_000_000).unwrap();
        let status = Single::new(StatusRead::new(CommandCall::new(identity(), at)));
        let (read, _) = store.call(status, options(concurrency, 10), at, store_does);
        assert_eq!(
            read.unwrap().state,
            CommandState::Succeeded,
            "{concurrency:?}"
        );
    }
}

#[test]
fn a_clock_stepped_back_after_the_permit_lengthens_no_provider_deadline() {
    for concurrency in [Concurrency::Preconditions, Concurrency::Transaction] {
        let mut store = Store::new();
        let driver = Driver::new(None, (SECOND, succeeded()));
        driver.step_back_after_permit.set(Some(120));
        let answer = execute(&mut store, 1, options(concurrency, 10), &driver);
        // Recording at a time before the permit stored is refused (the journal never
        // writes a time going back): the next call re-sends with the key and records.
        assert_eq!(
            answer,
            Err(JournalError::ClockRegression),
            "{concurrency:?}"
        );
        // The lease (60 s) less the 10 s margin, less the time since the lease was
        // heard on the monotonic clock: never the 170 s the stepped clock shows.
        let opening = match concurrency {
            Concurrency::Preconditions => 1,
            Concurrency::Transaction => 2,
        };
        let sent = driver.sends.borrow()[0].2;
        assert_eq!(
            sent,
            Duration::from_secs(50) - opening * SECOND,
            "{concurrency:?}"
        );
    }
}

#[test]
fn a_clock_stepped_back_while_the_lease_is_taken_lengthens_no_provider_deadline() {
    // A registered command: its lease is taken by a read and a commit (after a refused
    // blind commit in preconditions mode), the permit by the same commit or the next.
    // The trusted clock steps back 2 s after each RPC before the provider's call in
    // turn (no further than the time the call has run, or the permit's time would be
    // before the lease's and refused): the provider's call still ends within the lease
    // less its 10 s margin of the time the lease was taken, on the monotonic clock
    // (the call's first poll, when its start captured the time).
    for concurrency in [Concurrency::Preconditions, Concurrency::Transaction] {
        for rpcs in 1..=4 {
            let mut store = Store::new();
            store
                .call(registration(), options(concurrency, 10), now(), store_does)
                .0
                .unwrap();
            let driver = Driver::new(None, (Duration::from_secs(120), succeeded()));
            driver.step_back_after_rpcs.set(Some((rpcs, 2)));
            let _ = execute(&mut store, 1, options(concurrency, 10), &driver);
            let sends = driver.sends.borrow().clone();
            let steps = driver.steps.borrow().clone();
            let sent_at = steps.iter().find(|(name, _)| *name == "send");
            let case = format!("{concurrency:?}, stepped back after {rpcs} RPCs");
            let (Some((_, _, deadline)), Some((_, at))) = (sends.first(), sent_at) else {
                panic!("{case}: no send: {steps:?}");
            };
            assert!(
                *at + *deadline <= Duration::from_secs(50),
                "{case}: the provider's call may run until {:?}",
                *at + *deadline
            );
        }
    }
}

//! Faults between the journal and the emulator, injected by the loopback proxy of
//! `proxy.rs`: a Commit the emulator applied whose response is lost, a Commit lost on
//! the way, a read cut in the middle of its response, a response delayed past the
//! client's deadline, and an emulator that cannot be reached.
//!
//! Each operation runs once, through the proxy, with the library's own retries only.
//! Every case checks the answer against the fault-free answer, the RPCs the runner
//! sent (from `Journal::stats`), the request the proxy faulted, and every stored
//! document of the project, compared whole (update times included) and counted.

use super::proxy::{Exchange, Fault, Proxy, Rpc};
use super::support::{self, command, get, list};
use chrono::{DateTime, TimeDelta, Utc};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::RegistrationOutcome;
use command_journal::error::GrpcCode;
use command_journal::{CommandInput, LeaseId, TerminalReferenceFingerprint};
use command_journal::{Connection, Target};
use command_journal::{LeaseOutput, TerminalOutput};
use command_journal::{RetryPolicy, Stats};

/// The default policy's attempts and RPC timeout.
const MAX_ATTEMPTS: u32 = 10;
const RPC_TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn the_default_policy_is_what_these_tests_assume() {
    let policy = RetryPolicy::default();
    assert_eq!(
        (policy.attempts.get(), policy.rpc_timeout),
        (MAX_ATTEMPTS, RPC_TIMEOUT)
    );
}
use command_journal::Timestamp;
use command_journal::time::ManualClock;
use gcloud_sdk::google::firestore::v1::Document;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an unreachable emulator may take to be reported: ten refused connection
/// attempts and the backoff between them (at most about 1.3 s in all).
const UNAVAILABLE_WITHIN: Duration = Duration::from_secs(5);

fn start() -> DateTime<Utc> {
    DateTime::from_timestamp(1_960_000_000, 125_000_000).expect("time")
}

fn lease(n: u64) -> LeaseId {
    LeaseId::parse(&support::uuid(4, n)).expect("lease id")
}

fn reference(n: u8) -> TerminalReferenceFingerprint {
    TerminalReferenceFingerprint::parse(&format!("{n:02x}").repeat(32)).expect("reference")
}

/// A journal whose every RPC goes through a proxy, and a direct connection to the
/// same project for owner reads.
struct Rig {
    proxy: Proxy,
    journal: Journal,
    direct: Connection,
    clock: Arc<ManualClock>,
}

async fn rig() -> Rig {
    let direct = support::fresh_connection().await;
    let proxy = Proxy::start(support::emulator().host()).await;
    let through = Connection::connect(direct.project(), Target::Emulator(proxy.host()))
        .await
        .expect("connect through the proxy");
    let clock = Arc::new(ManualClock::new(start()));
    let journal = Journal::new(through).with_clock(clock.clone());
    Rig {
        proxy,
        journal,
        direct,
        clock,
    }
}

impl Rig {
    fn now(&self) -> Timestamp {
        Timestamp::from_datetime(command_journal::Clock::now(&*self.clock)).expect("now")
    }

    /// Every document of the project, sorted by name, with its update time.
    async fn documents(&self) -> Vec<Document> {
        let mut docs = list(&self.direct, "", "checkoutRequests").await;
        let roots: Vec<String> = docs
            .iter()
            .map(|d| d.name.rsplit('/').next().expect("id").to_owned())
            .collect();
        for root in roots {
            docs.extend(
                list(
                    &self.direct,
                    &format!("checkoutRequests/{root}"),
                    "lifecycle",
                )
                .await,
            );
        }
        docs.extend(list(&self.direct, "", "auditEvents").await);
        docs.sort_by(|a, b| a.name.cmp(&b.name));
        docs
    }

    /// The one exchange the proxy faulted.
    fn faulted(&self) -> Exchange {
        let faulted: Vec<Exchange> = self
            .proxy
            .exchanges()
            .into_iter()
            .filter(|e| e.fault.is_some())
            .collect();
        assert_eq!(
            faulted.len(),
            1,
            "exactly one faulted exchange: {faulted:?}"
        );
        assert_eq!(self.proxy.fired(), 1, "the armed fault fired once");
        faulted[0].clone()
    }
}

/// `(attempts, batch_gets, commits)` since `before`.
fn used(journal: &Journal, before: &Stats) -> (u64, u64, u64) {
    let used = journal.stats().since(before);
    (used.attempts, used.batch_gets, used.commits)
}

/// The lease operations a case runs, each on a command prepared up to the step before.
#[derive(Debug, Clone, Copy)]
enum Step {
    Register,
    Acquire,
    Takeover,
    Complete,
    Fail,
}

const STEPS: [Step; 5] = [
    Step::Register,
    Step::Acquire,
    Step::Takeover,
    Step::Complete,
    Step::Fail,
];

/// What a step answers, as one comparable value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Registered(RegistrationOutcome),
    Lease(LeaseOutput),
    Terminal(TerminalOutput),
}

/// Prepares `cmd` for `step` without faults, then returns the documents it adds.
async fn prepare(rig: &Rig, cmd: &CommandInput, step: Step) -> usize {
    let journal = &rig.journal;
    match step {
        Step::Register => 2,
        Step::Acquire => {
            journal.register_command(cmd).await.expect("register");
            2
        }
        Step::Takeover => {
            journal.register_command(cmd).await.expect("register");
            journal
                .acquire_lease(cmd, &lease(1))
                .await
                .expect("acquire");
            rig.clock.advance(TimeDelta::seconds(61));
            1
        }
        Step::Complete | Step::Fail => {
            journal.register_command(cmd).await.expect("register");
            journal
                .acquire_lease(cmd, &lease(1))
                .await
                .expect("acquire");
            1
        }
    }
}

async fn run(rig: &Rig, cmd: &CommandInput, step: Step) -> Result<Answer, JournalError> {
    let journal = &rig.journal;
    Ok(match step {
        Step::Register => Answer::Registered(journal.register_command(cmd).await?.outcome()),
        Step::Acquire => Answer::Lease(journal.acquire_lease(cmd, &lease(1)).await?),
        Step::Takeover => Answer::Lease(journal.acquire_lease(cmd, &lease(2)).await?),
        Step::Complete => Answer::Terminal(
            journal
                .complete_command(cmd, &lease(1), crate::support::fence_at(1), &reference(7))
                .await?,
        ),
        Step::Fail => Answer::Terminal(
            journal
                .fail_command(cmd, &lease(1), crate::support::fence_at(1))
                .await?,
        ),
    })
}

/// The fault-free answer of `step` at `now`.
fn expected(step: Step, now: Timestamp) -> Answer {
    let expires = now.plus_seconds(60).expect("expiry");
    match step {
        Step::Register => Answer::Registered(RegistrationOutcome::RegisteredNew),
        Step::Acquire => Answer::Lease(LeaseOutput::Acquired {
            fence_epoch: crate::support::fence_at(1),
            lease_expires_at: expires,
        }),
        Step::Takeover => Answer::Lease(LeaseOutput::Acquired {
            fence_epoch: crate::support::fence_at(2),
            lease_expires_at: expires,
        }),
        Step::Complete => Answer::Terminal(TerminalOutput::Succeeded),
        Step::Fail => Answer::Terminal(TerminalOutput::FailedFinal),
    }
}

/// Runs every step once with `fault` armed on its first request of `rpc`, and checks
/// the answer (`answer` maps the fault-free one to what this fault must give), the
/// runner's `(attempts, batch_gets, commits)` (`rpcs`: the runner's own retry
/// recovers from the broken connection), the request the proxy
/// faulted, and that exactly the step's documents were added to an otherwise
/// unchanged project, with no extra revision or fence.
async fn every_step_under(
    base: u64,
    rpc: Rpc,
    fault: Fault,
    answer: impl Fn(Answer) -> Answer,
    rpcs: (u64, u64, u64),
) {
    for (i, step) in STEPS.into_iter().enumerate() {
        let rig = rig().await;
        let cmd = command(base + i as u64, json!({"step": i}));
        let added = prepare(&rig, &cmd, step).await;
        let before_docs = rig.documents().await;
        let before = rig.journal.stats();
        let connections = rig.proxy.connections();
        rig.proxy.arm(rpc, fault);
        let result = run(&rig, &cmd, step).await;
        assert_eq!(
            result,
            Ok(answer(expected(step, rig.now()))),
            "{step:?} under {fault:?}"
        );
        // Exactly the expected commits. The channel reconnects after the proxy cut it,
        // and the first read on a reconnecting channel can itself fail: that costs at
        // most one more attempt of one read, never another commit.
        let (attempts, reads, commits) = used(&rig.journal, &before);
        // A new registration is first tried as one blind commit, before any read.
        let blind = u64::from(matches!(step, Step::Register));
        assert_eq!(
            rig.journal.stats().since(&before).blind_commits,
            blind,
            "{step:?} under {fault:?}: blind creations"
        );
        if blind == 1 && rpc == Rpc::BatchGet {
            // The blind creation committed; no read was sent, so the fault never fired.
            assert_eq!(
                (attempts, reads, commits),
                (1, 0, 1),
                "{step:?} under {fault:?}"
            );
            assert_eq!(rig.proxy.fired(), 0, "{step:?}: nothing to fault");
            assert_eq!(rig.proxy.connections(), connections, "{step:?}");
            rig.proxy.disarm();
        } else {
            assert_eq!(commits, rpcs.2, "{step:?} under {fault:?}");
            assert_eq!(
                attempts,
                reads + blind,
                "{step:?} under {fault:?}: one read per attempt but the blind one"
            );
            assert!(
                attempts == rpcs.0 || attempts == rpcs.0 + 1,
                "{step:?} under {fault:?}: {attempts} attempts, expected {}",
                rpcs.0
            );
            let faulted = rig.faulted();
            assert_eq!(faulted.rpc, Some(rpc), "{step:?}: {faulted:?}");
            match fault {
                Fault::LoseResponse => assert!(faulted.answered, "{step:?}: {faulted:?}"),
                Fault::LoseRequest => assert!(!faulted.answered, "{step:?}: {faulted:?}"),
                _ => {}
            }
            assert!(!faulted.delivered, "{step:?}: the fault reached the client");
            assert_eq!(
                rig.proxy.connections(),
                connections + 1,
                "{step:?}: the client reconnected once"
            );
        }
        let after_docs = rig.documents().await;
        assert_eq!(
            after_docs.len(),
            before_docs.len() + added,
            "{step:?}: exactly the step's documents were added"
        );
        let replaced = matches!(step, Step::Takeover | Step::Complete | Step::Fail);
        for doc in &before_docs {
            if replaced && doc.name.ends_with("/lifecycle/current") {
                continue;
            }
            assert!(
                after_docs.contains(doc),
                "{step:?}: an earlier document changed"
            );
        }
        assert_history(&rig, &cmd, step).await;
    }
}

fn int(doc: &Document, field: &str) -> i64 {
    match doc.fields.get(field).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::IntegerValue(v)) => *v,
        other => panic!("{field} is not an integer: {other:?}"),
    }
}

fn string<'a>(doc: &'a Document, field: &str) -> &'a str {
    match doc.fields.get(field).and_then(|v| v.value_type.as_ref()) {
        Some(ValueType::StringValue(v)) => v,
        other => panic!("{field} is not a string: {other:?}"),
    }
}

/// The audit trail has exactly the revisions the fault-free step leaves, and the
/// lifecycle the fault-free state, fence and revision.
async fn assert_history(rig: &Rig, cmd: &CommandInput, step: Step) {
    let hash = cmd.identity().command_key_hash().to_string();
    let prefix = format!("commerce_command_{hash}_");
    let mut revisions: Vec<String> = list(&rig.direct, "", "auditEvents")
        .await
        .into_iter()
        .filter_map(|d| {
            let id = d.name.rsplit('/').next()?.to_owned();
            id.strip_prefix(&prefix).map(str::to_owned)
        })
        .collect();
    revisions.sort();
    let (last, lifecycle) = match step {
        Step::Register => (1, None),
        Step::Acquire => (2, Some(("leased", 1))),
        Step::Takeover => (3, Some(("leased", 2))),
        Step::Complete => (3, Some(("succeeded", 1))),
        Step::Fail => (3, Some(("failed_final", 1))),
    };
    let expected: Vec<String> = (1..=last).map(|r| format!("{r:010}")).collect();
    assert_eq!(
        revisions, expected,
        "{step:?}: contiguous revisions, one new"
    );
    let stored = get(
        &rig.direct,
        &format!("checkoutRequests/{hash}/lifecycle/current"),
    )
    .await;
    let stored = stored.as_ref().map(|doc| {
        (
            string(doc, "state"),
            int(doc, "fenceEpoch"),
            int(doc, "commandRevision"),
        )
    });
    assert_eq!(
        stored,
        lifecycle.map(|(state, fence)| (state, fence, last)),
        "{step:?}: lifecycle state, fence and revision"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_commit_response_converges_without_a_second_write() {
    // The emulator applied the commit; the client never heard. The retry re-reads and
    // observes its own write: the same lease, fence and terminal outcome as a
    // fault-free run, and `registered_existing` for a registration.
    every_step_under(
        100,
        Rpc::Commit,
        Fault::LoseResponse,
        |answer| match answer {
            Answer::Registered(_) => Answer::Registered(RegistrationOutcome::RegisteredExisting),
            other => other,
        },
        (2, 2, 1),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_lost_on_the_way_is_applied_once_by_the_retry() {
    every_step_under(200, Rpc::Commit, Fault::LoseRequest, |a| a, (2, 2, 2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cut_mid_response_is_retried_with_the_same_outcome() {
    // The response headers and the first message arrive, then the connection dies.
    every_step_under(
        300,
        Rpc::BatchGet,
        Fault::CutResponse { after_frames: 2 },
        |a| a,
        (2, 2, 1),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_whose_response_never_comes_is_retried_with_the_same_outcome() {
    every_step_under(400, Rpc::BatchGet, Fault::LoseResponse, |a| a, (2, 2, 1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_response_delayed_past_the_deadline_is_not_written_twice() {
    // The commit is applied at once; its response is held past RPC_TIMEOUT, so the
    // attempt times out, and the retry's read (held too, then released) observes the
    // write. Costs one RPC_TIMEOUT of wall time.
    let rig = rig().await;
    let cmd = command(500, json!({}));
    rig.journal.register_command(&cmd).await.expect("register");
    let before_docs = rig.documents().await;
    let before = rig.journal.stats();
    rig.proxy.arm(
        Rpc::Commit,
        Fault::DelayResponse(RPC_TIMEOUT + Duration::from_secs(1)),
    );
    let began = Instant::now();
    let result = rig.journal.acquire_lease(&cmd, &lease(1)).await;
    let elapsed = began.elapsed();
    assert_eq!(
        result.map(Answer::Lease),
        Ok(expected(Step::Acquire, rig.now()))
    );
    assert!(elapsed >= RPC_TIMEOUT, "the deadline passed: {elapsed:?}");
    assert_eq!(used(&rig.journal, &before), (2, 2, 1));
    let faulted = rig.faulted();
    assert_eq!(faulted.rpc, Some(Rpc::Commit));
    assert!(faulted.answered && faulted.delivered, "{faulted:?}");
    assert_eq!(rig.proxy.connections(), 1, "no reconnection");
    let after_docs = rig.documents().await;
    assert_eq!(
        after_docs.len(),
        before_docs.len() + 2,
        "lifecycle and one event"
    );
    assert_history(&rig, &cmd, Step::Acquire).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_emulator_is_unavailable_promptly_and_writes_nothing() {
    // A port nobody listens on: connecting fails at once.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").to_string()
    };
    let began = Instant::now();
    let connected = Connection::connect("faults-closed-port", Target::Emulator(closed)).await;
    assert_eq!(
        connected.err(),
        Some(JournalError::Unavailable {
            last_code: Some(command_journal::error::GrpcCode::Unavailable),
            attempts: 0,
            deadline: false
        })
    );
    assert!(
        began.elapsed() < UNAVAILABLE_WITHIN,
        "{:?}",
        began.elapsed()
    );

    // A connection that worked, then the emulator went away (the proxy closes its
    // port and cuts the connection): every operation exhausts its attempts quickly.
    let mut rig = rig().await;
    let registered = command(600, json!({}));
    let leased = command(601, json!({}));
    rig.journal
        .register_command(&registered)
        .await
        .expect("register");
    rig.journal
        .register_command(&leased)
        .await
        .expect("register");
    rig.journal
        .acquire_lease(&leased, &lease(1))
        .await
        .expect("acquire");
    let before_docs = rig.documents().await;
    assert_eq!(before_docs.len(), 6, "2 roots, 3 events, 1 lifecycle");
    rig.proxy.close().await;
    let fresh = command(602, json!({}));
    for (name, step) in [
        ("register", 0),
        ("acquire", 1),
        ("complete", 2),
        ("fail", 3),
        ("status", 4),
    ] {
        let before = rig.journal.stats();
        let began = Instant::now();
        let result = match step {
            0 => rig.journal.register_command(&fresh).await.map(|_| ()),
            1 => rig
                .journal
                .acquire_lease(&registered, &lease(1))
                .await
                .map(|_| ()),
            2 => rig
                .journal
                .complete_command(
                    &leased,
                    &lease(1),
                    crate::support::fence_at(1),
                    &reference(1),
                )
                .await
                .map(|_| ()),
            3 => rig
                .journal
                .fail_command(&leased, &lease(1), crate::support::fence_at(1))
                .await
                .map(|_| ()),
            _ => rig.journal.status(&leased).await.map(|_| ()),
        };
        let elapsed = began.elapsed();
        // Refused reconnections answer UNAVAILABLE; the error says so and counts the
        // attempts it made.
        assert_eq!(
            result,
            Err(JournalError::Unavailable {
                last_code: Some(GrpcCode::Unavailable),
                attempts: MAX_ATTEMPTS,
                deadline: false
            }),
            "{name}"
        );
        assert!(elapsed < UNAVAILABLE_WITHIN, "{name} took {elapsed:?}");
        // Every attempt is one read that fails (the first may meet the connection the
        // proxy cut, then reconnections are refused), and no commit is sent, except
        // the new registration's first attempt: its blind creation, which fails too.
        let attempts = u64::from(MAX_ATTEMPTS);
        let blind = u64::from(step == 0);
        let used = used(&rig.journal, &before);
        assert_eq!(used, (attempts, attempts - blind, blind), "{name}");
    }
    assert_eq!(rig.documents().await, before_docs, "nothing was written");
}

#[tokio::test]
async fn an_emulator_that_accepts_but_never_answers_is_unavailable_within_the_deadlines() {
    // A listener nobody serves: connections complete in the kernel, no byte comes back.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let host = silent.local_addr().expect("addr").to_string();
    let connection = command_journal::Connection::connect(
        "silent-project",
        command_journal::Target::Emulator(host),
    )
    .await
    .expect("connections are lazy");
    let journal = Journal::new(connection).with_retry_policy(command_journal::RetryPolicy {
        rpc_timeout: Duration::from_millis(200),
        ..Default::default()
    });
    let began = Instant::now();
    let result = journal.register_command(&command(900, json!({}))).await;
    assert_eq!(
        result,
        Err(command_journal::JournalError::Unavailable {
            last_code: Some(GrpcCode::DeadlineExceeded),
            attempts: MAX_ATTEMPTS,
            deadline: false
        })
    );
    let used = journal.stats();
    assert_eq!(used.attempts, u64::from(MAX_ATTEMPTS));
    // The first attempt is the new registration's blind creation, never answered;
    // every later one is a read that never answers, so nothing else is decided.
    assert_eq!(
        (used.commits, used.blind_commits, used.batch_gets),
        (1, 1, u64::from(MAX_ATTEMPTS) - 1),
        "one blind creation, then reads only"
    );
    // Ten 200 ms deadlines plus the capped backoff between them.
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cut_at_any_frame_reports_the_transport_s_code_in_both_modes() {
    // A status read cut after each frame of its response (headers, then its messages
    // in one or more frames as the emulator flushes them, then trailers), with one
    // attempt: cut before its last message, the error carries the code the transport
    // reported for the cut (UNKNOWN: a connection lost mid-RPC), in both modes, and
    // in transaction mode whether or not the read had opened its transaction (its
    // first message carries it; the reaper then releases it); never an INTERNAL of
    // the journal's own. Cut after the last message, the answer stands.
    let cut = JournalError::Unavailable {
        last_code: Some(GrpcCode::Unknown),
        attempts: 1,
        deadline: false,
    };
    let mut opened_then_cut = 0;
    for mode in [
        command_journal::Concurrency::Preconditions,
        command_journal::Concurrency::Transaction,
    ] {
        for after_frames in 0..6 {
            let rig = rig().await;
            let journal = rig
                .journal
                .clone()
                .with_concurrency(mode)
                .with_retry_policy(RetryPolicy {
                    attempts: std::num::NonZeroU32::MIN,
                    ..RetryPolicy::default()
                });
            let cmd = command(700 + after_frames as u64, json!({}));
            journal.register_command(&cmd).await.expect("register");
            journal
                .acquire_lease(&cmd, &lease(1))
                .await
                .expect("acquire");
            rig.proxy
                .arm(Rpc::BatchGet, Fault::CutResponse { after_frames });
            let before = journal.stats();
            let answer = journal.status(&cmd).await.map(|status| status.state);
            let reaped = journal.stats().since(&before).reaped;
            println!("cut mode={mode:?} after_frames={after_frames} reaped={reaped} {answer:?}");
            match answer {
                Ok(state) => {
                    assert!(after_frames >= 2, "{mode:?}: answered with no message");
                    assert_eq!(state, command_journal::CommandState::Leased);
                    assert_eq!(reaped, 0, "{mode:?}: its transaction was rolled back");
                }
                Err(error) => {
                    assert_eq!(error, cut, "{mode:?} cut after {after_frames} frames");
                    opened_then_cut += reaped;
                }
            }
        }
    }
    // The emulator sends the first message (which carries the transaction) in a frame
    // of its own: some cut came after it and before the read's end.
    assert!(opened_then_cut >= 1, "no cut after the transaction opened");
}

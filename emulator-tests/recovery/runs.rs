//! Recovery as a deployment runs it, against the emulator: scheduled runs with a
//! limit reach a charged command behind permanently listed ones through the range's
//! checkpoint (and starve without it); two tasks settle a backlog between them, each
//! command once; a foreign `lifecycle` document neither stops nor joins a listing,
//! and `verify` reports it; a resumed run reports its whole listing; a run whose
//! every lookup failed says so; a deadline hit mid-command stops cleanly and records
//! where; a checkpoint forged, past every command, raced or of another task count
//! never skips a command.

use super::{Fixture, options};
use crate::support::{self, command};
use chrono::TimeDelta;
use command_journal::pending::KeyRange;
use command_journal::recovery::{Recorded, RecoverOptions, Recovered, Recovery, Stop, Verdict};
use command_journal::sends::{AttemptNumber, AttemptState};
use command_journal::verify::FindingCode;
use command_journal::{CommandInput, JournalError};
use gcloud_sdk::google::firestore::v1::Value;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn hash(cmd: &CommandInput) -> String {
    cmd.identity().command_key_hash().to_string()
}

/// `n` commands numbered from `first`, in key-hash order.
fn commands(first: u64, n: u64) -> Vec<CommandInput> {
    let mut cmds: Vec<CommandInput> = (first..first + n)
        .map(|i| command(i, json!({"order": i})))
        .collect();
    cmds.sort_by_key(hash);
    cmds
}

fn handled(report: &Recovery) -> Vec<String> {
    report
        .commands
        .iter()
        .map(|c| c.command_key_hash.to_string())
        .collect()
}

fn text(s: &str) -> Value {
    Value {
        value_type: Some(ValueType::StringValue(s.to_owned())),
    }
}

/// The checkpoint of `range` as stored, its `after` only.
async fn checkpoint_after(f: &Fixture, range: KeyRange) -> Option<String> {
    let path = format!("recoveryCheckpoints/{}", range.id());
    let doc = support::get(&f.connection, &path).await?;
    match doc.fields.get("after").and_then(|v| v.value_type.clone()) {
        Some(ValueType::StringValue(after)) => Some(after),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn five_limited_scheduled_runs_settle_a_charged_command_behind_permanently_listed_ones() {
    let f = Fixture::new().await;
    // Six commands: the one with the largest key hash was charged, the five before it
    // lost before the provider.
    let cmds = commands(1300, 6);
    let (charged, lost) = cmds.split_last().expect("six");
    for cmd in lost {
        f.crash_before_the_provider(cmd).await;
    }
    f.crash_after_the_charge(charged).await;
    // Past the keys' retention: the lost requests' "not found" proves nothing, on every
    // run, and they stay listed for good.
    f.clock.advance(TimeDelta::days(2));
    let limited = RecoverOptions {
        limit: Some(2),
        ..options()
    };
    // Every run starting at the front of the key-hash order: five runs, still sending.
    for _ in 0..5 {
        let report = f.recover_with(&limited).await;
        assert_eq!(report.count(Recovered::NotFound), 2);
        assert_eq!(report.stop, Stop::Limit);
    }
    assert_eq!(
        f.send_state(charged).await,
        (AttemptNumber::FIRST, AttemptState::Sending)
    );

    // Scheduled runs keeping the range's checkpoint: each goes on where the last
    // stopped, and the third (⌈6 / 2⌉) reaches the charge.
    let scheduled = RecoverOptions {
        checkpoint: true,
        ..limited
    };
    let mut settled_by = Vec::new();
    let mut previous = None;
    for run in 0..5 {
        let report = f.recover_with(&scheduled).await;
        assert_eq!(report.started_after, previous, "run {run}");
        assert_eq!(report.commands.len(), 2, "run {run}");
        assert!(
            matches!(report.checkpoint, Some(Ok(Recorded::Recorded))),
            "{:?}",
            report.checkpoint
        );
        if report.count(Recovered::Succeeded) == 1 {
            settled_by.push(run);
        }
        assert_eq!(
            checkpoint_after(&f, KeyRange::ALL).await,
            report.cursor.as_ref().map(ToString::to_string)
        );
        previous = report.cursor.clone();
    }
    assert_eq!(settled_by, [2]);
    let status = f.journal.send_status(charged).await.expect("status");
    assert_eq!(status.command.state.as_str(), "succeeded");
    assert_eq!(f.provider.charges(), 1);
    assert_eq!(
        f.provider.sends.load(Ordering::SeqCst),
        6,
        "recovery never sends"
    );
    // The five lost stay listed; the journal and its checkpoint verify clean.
    assert_eq!(f.journal.pending().await.expect("pending").pending.len(), 5);
    f.verify_clean().await;
}

#[tokio::test]
async fn tasks_zero_and_one_of_two_settle_a_backlog_between_them_each_command_once() {
    let f = Fixture::new().await;
    let cmds = commands(1320, 8);
    for cmd in &cmds {
        f.crash_after_the_charge(cmd).await;
    }
    f.clock.advance(TimeDelta::seconds(61));
    let tasks = [KeyRange::new(0, 2), KeyRange::new(1, 2)].map(|r| r.expect("range"));
    let all: BTreeSet<String> = cmds.iter().map(hash).collect();
    // Each task's listing is its range's share; the two together are the whole.
    let mut listed = BTreeSet::new();
    for task in tasks {
        let listing = f.journal.pending_in(task).await.expect("pending");
        assert!(!listing.pending.is_empty(), "both halves hold commands");
        for p in &listing.pending {
            assert!(task.contains(&p.command_key_hash));
            assert!(
                listed.insert(p.command_key_hash.to_string()),
                "listed twice"
            );
        }
    }
    assert_eq!(listed, all);

    // The two tasks in parallel, as Cloud Run starts them.
    let run = |range| {
        let options = RecoverOptions {
            range,
            checkpoint: true,
            ..options()
        };
        let journal = f.journal.clone();
        let provider = std::sync::Arc::clone(&f.provider);
        async move {
            journal
                .recover(provider.as_ref(), &options, |_| {})
                .await
                .expect("a task's run")
        }
    };
    let (zero, one) = tokio::join!(run(tasks[0]), run(tasks[1]));
    let mut settled = BTreeSet::new();
    for (task, report) in [(tasks[0], &zero), (tasks[1], &one)] {
        assert_eq!(report.range, task);
        assert!(!report.commands.is_empty());
        assert_eq!(report.count(Recovered::Succeeded), report.commands.len());
        for h in handled(report) {
            assert!(settled.insert(h), "settled twice");
        }
        assert!(
            report
                .commands
                .iter()
                .all(|c| task.contains(&c.command_key_hash))
        );
        assert!(checkpoint_after(&f, task).await.is_some());
    }
    assert_eq!(settled, all, "together, all of it");
    assert_eq!(
        f.provider.lookups.load(Ordering::SeqCst),
        8,
        "one lookup each"
    );
    assert_eq!(f.provider.charges(), 8);
    assert_eq!(f.provider.sends.load(Ordering::SeqCst), 8);
    // A job with no task variables owns the whole space: nothing left for it.
    let whole = f.recover_with(&options()).await;
    assert_eq!((whole.range, whole.pending.len()), (KeyRange::ALL, 0));
    f.verify_clean().await;
}

#[tokio::test]
async fn pending_and_recover_read_past_a_foreign_lifecycle_and_verify_reports_it() {
    let f = Fixture::new().await;
    let cmd = command(1340, json!({"order": 40}));
    f.crash_after_the_charge(&cmd).await;
    f.clock.advance(TimeDelta::seconds(61));
    // An application's own `lifecycle` collections, leased as the journal's look,
    // sorting before, after and right next to `checkoutRequests`.
    let foreign = [
        "accounts/a1/lifecycle/current",
        "checkoutRequestsArchive/h1/lifecycle/current",
        "rentals/r1/lifecycle/e1",
    ];
    let fields = HashMap::from([("state".to_owned(), text("leased"))]);
    for path in foreign {
        support::put(&f.connection, path, fields.clone()).await;
    }
    let listing = f.journal.pending().await.expect("pending");
    assert_eq!((listing.pending.len(), listing.listed), (1, 1));
    for task in [KeyRange::new(0, 2), KeyRange::new(1, 2)] {
        f.journal
            .pending_in(task.expect("range"))
            .await
            .expect("each range's listing");
    }
    let report = f.recover().await;
    assert_eq!(report.count(Recovered::Succeeded), 1);

    // `verify` reports each foreign document, and nothing else.
    let found = command_journal::verify(&f.connection, &mut |_| {})
        .await
        .expect("verify");
    let mut at: Vec<(FindingCode, &str)> = found
        .findings
        .iter()
        .map(|x| (x.code, x.path.as_str()))
        .collect();
    at.sort();
    let expected: Vec<(FindingCode, &str)> = foreign
        .iter()
        .map(|p| (FindingCode::UnexpectedDocument, *p))
        .collect();
    assert_eq!(at, expected);

    // Inside the journal, a leased lifecycle that is no command's still fails closed.
    let other = command(1341, json!({"order": 41}));
    f.crash_after_the_charge(&other).await;
    f.clock.advance(TimeDelta::seconds(61));
    let inside = format!("checkoutRequests/{}/lifecycle/extra", hash(&other));
    support::put(&f.connection, &inside, fields).await;
    let before = support::documents(&f.connection).await;
    let lookups = f.provider.lookups.load(Ordering::SeqCst);
    assert!(matches!(
        f.journal.pending().await,
        Err(JournalError::JournalCorrupt { .. })
    ));
    let refused = f
        .journal
        .recover(f.provider.as_ref(), &options(), |_| {})
        .await;
    assert!(
        matches!(refused, Err(JournalError::JournalCorrupt { .. })),
        "{refused:?}"
    );
    assert_eq!(
        support::documents(&f.connection).await,
        before,
        "nothing written"
    );
    assert_eq!(
        f.provider.lookups.load(Ordering::SeqCst),
        lookups,
        "nothing asked"
    );
}

#[tokio::test]
async fn a_resumed_run_reports_its_whole_listing_and_a_run_whose_lookups_all_failed_says_so() {
    let f = Fixture::new().await;
    let cmds = commands(1350, 4);
    for cmd in &cmds {
        f.crash_after_the_charge(cmd).await;
    }
    f.clock.advance(TimeDelta::seconds(61));
    f.provider.failing.store(true, Ordering::SeqCst);
    let limited = RecoverOptions {
        limit: Some(2),
        ..options()
    };
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let metrics = recorder.handle();
    let _local = metrics::set_default_local_recorder(&recorder);
    let first = f.recover_with(&limited).await;
    let resumed = f
        .recover_with(&RecoverOptions {
            after: first.cursor.clone(),
            ..limited.clone()
        })
        .await;
    let hashes: Vec<String> = cmds.iter().map(hash).collect();
    assert_eq!(handled(&first), hashes[..2]);
    assert_eq!(handled(&resumed), hashes[2..]);
    for report in [&first, &resumed] {
        // The listing it resumed into: the whole range's, not what follows the cursor.
        assert_eq!(report.pending.len(), 4);
        assert_eq!(report.count(Recovered::LookupUnavailable), 2);
        assert_eq!(
            (report.lookups.answered, report.lookups.unavailable),
            (0, 2)
        );
        assert_eq!(report.verdict(), Verdict::ProviderUnavailable);
        assert_eq!(report.errors(), 0);
    }
    // The gauge, set at the resumed run's listing: every pending command.
    let text = metrics.render();
    let gauge = text
        .lines()
        .find(|l| {
            l.starts_with("command_journal_pending_commands{")
                && l.contains("reason=\"resend_or_evidence\"")
        })
        .expect("the gauge");
    assert!(gauge.ends_with(" 4"), "{gauge}");
    // One answer from the provider, and the run is no longer one of a provider down.
    f.provider.failing.store(false, Ordering::SeqCst);
    let answered = f.recover_with(&limited).await;
    assert_eq!(answered.verdict(), Verdict::Clean);
    assert_eq!(answered.count(Recovered::Succeeded), 2);
}

#[tokio::test]
async fn a_deadline_hit_mid_command_stops_the_run_cleanly_and_the_next_goes_on() {
    let f = Fixture::new().await;
    let cmds = commands(1360, 3);
    for cmd in &cmds {
        f.crash_after_the_charge(cmd).await;
    }
    f.clock.advance(TimeDelta::seconds(61));
    // Passed before the listing answers: the first command still starts (and runs to
    // its end past the deadline), no other does.
    let options = RecoverOptions {
        concurrency: 4,
        deadline: Some(Duration::from_micros(1)),
        checkpoint: true,
        ..options()
    };
    for (run, cmd) in cmds.iter().enumerate() {
        let report = f.recover_with(&options).await;
        assert_eq!(handled(&report), [hash(cmd)], "run {run}");
        assert_eq!(report.count(Recovered::Succeeded), 1);
        let (stop, cursor) = if run < 2 {
            (Stop::Deadline, Some(hash(cmd)))
        } else {
            (Stop::Finished, None)
        };
        assert_eq!(report.stop, stop);
        assert_eq!(report.cursor.as_ref().map(ToString::to_string), cursor);
        assert_eq!(checkpoint_after(&f, KeyRange::ALL).await, Some(hash(cmd)));
    }
    assert_eq!(f.provider.lookups.load(Ordering::SeqCst), 3);
    f.verify_clean().await;
    let zero = f
        .journal
        .recover(
            f.provider.as_ref(),
            &RecoverOptions {
                deadline: Some(Duration::ZERO),
                ..RecoverOptions::default()
            },
            |_| {},
        )
        .await;
    assert!(
        matches!(
            zero,
            Err(JournalError::InvalidInput {
                field: "recoverDeadline"
            })
        ),
        "{zero:?}"
    );
}

#[tokio::test]
async fn no_checkpoint_makes_a_run_skip_a_command() {
    let f = Fixture::new().await;
    let cmds = commands(1370, 6);
    for cmd in &cmds {
        f.crash_after_the_charge(cmd).await;
    }
    f.clock.advance(TimeDelta::seconds(61));
    let path = "recoveryCheckpoints/0-of-1";
    let one = RecoverOptions {
        limit: Some(1),
        checkpoint: true,
        ..options()
    };
    // Pointing past every command: the run wraps to the range's start.
    let past = HashMap::from([
        ("checkpointSchemaVersion".to_owned(), int(1)),
        ("keyRangeIndex".to_owned(), int(0)),
        ("keyRangeCount".to_owned(), int(1)),
        ("after".to_owned(), text(&"f".repeat(64))),
        (
            "recordedAt".to_owned(),
            Value {
                value_type: Some(ValueType::TimestampValue(
                    gcloud_sdk::prost_types::Timestamp {
                        seconds: 1_930_000_000,
                        nanos: 0,
                    },
                )),
            },
        ),
    ]);
    support::put(&f.connection, path, past.clone()).await;
    let report = f.recover_with(&one).await;
    assert_eq!(handled(&report), [hash(&cmds[0])]);
    let mut succeeded = report.count(Recovered::Succeeded);

    // Forged (a field no codec accepts): the run fails closed, asks and writes
    // nothing, and `verify` reports it.
    let mut forged = past;
    forged.insert("note".to_owned(), text("CANARYforged"));
    support::put(&f.connection, path, forged).await;
    let before = support::documents(&f.connection).await;
    let lookups = f.provider.lookups.load(Ordering::SeqCst);
    let refused = f.journal.recover(f.provider.as_ref(), &one, |_| {}).await;
    assert!(
        matches!(refused, Err(JournalError::JournalCorrupt { .. })),
        "{refused:?}"
    );
    assert!(!format!("{refused:?}").contains("CANARY"));
    assert_eq!(support::documents(&f.connection).await, before);
    assert_eq!(f.provider.lookups.load(Ordering::SeqCst), lookups);
    let found = command_journal::verify(&f.connection, &mut |_| {})
        .await
        .expect("verify");
    let at: Vec<(FindingCode, &str)> = found
        .findings
        .iter()
        .map(|x| (x.code, x.path.as_str()))
        .collect();
    assert_eq!(at, [(FindingCode::MalformedRecoveryCheckpoint, path)]);
    support::delete(&f.connection, path).await;

    // Two runs racing on one range's checkpoint: the one that got further stays.
    let run = |limit| {
        let options = RecoverOptions {
            limit: Some(limit),
            ..one.clone()
        };
        let journal = f.journal.clone();
        let provider = std::sync::Arc::clone(&f.provider);
        async move {
            journal
                .recover(provider.as_ref(), &options, |_| {})
                .await
                .expect("a racing run")
        }
    };
    let (short, long) = tokio::join!(run(1), run(2));
    for report in [&short, &long] {
        assert!(
            matches!(report.checkpoint, Some(Ok(_))),
            "{:?}",
            report.checkpoint
        );
        succeeded += report.count(Recovered::Succeeded);
    }
    let further = long.cursor.as_ref().map(ToString::to_string);
    assert_eq!(checkpoint_after(&f, KeyRange::ALL).await, further);

    // The task count changed: two tasks of one command each, then three without a
    // limit. The three new ranges start at their own start; every command is settled
    // once.
    for task in [KeyRange::new(0, 2), KeyRange::new(1, 2)] {
        let report = f
            .recover_with(&RecoverOptions {
                range: task.expect("range"),
                ..one.clone()
            })
            .await;
        assert!(report.commands.len() <= 1);
        succeeded += report.count(Recovered::Succeeded);
    }
    for index in 0..3 {
        let range = KeyRange::new(index, 3).expect("range");
        let report = f
            .recover_with(&RecoverOptions {
                range,
                limit: None,
                ..one.clone()
            })
            .await;
        assert_eq!(report.started_after, None, "a new range has no checkpoint");
        assert_eq!(report.errors(), 0);
        succeeded += report.count(Recovered::Succeeded);
    }
    assert_eq!(succeeded, 6, "each command settled once");
    assert!(
        f.journal
            .pending()
            .await
            .expect("pending")
            .pending
            .is_empty()
    );
    assert_eq!(f.provider.charges(), 6);
    f.verify_clean().await;
}

fn int(n: i64) -> Value {
    Value {
        value_type: Some(ValueType::IntegerValue(n)),
    }
}

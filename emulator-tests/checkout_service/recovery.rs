//! The reference service killed after the provider charged and before the outcome
//! was recorded, no client retry, and the recovery job (`checkout-service recover`'s
//! code, `service::recovery`) run past the lease: each command is `succeeded` with the
//! charge that happened, the client's late retry gets the same 200 body byte for
//! byte, exactly one charge each. The job runs in both concurrency modes (one command
//! each, the second resuming from the first run's cursor), after a run whose lookups
//! failed, and a run declaring another account, wrote nothing and left both listed.
//! The binary's `recover`
//! mode runs from its configuration and refuses a bad setting with one line; it
//! exits 3 when the provider answered none of its lookups, a Cloud Run task covers its
//! key range only, and on a clock moved by `JOURNAL_CLOCK_OFFSET_MS` it sees an
//! expired lease a minute early.

use super::stub_provider::{Action, LookupAction, Stub};
use super::{
    CHARGE_PREFIX, Options, PAYLOAD_NOTE, PAYLOAD_SKU, PLAN_ENV, UID, assert_no_secrets,
    charge_envelope, claims, command_id, envelope_reference, service, service_command,
    start_service, start_stub, succeeded, support, unsigned,
};
use chrono::{TimeDelta, Utc};
use command_journal::pending::Unblock;
use command_journal::recovery::{RecoverOptions, Recovered};
use command_journal::time::ManualClock;
use command_journal::{Concurrency, Connection, Journal, ProviderAccount, Target};
use serde_json::{Value, json};
use service::config::Config;
use service::logging::Logger;
use service::provider::Charges;
use service::recovery::JobSettings;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};

/// The account the service's configuration declares for its recovery job
/// (`Backend::account`, as `checkout-service recover` sets it).
fn service_account(project: &str) -> ProviderAccount {
    service::backend::Backend::new(&service_config(project))
        .expect("the provider's client")
        .account()
        .expect("the service's account")
}

/// The service's configuration on `project`.
fn service_config(project: &str) -> Config {
    let mut env: std::collections::HashMap<&str, String> = PLAN_ENV
        .iter()
        .map(|(name, value)| (*name, (*value).to_owned()))
        .collect();
    env.insert("GOOGLE_CLOUD_PROJECT", project.to_owned());
    env.insert("JOURNAL_ENVIRONMENT", "emulator".to_owned());
    env.insert("PROVIDER_URL", "http://127.0.0.1:1".to_owned());
    env.insert(
        "FIRESTORE_EMULATOR_HOST",
        support::emulator().host().to_owned(),
    );
    Config::from_lookup(|name| env.get(name).cloned()).expect("config")
}

fn priced() -> Value {
    json!({"sku": PAYLOAD_SKU, "note": PAYLOAD_NOTE, "amount": 1250, "currency": "eur"})
}

/// The service binary on `project` calling `stub_url`, and its port once listening.
async fn spawn_service(
    project: &str,
    stub_url: &str,
    extra: &[(&str, &str)],
    args: &[&str],
) -> (
    tokio::process::Child,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let emulator = support::emulator();
    let mut env = vec![
        PLAN_ENV[0],
        PLAN_ENV[1],
        PLAN_ENV[2],
        PLAN_ENV[3],
        ("PORT", "0"),
        ("GOOGLE_CLOUD_PROJECT", project),
        ("FIRESTORE_EMULATOR_HOST", emulator.host()),
        ("JOURNAL_ENVIRONMENT", "emulator"),
        ("PROVIDER_URL", stub_url),
        ("FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099"),
    ];
    env.extend_from_slice(extra);
    let mut command = service_command(&env);
    command.args(args);
    let mut child = command.spawn().expect("start the service");
    let (line_tx, line_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = line_tx.send(line);
        }
    });
    (child, line_rx)
}

async fn next_line(lines: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> Option<Value> {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.recv())
        .await
        .expect("a log line in time")?;
    Some(serde_json::from_str(&line).expect("JSON line"))
}

#[tokio::test]
async fn checkout_killed_after_the_charge_is_settled_by_the_recovery_job_and_replayed() {
    let emulator = support::emulator();
    let project = emulator.new_project_id();
    // Every POST charges, then its answer is held for 120 s: the service is killed
    // while it waits.
    let (stub, stub_url) = start_stub(Stub::new(Action::Lose, CHARGE_PREFIX)).await;
    let (mut child, mut lines) = spawn_service(&project, &stub_url, &[], &[]).await;
    let port = loop {
        let line = next_line(&mut lines).await.expect("the service writes");
        if line["message"] == "listening" {
            break line["port"].as_u64().expect("port");
        }
    };
    let base = format!("http://127.0.0.1:{port}");
    let token = unsigned(&claims(&project, UID));
    let ids = [command_id(700), command_id(701)];
    let mut in_flight = Vec::new();
    for id in &ids {
        let request = reqwest::Client::new()
            .post(format!("{base}/v1/checkouts"))
            .bearer_auth(&token)
            .json(&json!({"commandId": id, "payload": priced()}));
        in_flight.push(tokio::spawn(async move { request.send().await }));
    }
    while stub.charges().len() < ids.len() {
        tokio::time::timeout(Duration::from_secs(60), stub.arrived.notified())
            .await
            .expect("the provider calls arrive");
    }
    child.start_kill().expect("SIGKILL the service");
    let exit = child.wait().await.expect("wait");
    assert_eq!(exit.code(), None, "killed by a signal");
    for request in in_flight {
        assert!(
            request.await.expect("request task").is_err(),
            "no client got an answer"
        );
    }
    assert_eq!(stub.posts().len(), 2);

    // No client comes back. Past the lease, both are pending with the outcome unknown.
    let connection = Connection::connect(&project, Target::Emulator(emulator.host().to_owned()))
        .await
        .expect("connect");
    let at = Utc::now() + TimeDelta::seconds(61);
    let clock = Arc::new(ManualClock::new(at));
    let journal = |mode| {
        Journal::new(connection.clone())
            .with_clock(clock.clone())
            .with_concurrency(mode)
    };
    let listing = journal(Concurrency::Preconditions)
        .pending()
        .await
        .expect("pending");
    assert_eq!(listing.pending.len(), 2);
    assert!(
        listing
            .pending
            .iter()
            .all(|p| p.unblocked_by == Unblock::ResendOrEvidence)
    );

    // The recovery job, as `checkout-service recover` runs it: one command in
    // transaction mode, the rest in preconditions mode from the cursor.
    let logged = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&logged);
    let logger = Logger::with_sink(
        &project,
        Arc::new(move |line: &str| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_owned());
        }),
    );
    let charges = Charges::new(
        format!("{stub_url}/v1/charges").parse().expect("url"),
        Duration::from_secs(5),
    )
    .expect("client");
    // A provider whose lookups fail: nothing is written, both stay listed.
    stub.script_lookups([LookupAction::Status(503), LookupAction::Status(503)]);
    let before = support::documents(&connection).await;
    let failed = service::recovery::run(
        &journal(Concurrency::Preconditions),
        &charges,
        &JobSettings {
            options: RecoverOptions::default(),
        },
        &logger,
    )
    .await
    .expect("a run with failing lookups");
    assert_eq!(failed.count(Recovered::LookupUnavailable), 2);
    assert_eq!(failed.errors(), 0);
    assert_eq!(
        support::documents(&connection).await,
        before,
        "nothing written"
    );
    assert_eq!(
        journal(Concurrency::Preconditions)
            .pending()
            .await
            .expect("pending")
            .pending
            .len(),
        2,
        "both still listed"
    );
    // A job configured for another account: nothing asked, nothing written, and the
    // run is a failure (the binary exits 1).
    let other = ProviderAccount::new("stub", "acct_elsewhere", "test").expect("account");
    let misconfigured = service::recovery::run(
        &journal(Concurrency::Preconditions),
        &charges,
        &JobSettings {
            options: RecoverOptions {
                account: Some(other),
                ..RecoverOptions::default()
            },
        },
        &logger,
    )
    .await
    .expect("a run for another account");
    assert_eq!(misconfigured.count(Recovered::OtherAccount), 2);
    assert!(!service::recovery::succeeded(&misconfigured));
    assert_eq!(stub.lookups().len(), 2, "nothing asked");
    assert_eq!(
        support::documents(&connection).await,
        before,
        "nothing written"
    );

    // The service's own account, as the binary declares it: the plans the service
    // bound prove it.
    let account = service_account(&project);
    let first = JobSettings {
        options: RecoverOptions {
            limit: Some(1),
            account: Some(account.clone()),
            ..RecoverOptions::default()
        },
    };
    let report = service::recovery::run(
        &journal(Concurrency::Transaction),
        &charges,
        &first,
        &logger,
    )
    .await
    .expect("first run");
    assert_eq!(report.count(Recovered::Succeeded), 1);
    let cursor = report.cursor.clone().expect("a cursor: one command left");
    let rest = JobSettings {
        options: RecoverOptions {
            after: Some(cursor),
            account: Some(account),
            ..RecoverOptions::default()
        },
    };
    let report = service::recovery::run(
        &journal(Concurrency::Preconditions),
        &charges,
        &rest,
        &logger,
    )
    .await
    .expect("second run");
    assert_eq!(report.count(Recovered::Succeeded), 1);
    assert_eq!(report.cursor, None);
    assert_eq!(stub.posts().len(), 2, "the job never posts");
    assert_eq!(stub.lookups().len(), 4, "two failed, then one per command");
    assert!(
        journal(Concurrency::Preconditions)
            .pending()
            .await
            .expect("pending")
            .pending
            .is_empty()
    );
    let logged = logged.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let parsed: Vec<Value> = logged
        .iter()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    let recovered: Vec<&Value> = parsed
        .iter()
        .filter(|l| l["message"] == "recovered")
        .collect();
    assert_eq!(recovered.len(), 6);
    assert_eq!(
        recovered
            .iter()
            .filter(|l| l["outcome"] == "lookup_unavailable")
            .count(),
        2
    );
    // The other account's lines are errors: a misconfigured job is loud.
    let other: Vec<&&Value> = recovered
        .iter()
        .filter(|l| l["outcome"] == "other_account")
        .collect();
    assert_eq!(other.len(), 2);
    assert!(other.iter().all(|l| l["severity"] == "ERROR"), "{other:?}");
    assert_eq!(
        recovered
            .iter()
            .filter(|l| l["outcome"] == "succeeded")
            .count(),
        2
    );
    let summaries: Vec<&Value> = parsed
        .iter()
        .filter(|l| l["message"] == "recovery finished")
        .collect();
    assert_eq!(summaries.len(), 4);
    assert_eq!(summaries[0]["pending"]["resend_or_evidence"], 2);
    assert_eq!(summaries[0]["outcomes"]["lookup_unavailable"], 2);
    assert_eq!(summaries[1]["outcomes"]["other_account"], 2);
    assert_eq!(summaries[1]["severity"], "ERROR");
    let summaries = &summaries[1..];
    assert_eq!(summaries[1]["cursor"].as_str().map(str::len), Some(64));
    assert_eq!(summaries[2]["outcomes"]["succeeded"], 1);
    assert_eq!(summaries[2]["cursor"], Value::Null);

    // The clients' late retries, on a new instance: the charge, the same body on
    // every retry, no POST, no lookup.
    let late = start_service(Options {
        connection: Some(connection.clone()),
        stub: Some((Arc::clone(&stub), stub_url.clone())),
        now: Some(at + TimeDelta::seconds(120)),
        ..Options::default()
    })
    .await;
    let mut bodies = Vec::new();
    for id in &ids {
        let charge = stub
            .charges()
            .into_iter()
            .find(|c| c.key == late.expected_key(id, &priced()))
            .map(|c| charge_envelope(&c.object))
            .expect("the command's charge");
        let answer = late.checkout(id, &priced()).await;
        assert_eq!((answer.status, &answer.body), (200, &succeeded(&charge)));
        let again = late.checkout(id, &priced()).await;
        assert_eq!(again.text, answer.text, "byte for byte");
        bodies.push(answer.text);
    }
    assert_eq!(stub.charges().len(), 2, "exactly one charge per command");
    assert_eq!(stub.posts().len(), 2);
    assert_eq!(stub.lookups().len(), 4);
    late.assert_verifies_clean(2).await;
    let references: Vec<String> = stub
        .charges()
        .iter()
        .map(|charge| envelope_reference(&charge_envelope(&charge.object)))
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut extra = ids.clone();
    extra.push(&token);
    assert_no_secrets(&logged, &bodies, &extra, &references);
}

#[tokio::test]
async fn checkout_binary_recover_runs_once_and_refuses_bad_settings_with_one_line() {
    let project = support::emulator().new_project_id();
    let (_stub, stub_url) = start_stub(Stub::new(Action::Charge, CHARGE_PREFIX)).await;
    // Nothing pending: one summary line, exit 0.
    let (mut child, mut lines) = spawn_service(&project, &stub_url, &[], &["recover"]).await;
    let mut seen = Vec::new();
    while let Some(line) = next_line(&mut lines).await {
        seen.push(line);
    }
    let exit = child.wait().await.expect("wait");
    assert_eq!(exit.code(), Some(0), "{seen:?}");
    let summary = seen
        .iter()
        .find(|l| l["message"] == "recovery finished")
        .expect("a summary line");
    assert_eq!(
        (summary["listed"].as_u64(), summary["handled"].as_u64()),
        (Some(0), Some(0))
    );

    for (variable, value) in [
        ("RECOVERY_CONCURRENCY", "0"),
        ("RECOVERY_PER_SECOND", "0"),
        ("RECOVERY_PER_SECOND", "4294967295"),
        ("RECOVERY_LIMIT", "0"),
        ("RECOVERY_AFTER", "CANARYnot-a-hash"),
        ("RECOVERY_LIMIT", "many"),
        ("RECOVERY_DEADLINE_SECONDS", "0"),
        ("RECOVERY_DEADLINE_SECONDS", "soon"),
    ] {
        let (child, _) =
            spawn_service(&project, &stub_url, &[(variable, value)], &["recover"]).await;
        let output = child.wait_with_output().await.expect("output");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{variable}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("configuration error: {variable} ")),
            "{stderr}"
        );
        // The value is never echoed (the short numbers could appear in the rule).
        assert!(value.len() < 5 || !stderr.contains(value), "{stderr}");
    }
    let (child, _) = spawn_service(&project, &stub_url, &[], &["recover-everything"]).await;
    let output = child.wait_with_output().await.expect("output");
    assert_eq!(output.status.code(), Some(2));
}

/// The job's settings from an environment of `(name, value)` pairs.
fn settings(env: &[(&str, &str)]) -> Result<JobSettings, String> {
    let env: std::collections::HashMap<&str, &str> = env.iter().copied().collect();
    JobSettings::from_lookup(|name| env.get(name).map(|v| (*v).to_owned()))
        .map_err(|error| error.to_string())
}

#[test]
fn the_job_takes_its_key_range_from_cloud_runs_task_variables_and_keeps_a_checkpoint() {
    use command_journal::pending::KeyRange;
    // No task variables: one task owns the whole space.
    let whole = settings(&[]).expect("settings").options;
    assert_eq!(whole.range, KeyRange::ALL);
    assert!(whole.checkpoint);
    assert_eq!(whole.deadline, None);
    let task = settings(&[
        ("CLOUD_RUN_TASK_INDEX", "2"),
        ("CLOUD_RUN_TASK_COUNT", "3"),
        ("RECOVERY_DEADLINE_SECONDS", "1500"),
    ])
    .expect("settings")
    .options;
    assert_eq!(task.range, KeyRange::new(2, 3).expect("range"));
    assert_eq!(task.deadline, Some(Duration::from_secs(1500)));
    for (env, variable) in [
        (
            &[("CLOUD_RUN_TASK_INDEX", "3"), ("CLOUD_RUN_TASK_COUNT", "3")][..],
            "CLOUD_RUN_TASK_INDEX",
        ),
        (
            &[
                ("CLOUD_RUN_TASK_INDEX", "-1"),
                ("CLOUD_RUN_TASK_COUNT", "3"),
            ][..],
            "CLOUD_RUN_TASK_INDEX",
        ),
        (
            &[("CLOUD_RUN_TASK_INDEX", "0"), ("CLOUD_RUN_TASK_COUNT", "0")][..],
            "CLOUD_RUN_TASK_COUNT",
        ),
        (
            &[
                ("CLOUD_RUN_TASK_INDEX", "0"),
                ("CLOUD_RUN_TASK_COUNT", "10001"),
            ][..],
            "CLOUD_RUN_TASK_COUNT",
        ),
        (&[("CLOUD_RUN_TASK_INDEX", "0")][..], "CLOUD_RUN_TASK_COUNT"),
        (&[("CLOUD_RUN_TASK_COUNT", "2")][..], "CLOUD_RUN_TASK_INDEX"),
    ] {
        let error = settings(env).expect_err("refused");
        assert!(
            error.starts_with(&format!("configuration error: {variable} ")),
            "{env:?}: {error}"
        );
    }
}

#[tokio::test]
async fn checkout_binary_recover_exits_3_when_the_provider_answers_no_lookup() {
    let emulator = support::emulator();
    let project = emulator.new_project_id();
    let (stub, stub_url) = start_stub(Stub::new(Action::Charge, CHARGE_PREFIX)).await;
    // Two checkouts abandoned mid-send ten minutes ago under the service's own plan.
    let connection = Connection::connect(&project, Target::Emulator(emulator.host().to_owned()))
        .await
        .expect("connect");
    let clock = Arc::new(ManualClock::new(Utc::now() - TimeDelta::minutes(10)));
    let journal = Journal::new(connection.clone()).with_clock(clock);
    let plan = service::provider::plan(&service_config(&project).plan, &priced()).expect("plan");
    for n in 0..2 {
        let cmd = support::command(1390 + n, json!({"order": n}));
        let lease = command_journal::LeaseId::parse(&support::uuid(0x53, n)).expect("lease");
        let started = journal.start(&cmd, &lease).await.expect("start");
        let command_journal::LeaseOutput::Acquired { fence_epoch, .. } = started.lease else {
            panic!("{:?}", started.lease);
        };
        journal
            .begin_send(&cmd, &lease, fence_epoch, &plan)
            .await
            .expect("begin_send");
    }
    let run = |extra: &'static [(&'static str, &'static str)]| {
        let (project, stub_url) = (project.clone(), stub_url.clone());
        async move {
            let (mut child, mut lines) =
                spawn_service(&project, &stub_url, extra, &["recover"]).await;
            let mut seen = Vec::new();
            while let Some(line) = next_line(&mut lines).await {
                seen.push(line);
            }
            let exit = child.wait().await.expect("wait").code();
            let summary = seen
                .into_iter()
                .find(|l| l["message"] == "recovery finished")
                .expect("a summary line");
            (exit, summary)
        }
    };
    // The provider is down: every lookup answers 503.
    stub.script_lookups([LookupAction::Status(503), LookupAction::Status(503)]);
    let (exit, summary) = run(&[]).await;
    assert_eq!(exit, Some(3), "{summary}");
    assert_eq!(summary["verdict"], "provider_unavailable");
    assert_eq!(summary["severity"], "ERROR");
    assert_eq!(summary["lookups"], json!({"answered": 0, "unavailable": 2}));
    assert_eq!(summary["outcomes"]["lookup_unavailable"], 2);
    assert_eq!(
        (summary["range"].as_str(), summary["listed"].as_u64()),
        (Some("0/1"), Some(2))
    );
    assert_eq!(summary["checkpoint"], "recorded");
    assert_eq!(summary["stop"], "finished");
    assert_eq!(stub.lookups().len(), 2);
    // It answers again: each task of two covers its own range, and exits 0.
    let (mut listed, mut absent) = (0, 0);
    for (index, extra) in [
        (
            0,
            &[("CLOUD_RUN_TASK_INDEX", "0"), ("CLOUD_RUN_TASK_COUNT", "2")][..],
        ),
        (
            1,
            &[("CLOUD_RUN_TASK_INDEX", "1"), ("CLOUD_RUN_TASK_COUNT", "2")][..],
        ),
    ] {
        let (exit, summary) = run(extra).await;
        assert_eq!(exit, Some(0), "{summary}");
        assert_eq!(summary["verdict"], "clean");
        assert_eq!(summary["range"], format!("{index}/2"));
        listed += summary["listed"].as_u64().expect("listed");
        absent += summary["outcomes"]["absent"].as_u64().expect("absent");
    }
    assert_eq!(
        listed, 2,
        "the two tasks' ranges hold the two commands between them"
    );
    // The requests never reached the provider: each absence is proven, by a lookup
    // before the lease and one under it.
    assert_eq!(absent, 2);
    assert_eq!(stub.lookups().len(), 2 + 2 * 2);
    assert_eq!(stub.posts().len(), 0, "the job never posts");
}

/// The binary's `recover` on a clock `offset_ms` ahead of the system's
/// (`JOURNAL_CLOCK_OFFSET_MS`): its exit code and its summary line.
async fn recover_at_offset(project: &str, stub_url: &str, offset_ms: &str) -> (i32, Value) {
    let (mut child, mut lines) = spawn_service(
        project,
        stub_url,
        &[("JOURNAL_CLOCK_OFFSET_MS", offset_ms)],
        &["recover"],
    )
    .await;
    let mut seen = Vec::new();
    while let Some(line) = next_line(&mut lines).await {
        seen.push(line);
    }
    let exit = child
        .wait()
        .await
        .expect("wait")
        .code()
        .expect("an exit code");
    let summary = seen
        .into_iter()
        .find(|l| l["message"] == "recovery finished")
        .expect("a summary line");
    (exit, summary)
}

#[tokio::test]
async fn checkout_binary_on_an_offset_clock_recovers_as_if_earlier_or_later() {
    // The provider charges and holds its answer past the service's 500 ms timeout:
    // the client gets 503, the command's outcome unknown, its lease released at once
    // (the job may settle it at once).
    let stub = Stub::new(Action::Lose, CHARGE_PREFIX).hanging_for(Duration::from_secs(3));
    let (stub, stub_url) = start_stub(stub).await;
    let service = start_service(Options {
        stub: Some((Arc::clone(&stub), stub_url.clone())),
        env: vec![("PROVIDER_TIMEOUT_MS", "500".to_owned())],
        ..Options::default()
    })
    .await;
    let id = command_id(720);
    let lost = service.checkout(&id, &priced()).await;
    assert_eq!(lost.status, 503, "{:?}", lost.body);

    // A job whose clock runs 61 s behind sees the lease as it stood before its
    // release (still running for about a minute): nothing is listed.
    let (exit, summary) = recover_at_offset(&service.project, &stub_url, "-61000").await;
    assert_eq!(
        (exit, summary["listed"].as_u64()),
        (0, Some(0)),
        "{summary}"
    );
    // On the system clock the lease was released: the job lists the command and
    // settles it from the charge its lookup finds.
    let (exit, summary) = recover_at_offset(&service.project, &stub_url, "0").await;
    assert_eq!(exit, 0, "{summary}");
    assert_eq!(summary["listed"].as_u64(), Some(1), "{summary}");
    assert_eq!(
        summary["outcomes"]["succeeded"].as_u64(),
        Some(1),
        "{summary}"
    );
    assert_eq!(stub.posts().len(), 1, "the job never posts");
    assert_eq!(stub.lookups().len(), 1);

    // The client's retry gets the charge from the journal, without calling anyone.
    let charge = charge_envelope(&stub.charges()[0].object);
    let retry = service.checkout(&id, &priced()).await;
    assert_eq!((retry.status, &retry.body), (200, &succeeded(&charge)));
    assert_eq!((stub.posts().len(), stub.lookups().len()), (1, 1));
    service.assert_verifies_clean(1).await;
}

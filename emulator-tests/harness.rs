//! The emulator harness: start, isolation, and no JVM outliving its parent.

use super::support;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

#[test]
fn shared_emulator_answers_and_hands_out_distinct_projects() {
    let emulator = support::emulator();
    assert!(
        emulator.host().starts_with("127.0.0.1:")
            || std::env::var_os("FIRESTORE_EMULATOR_HOST").is_some()
    );
    let a = emulator.new_project_id();
    let b = emulator.new_project_id();
    assert_ne!(a, b);
}

/// True while `/proc/{pid}` names a process that is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn a_killed_parent_takes_its_emulator_jvm_with_it() {
    // The pid log a CI run's leak check reads (.ci/run).
    let pids = tempfile::NamedTempFile::new().expect("a pid log");
    let mut parent = Command::new(CLI)
        .arg("emulator")
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env(command_journal_emulator::emulator::PID_LOG_ENV, pids.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the CLI");
    let stdout = parent.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("ready line");
    let ready: serde_json::Value = serde_json::from_str(&line).expect("ready line is JSON");
    assert_eq!(ready.to_string(), line.trim_end(), "keys sorted");
    let jvm = u32::try_from(ready["pid"].as_u64().expect("pid")).expect("pid fits");
    let logged = std::fs::read_to_string(pids.path()).expect("the pid log");
    assert_eq!(
        logged,
        format!("{jvm}\n"),
        "the started JVM's pid, logged once"
    );
    assert!(
        alive(jvm),
        "the JVM should be running while its parent lives"
    );

    parent.kill().expect("SIGKILL the parent");
    parent.wait().expect("reap the parent");

    // The kernel delivers PR_SET_PDEATHSIG asynchronously: wait for the JVM's death,
    // bounded, rather than assuming it already happened.
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(jvm) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !alive(jvm),
        "the emulator JVM outlived its SIGKILLed parent"
    );
}

#[test]
fn the_emulator_listens_on_the_port_asked_for_and_refuses_one_in_use() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let port_text = port.to_string();
    let mut first = Command::new(CLI)
        .args(["emulator", "--host", "localhost", "--port", &port_text])
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the CLI");
    let mut line = String::new();
    BufReader::new(first.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    let ready: serde_json::Value = serde_json::from_str(&line).expect("ready line is JSON");
    assert_eq!(ready["host"], format!("127.0.0.1:{port}"), "{line}");
    let jvm = u32::try_from(ready["pid"].as_u64().expect("pid")).expect("pid fits");

    // The same port again: refused before any JVM starts, with a clear answer.
    let began = Instant::now();
    let second = Command::new(CLI)
        .args(["emulator", "--port", &port_text])
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .output()
        .expect("run the CLI");
    assert_eq!(second.status.code(), Some(2));
    let answer: serde_json::Value = serde_json::from_slice(&second.stdout).expect("one JSON line");
    assert_eq!(answer["error"], "address_unavailable");
    assert_eq!(
        answer["message"],
        format!(
            "cannot listen on 127.0.0.1:{port}: the port is in use: choose another port, \
             or none for a free one"
        )
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );

    // A malformed host or port is a usage error.
    for args in [
        &["--host", "example.com"][..],
        &["--port", "0"],
        &["--port", "70000"],
    ] {
        let out = Command::new(CLI)
            .arg("emulator")
            .args(args)
            .output()
            .expect("run the CLI");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }

    let pid = i32::try_from(first.id()).expect("pid");
    // SAFETY: sends SIGTERM to the child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert_eq!(first.wait().expect("wait").code(), Some(0));
    assert!(!alive(jvm), "the emulator JVM outlived its CLI");
}

#[test]
fn a_missing_jar_is_a_clear_error_naming_the_debian_package() {
    let output = Command::new(CLI)
        .arg("emulator")
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env("COMMAND_JOURNAL_EMULATOR_JAR", "/nonexistent/emulator.jar")
        .output()
        .expect("run the CLI");
    assert_eq!(output.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("google-cloud-cli-firestore-emulator"),
        "{stderr}"
    );
    assert!(stderr.contains("/nonexistent/emulator.jar"), "{stderr}");
}

#[test]
fn missing_java_is_a_clear_error_naming_the_debian_package() {
    let output = Command::new(CLI)
        .arg("emulator")
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env_remove("JAVA_HOME")
        .env("PATH", "/nonexistent")
        .output()
        .expect("run the CLI");
    assert_eq!(output.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("default-jre-headless"), "{stderr}");
}

#[cfg(feature = "testcontainers")]
#[tokio::test]
async fn the_container_emulator_starts_with_the_rules_where_a_docker_engine_runs() {
    use command_journal_emulator::emulator::container;
    let socket = "/var/run/docker.sock";
    let engine = std::os::unix::net::UnixStream::connect(socket).is_ok()
        || std::env::var_os("DOCKER_HOST").is_some();
    if !engine {
        println!(
            "skipped: no Docker engine answers on this machine ({socket} refuses or is absent \
             and DOCKER_HOST is unset), so the testcontainers emulator cannot start"
        );
        return;
    }
    let started = container::start().await.expect("container emulator");
    let host = started.emulator().host().to_owned();
    // The host is the one testcontainers reports, with the mapped port.
    assert!(
        host.rsplit_once(':')
            .is_some_and(|(_, port)| port.parse::<u16>().is_ok())
    );
    let connection = command_journal::Connection::connect(
        "container-check",
        command_journal::Target::Emulator(host.clone()),
    )
    .await;
    assert!(connection.is_ok());
    // The rules file was passed: a browser get of a journal document is denied.
    let url = format!(
        "http://{host}/v1/projects/container-check/databases/(default)/documents/checkoutRequests/x"
    );
    let body = reqwest::get(url)
        .await
        .expect("GET")
        .text()
        .await
        .expect("body");
    assert!(body.contains("PERMISSION_DENIED"), "{body}");
}

/// The HTTP status of an unauthenticated REST read of a journal document: 403 when
/// the rules deny it, 404 when they allow it (the document does not exist).
fn anonymous_read_status(host: &str) -> u16 {
    use std::io::Write as _;
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    let path = "/v1/projects/cj-rules-cli/databases/(default)/documents/checkoutRequests/x";
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    // The status line only: the emulator may keep the connection open.
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .expect("answer");
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// Starts `command-journal emulator` in `dir` with `args`; its JSON line and the child.
fn start_in(dir: &std::path::Path, args: &[&str]) -> (serde_json::Value, std::process::Child) {
    let mut child = Command::new(CLI)
        .arg("emulator")
        .args(args)
        .current_dir(dir)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the CLI");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready line");
    (serde_json::from_str(&line).expect("one JSON line"), child)
}

fn stop(mut child: std::process::Child) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGTERM to the child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert_eq!(child.wait().expect("wait").code(), Some(0));
}

#[test]
fn the_emulator_enforces_the_rules_it_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    // No rules file here: the built-in rules, which deny every browser.
    let (line, child) = start_in(dir.path(), &[]);
    assert_eq!(line["rules"], "built-in", "{line}");
    let host = line["host"].as_str().expect("host").to_owned();
    assert_eq!(anonymous_read_status(&host), 403);
    stop(child);
    // The directory's firestore.rules, here one that allows everything.
    let open = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents {\n    match /{doc=**} { allow read, write: if true; }\n  }\n}\n";
    std::fs::write(dir.path().join("firestore.rules"), open).expect("write rules");
    let (line, child) = start_in(dir.path(), &[]);
    assert_eq!(line["rules"], "firestore.rules", "{line}");
    let host = line["host"].as_str().expect("host").to_owned();
    assert_eq!(anonymous_read_status(&host), 404);
    stop(child);
    // --rules names another file; an unreadable one is refused before any JVM.
    let other = dir.path().join("merged.rules");
    std::fs::write(&other, open).expect("write rules");
    let path = other.display().to_string();
    let (line, child) = start_in(dir.path(), &["--rules", &path]);
    assert_eq!(line["rules"], path.as_str(), "{line}");
    stop(child);
    let missing = Command::new(CLI)
        .args(["emulator", "--rules", "/nonexistent/firestore.rules"])
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .output()
        .expect("run the CLI");
    assert_eq!(missing.status.code(), Some(2));
    let answer: serde_json::Value = serde_json::from_slice(&missing.stdout).expect("one JSON line");
    assert_eq!(
        (&answer["error"], &answer["field"]),
        (
            &serde_json::json!("invalid_input"),
            &serde_json::json!("rules")
        )
    );
}

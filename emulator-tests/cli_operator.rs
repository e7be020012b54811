//! The binary as an operator meets it: `--help` and `example` are enough to register,
//! acquire, complete and verify; `invalid_input` says what it expects; `verify` cannot
//! pass on an empty project; the demo says where it worked and can be kept running;
//! shell completions.

use super::support;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");
/// The repository's top level, where a user runs the demo from (these tests are the
/// CLI package's, whose directory is `cli/`).
const REPOSITORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// What one run of the binary printed.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// The one JSON line on stdout.
    fn json(&self) -> Value {
        assert_eq!(self.stdout.lines().count(), 1, "one line: {}", self.stdout);
        serde_json::from_str(self.stdout.trim()).expect("a JSON line")
    }
}

/// Runs the binary with `args`, `stdin` (if any) and no inherited target variables.
fn run(args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(CLI)
        .args(args)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    let output = child.wait_with_output().expect("wait");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("utf-8"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs a shell line as an operator pastes it, with the binary on `PATH`.
fn paste(line: &str, host: &str) -> Run {
    let dir = std::path::Path::new(CLI).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .args(["-c", line])
        .env("PATH", path)
        .env("FIRESTORE_EMULATOR_HOST", host)
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .output()
        .expect("sh");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8(output.stdout).expect("utf-8"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The `echo '…' | command-journal …` line of a subcommand's `--help`, checked against
/// `example` and the keys the help lists, with `demo-project` replaced by `project`.
fn documented_example(words: &[&str], project: &str) -> String {
    let help = run(&[words, &["--help"]].concat(), None);
    assert_eq!(help.code, 0, "{}", help.stderr);
    let line = help
        .stdout
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("echo '"))
        .unwrap_or_else(|| panic!("no example in {words:?} --help: {}", help.stdout));
    let json = line
        .strip_prefix("echo '")
        .and_then(|rest| rest.split("' | ").next())
        .expect("quoted example");
    let example = run(&[&["example"], words].concat(), None);
    assert_eq!(example.code, 0);
    assert_eq!(
        example.stdout.trim(),
        json,
        "example prints the --help example"
    );
    let object: Value = serde_json::from_str(json).expect("the example is JSON");
    for key in object.as_object().expect("an object").keys() {
        let listed = format!("\n  {key} ");
        assert!(
            help.stdout.contains(&listed),
            "{words:?} --help lists {key}"
        );
    }
    line.replace("demo-project", project)
}

#[test]
fn help_and_example_are_enough_to_run_every_subcommand() {
    let host = support::emulator().host();
    let project = support::emulator().new_project_id();
    let step = |words: &[&str]| {
        let out = paste(&documented_example(words, &project), host);
        assert_eq!(out.code, 0, "{words:?}: {}{}", out.stdout, out.stderr);
        out.json()
    };
    assert_eq!(step(&["register"])["outcome"], "registered_new");
    let acquired = step(&["acquire"]);
    assert_eq!(
        (&acquired["outcome"], &acquired["fenceEpoch"]),
        (&json!("lease_acquired"), &json!(1))
    );
    assert_eq!(step(&["complete"])["outcome"], "terminal_succeeded");
    assert_eq!(step(&["status"])["state"], "succeeded");
    assert!(step(&["identity"])["providerIdempotencyKey"].is_string());
    assert!(step(&["ledger", "fingerprint"])["canonical"].is_string());
    assert_eq!(step(&["ledger", "accept"])["outcome"], "accepted");
    assert_eq!(step(&["ledger", "replay"])["outcome"], "replayed");
    let verify = run(
        &["--emulator-host", host, "--project", &project, "verify"],
        None,
    );
    assert_eq!(verify.code, 0, "{}", verify.stderr);
    assert_eq!(verify.json()["scanned"]["checkoutRequests"], 1);

    // `fail` on its own command: register and acquire in another project first.
    let other = support::emulator().new_project_id();
    for words in [&["register"][..], &["acquire"], &["fail"]] {
        let out = paste(&documented_example(words, &other), host);
        assert_eq!(out.code, 0, "{words:?}: {}", out.stdout);
        if words == ["fail"] {
            assert_eq!(out.json()["outcome"], "terminal_failed_final");
        }
    }
}

#[test]
fn invalid_input_names_the_key_and_what_it_expects_never_the_value() {
    let example = run(&["example", "register"], None).stdout;
    let good: Value = serde_json::from_str(example.trim()).expect("example");
    let with = |key: &str, value: Value| {
        let mut object = good.clone();
        object[key] = value;
        object.to_string()
    };
    let without = |key: &str| {
        let mut object = good.clone();
        object.as_object_mut().expect("object").remove(key);
        object.to_string()
    };
    let one_object = "one JSON object, each key at most once, with only the documented keys";
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (
            with("environment", json!("CANARYenv")),
            "environment",
            "invalid",
            "one of emulator, test, staging, production",
        ),
        (
            with("commandId", json!("CANARY-not-a-uuid")),
            "commandId",
            "invalid",
            "canonical lowercase UUID v4",
        ),
        // A missing key is told apart from a malformed one.
        (
            without("commandId"),
            "commandId",
            "missing",
            "canonical lowercase UUID v4",
        ),
        (
            with("callerScopeKind", json!("CANARYkind")),
            "callerScopeKind",
            "invalid",
            "one of member, guest, officer, service",
        ),
        // A key of the wrong type names that key.
        (
            with("endpointSchemaVersion", json!("CANARY1")),
            "endpointSchemaVersion",
            "invalid",
            "an integer from 1 to 9999",
        ),
        // An unknown key names itself, before any missing key.
        (
            r#"{"environmnet":"CANARYtypo"}"#.to_owned(),
            "environmnet",
            "unknown",
            "only the keys this subcommand's --help lists",
        ),
        (
            with("leaseId", json!("CANARYextra")),
            "leaseId",
            "unknown",
            "only the keys this subcommand's --help lists",
        ),
        // A duplicate key names itself; one nested in the payload names the payload.
        (
            example
                .trim()
                .replacen('{', r#"{"callerId":"CANARYdup","#, 1),
            "callerId",
            "duplicate",
            "each key at most once, at every depth",
        ),
        (
            with("payload", json!({})).replace(
                r#""payload":{}"#,
                r#""payload":{"sku":"CANARYa","sku":"CANARYb"}"#,
            ),
            "payload",
            "duplicate",
            "each key at most once, at every depth",
        ),
        // Text that is not one JSON object is `input`, and says which way it is not.
        (
            "[\"CANARYarray\"]".to_owned(),
            "input",
            "not_an_object",
            one_object,
        ),
        (
            "{\"CANARY\": ".to_owned(),
            "input",
            "malformed_json",
            one_object,
        ),
        (String::new(), "input", "empty", one_object),
    ];
    let message = |problem: &str| match problem {
        "missing" => "a required key is missing",
        "invalid" => "the value given for this key or option is not valid",
        "unknown" => "a key this subcommand does not read",
        "duplicate" => "a key is given more than once",
        "empty" => "stdin is empty: pipe one JSON object into the subcommand",
        "malformed_json" => {
            "stdin is not valid JSON (truncated, malformed or followed by more text)"
        }
        "not_an_object" => "stdin is JSON but not one object",
        other => panic!("no message for {other}"),
    };
    for (stdin, field, problem, expected) in cases {
        let out = run(
            &[
                "--project",
                "p",
                "--emulator-host",
                "127.0.0.1:9",
                "register",
            ],
            Some(&stdin),
        );
        assert_eq!(out.code, 2, "{stdin}: {}", out.stdout);
        assert_eq!(
            out.json(),
            json!({"error": "invalid_input", "field": field, "problem": problem,
                   "expected": expected, "message": message(problem)}),
            "{stdin}"
        );
        assert!(!out.stdout.contains("CANARY"), "{stdin}: {}", out.stdout);
        assert!(!out.stderr.contains("CANARY"), "{stdin}: {}", out.stderr);
    }
    // The ledger subcommands name their keys the same way.
    let out = run(
        &["ledger", "fingerprint"],
        Some(r#"{"family":"effect_plan","efects":[]}"#),
    );
    assert_eq!(
        (out.code, out.json()["field"].clone()),
        (2, json!("efects"))
    );
}

#[test]
fn verify_of_an_empty_project_exits_7_naming_project_and_database() {
    let host = support::emulator().host();
    let project = support::emulator().new_project_id();
    let args = ["--emulator-host", host, "--project", &project, "verify"];
    let empty = run(&args, None);
    assert_eq!(empty.code, 7, "{}", empty.stderr);
    assert_eq!(empty.json()["scanned"]["checkoutRequests"], 0);
    // `jq .clean` must not read a wrong (empty) project as sound.
    assert_eq!(empty.json()["clean"], false);
    assert_eq!(empty.json()["empty"], true);
    assert_eq!(empty.json()["emptyAllowed"], false);
    assert!(
        empty.stderr.contains(&format!(
            "scanned no journal document in project {project} database (default)"
        )),
        "{}",
        empty.stderr
    );
    let allowed = run(&[&args[..], &["--allow-empty"]].concat(), None);
    assert_eq!(allowed.code, 0, "{}", allowed.stderr);
    assert!(allowed.json()["clean"].as_bool().expect("clean"));
    assert_eq!(allowed.json()["empty"], true);
    assert_eq!(allowed.json()["emptyAllowed"], true);

    let register = documented_example(&["register"], &project);
    assert_eq!(paste(&register, host).code, 0);
    let one = run(&args, None);
    assert_eq!(one.code, 0, "{}", one.stderr);
    // The per-collection counts are on stderr too.
    for (collection, count) in [
        ("checkoutRequests", 1),
        ("checkoutRequests/*/lifecycle", 0),
        ("auditEvents", 1),
        ("ledgerReservations", 0),
        ("ledgerTransactions", 0),
    ] {
        let row = format!("  {collection:<34} {count:>10}\n");
        assert!(one.stderr.contains(&row), "{row:?} in {}", one.stderr);
    }
}

/// `PATH` with the binary's directory first, as after `cargo install --path .`.
fn path_with_binary() -> String {
    let dir = std::path::Path::new(CLI).parent().expect("bin dir");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `PATH` without any directory holding a `command-journal`, as in a fresh clone.
fn path_without_binary() -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| !dir.join("command-journal").exists())
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// The indented lines the demo printed under "Inspect the journal:".
fn follow_ups(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|line| *line != "Inspect the journal:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .map(|line| line.trim().to_owned())
        .collect()
}

/// Runs the demo's printed follow-ups exactly as printed, as one shell script in the
/// demo's directory, with `path` and no emulator in the environment; returns the JSON
/// lines they printed.
fn run_follow_ups(lines: &[String], path: &str) -> Vec<Value> {
    assert!(
        lines[0].starts_with("export FIRESTORE_EMULATOR_HOST="),
        "{lines:?}"
    );
    let output = Command::new("sh")
        .args(["-ec", &lines.join("\n")])
        .current_dir(REPOSITORY)
        .env("PATH", path)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .output()
        .expect("sh");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        output.status.success(),
        "{lines:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

#[test]
fn the_demo_runs_in_the_given_project_says_where_and_verifies_clean() {
    let host = support::emulator().host();
    let project = support::emulator().new_project_id();
    let args = [
        "--emulator-host",
        host,
        "--project",
        &project,
        "demo",
        "--commands",
        "12",
        "--workers",
        "3",
        "--seed",
        "7",
    ];
    // Installed: `command-journal` on PATH is this binary.
    let output = Command::new(CLI)
        .args(args)
        .env("PATH", path_with_binary())
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .env_remove("GOOGLE_CLOUD_PROJECT")
        .output()
        .expect("run the demo");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("verify: clean"), "{stdout}");
    for row in [
        "acquisitions",
        "busy answers",
        "stale rejections",
        "ledger mismatches",
    ] {
        assert!(stdout.contains(row), "missing row {row}: {stdout}");
    }
    assert!(
        stdout.contains("unexpected answers                          0"),
        "{stdout}"
    );
    let said = format!("demo: project {project}, database (default), emulator {host}");
    assert!(stderr.contains(&said), "{stderr}");
    // Off a terminal, progress is plain lines.
    assert!(
        stderr.contains("demo: 12/12 commands terminal\n"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\r'),
        "no carriage-return frames: {stderr:?}"
    );
    let lines = follow_ups(&stdout);
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0], format!("export FIRESTORE_EMULATOR_HOST={host}"));
    assert_eq!(
        lines[1],
        format!("command-journal verify --project {project}")
    );
    assert!(
        lines[2].ends_with(&format!("| command-journal status --project {project}")),
        "{stdout}"
    );
    // The printed commands work as printed.
    let answers = run_follow_ups(&lines, &path_with_binary());
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert_eq!(answers[0]["scanned"]["checkoutRequests"], 12);
    assert!(answers[1]["state"].is_string(), "{}", answers[1]);
}

/// The demo's table: from its heading through the verify line.
fn demo_table(stdout: &str) -> String {
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|line| !line.trim_start().starts_with("what (seed "))
        .take_while(|line| !line.is_empty())
        .collect();
    let verify = stdout.lines().find(|line| line.starts_with("verify: "));
    format!("{}\n{}", table.join("\n"), verify.unwrap_or_default())
}

#[test]
fn the_same_seed_prints_the_same_table() {
    let host = support::emulator().host();
    // Two runs at once, each in its own project, as two users would run `demo --seed 7`.
    let runs: Vec<std::thread::JoinHandle<(i32, String)>> = (0..2)
        .map(|_| {
            let project = support::emulator().new_project_id();
            let host = host.to_owned();
            std::thread::spawn(move || {
                let out = run(
                    &[
                        "demo",
                        "--emulator-host",
                        &host,
                        "--project",
                        &project,
                        "--seed",
                        "7",
                    ],
                    None,
                );
                (out.code, out.stdout)
            })
        })
        .collect();
    let tables: Vec<String> = runs
        .into_iter()
        .map(|run| {
            let (code, stdout) = run.join().expect("a demo run");
            assert_eq!(code, 0, "{stdout}");
            demo_table(&stdout)
        })
        .collect();
    assert!(tables[0].contains("what (seed 7)"), "{}", tables[0]);
    assert!(tables[0].contains("verify: clean"), "{}", tables[0]);
    // The heading, its rule, 18 rows and the verify line.
    assert_eq!(tables[0].lines().count(), 21, "{}", tables[0]);
    assert_eq!(tables[0], tables[1], "the same seed, another table");
}

/// The demo a test started: sent SIGTERM (which stops its emulator) and reaped when
/// dropped unreaped, so that a failed assertion leaves no demo or JVM running.
struct Demo(std::process::Child);

impl Drop for Demo {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            if let Ok(pid) = i32::try_from(self.0.id()) {
                // SAFETY: SIGTERM to the child this test spawned and has not reaped.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let _ = self.0.wait();
        }
    }
}

#[test]
fn demo_keep_leaves_its_own_emulator_up_until_sigterm_then_stops_it() {
    // A fresh clone: no `command-journal` on PATH, so the demo prints the binary's path.
    let mut demo = Demo(
        Command::new(CLI)
            .args(["demo", "--commands", "4", "--workers", "2", "--keep"])
            .current_dir(REPOSITORY)
            .env("PATH", path_without_binary())
            .env_remove("FIRESTORE_EMULATOR_HOST")
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the demo"),
    );
    let child = &mut demo.0;
    let mut stderr = child.stderr.take().expect("stderr");
    let drain = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // Read stdout until the demo says it is waiting.
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut printed = Vec::new();
    for line in lines.by_ref() {
        let line = line.expect("line");
        let waiting = line.contains("Ctrl-C or SIGTERM stops it");
        printed.push(line);
        if waiting {
            break;
        }
    }
    let text = printed.join("\n");
    let follow = follow_ups(&text);
    assert_eq!(follow.len(), 3, "{text}");
    assert!(
        follow[1].starts_with("target/debug/command-journal verify --project demo-"),
        "the binary's path relative to the current directory: {text}"
    );
    // While it waits, its emulator answers and holds the journal it printed, and the
    // printed commands work as printed without anything installed.
    let answers = run_follow_ups(&follow, &path_without_binary());
    assert_eq!(answers[0]["scanned"]["checkoutRequests"], 4);
    assert!(answers[1]["state"].is_string(), "{}", answers[1]);

    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGTERM to the child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    let stderr = drain.join().expect("stderr");
    assert!(stderr.contains("demo: emulator stopped"), "{stderr}");
    let jvm: i32 = stderr
        .split("(pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no emulator pid: {stderr}"));
    // The JVM was killed and reaped before the demo exited.
    assert!(
        !std::path::Path::new(&format!("/proc/{jvm}")).exists(),
        "the emulator JVM {jvm} outlived the demo"
    );
}

#[test]
fn demo_options_are_bounded_and_checked_before_any_emulator_starts() {
    for (args, said) in [
        (&["--commands", "0"][..], "0 is not in 1..=2000"),
        (
            &["--commands", "100000000000"],
            "100000000000 is not in 1..=2000",
        ),
        (&["--workers", "0"], "0 is not in 1..=16"),
        (&["--workers", "17"], "17 is not in 1..=16"),
    ] {
        let out = run(&[&["demo"], args].concat(), None);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
        assert!(!out.stderr.contains("starting"), "{}", out.stderr);
    }
    // A bad project is refused before the JVM starts: no "starting the emulator" line.
    let out = run(&["demo", "--project", "Not_A_Project"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(out.json()["field"], "project");
    assert!(!out.stderr.contains("starting"), "{}", out.stderr);
}

#[test]
fn completions_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run(&["completions", shell], None);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for word in [
            "command-journal",
            "register",
            "verify",
            "allow-empty",
            "example",
        ] {
            assert!(out.stdout.contains(word), "{shell} completion lacks {word}");
        }
    }
    assert_eq!(run(&["completions", "tcsh"], None).code, 2);
}

/// Runs the CLI with its stdout (or stderr) a pipe whose reader is already gone.
fn into_closed_pipe(args: &[&str], stderr: bool) -> std::process::Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut command = std::process::Command::new(CLI);
    command.args(args).stdin(std::process::Stdio::null());
    if stderr {
        command.stderr(writer).stdout(std::process::Stdio::piped());
    } else {
        command.stdout(writer).stderr(std::process::Stdio::piped());
    }
    command.output().expect("run the CLI")
}

#[test]
fn a_closed_pipe_ends_the_cli_quietly_without_a_panic() {
    use std::os::unix::process::ExitStatusExt as _;
    // `completions bash | head -1`, and a usage error written into a closed stderr.
    for (args, stderr) in [
        (&["completions", "bash"][..], false),
        (&["explain"][..], false),
        (&["no-such-subcommand"][..], true),
    ] {
        let out = into_closed_pipe(args, stderr);
        let text = String::from_utf8_lossy(if stderr { &out.stdout } else { &out.stderr });
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        assert_ne!(out.status.code(), Some(101), "{args:?}");
        assert!(
            out.status.signal() == Some(libc::SIGPIPE) || out.status.code() == Some(2),
            "{args:?}: {:?}",
            out.status
        );
    }
}

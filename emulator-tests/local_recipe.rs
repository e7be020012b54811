//! docs/local-service.md run exactly as written, on free ports in place of 8080, 9090
//! and 8081 and with the binaries `cargo test` built in place of `target/release/`:
//! the emulator from the CLI, the stub provider and the checkout service, then the
//! requests, and the abandoned checkout settled by the recovery job and replayed, each
//! answer checked. The recovery part waits out a real lease (60 s), as the recipe does.
//! Then the customer in the loop: the Stripe stand-in, a service on each flow (ports
//! 12111, 8082 and 8083 freed the same way), a 3-D Secure payment and a Checkout
//! payment through the stand-in's pages' own posts, and the journal verified.

use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

/// The `sh` blocks of `markdown`, each as its command lines (continuations joined,
/// comments dropped) and the comment under each.
fn sh_blocks(markdown: &str) -> Vec<Vec<(String, Option<String>)>> {
    markdown
        .split("```sh\n")
        .skip(1)
        .map(|rest| {
            let block = rest.split("```").next().unwrap_or_default();
            let mut lines: Vec<(String, Option<String>)> = Vec::new();
            let mut pending = String::new();
            for line in block.lines() {
                if let Some(comment) = line.strip_prefix("# ") {
                    if let Some(last) = lines.last_mut() {
                        last.1 = Some(comment.to_owned());
                    }
                    continue;
                }
                match line.strip_suffix('\\') {
                    Some(start) => pending.push_str(start),
                    None => {
                        pending.push_str(line);
                        lines.push((std::mem::take(&mut pending), None));
                    }
                }
            }
            lines
        })
        .collect()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// An example binary `cargo test` built beside the CLI's.
fn example(name: &str) -> PathBuf {
    let path = std::path::Path::new(CLI).with_file_name(name);
    assert!(
        path.is_file(),
        "the {name} binary is not built at {}: run the README's test command, or \
         `cargo test --all-features --test example-binaries` before a filtered run",
        path.display()
    );
    path
}

/// The recipe's processes, killed (and their JVM with the CLI) however the test ends.
struct Running(Vec<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `line` (through `env`, so that its variable assignments apply) in the
/// background as the recipe does in its own terminal; returns it
/// with its stdout lines.
fn start(line: &str, path: &str) -> (Child, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut child = Command::new("sh")
        .args(["-c", &format!("exec env {line}")])
        .env("PATH", path)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    (child, lines)
}

/// Runs `line` in one shell after `assignments`, as in one terminal; its stdout.
fn run(assignments: &[String], line: &str, path: &str) -> String {
    let script = [assignments, &[line.to_owned()]].concat().join("\n");
    let output = Command::new("sh")
        .args(["-ec", &script])
        .env("PATH", path)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .output()
        .expect("sh");
    let stdout = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        output.status.success(),
        "{line}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// Runs every line of `block` (an assignment is kept for the lines after it); each
/// answer whose comment is plain JSON must be that JSON. Returns the answers.
fn run_block(
    block: &[(String, Option<String>)],
    assignments: &mut Vec<String>,
    adapt: &dyn Fn(&str) -> String,
    path: &str,
) -> Vec<String> {
    let mut answers = Vec::new();
    for (line, comment) in block {
        let line = adapt(line);
        if line.starts_with("TOKEN=") || line.starts_with("BODY=") {
            assignments.push(line);
            continue;
        }
        let stdout = run(assignments, &line, path);
        if let Some(exact) = comment
            .as_deref()
            .and_then(|c| serde_json::from_str::<Value>(&adapt(c)).ok())
        {
            assert_eq!(
                serde_json::from_str::<Value>(&stdout).expect("JSON"),
                exact,
                "{line}"
            );
        }
        answers.push(stdout);
    }
    answers
}

/// The JSON lines of `stdout`, each checked to print its keys sorted (docs/cli.md).
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).expect("a JSON line");
            assert_eq!(value.to_string(), line, "keys sorted");
            value
        })
        .collect()
}

#[test]
fn the_local_service_recipe_works_as_written() {
    let docs = include_str!("../docs/local-service.md");
    let blocks = sh_blocks(docs);
    assert_eq!(
        blocks.len(),
        11,
        "build, emulator, stub, service, requests, recovery, stand-in, two services, \
         3-D Secure, Checkout"
    );
    // The build: the binaries `cargo test` built stand in for its release binaries.
    assert_eq!(blocks[0], [("cargo build --release".to_owned(), None)]);
    let (emulator, stub, service) = (free_port(), free_port(), free_port());
    let (stand_in, confirming, hosted) = (free_port(), free_port(), free_port());
    let bin = std::path::Path::new(CLI).parent().expect("bin dir");
    let adapt = |line: &str| {
        line.replace("8080", &emulator.to_string())
            .replace("9090", &stub.to_string())
            .replace("8081", &service.to_string())
            .replace("12111", &stand_in.to_string())
            .replace("8082", &confirming.to_string())
            .replace("8083", &hosted.to_string())
            .replace("target/release/", &format!("{}/", bin.display()))
    };
    assert_eq!(
        example("stub-provider").parent(),
        example("checkout-service").parent()
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let mut running = Running(Vec::new());

    // 1. The emulator: ready once it prints its line.
    let (child, mut out) = start(&adapt(&blocks[1][0].0), &path);
    running.0.push(child);
    let ready: Value =
        serde_json::from_str(&out.next().expect("a line").expect("utf-8")).expect("the ready line");
    assert_eq!(ready["host"], format!("127.0.0.1:{emulator}"));

    // 2. The stub provider.
    let (child, mut out) = start(&adapt(&blocks[2][0].0), &path);
    running.0.push(child);
    let said = out.next().expect("a line").expect("utf-8");
    assert_eq!(
        said,
        format!("stub provider listening on http://127.0.0.1:{stub}")
    );

    // 3. The service: ready once it logs `listening`.
    let (child, out) = start(&adapt(&blocks[3][0].0), &path);
    running.0.push(child);
    let listening = out
        .map(|line| line.expect("utf-8"))
        .find(|line| line.contains("\"listening\""))
        .expect("the service's listening line");
    assert!(
        listening.contains("\"unsignedTokensAccepted\":true"),
        "{listening}"
    );

    // 4. The requests, each with the assignments before it, as in one terminal.
    let mut assignments = Vec::new();
    let answers = run_block(&blocks[4], &mut assignments, &adapt, &path);
    assert_eq!(answers.len(), 4, "{answers:?}");
    // The retry is the first answer byte for byte.
    assert_eq!(answers[0], answers[1]);
    // The provider saw exactly one POST, with the journal's key, and no lookup.
    let calls: Value = serde_json::from_str(&answers[2]).expect("the stub's calls");
    let posts = calls["posts"].as_array().expect("posts");
    assert_eq!(posts.len(), 1, "{calls}");
    assert!(
        posts[0]["idempotencyKey"]
            .as_str()
            .is_some_and(|k| k.starts_with("cj1-"))
    );
    assert_eq!(
        calls["lookups"].as_array().map(Vec::len),
        Some(0),
        "{calls}"
    );
    json_lines(&answers[2]);
    // The journal verifies clean.
    let report = &json_lines(&answers[3])[0];
    assert_eq!(report["clean"], true, "{report}");
    assert_eq!(report["scanned"]["lifecycles"], 1, "one command: {report}");

    // 5. The abandoned checkout: lost, listed once its lease ran out, recovered by the
    // job, no longer listed, and replayed to the late retry.
    let answers = run_block(&blocks[5], &mut assignments, &adapt, &path);
    assert_eq!(
        answers.len(),
        8,
        "script, checkout, sleep, pending, recover, pending, retry, calls"
    );
    let pending = json_lines(&answers[3]);
    assert_eq!(pending.len(), 1, "{pending:?}");
    // The checkout's deadline passed before the provider's silence was recorded: the
    // attempt is still `sending`.
    assert_eq!(
        (
            &pending[0]["state"],
            &pending[0]["fenceEpoch"],
            &pending[0]["send"]["state"],
            &pending[0]["unblockedBy"],
        ),
        (
            &json!("leased"),
            &json!(1),
            &json!("sending"),
            &json!("resend_or_evidence")
        ),
        "{pending:?}"
    );
    let logs = json_lines(&answers[4]);
    let recovered: Vec<&Value> = logs
        .iter()
        .filter(|l| l["message"] == "recovered")
        .collect();
    assert_eq!(recovered.len(), 1, "{logs:?}");
    assert_eq!(recovered[0]["outcome"], "succeeded", "{logs:?}");
    assert_eq!(recovered[0]["commandKeyHash"], pending[0]["commandKeyHash"]);
    let finished = logs
        .iter()
        .find(|l| l["message"] == "recovery finished")
        .expect("the job's summary");
    assert_eq!(finished["outcomes"]["succeeded"], 1, "{finished}");
    assert_eq!(answers[5], "", "nothing pending once recovered");
    let calls = &json_lines(&answers[7])[0];
    let posts = calls["posts"].as_array().expect("posts");
    assert_eq!(posts.len(), 2, "one POST per checkout: {calls}");
    assert_eq!(
        calls["lookups"],
        json!([posts[1]["idempotencyKey"]]),
        "the job looked the lost charge's key up, once: {calls}"
    );

    customer_in_the_loop(&blocks[6..], &mut running, &mut assignments, &adapt, &path);
}

/// The recipe's last five blocks: the Stripe stand-in, a service on each flow, a 3-D
/// Secure payment and a Checkout payment (each answer checked against its comment by
/// [`run_block`]), and the journal verified.
fn customer_in_the_loop(
    blocks: &[Vec<(String, Option<String>)>],
    running: &mut Running,
    assignments: &mut Vec<String>,
    adapt: &dyn Fn(&str) -> String,
    path: &str,
) {
    assert_eq!(
        example("stripe-stand-in").parent(),
        example("checkout-service").parent()
    );
    let (child, mut out) = start(&adapt(&blocks[0][0].0), path);
    running.0.push(child);
    let said = out.next().expect("a line").expect("utf-8");
    assert!(
        said.starts_with("stripe stand-in listening on http://127.0.0.1:"),
        "{said}"
    );
    for block in &blocks[1..3] {
        let (child, out) = start(&adapt(&block[0].0), path);
        running.0.push(child);
        let listening = out
            .map(|line| line.expect("utf-8"))
            .find(|line| line.contains("\"listening\""))
            .expect("the service's listening line");
        assert!(listening.contains("\"flow\""), "{listening}");
    }
    let secure = run_block(&blocks[3], assignments, adapt, path);
    assert_eq!(secure.len(), 4, "{secure:?}");
    let hosted = run_block(&blocks[4], assignments, adapt, path);
    assert_eq!(hosted.len(), 5, "{hosted:?}");
    let report = &json_lines(&hosted[4])[0];
    assert_eq!(report["clean"], true, "{report}");
    assert_eq!(
        report["scanned"]["lifecycles"], 4,
        "four commands: {report}"
    );
}

//! docs/local-service.md run exactly as written, on free ports in place of 8080, 9090
//! and 8081: the emulator from the CLI, the stub provider and the checkout service
//! from their example binaries (what `cargo run --example …` runs), then the requests,
//! each answer checked.

use serde_json::Value;
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

/// An example binary `cargo test` built beside this test binary.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .join("examples")
        .join(name);
    assert!(
        path.is_file(),
        "the {name} example is not built at {}: run the README's test command, or \
         `cargo build --examples` before a filtered run",
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

#[test]
fn the_local_service_recipe_works_as_written() {
    let docs = include_str!("../docs/local-service.md");
    let blocks = sh_blocks(docs);
    assert_eq!(blocks.len(), 4, "emulator, stub, service, requests");
    let (emulator, stub, service) = (free_port(), free_port(), free_port());
    let ports = |line: &str| {
        line.replace("8080", &emulator.to_string())
            .replace("9090", &stub.to_string())
            .replace("8081", &service.to_string())
    };
    let bin = std::path::Path::new(CLI).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut running = Running(Vec::new());

    // 1. The emulator: ready once it prints its line.
    let (child, mut out) = start(&ports(&blocks[0][0].0), &path);
    running.0.push(child);
    let ready: Value =
        serde_json::from_str(&out.next().expect("a line").expect("utf-8")).expect("the ready line");
    assert_eq!(ready["host"], format!("127.0.0.1:{emulator}"));

    // 2. The stub provider, as `cargo run --release --example stub-provider --` runs it.
    let stub_line = ports(&blocks[1][0].0).replace(
        "cargo run --release --example stub-provider --",
        &example("stub-provider").display().to_string(),
    );
    let (child, mut out) = start(&stub_line, &path);
    running.0.push(child);
    let said = out.next().expect("a line").expect("utf-8");
    assert_eq!(
        said,
        format!("stub provider listening on http://127.0.0.1:{stub}")
    );

    // 3. The service: ready once it logs `listening`.
    let service_line = ports(&blocks[2][0].0).replace(
        "cargo run --release --example checkout-service",
        &example("checkout-service").display().to_string(),
    );
    let (child, out) = start(&service_line, &path);
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
    let mut answers = Vec::new();
    for (line, comment) in &blocks[3] {
        let line = ports(line);
        if line.starts_with("TOKEN=") || line.starts_with("BODY=") {
            assignments.push(line);
            continue;
        }
        let script = [assignments.clone(), vec![line.clone()]]
            .concat()
            .join("\n");
        let output = Command::new("sh")
            .args(["-ec", &script])
            .env("PATH", &path)
            .env_remove("FIRESTORE_EMULATOR_HOST")
            .output()
            .expect("sh");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        assert!(output.status.success(), "{line}: {stdout}");
        if let Some(exact) = comment
            .as_deref()
            .and_then(|c| serde_json::from_str::<Value>(c).ok())
        {
            assert_eq!(
                serde_json::from_str::<Value>(&stdout).expect("JSON"),
                exact,
                "{line}"
            );
        }
        answers.push(stdout);
    }
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
    // The journal verifies clean.
    let report: Value = serde_json::from_str(answers[3].trim()).expect("the verify report");
    assert_eq!(report["clean"], true, "{report}");
    assert_eq!(report["scanned"]["lifecycles"], 1, "one command: {report}");
}

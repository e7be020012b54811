//! docs/cli.md's "A command's life on the emulator", run as written: each command line
//! in turn, with its answer and exit code checked against the comment under it.

use super::support;
use serde_json::Value;
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

/// The lines of the `sh` block under `heading` in `markdown`.
fn sh_block<'a>(markdown: &'a str, heading: &str) -> Vec<&'a str> {
    let section = markdown.split(heading).nth(1).expect("the section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("an sh block");
    block.lines().collect()
}

/// What a comment line under a command expects: an exit code and either the exact
/// JSON line or fragments (`"key":value`) that must appear in it.
struct Expected {
    code: i32,
    exact: Option<Value>,
    fragments: Vec<String>,
}

fn expected(comment: Option<&str>) -> Expected {
    let Some(comment) = comment else {
        return Expected {
            code: 0,
            exact: None,
            fragments: Vec::new(),
        };
    };
    let (text, code) = match comment.rsplit_once("(exit ") {
        Some((text, code)) => (
            text.trim(),
            code.trim_end_matches(')').parse().expect("an exit code"),
        ),
        None => (comment.trim(), 0),
    };
    let exact = serde_json::from_str(text).ok();
    let mut fragments = Vec::new();
    for piece in text.split(['{', '}', ',']) {
        let piece = piece.trim();
        let is_pair = piece.starts_with('"')
            && piece.contains("\":")
            && !piece.contains('…')
            && !piece.ends_with(':');
        if is_pair {
            fragments.push(piece.to_owned());
        }
    }
    Expected {
        code,
        exact,
        fragments,
    }
}

#[test]
fn the_documented_session_runs_as_written() {
    let docs = include_str!("../docs/cli.md");
    let lines = sh_block(docs, "## A command's life on the emulator");
    let host = support::emulator().host();
    let project = support::emulator().new_project_id();
    let bin = std::path::Path::new(CLI).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    assert_eq!(lines[0], "export FIRESTORE_EMULATOR_HOST=127.0.0.1:8080");
    let mut ran = 0;
    for (index, line) in lines.iter().enumerate().skip(1) {
        if line.starts_with('#') {
            continue;
        }
        let comment = lines
            .get(index + 1)
            .and_then(|next| next.strip_prefix("# "));
        let want = expected(comment);
        let line = line
            .replace("127.0.0.1:8080", host)
            .replace("demo-project", &project);
        let output = Command::new("sh")
            .args(["-c", &line])
            .env("PATH", &path)
            .env("FIRESTORE_EMULATOR_HOST", host)
            .env_remove("GOOGLE_CLOUD_PROJECT")
            .output()
            .expect("sh");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        assert_eq!(
            output.status.code(),
            Some(want.code),
            "{line}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let answer: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
        if let Some(exact) = want.exact {
            assert_eq!(answer, exact, "{line}");
        }
        for fragment in &want.fragments {
            assert!(
                stdout.contains(fragment.as_str()),
                "{line}: {fragment} in {stdout}"
            );
        }
        ran += 1;
    }
    assert_eq!(ran, 9, "every command of the block ran");
}

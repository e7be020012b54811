//! The binary's front door without Firestore: each subcommand's `--help` leads with
//! what it does and its stdin object and shows only the options it uses; `explain`
//! explains every code; `dev-token` makes emulator-only tokens.

use serde_json::Value;
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

fn run(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(CLI)
        .args(args)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .output()
        .expect("run the CLI");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8(output.stdout).expect("utf-8"),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Every subcommand that reads stdin, and whether it talks to Firestore.
const STDIN_SUBCOMMANDS: [(&[&str], bool); 14] = [
    (&["identity"], false),
    (&["register"], true),
    (&["acquire"], true),
    (&["start"], true),
    (&["complete"], true),
    (&["fail"], true),
    (&["status"], true),
    (&["send", "begin"], true),
    (&["send", "outcome"], true),
    (&["send", "reconcile"], true),
    (&["ledger", "fingerprint"], false),
    (&["ledger", "accept"], true),
    (&["ledger", "replay"], true),
    (&["ledger", "link"], true),
];

const FIRESTORE_OPTIONS: [&str; 5] = [
    "--project",
    "--emulator-host",
    "--database",
    "--concurrency",
    "--at",
];

#[test]
fn each_help_leads_with_what_it_does_then_its_stdin_object() {
    for (words, firestore) in STDIN_SUBCOMMANDS {
        let (code, help, _) = run(&[words, &["--help"]].concat());
        assert_eq!(code, 0, "{words:?}");
        let first = help.lines().next().unwrap_or_default();
        assert!(
            !first.is_empty() && !first.starts_with("Usage"),
            "{words:?} leads with what it does: {first}"
        );
        let stdin = help
            .find("\nStdin: one JSON object")
            .expect("the stdin schema");
        let usage = help.find("\nUsage:").expect("usage");
        assert!(
            stdin < usage,
            "{words:?}: the schema comes before usage and options"
        );
        for option in FIRESTORE_OPTIONS {
            assert_eq!(
                help.contains(&format!("  {option} ")),
                firestore,
                "{words:?} shows {option} exactly when it uses Firestore"
            );
        }
    }
}

#[test]
fn subcommands_show_only_the_options_they_use() {
    for (words, shown, hidden) in [
        (
            &["verify"][..],
            &["--project", "--emulator-host", "--database", "--ranges"][..],
            &["--concurrency", "--at"][..],
        ),
        (
            &["demo"],
            &["--project", "--commands", "--workers"],
            &["--concurrency", "--at"],
        ),
        (
            &["rules", "check"],
            &["--emulator-host"],
            &["--project", "--at"],
        ),
        (
            &["emulator"],
            &["--host", "--port", "--rules"],
            &FIRESTORE_OPTIONS,
        ),
        (
            &["dev-token"],
            &["--project", "--uid"],
            &["--emulator-host", "--at"],
        ),
        (&["explain"], &["--markdown"], &FIRESTORE_OPTIONS),
        (&["example", "register"], &[], &FIRESTORE_OPTIONS),
        (&["completions"], &[], &FIRESTORE_OPTIONS),
    ] {
        let (code, help, _) = run(&[words, &["--help"]].concat());
        assert_eq!(code, 0, "{words:?}");
        for option in shown {
            assert!(
                help.contains(&format!("  {option} ")),
                "{words:?} shows {option}"
            );
        }
        for option in hidden {
            assert!(
                !help.contains(&format!("  {option} ")),
                "{words:?} hides {option}"
            );
        }
    }
}

#[test]
fn a_firestore_option_before_a_subcommand_that_does_not_use_it_is_refused() {
    let (code, _, stderr) = run(&["--project", "p", "identity"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("--project is not an option of this subcommand"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["--at", "2030-01-01T00:00:00Z", "verify", "--help"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn the_top_level_help_lists_the_options_taken_before_a_subcommand() {
    let (code, help, _) = run(&["--help"]);
    assert_eq!(code, 0);
    let heading = help
        .find("\nFirestore options (for a subcommand that takes them; also after it):\n")
        .expect("the heading of the options before a subcommand");
    for option in FIRESTORE_OPTIONS.iter().chain(&["--log-format"]) {
        let at = help
            .find(&format!("  {option} "))
            .unwrap_or_else(|| panic!("--help lists {option}: {help}"));
        assert!(at > heading, "{option} under its heading");
    }
}

#[test]
fn explain_explains_errors_and_findings_and_refuses_unknown_codes() {
    let (code, text, _) = run(&["explain", "stale_fence"]);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("stale_fence: error, class refused, exit 3\n"),
        "{text}"
    );
    assert!(text.contains("What to do: "), "{text}");
    let (code, text, _) = run(&["explain", "audit_gap"]);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("audit_gap: verify finding, exit 5\n"),
        "{text}"
    );
    let (code, all, _) = run(&["explain"]);
    assert_eq!(code, 0);
    for code in ["invalid_input", "unavailable", "send_commit_time_mismatch"] {
        assert!(
            all.contains(&format!("\n{code}: ")) || all.starts_with(code),
            "{code}"
        );
    }
    let (code, markdown, _) = run(&["explain", "--markdown"]);
    assert_eq!(code, 0);
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md"))
        .expect("docs/errors.md");
    assert!(
        docs.contains(&markdown),
        "docs/errors.md is the explain table"
    );
    let (code, line, _) = run(&["explain", "CANARY_code"]);
    assert_eq!(code, 2);
    let line: Value = serde_json::from_str(line.trim()).expect("a JSON line");
    assert_eq!(
        (&line["error"], &line["field"]),
        (&"invalid_input".into(), &"code".into())
    );
    assert!(!line.to_string().contains("CANARY"));
}

#[test]
fn dev_token_prints_the_token_alone_and_refuses_real_projects() {
    let (code, token, _) = run(&["dev-token", "--project", "demo-checkout", "--uid", "alice"]);
    assert_eq!(code, 0);
    assert_eq!(token.lines().count(), 1);
    assert_eq!(token.trim().split('.').count(), 3, "{token}");
    assert!(token.trim().ends_with('.'), "unsigned: {token}");
    let (code, line, _) = run(&[
        "dev-token",
        "--project",
        "my-prod-project",
        "--uid",
        "alice",
    ]);
    assert_eq!(code, 2);
    let line: Value = serde_json::from_str(line.trim()).expect("a JSON line");
    assert_eq!(line["field"], "project");
    assert_eq!(line["problem"], "invalid");
}

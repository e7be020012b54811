//! `command-journal rules check`, driven as a user runs it: the crate's rules pass, a
//! safe merge passes, every kind of leaky merge exits 6 naming its leaks, and a ruleset
//! that does not compile exits 2 with the emulator's message.

use command_journal_emulator::Emulator;
use command_journal_emulator::rules_testing::{cells, journal_blocks, merged_into_app};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_command-journal");

/// What one run printed and returned.
struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
}

/// Runs `rules check` on `rules` (written to a temporary file) against the shared
/// emulator of this test binary.
fn check(rules: &str) -> Run {
    let emulator = Emulator::shared().expect("the shared emulator");
    let dir = tempfile::tempdir().expect("temporary directory");
    let path = dir.path().join("merged.rules");
    std::fs::write(&path, rules).expect("write the ruleset");
    run(&path, &["--emulator-host", emulator.host()])
}

fn run(path: &Path, extra: &[&str]) -> Run {
    run_in(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
        Some(path),
        extra,
    )
}

/// Runs `rules check [path] extra…` in the directory `dir`.
fn run_in(dir: &Path, path: Option<&Path>, extra: &[&str]) -> Run {
    let output = Command::new(CLI)
        .current_dir(dir)
        .args(["rules", "check"])
        .args(path)
        .args(extra)
        .env_remove("FIRESTORE_EMULATOR_HOST")
        .output()
        .expect("run the CLI");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    if !report.is_null() {
        // Its keys sorted at every depth, as every JSON line the CLI prints.
        assert_eq!(report.to_string(), stdout.trim(), "keys sorted");
    }
    Run {
        code: output.status.code(),
        report,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Asserts a leaky run: exit 6, and every `(context, path, operation)` in `expected`
/// named in the JSON report's leaks and on stderr; `not` must not be among the leaks.
fn assert_leaks(run: &Run, expected: &[(&str, &str, &str)], not: &[(&str, &str, &str)]) {
    assert_eq!(run.code, Some(6), "{}", run.stderr);
    let leaks = run.report["leaks"].as_array().expect("a leaks array");
    let has = |(context, path, operation): &(&str, &str, &str)| {
        leaks.contains(&json!({"context": context, "path": path, "operation": operation}))
    };
    for leak in expected {
        assert!(has(leak), "{leak:?} not reported among {leaks:#?}");
        let line = format!("LEAK: {} {} on {}", leak.0, leak.2, leak.1);
        assert!(run.stderr.contains(&line), "{line} not on stderr");
    }
    for leak in not {
        assert!(!has(leak), "{leak:?} reported but not opened");
    }
    assert_eq!(run.report["clean"], false);
}

#[test]
fn the_crates_own_rules_pass_on_a_private_emulator() {
    // No PATH: the default is firestore.rules in the working directory.
    let run = run_in(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")),
        None,
        &[],
    );
    assert_eq!(run.report["ruleset"], "firestore.rules");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let total = cells().len();
    assert_eq!(run.report["operations"], total);
    assert_eq!(run.report["denied"], total);
    assert_eq!(run.report["leaks"], json!([]));
    assert_eq!(run.report["changedDocuments"], json!([]));
    assert_eq!(run.report["clean"], true);
    assert_eq!(run.report["results"].as_array().map(Vec::len), Some(total));
    assert!(run.stderr.contains("CONTEXT"), "a table on stderr");
    assert!(
        run.stderr
            .contains(&format!("{total} of {total} operations denied")),
        "{}",
        run.stderr
    );
}

#[test]
fn a_safe_merged_application_ruleset_passes() {
    let app = "    match /profiles/{uid} {\n      allow read, write: if request.auth != null && request.auth.uid == uid;\n    }\n    match /public/{id} {\n      allow read, write: if true;\n    }";
    let run = check(&merged_into_app(app));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.report["denied"], cells().len());
}

#[test]
fn a_recursive_wildcard_allow_leaks_every_journal_read() {
    let app = "    match /{document=**} {\n      allow read: if request.auth != null;\n    }";
    let run = check(&merged_into_app(app));
    assert_leaks(
        &run,
        &[
            ("signed-in", "checkoutRequests/{k}", "get"),
            ("admin", "auditEvents/{k}", "list"),
            (
                "anonymous",
                "checkoutRequests/{k}/lifecycle/current",
                "collection-group query lifecycle",
            ),
            ("verified-email", "ledgerTransactions/{k}", "gRPC get"),
        ],
        &[
            ("unauthenticated", "checkoutRequests/{k}", "get"),
            ("signed-in", "checkoutRequests/{k}", "update"),
        ],
    );
    assert_eq!(run.report["changedDocuments"], json!([]));
}

#[test]
fn a_collection_group_allow_on_lifecycle_or_current_leaks() {
    let app = "    match /{path=**}/lifecycle/{doc} {\n      allow read: if true;\n    }";
    let run = check(&merged_into_app(app));
    let lifecycle = "checkoutRequests/{k}/lifecycle/current";
    assert_leaks(
        &run,
        &[
            (
                "unauthenticated",
                lifecycle,
                "collection-group query lifecycle",
            ),
            ("unauthenticated", lifecycle, "get"),
        ],
        &[
            ("unauthenticated", "checkoutRequests/{k}", "get"),
            (
                "unauthenticated",
                lifecycle,
                "collection-group query current",
            ),
        ],
    );

    let app =
        "    match /{path=**}/current/{doc} {\n      allow list: if request.auth != null;\n    }";
    let run = check(&merged_into_app(app));
    assert_leaks(
        &run,
        &[("signed-in", lifecycle, "collection-group query current")],
        &[
            ("signed-in", lifecycle, "get"),
            (
                "unauthenticated",
                lifecycle,
                "collection-group query current",
            ),
        ],
    );
}

#[test]
fn a_list_only_allow_on_audit_events_leaks_lists_and_queries_but_not_gets() {
    let app = "    match /auditEvents/{event} {\n      allow list: if request.auth != null;\n    }";
    let run = check(&merged_into_app(app));
    let audit = "auditEvents/{k}";
    assert_leaks(
        &run,
        &[
            ("signed-in", audit, "list"),
            ("signed-in", audit, "query"),
            ("admin", audit, "count"),
        ],
        &[
            // A collection-group query needs a `{path=**}` match to be allowed.
            (
                "verified-email",
                audit,
                "collection-group query auditEvents",
            ),
            ("signed-in", audit, "get"),
            ("signed-in", audit, "batch get"),
            ("unauthenticated", audit, "list"),
        ],
    );
    // docs/rules.md shows this run: its summary line and its report's counts.
    let (denied, operations) = (&run.report["denied"], &run.report["operations"]);
    let leaks = run.report["leaks"].as_array().map_or(0, Vec::len);
    let summary = format!(
        "{denied} of {operations} operations denied with PERMISSION_DENIED; {leaks} leaks; \
         0 unexpected answers; 0 seeded documents changed"
    );
    assert!(run.stderr.contains(&summary), "{summary}: {}", run.stderr);
    let docs = include_str!("../docs/rules.md");
    assert!(docs.contains(&summary), "docs/rules.md lacks {summary}");
    for count in [
        format!("\"denied\":{denied},"),
        format!("\"operations\":{operations},"),
    ] {
        assert!(docs.contains(&count), "docs/rules.md lacks {count}");
    }
}

#[test]
fn an_allow_nested_inside_a_journal_block_leaks() {
    let blocks = journal_blocks();
    let opening = "match /checkoutRequests/{commandKeyHash} {\n";
    assert!(blocks.contains(opening), "the blocks open checkoutRequests");
    let nested = blocks.replacen(
        opening,
        &format!(
            "{opening}      match /lifecycle/{{doc}} {{\n        allow read: if request.auth.token.admin == true;\n      }}\n"
        ),
        1,
    );
    let rules = merged_into_app("").replace(blocks, &nested);
    assert_ne!(rules, merged_into_app(""));
    let run = check(&rules);
    let lifecycle = "checkoutRequests/{k}/lifecycle/current";
    assert_leaks(
        &run,
        &[
            ("admin", lifecycle, "get"),
            ("admin", lifecycle, "gRPC get"),
        ],
        &[
            ("signed-in", lifecycle, "get"),
            ("admin", "checkoutRequests/{k}", "get"),
        ],
    );
}

#[test]
fn a_changed_journal_server_only_leaks_reads_and_writes() {
    let guard = "return false;";
    let blocks = journal_blocks();
    assert!(blocks.contains(guard));
    let changed = blocks.replacen(
        guard,
        "return request.auth != null && request.auth.token.email_verified == true;",
        1,
    );
    let rules = merged_into_app("").replace(blocks, &changed);
    let run = check(&rules);
    assert_leaks(
        &run,
        &[
            ("verified-email", "checkoutRequests/{k}", "get"),
            ("verified-email", "ledgerReservations/{k}", "create"),
            ("verified-email", "auditEvents/{k}", "upsert"),
        ],
        &[
            ("signed-in", "checkoutRequests/{k}", "get"),
            // The merged ruleset has no allow on `public/`, so a mixed commit stays
            // denied as a whole.
            ("verified-email", "auditEvents/{k}", "gRPC mixed commit"),
        ],
    );
    let changed = run.report["changedDocuments"]
        .as_array()
        .expect("changed documents");
    assert!(!changed.is_empty(), "the leaked writes changed documents");
    assert!(run.stderr.contains("CHANGED: "), "{}", run.stderr);
}

#[test]
fn a_ruleset_that_does_not_compile_exits_2_with_the_emulators_message() {
    let run = check(
        "rules_version = '2';\nservice cloud.firestore { match /x { allow read: if foo( } }\n",
    );
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(run.report["error"], "rules_do_not_compile");
    let message = run.report["message"]
        .as_str()
        .expect("the emulator's message");
    assert!(message.contains("Error compiling rules"), "{message}");
    assert!(run.stderr.contains(message), "{}", run.stderr);
}

#[test]
fn an_unreadable_ruleset_exits_2_before_any_emulator_starts() {
    let dir = tempfile::tempdir().expect("temporary directory");
    // No firestore.rules here, and a host nothing listens on: reading fails first.
    let run = run_in(dir.path(), None, &["--emulator-host", "127.0.0.1:9"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert_eq!(
        run.report,
        json!({"error": "invalid_input", "field": "path", "problem": "invalid",
               "expected": "a readable Firestore ruleset file",
               "message": "the value given for this key or option is not valid"})
    );
    assert!(run.stderr.contains("firestore.rules"), "{}", run.stderr);
}

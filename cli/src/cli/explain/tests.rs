//! The explain table against the library's codes and docs/errors.md.

use super::*;

/// The `"code"` strings of the match arms of `function` in `source`.
fn codes_in(source: &str, function: &str) -> Vec<String> {
    let body = source
        .split(function)
        .nth(1)
        .and_then(|rest| rest.split("\n    }\n").next())
        .unwrap_or_default();
    body.lines()
        .filter_map(|line| line.split("=> \"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_error_and_finding_code_of_the_library_is_explained() {
    let errors = codes_in(
        include_str!("../../../../core/src/error.rs"),
        "The stable snake_case code used by the CLI and logs.",
    );
    let findings = codes_in(
        include_str!("../../../../core/src/verify/report.rs"),
        "pub fn as_str(self)",
    );
    assert!(errors.len() >= 23, "{errors:?}");
    assert!(findings.len() >= 37, "{findings:?}");
    for code in errors.iter().chain(&findings) {
        assert!(lookup(code).is_some(), "no explanation of {code}");
    }
    for code in &findings {
        assert_eq!(lookup(code).map(|e| e.kind), Some(Kind::Finding), "{code}");
    }
}

#[test]
fn codes_are_distinct_and_every_cli_code_is_explained() {
    let mut codes: Vec<&str> = ENTRIES.iter().map(|e| e.code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), ENTRIES.len());
    for code in [
        "emulator_unavailable",
        "address_unavailable",
        "rules_do_not_compile",
    ] {
        assert!(lookup(code).is_some(), "{code}");
    }
}

#[test]
fn docs_errors_md_is_the_table() {
    let docs = include_str!("../../../../docs/errors.md");
    assert!(
        docs.contains(&markdown()),
        "docs/errors.md is out of date: paste `command-journal explain --markdown`"
    );
}

#[test]
fn exit_codes_match_the_classes() {
    for entry in ENTRIES {
        let expected = match entry.kind {
            Kind::Finding => 5,
            Kind::Error("input") => 2,
            Kind::Error("refused") => 3,
            Kind::Error("unavailable") => 4,
            Kind::Error("configuration") => 8,
            Kind::Error(_) => 1,
        };
        assert_eq!(entry.exit.code(), expected, "{}", entry.code);
    }
}

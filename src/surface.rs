//! Tests of the crate's shape: the size of the public root and of the source files,
//! and no import cycle between its files.

mod imports;

/// The names `src/lib.rs` re-exports at the crate root.
fn root_names() -> Vec<String> {
    let lib = include_str!("lib.rs");
    let mut names = Vec::new();
    let mut rest = lib;
    while let Some(at) = rest.find("\npub use ") {
        let statement = &rest[at + 9..];
        let end = statement.find(';').unwrap_or(statement.len());
        let path = &statement[..end];
        let list = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => &path[open + 1..close],
            _ => path.rsplit("::").next().unwrap_or(path),
        };
        names.extend(
            list.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(|n| n.rsplit(' ').next().unwrap_or(n).to_owned()),
        );
        rest = &statement[end..];
    }
    names
}

#[test]
fn the_root_holds_at_most_thirty_names() {
    let names = root_names();
    assert!(names.contains(&"Journal".to_owned()), "{names:?}");
    assert!(
        names.len() <= 30,
        "{} names at the root: {names:?}",
        names.len()
    );
}

#[test]
fn no_source_file_outside_tests_is_over_600_lines() {
    fn walk(dir: &std::path::Path, over: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "tests" {
                    walk(&path, over);
                }
            } else if name.ends_with(".rs") && !name.contains("tests") {
                let lines = std::fs::read_to_string(&path).map_or(0, |t| t.lines().count());
                if lines > 600 {
                    over.push(format!("{}: {lines}", path.display()));
                }
            }
        }
    }
    let mut over = Vec::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for package in [
        "src",
        "core/src",
        "cli/src",
        "harness/src",
        "stripe/src",
        "http/src",
    ] {
        walk(&root.join(package), &mut over);
    }
    assert!(over.is_empty(), "over 600 lines: {over:?}");
}

#[test]
fn the_readme_is_at_most_250_lines() {
    let lines = include_str!("../README.md").lines().count();
    assert!(lines <= 250, "README.md has {lines} lines");
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    // The library's files, and each other package's of the workspace.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for package in [
        "src",
        "core/src",
        "cli/src",
        "harness/src",
        "stripe/src",
        "http/src",
    ] {
        let src = root.join(package);
        assert!(src.is_dir(), "{package} is missing");
        let cycles = imports::cycles(&src);
        assert!(cycles.is_empty(), "import cycles in {package}: {cycles:#?}");
    }
}

/// The text between the first line `open` after `after` and the next ```` ``` ```` line.
fn block_after<'a>(text: &'a str, after: &str, open: &str) -> &'a str {
    let from = text.find(after).map_or(0, |at| at + after.len());
    let start = text[from..]
        .find(open)
        .map_or(text.len(), |at| from + at + open.len());
    let end = text[start..]
        .find("\n```")
        .map_or(text.len(), |at| start + at + 1);
    &text[start..end]
}

#[test]
fn the_readme_handler_is_the_compiled_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
    let readme = read("README.md");
    let handler = block_after(&readme, "every retry gets the stored answer.", "```rust\n");
    let example = read("examples/readme-handler/main.rs");
    let compiled = block_after(&example, "// README block", "\n");
    let compiled = &compiled[..compiled.find("// end of README block").unwrap_or(0)];
    assert!(handler.contains("stripe.payment(payload)"), "{handler}");
    assert_eq!(
        handler, compiled,
        "README.md's handler differs from the example"
    );
    // Its dependencies, as the README lists them, at this crate's versions.
    let toml = block_after(&readme, "The handler's crate needs", "```toml\n");
    let manifest = read("Cargo.toml");
    assert!(
        toml.contains("command-journal-stripe = { path = \"../command-journal/stripe\" }"),
        "{toml}"
    );
    assert!(read("stripe/Cargo.toml").contains("name = \"command-journal-stripe\""));
    for (name, version) in [("serde_json", "1"), ("tokio", "1")] {
        let line = toml.lines().find(|l| l.starts_with(&format!("{name} ")));
        let line = line.unwrap_or_else(|| panic!("README's dependencies lack {name}"));
        assert!(line.contains(&format!("\"{version}\"")), "{line}");
        assert!(
            manifest.contains(&format!("{name} = \"{version}"))
                || manifest.contains(&format!("{name} = {{ version = \"{version}")),
            "Cargo.toml's {name} is not {version}"
        );
    }
}

/// The README's handler and the checkout service answer with one HTTP table, the one
/// in the service's README: each row's body and `Retry-After` is in all three.
#[test]
fn the_readme_handler_and_the_service_answer_with_one_table() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_default();
    let handler = read("examples/readme-handler/main.rs");
    let service = read("examples/checkout-service/service/answer.rs");
    let table = read("examples/checkout-service/README.md");
    // (the handler's row, the service's constructor or constant, the table's row)
    let rows = [
        (
            r#"(402, None, r#"{"status":"failed"}"#,
            r#"json!({"status": "failed"})"#,
            r#"| 402 | `{"status":"failed"}` | — |"#,
        ),
        (
            r#"(409, Some(2), r#"{"status":"in_progress"}"#,
            "BUSY_RETRY_AFTER: u64 = 2",
            r#"| 409 | `{"status":"in_progress"}` | `2` |"#,
        ),
        (
            r#"(503, Some(after.as_secs()), r#"{"status":"retry"}"#,
            r#"json!({"status": "retry"})"#,
            r#"| 503 | `{"status":"retry"}` |"#,
        ),
        (
            r#"(202, Some(60), r#"{"status":"pending_reconciliation"}"#,
            "PENDING_RETRY_AFTER: u64 = 60",
            r#"| 202 | `{"status":"pending_reconciliation"}` | `60` |"#,
        ),
        (
            r#"(202, None, r#"{"status":"customer_must_act""#,
            r#"json!({"status": "customer_must_act", "action": action})"#,
            r#"| 202 | `{"status":"customer_must_act","action":{"type":"confirm","clientSecret":"…","nextAction":"…"}}` or `{"status":"customer_must_act","action":{"type":"open","url":"…"}}`"#,
        ),
        (
            r#"{{"status":"succeeded","charge":{}}}"#,
            r#"{{"status":"succeeded","charge":{canonical}}}"#,
            r#"| 200 | `{"status":"succeeded","charge":{…}}`"#,
        ),
    ];
    for (in_handler, in_service, in_table) in rows {
        assert!(
            handler.contains(in_handler),
            "the handler lacks {in_handler}"
        );
        assert!(
            service.contains(in_service),
            "the service lacks {in_service}"
        );
        assert!(table.contains(in_table), "the table lacks {in_table}");
    }
    assert!(!handler.contains("retryAfter"), "Retry-After is a header");
}

#[test]
fn no_two_public_types_of_a_package_share_a_name() {
    // Within each package a reader sees its types together: one name, one type.
    fn walk(dir: &std::path::Path, names: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let file = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if file != "tests" {
                    walk(&path, names);
                }
            } else if file.ends_with(".rs") && !file.contains("tests") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                for line in text.lines() {
                    for kind in ["pub struct ", "pub enum ", "pub trait ", "pub type "] {
                        if let Some(rest) = line.strip_prefix(kind) {
                            let name: String = rest
                                .chars()
                                .take_while(|c| c.is_alphanumeric() || *c == '_')
                                .collect();
                            names.push((name, path.display().to_string()));
                        }
                    }
                }
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for package in [
        vec!["src", "core/src"],
        vec!["cli/src"],
        vec!["harness/src"],
        vec!["stripe/src"],
    ] {
        let mut names = Vec::new();
        for dir in &package {
            walk(&root.join(dir), &mut names);
        }
        names.sort();
        let repeated: Vec<_> = names
            .windows(2)
            .filter(|pair| pair[0].0 == pair[1].0)
            .map(|pair| format!("{} in {} and {}", pair[0].0, pair[0].1, pair[1].1))
            .collect();
        assert!(repeated.is_empty(), "{package:?}: {repeated:#?}");
    }
}

//! The emulator's rule-coverage report: which protected `match` blocks a run evaluated.

use crate::client::Project;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The function every protected `allow` calls; the emulator records each call site.
const GUARD: &str = "journalServerOnly()";

/// What the coverage report says about the protected blocks of a ruleset.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Protected `match` blocks whose `allow` was never evaluated.
    pub never_evaluated: Vec<String>,
    /// Protected `match` blocks whose `allow` ever evaluated to true.
    pub granted: Vec<String>,
    /// How many protected `allow` statements the ruleset has.
    pub guarded: usize,
}

#[derive(Debug, Default, Clone, Copy)]
struct LineStats {
    evaluations: u64,
    trues: u64,
}

fn collect(node: &Value, lines: &mut BTreeMap<u64, LineStats>) {
    if let Some(line) = node["sourcePosition"]["line"].as_u64() {
        let stats = lines.entry(line).or_default();
        for value in node["values"].as_array().into_iter().flatten() {
            let count = value["count"]
                .as_u64()
                .or_else(|| value["count"].as_str().and_then(|c| c.parse().ok()))
                .unwrap_or(0);
            stats.evaluations += count;
            if value["value"]["boolValue"] == Value::Bool(true) {
                stats.trues += count;
            }
        }
    }
    for child in node["children"].as_array().into_iter().flatten() {
        collect(child, lines);
    }
}

/// Checks the `:ruleCoverage` report of `project`, which was loaded with `rules`:
/// every `allow ...: if journalServerOnly();` line must have been evaluated, and never
/// to true.
pub async fn check(project: &Project, rules: &str) -> Coverage {
    let url = format!(
        "http://{}/emulator/v1/projects/{}:ruleCoverage",
        project.host(),
        project.id
    );
    let report: Value = reqwest::get(url)
        .await
        .expect("the coverage report is reachable")
        .json()
        .await
        .expect("the coverage report is JSON");
    assert_eq!(
        report["rules"]["files"][0]["content"].as_str(),
        Some(rules),
        "the coverage report is for the ruleset under test"
    );
    let mut lines = BTreeMap::new();
    for node in report["report"].as_array().into_iter().flatten() {
        collect(node, &mut lines);
    }

    let mut coverage = Coverage::default();
    let mut block = "(outside any match)";
    for (index, line) in rules.lines().enumerate() {
        let text = line.trim();
        if text.starts_with("match ") {
            block = text.trim_end_matches('{').trim_end();
        }
        if !(text.starts_with("allow ") && text.contains(GUARD)) {
            continue;
        }
        coverage.guarded += 1;
        let stats = lines.get(&(index as u64 + 1)).copied().unwrap_or_default();
        if stats.evaluations == 0 {
            coverage.never_evaluated.push(block.to_owned());
        }
        if stats.trues > 0 {
            coverage.granted.push(block.to_owned());
        }
    }
    coverage
}

/// Where reports go: `$CARGO_TARGET_DIR/rules-coverage`, else `target/rules-coverage`
/// in the crate.
fn report_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("rules-coverage")
}

/// Saves the emulator's HTML coverage report of `project` as `{name}.html` under the
/// target directory and returns its path.
pub async fn save_html(project: &Project, name: &str) -> PathBuf {
    let url = format!(
        "http://{}/emulator/v1/projects/{}:ruleCoverage.html",
        project.host(),
        project.id
    );
    let html = reqwest::get(url)
        .await
        .expect("the HTML coverage report is reachable")
        .text()
        .await
        .expect("the HTML coverage report is text");
    assert!(html.contains("Rule Coverage"), "unexpected coverage page");
    let dir = report_dir();
    std::fs::create_dir_all(&dir).expect("create the coverage report directory");
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).expect("write the coverage report");
    path
}

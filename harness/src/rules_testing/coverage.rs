//! The emulator's rule-coverage report, read for one guard function: which `match`
//! blocks whose `allow` calls it a run never evaluated, and which ever granted.

use super::environment::TestEnvironment;
use super::outcome::RulesTestError;
use serde_json::Value;
use std::collections::BTreeMap;

/// The function every `allow` of the journal's blocks calls; the emulator records each
/// call site (it records no constant literal such as `if false`).
pub const JOURNAL_GUARD: &str = "journalServerOnly()";

/// What the coverage report says about the guarded `allow` statements of a ruleset.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// `match` blocks with a guarded `allow` that was never evaluated.
    pub never_evaluated: Vec<String>,
    /// `match` blocks with a guarded `allow` that ever evaluated to true.
    pub granted: Vec<String>,
    /// How many guarded `allow` statements the ruleset has.
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

/// Reads the `:ruleCoverage` report of `environment`: every line
/// `allow ...: if {guard};` of its ruleset must have been evaluated, and never to
/// true. Fails when the report is for another ruleset.
pub async fn guard_coverage(
    environment: &TestEnvironment,
    guard: &str,
) -> Result<Coverage, RulesTestError> {
    let report = environment.coverage().await?;
    let rules = environment.rules();
    if report["rules"]["files"][0]["content"].as_str() != Some(rules) {
        return Err(RulesTestError::Http(
            "the coverage report is for another ruleset".into(),
        ));
    }
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
        if !(text.starts_with("allow ") && text.contains(guard)) {
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
    Ok(coverage)
}

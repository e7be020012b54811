//! Saving the emulator's HTML rule-coverage report where CI uploads it from.

use command_journal_emulator::rules_testing::TestEnvironment;
use std::path::PathBuf;

/// Where reports go: `$CARGO_TARGET_DIR/rules-coverage`, else `target/rules-coverage`
/// in the crate.
fn report_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("rules-coverage")
}

/// Saves the emulator's HTML coverage report of `environment` as `{name}.html` under
/// the target directory and returns its path.
pub async fn save_html(environment: &TestEnvironment, name: &str) -> PathBuf {
    let html = environment
        .coverage_html()
        .await
        .expect("the HTML coverage report is reachable");
    assert!(html.contains("Rule Coverage"), "unexpected coverage page");
    let dir = report_dir();
    std::fs::create_dir_all(&dir).expect("create the coverage report directory");
    let path = dir.join(format!("{name}.html"));
    std::fs::write(&path, html).expect("write the coverage report");
    path
}

//! The browser driver against a local page: Chromium fills a form, clicks, follows the
//! navigation and reads the result; no process of it outlives its `Browser`; without a
//! browser a CI run fails and any other run skips, saying why.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use command_journal_emulator::browser::{Browser, BrowserError, CHROMIUM_ENV, CI_ENV};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(30);

/// A form whose button stays disabled until the name field gets input, and whose click
/// navigates to the result page with the name in the query.
const FORM: &str = r#"<!doctype html>
<title>Pay</title>
<input id="name" autocomplete="off">
<button id="pay" disabled>Pay</button>
<script>
  const name = document.getElementById('name');
  const pay = document.getElementById('pay');
  name.addEventListener('input', () => { pay.disabled = name.value === ''; });
  pay.addEventListener('click', () => {
    location.href = '/result?name=' + encodeURIComponent(name.value);
  });
</script>"#;

/// The result page: its text is written by its own script from the query.
const RESULT: &str = r#"<!doctype html>
<title>Paid</title>
<p id="greeting"></p>
<script>
  document.getElementById('greeting').textContent =
    'Paid by ' + new URLSearchParams(location.search).get('name');
</script>"#;

/// Serves the two pages on 127.0.0.1, a free port; answers the base URL.
async fn serve() -> std::io::Result<String> {
    let app = Router::new()
        .route("/form", get(|| async { Html(FORM) }))
        .route("/result", get(|| async { Html(RESULT) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(base)
}

/// The processes of a process group (`pgrep -g`), zombies included.
fn group_members(group: u32) -> std::io::Result<Vec<String>> {
    pgrep(&["-g", &group.to_string()])
}

/// The processes naming `profile` on their command line (`pgrep -f`).
fn with_profile(profile: &Path) -> std::io::Result<Vec<String>> {
    pgrep(&["-f", "--", &profile.display().to_string()])
}

/// The ids `pgrep` lists for `args`, sorted as numbers.
fn pgrep(args: &[&str]) -> std::io::Result<Vec<String>> {
    let output = Command::new("pgrep").args(args).output()?;
    let mut pids: Vec<u32> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect();
    pids.sort_unstable();
    Ok(pids.iter().map(u32::to_string).collect())
}

#[tokio::test]
async fn fills_clicks_follows_the_navigation_and_leaves_no_process() -> TestResult {
    let base = serve().await?;
    let Some(browser) = Browser::launch_or_skip().await? else {
        return Ok(());
    };
    let group = browser.pid();
    browser.open(&format!("{base}/form")).await?;
    // A second fill replaces the first.
    browser.fill("#name", "Charles Babbage").await?;
    browser.fill("#name", "Ada Lovelace").await?;
    browser.click("#pay").await?;
    let url = browser
        .wait_for_url_prefix(&format!("{base}/result"), WAIT)
        .await?;
    assert_eq!(url, format!("{base}/result?name=Ada%20Lovelace"));
    assert_eq!(browser.url().await?, url);
    assert_eq!(browser.text("#greeting").await?, "Paid by Ada Lovelace");

    // The browser, its zygotes and their children are in its group while it lives;
    // they name its profile, and so do the crash handlers outside the group (Debian's
    // Chromium starts two)...
    let profile = browser.profile().to_owned();
    let members = group_members(group)?;
    assert!(members.len() >= 3, "the browser's group: {members:?}");
    let named = with_profile(&profile)?;
    assert!(
        members.iter().all(|pid| named.contains(pid)),
        "the group {members:?}, the processes naming the profile {named:?}"
    );
    drop(browser);
    // ... and none of them, zombie or not, is left once it is dropped, nor its profile.
    assert_eq!(group_members(group)?, Vec::<String>::new());
    assert_eq!(with_profile(&profile)?, Vec::<String>::new());
    assert!(!profile.exists());
    Ok(())
}

#[tokio::test]
async fn a_url_never_reached_times_out() -> TestResult {
    let base = serve().await?;
    let Some(browser) = Browser::launch_or_skip().await? else {
        return Ok(());
    };
    browser.open(&format!("{base}/form")).await?;
    // A URL already reached answers at once.
    let here = browser
        .wait_for_url_prefix(&format!("{base}/form"), WAIT)
        .await?;
    assert_eq!(here, format!("{base}/form"));
    let waited = browser
        .wait_for_url(|url| url.ends_with("/never"), Duration::from_millis(500))
        .await;
    assert!(
        matches!(waited, Err(BrowserError::Timeout { .. })),
        "{waited:?}"
    );
    // The form page is still there and the wait did not click anything.
    assert_eq!(browser.url().await?, format!("{base}/form"));
    Ok(())
}

#[tokio::test]
async fn reading_an_element_the_page_lacks_is_an_error() -> TestResult {
    let base = serve().await?;
    let Some(browser) = Browser::launch_or_skip().await? else {
        return Ok(());
    };
    browser.open(&format!("{base}/form")).await?;
    assert!(matches!(
        browser.text("#missing").await,
        Err(BrowserError::Protocol(_))
    ));
    assert!(matches!(
        browser.click("#missing").await,
        Err(BrowserError::Protocol(_))
    ));
    Ok(())
}

/// Run as a child by the test below, with the environment it sets: launches the
/// browser `CHROMIUM` names, or skips or fails as `launch_or_skip` decides.
#[tokio::test]
async fn launch_or_skip_in_this_environment() -> TestResult {
    if let Some(browser) = Browser::launch_or_skip().await? {
        assert!(browser.pid() > 0);
    }
    Ok(())
}

/// This test binary, running only `launch_or_skip_in_this_environment`, with a
/// `CHROMIUM` that names no file and `CI` as given.
fn without_a_browser(ci: Option<&str>) -> std::io::Result<(bool, String)> {
    let mut command = Command::new(std::env::current_exe()?);
    command
        .args([
            "--exact",
            "launch_or_skip_in_this_environment",
            "--nocapture",
        ])
        .env(CHROMIUM_ENV, "/nonexistent/chromium");
    match ci {
        Some(value) => command.env(CI_ENV, value),
        None => command.env_remove(CI_ENV),
    };
    let output = command.output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.success(), text))
}

#[test]
fn without_a_browser_ci_fails_and_a_local_run_skips_saying_why() -> TestResult {
    let hint = "no Chromium at /nonexistent/chromium: install the Debian package `chromium`";
    let (passed, output) = without_a_browser(Some("true"))?;
    assert!(!passed, "{output}");
    assert!(output.contains(hint), "{output}");

    for not_ci in [None, Some(""), Some("false")] {
        let (passed, output) = without_a_browser(not_ci)?;
        assert!(passed, "{output}");
        assert!(
            output.contains(&format!("skipped, not in CI: {hint}")),
            "{output}"
        );
        assert!(output.contains("1 passed"), "{output}");
    }
    Ok(())
}

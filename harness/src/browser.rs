//! Headless Chromium for tests of pages a customer's browser completes (a 3-D Secure
//! challenge, a hosted checkout page): open a URL, fill and click, wait for the URL the
//! page navigates to, read text. Behind the crate's `browser` feature.
//!
//! [`Browser::launch`] starts the Debian package `chromium` (`/usr/bin/chromium`, or
//! the binary `$CHROMIUM` names) headless with a fresh profile and the flags in
//! [`FLAGS`] and [`DRIVER_FLAGS`], in a process group of its own, and drives it through the DevTools
//! protocol ([`chromiumoxide`], which never downloads a browser here). Dropping the
//! [`Browser`] kills that whole group and the crash handlers Chromium starts outside it
//! (found by the profile they name, [`CONFIG_HOME_ENV`]), and returns once none of them
//! is left. [`Browser::launch_or_skip`] is what a test
//! calls: without a browser it fails when `CI` is set and skips, saying why, otherwise.
//!
//! ```no_run
//! # async fn example() -> Result<(), command_journal_emulator::browser::BrowserError> {
//! use std::time::Duration;
//! use command_journal_emulator::browser::Browser;
//!
//! let Some(browser) = Browser::launch_or_skip().await? else {
//!     return Ok(());
//! };
//! browser.open("http://127.0.0.1:8080/challenge").await?;
//! browser.fill("#code", "1234").await?;
//! browser.click("button[type=submit]").await?;
//! browser.wait_for_url_prefix("http://127.0.0.1:8080/return", Duration::from_secs(10)).await?;
//! assert_eq!(browser.text("#outcome").await?, "succeeded");
//! # Ok(())
//! # }
//! ```

mod error;
mod process;

use std::time::Duration;

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventLoadEventFired, EventNavigatedWithinDocument,
};
use chromiumoxide::handler::HandlerConfig;
use futures::StreamExt as _;
use tokio::task::JoinHandle;

pub use error::BrowserError;
pub use process::{
    CHROMIUM_ENV, CONFIG_HOME_ENV, DEFAULT_BINARY, DRIVER_FLAGS, EXIT_DEADLINE, FLAGS,
    START_DEADLINE, binary,
};

use process::Chromium;

/// Environment variable that, set to anything but empty, `0` or `false`, marks a CI
/// run (`.ci/run` and GitHub Actions set it): there a missing browser fails the test.
pub const CI_ENV: &str = "CI";
/// How long one DevTools command (a navigation included) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One headless Chromium with one page, killed with its process group when dropped.
pub struct Browser {
    page: Page,
    // Held for the connection: dropping it closes the DevTools socket.
    _browser: chromiumoxide::Browser,
    handler: JoinHandle<()>,
    chromium: Chromium,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser")
            .field("pid", &self.chromium.pid())
            .finish_non_exhaustive()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The Chromium field's own drop then kills the process group.
        self.handler.abort();
    }
}

/// True when [`CI_ENV`] marks a CI run.
pub fn in_ci() -> bool {
    std::env::var(CI_ENV).is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

impl Browser {
    /// Starts Chromium ([`binary`]) headless and opens one blank page. Must run inside
    /// a Tokio runtime: the DevTools connection is served by a spawned task.
    pub async fn launch() -> Result<Self, BrowserError> {
        let binary = binary()?;
        let (chromium, address) = Chromium::start(&binary).await?;
        let config = HandlerConfig {
            request_timeout: REQUEST_TIMEOUT,
            ..HandlerConfig::default()
        };
        let (browser, mut handler) =
            chromiumoxide::Browser::connect_with_config(address, config).await?;
        // Serves the connection until the socket closes; a message the driver cannot
        // read ends nothing (the command waiting for it times out).
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        let page = match browser.new_page("about:blank").await {
            Ok(page) => page,
            Err(error) => {
                handler.abort();
                return Err(error.into());
            }
        };
        Ok(Self {
            page,
            _browser: browser,
            handler,
            chromium,
        })
    }

    /// [`launch`](Self::launch) for a test: without a browser binary, an error when
    /// [`in_ci`], otherwise `None` after printing to stderr why the test is skipped.
    pub async fn launch_or_skip() -> Result<Option<Self>, BrowserError> {
        match Self::launch().await {
            Ok(browser) => Ok(Some(browser)),
            Err(error @ BrowserError::NotFound(_)) => {
                if in_ci() {
                    eprintln!("failed, in CI: {error}");
                    Err(error)
                } else {
                    eprintln!("skipped, not in CI: {error}");
                    Ok(None)
                }
            }
            Err(error) => Err(error),
        }
    }

    /// The browser process's id, also its process group's: every process of this
    /// browser is in that group until the value is dropped, none after.
    pub fn pid(&self) -> u32 {
        self.chromium.pid()
    }

    /// Navigates the page to `url` and waits for it to load.
    pub async fn open(&self, url: &str) -> Result<(), BrowserError> {
        self.page.goto(url).await?;
        Ok(())
    }

    /// Clicks the centre of the first element matching the CSS `selector`, scrolled
    /// into view, as a mouse would.
    pub async fn click(&self, selector: &str) -> Result<(), BrowserError> {
        self.page.find_element(selector).await?.click().await?;
        Ok(())
    }

    /// Empties the first input matching `selector`, focuses it and types `text` key by
    /// key, so that the page's input listeners see it.
    pub async fn fill(&self, selector: &str, text: &str) -> Result<(), BrowserError> {
        let element = self.page.find_element(selector).await?;
        element
            .call_js_fn("function() { this.value = ''; this.focus(); }", false)
            .await?;
        element.type_str(text).await?;
        Ok(())
    }

    /// The `innerText` of the first element matching `selector`.
    pub async fn text(&self, selector: &str) -> Result<String, BrowserError> {
        self.page
            .find_element(selector)
            .await?
            .inner_text()
            .await?
            .ok_or(BrowserError::NoText("the element"))
    }

    /// The browser's fresh profile directory (`--user-data-dir`), removed on drop.
    pub fn profile(&self) -> &std::path::Path {
        self.chromium.profile()
    }

    /// The page's current URL.
    pub async fn url(&self) -> Result<String, BrowserError> {
        self.page
            .url()
            .await?
            .ok_or(BrowserError::NoText("the page's URL"))
    }

    /// Waits until the page's URL satisfies `matches` and its document has loaded;
    /// answers that URL. Woken by the page's navigation and load events, never by a
    /// timer; an error after `timeout`.
    pub async fn wait_for_url(
        &self,
        matches: impl Fn(&str) -> bool,
        timeout: Duration,
    ) -> Result<String, BrowserError> {
        // Listening before the first look: no navigation between the two is missed.
        let navigated = self.page.event_listener::<EventFrameNavigated>().await?;
        let within = self
            .page
            .event_listener::<EventNavigatedWithinDocument>()
            .await?;
        let loaded = self.page.event_listener::<EventLoadEventFired>().await?;
        let mut events = futures::stream::select(
            navigated.map(|_| ()),
            futures::stream::select(within.map(|_| ()), loaded.map(|_| ())),
        );
        let waiting = async {
            loop {
                if let Some(url) = self.loaded_url().await?
                    && matches(&url)
                {
                    return Ok(url);
                }
                if events.next().await.is_none() {
                    return Err(BrowserError::NoText("the page's events (closed)"));
                }
            }
        };
        tokio::time::timeout(timeout, waiting)
            .await
            .unwrap_or(Err(BrowserError::Timeout {
                what: "the URL",
                after: timeout,
            }))
    }

    /// [`wait_for_url`](Self::wait_for_url) for a URL that starts with `prefix`.
    pub async fn wait_for_url_prefix(
        &self,
        prefix: &str,
        timeout: Duration,
    ) -> Result<String, BrowserError> {
        self.wait_for_url(|url| url.starts_with(prefix), timeout)
            .await
    }

    /// The URL, once the document at it has loaded; `None` while it is loading (or
    /// while a navigation replaces the document being asked).
    async fn loaded_url(&self) -> Result<Option<String>, BrowserError> {
        let Some(url) = self.page.url().await? else {
            return Ok(None);
        };
        let state = match self.page.evaluate("document.readyState").await {
            Ok(result) => result.into_value::<String>().ok(),
            Err(_) => None,
        };
        Ok((state.as_deref() == Some("complete")).then_some(url))
    }
}

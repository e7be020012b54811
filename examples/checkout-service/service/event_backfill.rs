//! The recovery job's backfill from Stripe's Events API: the events the webhook
//! endpoint missed (it was down, a delivery was dropped, Stripe gave up after its
//! three days of retries) taken as evidence exactly as the endpoint takes them
//! ([`super::webhook_event::take`]), before the job's lookups, so that what an event
//! settles costs no lookup.
//!
//! Each run lists `GET /v1/events` for the event types the classification reads
//! (`types[]`), created in the last `RECOVERY_EVENTS_SECONDS` (default 86400, at most
//! 2592000: Stripe lists events going back up to 30 days,
//! <https://docs.stripe.com/api/events/list>), newest first, paging with
//! `starting_after`. It keeps no checkpoint: an event taken twice writes nothing the
//! second time, so a window that overlaps the last run's only costs reads; schedule the
//! job more often than the window is long.

use super::config::ConfigError;
use super::logging::{Logger, Severity};
use super::webhook_event::{Taken, take};
use command_journal::Journal;
use command_journal_stripe::webhook::event_types;
use command_journal_stripe::{EventsQuery, Stripe};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The variable of the window, in seconds.
pub const WINDOW_VARIABLE: &str = "RECOVERY_EVENTS_SECONDS";
/// The default window: a day.
pub const DEFAULT_WINDOW_SECONDS: i64 = 86_400;
/// The longest window: the 30 days Stripe keeps events listable.
pub const MAX_WINDOW_SECONDS: i64 = 30 * 86_400;
/// The most pages one run reads (100 events each); more fails the run, which then
/// names the window as too long for its schedule.
pub const MAX_PAGES: usize = 200;

/// The window of `RECOVERY_EVENTS_SECONDS` through `get`: whole seconds from 1 to
/// [`MAX_WINDOW_SECONDS`], [`DEFAULT_WINDOW_SECONDS`] when unset.
pub fn window(get: impl Fn(&str) -> Option<String>) -> Result<i64, ConfigError> {
    match get(WINDOW_VARIABLE).filter(|text| !text.trim().is_empty()) {
        None => Ok(DEFAULT_WINDOW_SECONDS),
        Some(text) => text
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|seconds| (1..=MAX_WINDOW_SECONDS).contains(seconds))
            .ok_or(ConfigError {
                variable: WINDOW_VARIABLE,
                problem: "must be a whole number of seconds from 1 to 2592000 (30 days)",
            }),
    }
}

/// What one backfill did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Backfill {
    /// Events listed.
    pub listed: usize,
    /// Events taken, by outcome code.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Events the journal or Stripe's read by id did not answer for.
    pub unavailable: usize,
    /// Why the listing stopped short, if it did (a fixed code).
    pub error: Option<&'static str>,
}

impl Backfill {
    /// Whether every event listed was taken, and the listing reached its end.
    pub fn clean(&self) -> bool {
        self.error.is_none() && self.unavailable == 0
    }

    /// The summary line's fields.
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("listed".into(), json!(self.listed));
        fields.insert("outcomes".into(), json!(self.outcomes));
        fields.insert("unavailable".into(), json!(self.unavailable));
        fields.insert("error".into(), json!(self.error));
        fields
    }
}

/// Lists the events of the last `window` seconds (before `now`, the journal's time in
/// Unix seconds) and takes each through `journal`, logging a summary line.
pub async fn run(
    journal: &Journal,
    stripe: &Stripe,
    now: i64,
    window: i64,
    logger: &Logger,
) -> Backfill {
    let types: Vec<&str> = event_types().collect();
    let livemode = stripe.mode() == "live";
    let mut report = Backfill::default();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        if pages == MAX_PAGES {
            report.error = Some("events_too_many");
            break;
        }
        pages += 1;
        let query = EventsQuery {
            types: &types,
            created_gte: now - window,
            starting_after: after.as_deref(),
        };
        let page = match stripe.events_page(&query).await {
            Ok(page) => page,
            Err(code) => {
                report.error = Some(code);
                break;
            }
        };
        report.listed += page.events.len();
        // Newest first on the page; taken oldest first, as they happened.
        for event in page.events.iter().rev() {
            let taken = take(journal, stripe, event, livemode).await;
            *report.outcomes.entry(taken.code()).or_default() += 1;
            // An unavailable one is left for the next run: its window still holds it.
            report.unavailable += usize::from(matches!(taken, Taken::Unavailable(_)));
        }
        after = page.events.last().map(|event| event.id().to_owned());
        if !page.has_more || after.is_none() {
            break;
        }
    }
    let severity = if report.clean() {
        Severity::Info
    } else {
        Severity::Error
    };
    logger.log(severity, "events backfilled", None, report.fields());
    report
}

//! The recovery job's backfill from Stripe's Events API: the events the webhook
//! endpoint missed (it was down, a delivery was dropped, Stripe gave up after its
//! three days of retries) taken as evidence exactly as the endpoint takes them
//! ([`super::webhook_event::take`]), before the job's lookups, so that what an event
//! settles costs no lookup.
//!
//! Each run lists `GET /v1/events` for the event types the classification reads
//! (`types[]`), created at or after its window's start, newest first, paging with
//! `starting_after` (<https://docs.stripe.com/api/events/list>). The window starts at
//! the feed's evidence checkpoint (`Journal::evidence_checkpoint`, the document
//! `evidenceCheckpoints/{digest of "stripe-events:{account}:{mode}"}`), or, before
//! the first run that advanced it, `RECOVERY_EVENTS_SECONDS` back (default 86400);
//! never further back than the 30 days Stripe lists events
//! ([`EVENTS_RETENTION_SECONDS`]): an older checkpoint is clamped, counted in the
//! summary line (`clamped`) and logged without ids.
//!
//! The window is listed in slices (`created[gte]` and `created[lt]`), oldest slice
//! first, the first of [`SLICE_SECONDS`], each next one twice as long after a quiet
//! slice (one page) and half as long after a busy one (over a quarter of a run's
//! pages), so that a window with more events than one
//! run reads ([`MAX_PAGES`] pages of 100) is gone through over several runs instead of
//! never: each slice listed to its end moves the point the run proves. The run stops
//! at the first slice that holds an event not taken (the journal or Stripe's read by
//! id did not answer, or the command's lease was held: the next run takes it again),
//! and when its pages are spent (`more`: the next run goes on from where this one
//! proved). The checkpoint then advances (forward only) to the `created` second of
//! that oldest event not taken, else to the end of the slices listed to their end
//! once the run has listed an event created at or after it (Stripe's own clock has
//! passed it, never the journal's), else to their newest event, minus
//! [`EVENTS_OVERLAP_SECONDS`] (an event may show in the listing that much after it
//! was made). A run that proves no point (its pages spent before any slice was listed
//! to its end: more than 20,000 events in one slice) fails (`events_too_many`) and
//! leaves it as it was. A checkpoint the journal cannot
//! read (malformed: `journal_corrupt`) fails the run before any listing: nothing is
//! taken, nothing written.

use super::config::ConfigError;
use super::logging::{Logger, Severity};
use super::webhook_event::{Taken, take};
use command_journal::Journal;
use command_journal::evidence::{Advance, ListingProgress, window as listing_window};
use command_journal_stripe::webhook::event_types;
use command_journal_stripe::{
    EVENTS_OVERLAP_SECONDS, EVENTS_RETENTION_SECONDS, EventsQuery, Stripe,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The variable of the window before the first checkpoint, in seconds.
pub const WINDOW_VARIABLE: &str = "RECOVERY_EVENTS_SECONDS";
/// The default window: a day.
pub const DEFAULT_WINDOW_SECONDS: i64 = 86_400;
/// The longest window: the 30 days Stripe keeps events listable.
pub const MAX_WINDOW_SECONDS: i64 = 30 * 86_400;
/// The most pages one run reads (100 events each): a run that spends them stops
/// after its last slice listed to its end, and the next goes on from there; a first
/// slice that needs more fails the run (`events_too_many`, the checkpoint stays).
pub const MAX_PAGES: usize = 200;
/// The first slice of the window a run lists: ten minutes (up to 20,000 events of
/// the types read in ten minutes fit in a run).
pub const SLICE_SECONDS: i64 = 600;

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
    /// The Unix second the listing started at (`created[gte]`); `None` when the
    /// checkpoint could not be read.
    pub from: Option<i64>,
    /// Whether the window started at the feed's checkpoint (else
    /// `RECOVERY_EVENTS_SECONDS` back).
    pub from_checkpoint: bool,
    /// Whether the checkpoint lay further back than Stripe lists events and was
    /// clamped to 30 days back.
    pub clamped: bool,
    /// Events listed.
    pub listed: usize,
    /// Events taken, by outcome code.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Events the journal or Stripe's read by id did not answer for.
    pub unavailable: usize,
    /// Why the run stopped short, if it did (a fixed code: the checkpoint's read, the
    /// listing).
    pub error: Option<&'static str>,
    /// Whether the run spent its pages before the window's end, having listed at
    /// least one slice to its end: the next run goes on from the checkpoint.
    pub more: bool,
    /// Where the checkpoint was advanced to, and what advancing did (`None`: the run
    /// proved no point); the fixed code of why not, when it failed.
    pub checkpoint: Option<(i64, Result<Advance, &'static str>)>,
}

impl Backfill {
    /// Whether every event listed was taken, the listing reached its end, and the
    /// checkpoint was read and, where the run proved a point, advanced.
    pub fn clean(&self) -> bool {
        self.error.is_none()
            && self.unavailable == 0
            && !matches!(self.checkpoint, Some((_, Err(_))))
    }

    /// The summary line's fields (seconds and codes, never an id).
    pub fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("from".into(), json!(self.from));
        fields.insert("fromCheckpoint".into(), json!(self.from_checkpoint));
        fields.insert("clamped".into(), json!(usize::from(self.clamped)));
        fields.insert("listed".into(), json!(self.listed));
        fields.insert("outcomes".into(), json!(self.outcomes));
        fields.insert("unavailable".into(), json!(self.unavailable));
        fields.insert("error".into(), json!(self.error));
        fields.insert("more".into(), json!(self.more));
        let (to, advance) = match &self.checkpoint {
            None => (None, Value::Null),
            Some((to, Ok(advance))) => (Some(*to), json!(advance.as_str())),
            Some((to, Err(code))) => (Some(*to), json!(code)),
        };
        fields.insert("checkpointTo".into(), json!(to));
        fields.insert("checkpoint".into(), advance);
        fields
    }
}

/// Reads the feed's checkpoint, lists the events of the window it gives (before
/// `now`, the journal's time in Unix seconds; `default_window` seconds back without
/// a checkpoint), takes each through `journal`, advances the checkpoint as far as the
/// run proved, and logs a summary line.
pub async fn run(
    journal: &Journal,
    stripe: &Stripe,
    now: i64,
    default_window: i64,
    logger: &Logger,
) -> Backfill {
    run_paged(journal, stripe, (now, default_window), MAX_PAGES, logger).await
}

/// [`run`] reading at most `budget` pages (a test's small budget stands in for
/// [`MAX_PAGES`]); `at` is `now` and the default window.
pub async fn run_paged(
    journal: &Journal,
    stripe: &Stripe,
    at: (i64, i64),
    budget: usize,
    logger: &Logger,
) -> Backfill {
    let (now, default_window) = at;
    let mut report = Backfill::default();
    let feed = stripe.events_feed();
    let checkpoint = match journal.evidence_checkpoint(&feed).await {
        Ok(checkpoint) => checkpoint,
        Err(error) => {
            report.error = Some(error.code());
            logger.log(Severity::Error, "events backfilled", None, report.fields());
            return report;
        }
    };
    let window = listing_window(
        checkpoint.as_ref(),
        now,
        default_window,
        EVENTS_RETENTION_SECONDS,
    );
    report.from = Some(window.from);
    report.from_checkpoint = checkpoint.is_some();
    report.clamped = window.clamped;
    if window.clamped {
        let mut fields = Map::new();
        fields.insert("from".into(), json!(window.from));
        fields.insert("checkpoint".into(), json!(checkpoint.map(|c| c.list_from)));
        logger.log(
            Severity::Warning,
            "events checkpoint older than Stripe lists events: clamped",
            None,
            fields,
        );
    }
    let slices = (window.from, now, budget);
    if let Some(to) = list_slices(journal, stripe, slices, &mut report).await {
        // Never past the journal's time (a Stripe clock ahead of it): a point further
        // back only reads more again.
        let to = to.min(now);
        let advanced = journal
            .advance_evidence_checkpoint(&feed, to)
            .await
            .map_err(|error| error.code());
        report.checkpoint = Some((to, advanced));
    }
    let severity = if report.clean() {
        Severity::Info
    } else {
        Severity::Error
    };
    logger.log(severity, "events backfilled", None, report.fields());
    report
}

/// The pages a run read, and how many it may.
struct Pages {
    used: usize,
    budget: usize,
}

/// Lists the window from `from` to `now` slice by slice, oldest first, taking every
/// event, until a slice holds an event not taken, the pages run out, or the window
/// ends: the point the run proves (`None`: none), counting into `report`.
async fn list_slices(
    journal: &Journal,
    stripe: &Stripe,
    (from, now, budget): (i64, i64, usize),
    report: &mut Backfill,
) -> Option<i64> {
    let mut pages = Pages { used: 0, budget };
    let mut done = Done::default();
    let mut low = from;
    let mut span = SLICE_SECONDS;
    while low <= now {
        let high = low.saturating_add(span).min(now.saturating_add(1));
        let before = pages.used;
        let (progress, newest, finished) =
            list_and_take(journal, stripe, (low, high), &mut pages, report).await;
        done.seen = done.seen.max(newest);
        if !finished {
            // Stopped short: the pages ran out (after a slice listed to its end, the
            // next run goes on from what it proved; with nothing proved, the run
            // fails) or a page failed.
            let proved = done.proved();
            if report.error.is_none() {
                match proved {
                    Some(_) => report.more = true,
                    None => report.error = Some("events_too_many"),
                }
            }
            return proved;
        }
        if progress.held_back() {
            return progress.resume_from(EVENTS_OVERLAP_SECONDS);
        }
        done.newest = done.newest.max(newest);
        done.to = Some(high);
        low = high;
        // A quiet slice (one page) doubles the next, a busy one (over a quarter of a
        // run's pages) halves it: a long quiet window costs a few listings, a busy
        // stretch is gone through in slices that fit.
        let used = pages.used - before;
        if used <= 1 {
            span = span.saturating_mul(2);
        } else if used > budget / 4 {
            span = (span / 2).max(60);
        }
    }
    done.proved()
}

/// What the slices listed to their end, every event taken, prove.
#[derive(Default)]
struct Done {
    /// The end (exclusive) of the last of them.
    to: Option<i64>,
    /// The newest event they listed.
    newest: Option<i64>,
    /// The newest event the run listed at all: Stripe's clock had reached it.
    seen: Option<i64>,
}

impl Done {
    /// The point proved, an overlap back: the slices' end once Stripe's own clock is
    /// seen past it (an event created at or after it was listed), else their newest
    /// event (never the journal's clock); `None` when no slice was listed to its end
    /// or neither is known.
    fn proved(&self) -> Option<i64> {
        let to = self.to?;
        let point = match self.seen {
            Some(seen) if seen >= to => Some(to),
            _ => self.newest,
        };
        point.map(|second| second.saturating_sub(EVENTS_OVERLAP_SECONDS).max(0))
    }
}

/// Lists every event created in `[slice.0, slice.1)` and takes each, oldest of a
/// page first, counting into `report` and `pages` (at most its budget in a run):
/// the slice's tally, the newest event it listed, and whether its listing reached its
/// end.
async fn list_and_take(
    journal: &Journal,
    stripe: &Stripe,
    slice: (i64, i64),
    pages: &mut Pages,
    report: &mut Backfill,
) -> (ListingProgress, Option<i64>, bool) {
    let types: Vec<&str> = event_types().collect();
    let livemode = stripe.mode() == "live";
    let mut progress = ListingProgress::default();
    let mut newest: Option<i64> = None;
    let mut after: Option<String> = None;
    loop {
        if pages.used == pages.budget {
            return (progress, newest, false);
        }
        pages.used += 1;
        let query = EventsQuery {
            types: &types,
            created_gte: slice.0,
            created_lt: Some(slice.1),
            starting_after: after.as_deref(),
        };
        let page = match stripe.events_page(&query).await {
            Ok(page) => page,
            Err(code) => {
                report.error = Some(code);
                return (progress, newest, false);
            }
        };
        report.listed += page.events.len();
        // Newest first on the page; taken oldest first, as they happened.
        for event in page.events.iter().rev() {
            let taken = take(journal, stripe, event, livemode).await;
            *report.outcomes.entry(taken.code()).or_default() += 1;
            // An unavailable one holds the checkpoint back: the next run takes it.
            let open = matches!(taken, Taken::Unavailable(_));
            report.unavailable += usize::from(open);
            progress.listed(event.created(), !open);
            newest = newest.max(Some(event.created()));
        }
        after = page.events.last().map(|event| event.id().to_owned());
        if !page.has_more || after.is_none() {
            progress.finished();
            return (progress, newest, true);
        }
    }
}

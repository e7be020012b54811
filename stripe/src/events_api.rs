//! The Events API's list (`GET /v1/events`), from which a job backfills the events its
//! webhook endpoint missed.
//!
//! Stripe lists events going back up to 30 days, newest first, filtered by `types[]` and
//! `created`, paged by `limit` (at most 100) and `starting_after`
//! (<https://docs.stripe.com/api/events/list>). An event read there comes over the
//! client's own authenticated call rather than a signature; it is read by the same
//! strict parser as a signed one ([`VerifiedEvent`]).

use crate::client::{Stripe, read};
use crate::webhook::VerifiedEvent;
use reqwest::Method;
use serde_json::value::RawValue;
use std::collections::BTreeMap;

/// The most events one page holds (`limit`'s maximum).
pub const EVENTS_PAGE_LIMIT: usize = 100;

/// How far back Stripe lists events: "List events, going back up to 30 days"
/// (<https://docs.stripe.com/api/events/list>). A backfill never asks further back.
pub const EVENTS_RETENTION_SECONDS: i64 = 30 * 86_400;

/// How far before the point a backfill proved its checkpoint is set, so that no event
/// is skipped. An event's `created` is "measured in seconds since the Unix epoch"
/// (<https://docs.stripe.com/api/events/object>), and a list answers "in reverse
/// chronological order, meaning the most recently created object is the first one"
/// (<https://docs.stripe.com/pagination>), with no order among the events of one
/// second; nor does Stripe promise that an event is listed the moment it is created,
/// or that its clock and the journal's agree. So a checkpoint is never the second
/// after the last event taken but that event's own second, five minutes back: an
/// event of that second listed late, or one made a little before it and listed after
/// it, is read again. Taken again, an event writes nothing (the journal's evidence is
/// recorded once); the overlap costs a run at most five minutes of events re-read.
pub const EVENTS_OVERLAP_SECONDS: i64 = 300;

/// One page of `GET /v1/events`: the events, newest first, and whether more follow.
#[derive(Debug, Clone)]
pub struct EventsPage {
    /// The page's events, newest first.
    pub events: Vec<VerifiedEvent>,
    /// Stripe's `has_more`: a next page starts after the last event's id.
    pub has_more: bool,
}

/// What a page asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsQuery<'a> {
    /// `types[]`: the event types listed (at most 20, Stripe's limit).
    pub types: &'a [&'a str],
    /// `created[gte]`: events created at or after this Unix time.
    pub created_gte: i64,
    /// `created[lt]`: events created before this Unix time, if given (a slice of
    /// the window, so that a run can go through a long one slice by slice).
    pub created_lt: Option<i64>,
    /// `starting_after`: the id of the last event of the previous page.
    pub starting_after: Option<&'a str>,
}

impl Stripe {
    /// The name of this client's event feed for an evidence checkpoint
    /// (`Journal::evidence_checkpoint`): `stripe-events`, the account and the mode.
    /// The journal stores only its digest.
    pub fn events_feed(&self) -> String {
        format!(
            "stripe-events:{}:{}",
            self.config().account.id(),
            self.mode()
        )
    }

    /// One page of `GET /v1/events` for `query`, [`EVENTS_PAGE_LIMIT`] events at most;
    /// the fixed code of why not (`events_status`: not a 200; `events_body`: not a
    /// list of events this package reads; else the lookup's transport codes). An
    /// event of the page that is not one this package reads fails the page: a job
    /// never skips past what it could not read.
    pub async fn events_page(&self, query: &EventsQuery<'_>) -> Result<EventsPage, &'static str> {
        let mut form: Vec<(&str, String)> = query
            .types
            .iter()
            .map(|kind| ("types[]", (*kind).to_owned()))
            .collect();
        form.push(("created[gte]", query.created_gte.to_string()));
        if let Some(lt) = query.created_lt {
            form.push(("created[lt]", lt.to_string()));
        }
        form.push(("limit", EVENTS_PAGE_LIMIT.to_string()));
        if let Some(after) = query.starting_after {
            form.push(("starting_after", after.to_owned()));
        }
        let sent = self
            .request(Method::GET, "/v1/events")
            .query(&form)
            .send()
            .await;
        let body = match read(sent).await {
            Ok((status, body)) if status == reqwest::StatusCode::OK => body,
            Ok(_) => return Err("events_status"),
            Err(code) => return Err(code),
        };
        page(&body).ok_or("events_body")
    }
}

/// A list object of events, each read strictly from its own exact text.
fn page(body: &str) -> Option<EventsPage> {
    let list: BTreeMap<String, Box<RawValue>> = serde_json::from_str(body).ok()?;
    if list.get("object")?.get() != "\"list\"" {
        return None;
    }
    let has_more = serde_json::from_str::<bool>(list.get("has_more")?.get()).ok()?;
    let data: Vec<Box<RawValue>> = serde_json::from_str(list.get("data")?.get()).ok()?;
    let events = data
        .iter()
        .map(|event| VerifiedEvent::parse(event.get().as_bytes()).ok())
        .collect::<Option<Vec<_>>>()?;
    Some(EventsPage { events, has_more })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reads_every_event_or_none() {
        let event = r#"{"id":"evt_1","object":"event","api_version":null,"created":5,"livemode":false,"type":"payment_intent.created","data":{"object":{"id":"pi_1","object":"payment_intent"}}}"#;
        let body =
            format!(r#"{{"object":"list","data":[{event}],"has_more":true,"url":"/v1/events"}}"#);
        let read = page(&body).map(|p| (p.events.len(), p.has_more));
        assert_eq!(read, Some((1, true)));
        assert_eq!(
            page(&body.replace("\"event\"", "\"evnt\"")).map(|p| p.has_more),
            None
        );
        assert!(page(r#"{"object":"search_result","data":[],"has_more":false}"#).is_none());
    }
}

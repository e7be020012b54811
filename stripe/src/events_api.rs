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
    /// `starting_after`: the id of the last event of the previous page.
    pub starting_after: Option<&'a str>,
}

impl Stripe {
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

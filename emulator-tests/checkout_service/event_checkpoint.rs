//! The recovery job's backfill from Stripe's Events API keeps an evidence checkpoint
//! (`evidenceCheckpoints/{digest of the feed}`), against the stand-in: an event
//! dropped while the endpoint was down, older than the default window but after the
//! checkpoint, is settled by the backfill; the next run lists from the advanced
//! checkpoint (its pages counted, its `created[gte]` read back); an event whose
//! command's lease still runs holds the checkpoint back at it until a run takes it;
//! a malformed checkpoint refuses the run (no listing, nothing written) and `verify`
//! reports it; one older than Stripe's 30 days is clamped.

use super::service::event_backfill::{self, Backfill, DEFAULT_WINDOW_SECONDS};
use super::stripe::payment;
use super::stripe::stand_in::{Fault, StandIn};
use super::webhooks::{advance, envelope, lookups, quiet, service_with_webhooks};
use super::{Service, command_id, succeeded};
use crate::support;
use command_journal::Journal;
use command_journal::evidence::Advance;
use command_journal_stripe::{EVENTS_OVERLAP_SECONDS, EVENTS_RETENTION_SECONDS};
use gcloud_sdk::google::firestore::v1::Value;
use gcloud_sdk::google::firestore::v1::value::ValueType;
use std::collections::HashMap;

/// The journal the job runs on, at the service's clock.
fn journal(service: &Service) -> Journal {
    Journal::new(service.connection.clone()).with_clock(service.clock.clone())
}

/// One backfill run at the journal's time, with the default window.
async fn backfill(service: &Service, stand_in: &StandIn) -> Backfill {
    let journal = journal(service);
    let now = journal.now().expect("now").seconds();
    let stripe = super::stripe::client_on(stand_in);
    event_backfill::run(
        &journal,
        &stripe,
        now,
        DEFAULT_WINDOW_SECONDS,
        &quiet(service),
    )
    .await
}

/// The `created[gte]` of every `GET /v1/events` the stand-in answered, in order.
fn listed_from(stand_in: &StandIn) -> Vec<i64> {
    stand_in
        .requests("GET", "/v1/events")
        .iter()
        .map(|seen| {
            seen.parameters["created"]["gte"]
                .as_str()
                .and_then(|gte| gte.parse().ok())
                .expect("created[gte]")
        })
        .collect()
}

/// The one evidence checkpoint stored: its path relative to the documents root and
/// its fields.
async fn stored_checkpoint(service: &Service) -> (String, HashMap<String, Value>) {
    let documents = support::list(&service.connection, "", "evidenceCheckpoints").await;
    assert_eq!(documents.len(), 1, "one feed, one checkpoint");
    let document = &documents[0];
    let path = document
        .name
        .rsplit_once("/documents/")
        .map(|(_, path)| path.to_owned())
        .expect("a path");
    (path, document.fields.clone())
}

fn int(n: i64) -> Value {
    Value {
        value_type: Some(ValueType::IntegerValue(n)),
    }
}

/// A checkout paid at once whose events Stripe makes now (a look at the stand-in).
async fn paid_now(service: &Service, stand_in: &StandIn, n: u64) {
    let paid = service
        .checkout(&command_id(n), &payment("pm_card_visa"))
        .await;
    assert_eq!(paid.status, 200);
    stand_in.events();
}

/// The endpoint was down when Stripe completed a stored 500 (its event dropped) and
/// stayed down two days: the event is older than the default window, but after the
/// checkpoint, and the backfill settles it with no lookup. The next run asks for
/// exactly one more page, from the advanced checkpoint, and writes nothing.
#[tokio::test]
async fn checkpoint_backfill_settles_an_event_older_than_the_default_window() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let t0 = stand_in.now();
    paid_now(&service, &stand_in, 960).await;
    let first_at = stand_in.requests("GET", "/v1/events").len();
    let first = backfill(&service, &stand_in).await;
    assert!(first.clean(), "{first:?}");
    assert_eq!(
        (first.from, first.from_checkpoint),
        (Some(t0 - DEFAULT_WINDOW_SECONDS), false)
    );
    assert_eq!(first.listed, 2);
    let at_t0 = t0 - EVENTS_OVERLAP_SECONDS;
    assert_eq!(first.checkpoint, Some((at_t0, Ok(Advance::Advanced))));
    let (_, fields) = stored_checkpoint(&service).await;
    assert!(
        !format!("{fields:?}").contains("CANARY"),
        "no account id stored"
    );

    // A stored 500 that Stripe completes 30 minutes later; its events are made then,
    // and never delivered.
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1_800 });
    let id = command_id(961);
    let pending = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(pending.status, 202);
    advance(&service, &stand_in, 1_801);
    stand_in.events();
    let completed = t0 + 1_801;
    advance(&service, &stand_in, 2 * 86_400);
    let now = journal(&service).now().expect("now").seconds();
    assert!(
        completed < now - DEFAULT_WINDOW_SECONDS,
        "older than the default window"
    );

    let before = lookups(&stand_in);
    let second_at = stand_in.requests("GET", "/v1/events").len();
    let second = backfill(&service, &stand_in).await;
    assert!(second.clean(), "{second:?}");
    assert_eq!(
        (second.from, second.from_checkpoint, second.clamped),
        (Some(at_t0), true, false)
    );
    assert_eq!(second.listed, 4);
    assert_eq!(second.outcomes.get("recorded"), Some(&1), "{second:?}");
    assert_eq!(lookups(&stand_in), before, "no lookup");
    let advanced = completed - EVENTS_OVERLAP_SECONDS;
    assert_eq!(second.checkpoint, Some((advanced, Ok(Advance::Advanced))));

    // The next run: one page, from the advanced checkpoint; the events of the first
    // checkout are behind it. Nothing written.
    let documents = service.documents().await;
    let third_at = stand_in.requests("GET", "/v1/events").len();
    let third = backfill(&service, &stand_in).await;
    assert!(third.clean(), "{third:?}");
    assert_eq!(third.listed, 2, "{third:?}");
    assert_eq!(third.outcomes.get("duplicate"), Some(&1), "{third:?}");
    assert_eq!(third.checkpoint, Some((advanced, Ok(Advance::Kept))));
    // Each run's first listing starts at its window's start (the later slices of a
    // run follow it).
    let listed = listed_from(&stand_in);
    assert_eq!(
        [listed[first_at], listed[second_at], listed[third_at]],
        [t0 - DEFAULT_WINDOW_SECONDS, at_t0, advanced]
    );
    assert_eq!(
        service.documents().await,
        documents,
        "the third run wrote nothing"
    );

    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 1)));
    assert_eq!(stand_in.intents().len(), 2, "one charge each");
    service.assert_verifies_clean(2).await;
}

/// An event whose command's lease still runs (the client's retry holds it) is not
/// taken: the checkpoint advances only to it, not to the newer event taken after it,
/// and the run fails; once the lease has run out, the next run takes it from there.
#[tokio::test]
async fn checkpoint_an_event_in_progress_holds_the_checkpoint_back() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let t0 = stand_in.now();
    paid_now(&service, &stand_in, 970).await;
    let first = backfill(&service, &stand_in).await;
    assert_eq!(
        first.checkpoint,
        Some((t0 - EVENTS_OVERLAP_SECONDS, Ok(Advance::Advanced)))
    );

    // 1,000 s later a stored 500 that Stripe completes at once. The call that heard
    // it released its lease on answering 202; the client's retry is in flight, its
    // lease (60 s) held, when the events are made and listed.
    advance(&service, &stand_in, 1_000);
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1 });
    let id = command_id(971);
    assert_eq!(
        service.checkout(&id, &payment("pm_card_visa")).await.status,
        202
    );
    let retry = support::clocked_journal(service.connection.clone(), service.clock.clone());
    let lease = command_journal::LeaseId::parse("00000000-0000-4000-8000-0000000009a1")
        .expect("a lease id");
    let holding = retry
        .acquire_lease(&service.command(&id, &payment("pm_card_visa")), &lease)
        .await
        .expect("the retry's lease");
    assert!(
        matches!(holding, command_journal::LeaseOutput::Acquired { .. }),
        "{holding:?}"
    );
    advance(&service, &stand_in, 2);
    stand_in.events();
    let held = t0 + 1_002;
    // A newer checkout, paid and taken.
    advance(&service, &stand_in, 20);
    paid_now(&service, &stand_in, 972).await;

    let second_at = stand_in.requests("GET", "/v1/events").len();
    let second = backfill(&service, &stand_in).await;
    assert_eq!(second.listed, 6);
    assert_eq!(second.unavailable, 1, "{second:?}");
    assert_eq!(second.outcomes.get("evidence_in_progress"), Some(&1));
    assert!(!second.clean());
    let back = held - EVENTS_OVERLAP_SECONDS;
    assert_eq!(second.checkpoint, Some((back, Ok(Advance::Advanced))));

    advance(&service, &stand_in, 61);
    let third_at = stand_in.requests("GET", "/v1/events").len();
    let third = backfill(&service, &stand_in).await;
    assert!(third.clean(), "{third:?}");
    assert_eq!(third.listed, 4, "from the held-back point: {third:?}");
    assert_eq!(third.outcomes.get("recorded"), Some(&1), "{third:?}");
    let newest = t0 + 1_022 - EVENTS_OVERLAP_SECONDS;
    assert_eq!(third.checkpoint, Some((newest, Ok(Advance::Advanced))));
    let listed = listed_from(&stand_in);
    assert_eq!(
        [listed[second_at], listed[third_at]],
        [t0 - EVENTS_OVERLAP_SECONDS, back]
    );

    let paid = service.checkout(&id, &payment("pm_card_visa")).await;
    assert_eq!(paid.body, succeeded(&envelope(&stand_in, 1)));
    assert_eq!(stand_in.intents().len(), 3);
    service.assert_verifies_clean(3).await;
}

/// A malformed checkpoint (a field added): the run refuses before any listing and
/// writes nothing. A valid one older than Stripe's 30 days is clamped to them, and
/// the run lists from there.
#[tokio::test]
async fn checkpoint_malformed_refuses_the_run_and_an_old_one_is_clamped() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    paid_now(&service, &stand_in, 980).await;
    assert!(backfill(&service, &stand_in).await.clean());
    let (path, fields) = stored_checkpoint(&service).await;

    let mut forged = fields.clone();
    forged.insert(
        "note".to_owned(),
        Value {
            value_type: Some(ValueType::StringValue("CANARYforged".to_owned())),
        },
    );
    support::put(&service.connection, &path, forged).await;
    stand_in.fault(Fault::StoredServerErrorRolledForward { after: 1 });
    assert_eq!(
        service
            .checkout(&command_id(981), &payment("pm_card_visa"))
            .await
            .status,
        202
    );
    advance(&service, &stand_in, 120);
    stand_in.events();
    let documents = service.documents().await;
    let pages = stand_in.requests("GET", "/v1/events").len();
    let refused = backfill(&service, &stand_in).await;
    assert_eq!(refused.error, Some("journal_corrupt"));
    assert_eq!(
        (refused.from, refused.listed, refused.checkpoint),
        (None, 0, None)
    );
    assert!(!refused.clean());
    assert_eq!(
        stand_in.requests("GET", "/v1/events").len(),
        pages,
        "no listing"
    );
    assert_eq!(service.documents().await, documents, "nothing written");
    let report = command_journal::verify(&service.connection, &mut |_| {})
        .await
        .expect("verify");
    assert_eq!(report.scanned.evidence_checkpoints, 1);
    let codes: Vec<&str> = report.findings.iter().map(|f| f.code.as_str()).collect();
    assert!(
        codes.contains(&"malformed_evidence_checkpoint"),
        "{codes:?}"
    );

    // Valid again, but 40 days back: clamped to the 30 days Stripe lists.
    let mut old = fields;
    old.insert("listFrom".to_owned(), int(stand_in.now() - 40 * 86_400));
    support::put(&service.connection, &path, old).await;
    let now = journal(&service).now().expect("now").seconds();
    let clamped = backfill(&service, &stand_in).await;
    assert!(clamped.clean(), "{clamped:?}");
    assert!(clamped.clamped);
    assert_eq!(clamped.from, Some(now - EVENTS_RETENTION_SECONDS));
    assert_eq!(clamped.fields()["clamped"], 1);
    // Its first listing starts there; the quiet 30 days take a few doubling slices.
    assert_eq!(
        listed_from(&stand_in).get(pages),
        Some(&(now - EVENTS_RETENTION_SECONDS))
    );
    assert_eq!(clamped.outcomes.get("recorded"), Some(&1), "{clamped:?}");
    service.assert_verifies_clean(2).await;
}

/// A window with more events than one run reads is gone through over runs, never
/// stuck: with a budget of 4 pages (standing in for `MAX_PAGES`) and two bursts of
/// 120 events 1,000 s apart, the first run lists the first burst's slice to its end,
/// an empty slice, and the start of the second burst, and proves the empty slice's
/// end (Stripe's clock seen past it); the second run goes through the second burst.
/// A single listing of the window (the earlier backfill) would fail every run.
#[tokio::test]
async fn checkpoint_a_window_longer_than_a_run_reads_is_gone_through_over_runs() {
    let stand_in = StandIn::start().await;
    let service = service_with_webhooks(&stand_in).await;
    let t0 = stand_in.now();
    for n in 0..60 {
        paid_now(&service, &stand_in, 2_000 + n).await;
    }
    advance(&service, &stand_in, 1_000);
    for n in 0..60 {
        paid_now(&service, &stand_in, 3_000 + n).await;
    }
    advance(&service, &stand_in, 10);
    let run = || async {
        let journal = journal(&service);
        let now = journal.now().expect("now").seconds();
        let stripe = super::stripe::client_on(&stand_in);
        event_backfill::run_paged(&journal, &stripe, (now, 1_200), 4, &quiet(&service)).await
    };
    let first = run().await;
    assert!(first.clean(), "{first:?}");
    assert!(first.more, "{first:?}");
    assert_eq!(first.from, Some(t0 - 190));
    assert_eq!(
        first.listed, 220,
        "the first burst, then a page of the second"
    );
    assert_eq!(
        first.checkpoint,
        Some((t0 + 710 - EVENTS_OVERLAP_SECONDS, Ok(Advance::Advanced)))
    );
    let second = run().await;
    assert!(second.clean(), "{second:?}");
    assert!(!second.more, "{second:?}");
    assert_eq!(second.from, Some(t0 + 410));
    assert_eq!(second.listed, 120);
    assert_eq!(
        second.checkpoint,
        Some((t0 + 1_000 - EVENTS_OVERLAP_SECONDS, Ok(Advance::Advanced)))
    );
    service.assert_verifies_clean(120).await;
}

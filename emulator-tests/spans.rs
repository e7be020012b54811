//! One `tracing` span per journal operation, with its attempts, RPCs, conflicts,
//! outcome and elapsed time, and never a raw id, hash, path or payload value.

use super::support::{self, command};
use command_journal::Journal;
use command_journal::{LeaseId, TerminalReferenceFingerprint};
use serde_json::json;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Every span (name and fields) and event a test produced, as text.
/// A span as captured: its id, its name and every field recorded on it.
type CapturedSpan = (u64, String, Vec<(String, String)>);

#[derive(Clone, Default)]
struct Capture {
    spans: Arc<Mutex<Vec<CapturedSpan>>>,
    events: Arc<Mutex<Vec<String>>>,
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        attrs.record(&mut Fields(&mut fields));
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans.push((id.into_u64(), attrs.metadata().name().to_owned(), fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(span) = spans.iter_mut().rev().find(|s| s.0 == id.into_u64()) {
            values.record(&mut Fields(&mut span.2));
        }
    }
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!("{} {fields:?}", event.metadata().name()));
    }
}

impl Capture {
    fn span(&self, name: &str) -> Vec<(String, String)> {
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans
            .iter()
            .find(|s| s.1 == name)
            .map(|s| s.2.clone())
            .unwrap_or_else(|| panic!("no span {name}"))
    }
    fn all_text(&self) -> String {
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        format!("{spans:?} {events:?}")
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no field {name} in {fields:?}"))
}

#[tokio::test]
async fn every_operation_is_one_span_with_its_counts_and_no_secrets() {
    let connection = support::fresh_connection().await;
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry()
        .with(capture.clone())
        .with(tracing_subscriber::filter::LevelFilter::TRACE);
    let _guard = tracing::subscriber::set_default(subscriber);

    let journal = Journal::new(connection);
    let payload = json!({"card": "CANARYpayload_77"});
    let cmd = command(900, payload);
    let lease_text = support::uuid(9, 0xCA4A);
    let lease = LeaseId::parse(&lease_text).expect("lease");
    let reference_text = "c0ffee".repeat(10) + "c0de";
    let reference = TerminalReferenceFingerprint::parse(&reference_text).expect("reference");
    journal.register_command(&cmd).await.expect("register");
    let fence = match journal.acquire_lease(&cmd, &lease).await.expect("acquire") {
        command_journal::LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => panic!("{other:?}"),
    };
    journal
        .complete_command(&cmd, &lease, fence, &reference)
        .await
        .expect("complete");
    let stale = journal
        .fail_command(&cmd, &lease, crate::support::fence_at(fence.get() + 1))
        .await;
    assert!(stale.is_err());
    journal.status(&cmd).await.expect("status");

    for (name, rpcs, outcome) in [
        // A new registration is its blind creation alone.
        ("journal.register", "1", "ok"),
        ("journal.acquire", "2", "ok"),
        ("journal.complete", "2", "ok"),
        ("journal.fail", "1", "stale_fence"),
        ("journal.status", "1", "ok"),
    ] {
        let fields = capture.span(name);
        assert_eq!(field(&fields, "attempts"), "1", "{name}");
        assert_eq!(field(&fields, "rpcs"), rpcs, "{name}");
        assert_eq!(field(&fields, "conflicts"), "0", "{name}");
        assert_eq!(field(&fields, "outcome"), outcome, "{name}");
        assert_eq!(field(&fields, "mode"), "preconditions", "{name}");
        assert!(
            field(&fields, "elapsed_ms").parse::<u64>().is_ok(),
            "{name}"
        );
    }
    let text = capture.all_text();
    let hash = cmd.identity().command_key_hash().to_string();
    for canary in [
        "CANARY",
        lease_text.as_str(),
        support::uuid(1, 900).as_str(),
        hash.as_str(),
        &hash[..16],
        reference_text.as_str(),
        "checkoutRequests/",
        "auditEvents/",
    ] {
        assert!(
            !text.contains(canary),
            "{canary} leaked into traces: {text}"
        );
    }
}

//! One recovery task, as a Cloud Run job's task runs it, in its own process: the
//! pending listing of its key range (timed, its reads counted), then the recovery of
//! that range with the checkpoint kept, against a provider holding a charge for every
//! key; one line of JSON on stdout with what it measured.

use super::{Res, err};
use command_journal::pending::KeyRange;
use command_journal::recovery::{RecoverOptions, Recovered};
use command_journal::sends::LookupRequest;
use command_journal::time::ManualClock;
use command_journal::{
    Connection, Journal, Provider, ProviderAnswer, ResultEnvelope, SendRequest, Target,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// A provider holding a succeeded charge for every key (the abandoned sends all
/// charged); it is never asked to send.
struct Charged;

impl Provider for Charged {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }

    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        match ResultEnvelope::new(&json!({"id": "ch_bench", "status": "succeeded"})) {
            Ok(envelope) => ProviderAnswer::Succeeded(envelope),
            Err(_) => ProviderAnswer::Unknown,
        }
    }
}

/// What the child was asked: `--task INDEX/COUNT HOST PROJECT AT_MICROS PER_SECOND
/// CONCURRENCY`.
pub async fn run(args: &[String]) -> Res<()> {
    let [range, host, project, at, per_second, concurrency] = args else {
        return Err(format!("task arguments: {args:?}"));
    };
    let range: KeyRange = range.parse().map_err(err)?;
    let at =
        chrono::DateTime::from_timestamp_micros(at.parse().map_err(err)?).ok_or("task time")?;
    let per_second: u32 = per_second.parse().map_err(err)?;
    let concurrency: usize = concurrency.parse().map_err(err)?;
    let connection = Connection::connect(project, Target::Emulator(host.clone()))
        .await
        .map_err(err)?;
    let journal = Journal::new(connection).with_clock(Arc::new(ManualClock::new(at)));

    let before = journal.stats();
    let t0 = Instant::now();
    let listing = journal.pending_in(range).await.map_err(err)?;
    let pending_seconds = t0.elapsed().as_secs_f64();
    let listed = journal.stats().since(&before);

    let options = RecoverOptions {
        range,
        checkpoint: true,
        per_second: Some(per_second),
        concurrency,
        ..RecoverOptions::default()
    };
    let before = journal.stats();
    let t0 = Instant::now();
    // When the first and the last command were handled: the rate between them is the
    // lookups' own, without the run's listing.
    let (mut first, mut last) = (None, None);
    let report = journal
        .recover(&Charged, &options, |_| {
            let now = Instant::now();
            first.get_or_insert(now);
            last = Some(now);
        })
        .await
        .map_err(err)?;
    let recover_seconds = t0.elapsed().as_secs_f64();
    let settling_seconds = match (first, last) {
        (Some(first), Some(last)) => last.duration_since(first).as_secs_f64(),
        _ => f64::NAN,
    };
    let used = journal.stats().since(&before);
    let line = json!({
        "range": range.to_string(),
        "listed": listing.listed,
        "pending": listing.pending.len(),
        "pendingSeconds": pending_seconds,
        "pendingReads": listed.billed_reads(),
        "pendingRpcs": listed.rpcs(),
        "recovered": report.count(Recovered::Succeeded),
        "handled": report.commands.len(),
        "errors": report.errors(),
        "recoverSeconds": recover_seconds,
        "settlingSeconds": settling_seconds,
        "recoverReads": used.billed_reads(),
        "recoverWrites": used.documents_written,
        "recoverRpcs": used.rpcs(),
        "lookups": report.lookups.answered + report.lookups.unavailable,
        "checkpoint": format!("{:?}", report.checkpoint),
        "peakRssKib": super::rss_kib(None, "VmHWM"),
    });
    println!("{line}");
    Ok(())
}

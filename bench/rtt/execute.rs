//! The `execute` rows: a new command and its replay through `Journal::execute` with a
//! stub provider that answers at once, against the step-by-step path the same call
//! took before it planned its commits (`start`, `begin_send`, `record_send_outcome`:
//! the 5 sequential RPCs of a new command) and the floor (2 round trips).

use crate::crate_side::{RawCommand, uuid};
use crate::proxy::CountingProxy;
use crate::stats::percentile;
use crate::{Res, err};
use command_journal::sends::BeginSendOutput;
use command_journal::sends::LookupRequest;
use command_journal::{
    Execution, Journal, LeaseId, LeaseOutput, Provider, ProviderAnswer, ProviderPlan,
    ProviderPlanRequest, ResultEnvelope, SendRequest,
};
use serde_json::json;
use std::time::Instant;

fn plan() -> Res<ProviderPlan> {
    ProviderPlan::new(ProviderPlanRequest {
        provider: "stub",
        account: "acct_rtt",
        mode: "test",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: &json!({"amount": 1250, "currency": "eur"}),
        key_retention_seconds: 86_400,
    })
    .map_err(err)
}

fn charge() -> Res<ResultEnvelope> {
    ResultEnvelope::new(&json!({"id": "ch_rtt", "status": "succeeded"})).map_err(err)
}

/// A provider that charges at once.
struct AtOnce(ResultEnvelope);

impl Provider for AtOnce {
    async fn send(&self, _request: SendRequest) -> ProviderAnswer {
        ProviderAnswer::Succeeded(self.0.clone())
    }
    async fn lookup(&self, _request: LookupRequest) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }
}

/// One `execute` of command `(tag, n)`: its latency in µs.
async fn execute_once(journal: &Journal, provider: &AtOnce, tag: u16, n: u64) -> Res<f64> {
    let command = RawCommand::new(tag, n).input().map_err(err)?;
    let plan = plan()?;
    let t0 = Instant::now();
    match journal
        .execute(&command, &plan, provider)
        .await
        .map_err(err)?
    {
        Execution::Succeeded(_) => Ok(t0.elapsed().as_secs_f64() * 1e6),
        other => Err(format!("unexpected execute answer {other:?}")),
    }
}

/// The same new command step by step, as `execute` ran it before it planned commits.
async fn steps_once(journal: &Journal, provider: &AtOnce, tag: u16, n: u64) -> Res<f64> {
    let command = RawCommand::new(tag, n).input().map_err(err)?;
    let lease = LeaseId::parse(&uuid(tag + 1, n)).map_err(err)?;
    let plan = plan()?;
    let t0 = Instant::now();
    let fence = match journal.start(&command, &lease).await.map_err(err)?.lease {
        LeaseOutput::Acquired { fence_epoch, .. } => fence_epoch,
        other => return Err(format!("unexpected start answer {other:?}")),
    };
    let permit = match journal
        .begin_send(&command, &lease, fence, &plan)
        .await
        .map_err(err)?
    {
        BeginSendOutput::Permitted(permit) => permit,
        other => return Err(format!("unexpected begin_send answer {other:?}")),
    };
    let sent = provider
        .send(SendRequest {
            key: permit.provider_idempotency_key.clone(),
            parameters: json!({}),
            deadline: std::time::Duration::from_secs(30),
            attempt: permit.attempt,
            resend: permit.resend,
            act_by: permit.send_cutoff_at,
        })
        .await;
    journal
        .record_send_outcome(&command, &lease, fence, &plan, permit.attempt, &sent)
        .await
        .map_err(err)?;
    Ok(t0.elapsed().as_secs_f64() * 1e6)
}

/// The rows of one delay: a new command through `execute`, its replay, and the
/// step-by-step path, `commands` each (after 10 of each to warm up).
pub async fn rows(
    journal: &Journal,
    proxy: &CountingProxy,
    delay: u64,
    commands: u64,
    tag: u16,
) -> Res<Vec<String>> {
    let provider = AtOnce(charge()?);
    for n in 0..10 {
        execute_once(journal, &provider, tag, n).await?;
        steps_once(journal, &provider, tag + 4, n).await?;
    }
    let floor = 2.0 * 2.0 * delay as f64;
    let mut rows = Vec::new();
    let paths: [(&str, u16); 3] = [
        ("execute, new command", tag + 2),
        ("execute, replay", tag + 2),
        ("start + begin_send + record_send_outcome", tag + 6),
    ];
    for (index, (label, path_tag)) in paths.into_iter().enumerate() {
        let mut samples = Vec::new();
        let before = (journal.stats(), proxy.calls());
        for n in 10..10 + commands {
            samples.push(match index {
                2 => steps_once(journal, &provider, path_tag, n).await?,
                _ => execute_once(journal, &provider, path_tag, n).await?,
            });
        }
        let crate_rpcs = journal.stats().since(&before.0).rpcs() as f64 / commands as f64;
        let wire_rpcs = (proxy.calls() - before.1) as f64 / commands as f64;
        let p50 = percentile(&samples, 0.5) / 1e3;
        let p99 = percentile(&samples, 0.99) / 1e3;
        eprintln!("{delay} ms: {label}: p50 {p50:.2} ms, {wire_rpcs:.2} RPCs");
        let floor_cell = if index == 2 {
            "".to_owned()
        } else {
            format!("{floor:.0} ms")
        };
        rows.push(format!(
            "| {delay} ms | {label} | {crate_rpcs:.2} | {wire_rpcs:.2} | {commands} | {p50:.2} ms | {p99:.2} ms | {floor_cell} |"
        ));
    }
    Ok(rows)
}

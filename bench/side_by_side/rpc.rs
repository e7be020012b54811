//! RPCs per operation, through a counting loopback proxy, with the crate's counters
//! and the Node client's request log.

use crate::crate_side::{self, RawCommand, uuid};
use crate::proxy::CountingProxy;
use crate::{Bench, Res, err};
use command_journal::LeaseOutput;
use command_journal::Stats;
use command_journal::{LeaseId, TerminalReferenceFingerprint};
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub(crate) struct RpcRow {
    pub(crate) op: String,
    pub(crate) calls: u64,
    pub(crate) crate_stats: Stats,
    pub(crate) crate_proxy: u64,
    pub(crate) peer_counts: Value,
    pub(crate) peer_proxy: u64,
}

pub(crate) async fn settle() {
    // The Node client sends Rollback without waiting; let it reach the proxy.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

pub(crate) async fn rpc_counts(bench: &mut Bench, ops: u64, holders: u64) -> Res<Vec<RpcRow>> {
    let proxy = CountingProxy::start(bench.emulator.host().to_owned())
        .await
        .map_err(err)?;
    let crate_project = bench.emulator.new_project_id();
    let peer_project = bench.emulator.new_project_id();
    let journal = bench.journal(&crate_project, &proxy.host()).await?;
    let tag = bench.tag();
    let reference = TerminalReferenceFingerprint::parse(crate_side::REFERENCE).map_err(err)?;
    let mut rows = Vec::new();
    let mut fences_crate = vec![0; ops as usize];
    let mut fences_peer = vec![0; ops as usize];
    for (op, holder) in [
        ("register", 0),
        ("acquire (first)", 0),
        ("acquire (busy)", 1),
        ("complete", 0),
    ] {
        let mut row = RpcRow {
            op: op.to_owned(),
            calls: ops,
            ..RpcRow::default()
        };
        // The crate.
        let (s0, p0) = (journal.stats(), proxy.calls());
        for n in 0..ops {
            let command = RawCommand::new(tag, n).input().map_err(err)?;
            let lease = LeaseId::parse(&uuid(tag + 1, n * 10 + holder)).map_err(err)?;
            match op {
                "register" => {
                    journal.register_command(&command).await.map_err(err)?;
                }
                "complete" => {
                    let fence = fences_crate[n as usize];
                    journal
                        .complete_command(
                            &command,
                            &lease,
                            command_journal::FenceEpoch::new(fence).map_err(|e| e.to_string())?,
                            &reference,
                        )
                        .await
                        .map_err(err)?;
                }
                _ => {
                    if let LeaseOutput::Acquired { fence_epoch, .. } =
                        journal.acquire_lease(&command, &lease).await.map_err(err)?
                    {
                        fences_crate[n as usize] = fence_epoch.get();
                    }
                }
            }
        }
        settle().await;
        row.crate_stats = journal.stats().since(&s0);
        row.crate_proxy = proxy.calls() - p0;
        // The peer.
        let p0 = proxy.calls();
        bench.peer_call(json!({"op": "countStart"})).await?;
        for n in 0..ops {
            let call = match op {
                "register" => "register",
                "complete" => "complete",
                _ => "acquire",
            };
            let answer = bench
                .peer_call(
                    json!({"op": "call", "project": peer_project, "host": proxy.host(),
                    "call": call, "command": RawCommand::new(tag, n).to_json(),
                    "leaseId": uuid(tag + 1, n * 10 + holder),
                    "fenceEpoch": fences_peer[n as usize], "reference": crate_side::REFERENCE}),
                )
                .await?;
            if let Some(error) = answer.get("error") {
                return Err(format!("peer {op}: {error}"));
            }
            if op == "acquire (first)" {
                fences_peer[n as usize] = answer["fenceEpoch"].as_i64().unwrap_or(0);
            }
        }
        settle().await;
        row.peer_counts = bench.peer_call(json!({"op": "countStop"})).await?;
        row.peer_proxy = proxy.calls() - p0;
        rows.push(row);
    }
    // One race per side, per answer; the command is registered outside the count.
    let mut row = RpcRow {
        op: format!("race acquire ({holders} holders, per answer)"),
        calls: holders,
        ..RpcRow::default()
    };
    let race_tag = bench.tag();
    let command = RawCommand::new(race_tag, 1);
    journal
        .register_command(&command.input().map_err(err)?)
        .await
        .map_err(err)?;
    let (s0, p0) = (journal.stats(), proxy.calls());
    crate_side::race(&journal, race_tag, 1, holders, false).await?;
    settle().await;
    row.crate_stats = journal.stats().since(&s0);
    row.crate_proxy = proxy.calls() - p0;
    bench
        .peer_call(
            json!({"op": "call", "project": peer_project, "host": proxy.host(),
            "call": "register", "command": command.to_json()}),
        )
        .await?;
    let p0 = proxy.calls();
    bench.peer_call(json!({"op": "countStart"})).await?;
    bench
        .peer_call(
            json!({"op": "race", "project": peer_project, "host": proxy.host(),
            "mode": "natural", "tag": race_tag, "n": 1, "holders": holders, "register": false}),
        )
        .await?;
    settle().await;
    row.peer_counts = bench.peer_call(json!({"op": "countStop"})).await?;
    row.peer_proxy = proxy.calls() - p0;
    rows.push(row);
    Ok(rows)
}

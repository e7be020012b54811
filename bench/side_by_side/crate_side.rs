//! This crate's side of every workload, the mirror of the peer's handlers.
//!
//! Timings include what a handler does per call with the crate's API: validating the
//! raw command (`CommandInput::new`, with RFC 8785 canonicalisation) before
//! registering, parsing the lease id and the terminal reference, and inside each call
//! the identity derivation, the captured time and the transaction. The peer times the
//! same per call: validation, identity, time, `runTransaction`.

use crate::stats::{micros, run_workers};
use command_journal::Journal;
use command_journal::JournalError;
use command_journal::{CommandInput, CommandRequest, LeaseId, TerminalReferenceFingerprint};
use command_journal::{LeaseOutput, TerminalOutput};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The terminal reference every completion uses (as the peer's `REFERENCE`).
pub const REFERENCE: &str = "abababababababababababababababababababababababababababababababab";

/// The same command ids as the peer's `uuid(tag, n)`.
pub fn uuid(tag: u16, n: u64) -> String {
    format!("5eed0000-{tag:04x}-4000-8000-{n:012x}")
}

/// The raw parts of command `n` of `tag`, as the peer's `makeCommand` builds them.
pub struct RawCommand {
    command_id: String,
    payload: Value,
}

impl RawCommand {
    pub fn new(tag: u16, n: u64) -> Self {
        Self {
            command_id: uuid(tag, n),
            payload: json!({"sku": "tee", "quantity": 1, "n": n}),
        }
    }

    /// The JSON the peer takes for the same command.
    pub fn to_json(&self) -> Value {
        json!({
            "environment": "emulator",
            "callerScopeKind": "member",
            "callerId": "bench-caller",
            "commandId": self.command_id,
            "commandType": "checkout",
            "endpointSchemaVersion": 1,
            "payload": self.payload,
        })
    }

    pub fn input(&self) -> Result<CommandInput, JournalError> {
        CommandInput::new(CommandRequest {
            environment: "emulator",
            caller_scope_kind: "member",
            caller_id: "bench-caller",
            command_id: &self.command_id,
            command_type: "checkout",
            endpoint_schema_version: 1,
            payload: &self.payload,
        })
    }
}

/// Register, acquire, complete one command; the three latencies in µs.
pub async fn lifecycle_once(
    journal: &Journal,
    tag: u16,
    n: u64,
    lease_tag: u16,
) -> Result<[f64; 3], String> {
    let raw = RawCommand::new(tag, n);
    let lease_text = uuid(lease_tag, n);
    let t0 = Instant::now();
    let command = raw.input().map_err(|e| e.to_string())?;
    journal
        .register_command(&command)
        .await
        .map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let lease = LeaseId::parse(&lease_text).map_err(|e| e.to_string())?;
    let fence = match journal.acquire_lease(&command, &lease).await {
        Ok(LeaseOutput::Acquired { fence_epoch, .. }) => fence_epoch,
        other => return Err(format!("unexpected acquire answer {other:?}")),
    };
    let t2 = Instant::now();
    let reference = TerminalReferenceFingerprint::parse(REFERENCE).map_err(|e| e.to_string())?;
    match journal
        .complete_command(&command, &lease, fence, &reference)
        .await
    {
        Ok(TerminalOutput::Succeeded) => {}
        other => return Err(format!("unexpected complete answer {other:?}")),
    }
    let t3 = Instant::now();
    Ok([micros(t1 - t0), micros(t2 - t1), micros(t3 - t2)])
}

/// `count` commands one after another.
pub async fn sequential(
    journal: &Journal,
    tag: u16,
    from: u64,
    count: u64,
) -> Result<Vec<[f64; 3]>, String> {
    let mut samples = Vec::new();
    for i in 0..count {
        samples.push(lifecycle_once(journal, tag, from + i, tag + 1).await?);
    }
    Ok(samples)
}

/// One race: `holders` distinct lease ids acquire command `n` at once (registered
/// first, outside the timing, unless `register` is false).
/// Returns the wall time (µs) to all answers, each answer's outcome and the time
/// (µs) each answer arrived.
pub async fn race(
    journal: &Journal,
    tag: u16,
    n: u64,
    holders: u64,
    register: bool,
) -> Result<(f64, Vec<String>, Vec<f64>), String> {
    let raw = RawCommand::new(tag, n);
    let command = raw.input().map_err(|e| e.to_string())?;
    if register {
        journal
            .register_command(&command)
            .await
            .map_err(|e| e.to_string())?;
    }
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..holders)
        .map(|i| {
            let (journal, command) = (journal.clone(), command.clone());
            let lease_text = uuid(tag + 1, n * 1000 + i);
            tokio::spawn(async move {
                let lease = LeaseId::parse(&lease_text)?;
                let output = journal.acquire_lease(&command, &lease).await;
                output.map(|o| (o, micros(t0.elapsed())))
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut answered = Vec::new();
    for task in tasks {
        outcomes.push(match task.await {
            Ok(Ok((output, at))) => {
                answered.push(at);
                output.outcome().to_owned()
            }
            Ok(Err(error)) => format!("error:{}", error.code()),
            Err(_) => "error:panic".to_owned(),
        });
    }
    Ok((micros(t0.elapsed()), outcomes, answered))
}

/// `workers` loops on distinct commands for `duration`.
/// Returns (completed commands, errors, elapsed µs).
pub async fn throughput(
    journal: &Journal,
    tag: u16,
    workers: u64,
    duration: Duration,
) -> (u64, u64, f64) {
    let journal = journal.clone();
    let (completed, errors, elapsed) = run_workers(workers, duration, move |id| {
        let journal = journal.clone();
        async move { lifecycle_once(&journal, tag, id, tag + 1).await.is_ok() }
    })
    .await;
    (completed, errors, micros(elapsed))
}

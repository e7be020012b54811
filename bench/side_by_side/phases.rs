//! The measured scenarios: sequential latency, the first-acquire race and
//! throughput, each run on either side.

use crate::cpu::Cpu;
use crate::crate_side;
use crate::{Bench, Res, Side, err};
use command_journal::Journal;
use serde_json::json;
use std::time::Duration;

pub(crate) struct SeqSamples {
    pub(crate) side: Side,
    pub(crate) samples: Vec<[f64; 3]>,
    pub(crate) cpu: Cpu,
    pub(crate) wall_s: f64,
}

pub(crate) async fn run_sequential(
    bench: &mut Bench,
    side: Side,
    project: &str,
    tag: u16,
    from: u64,
    count: u64,
) -> Res<Vec<[f64; 3]>> {
    match side {
        Side::Crate => {
            let host = bench.emulator.host().to_owned();
            let journal = bench.journal(project, &host).await?;
            crate_side::sequential(&journal, tag, from, count).await
        }
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "sequential", "project": project, "mode": side.mode(),
                    "tag": tag, "from": from, "count": count}),
                )
                .await?;
            serde_json::from_value(answer["samples"].clone()).map_err(err)
        }
    }
}

pub(crate) struct RaceRound {
    pub(crate) side: Side,
    pub(crate) wall_us: f64,
    pub(crate) outcomes: Vec<String>,
    /// When each successful answer arrived, µs after the start.
    pub(crate) answered_us: Vec<f64>,
    pub(crate) cpu: Cpu,
}

pub(crate) async fn run_race(
    bench: &mut Bench,
    side: Side,
    journal: &Journal,
    project: &str,
    tag: u16,
    n: u64,
    holders: u64,
) -> Res<RaceRound> {
    let cpu0 = bench.cpu.now();
    let (wall_us, outcomes, answered_us) = match side {
        Side::Crate => crate_side::race(journal, tag, n, holders, true).await?,
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "race", "project": project, "mode": side.mode(),
                    "tag": tag, "n": n, "holders": holders}),
                )
                .await?;
            (
                answer["wallUs"].as_f64().unwrap_or(f64::NAN),
                serde_json::from_value(answer["results"].clone()).map_err(err)?,
                serde_json::from_value(answer["answeredUs"].clone()).map_err(err)?,
            )
        }
    };
    Ok(RaceRound {
        side,
        wall_us,
        outcomes,
        answered_us,
        cpu: bench.cpu.now().since(&cpu0),
    })
}

pub(crate) struct TpRound {
    pub(crate) side: Side,
    pub(crate) workers: u64,
    pub(crate) completed: u64,
    pub(crate) errors: u64,
    pub(crate) elapsed_us: f64,
    pub(crate) cpu: Cpu,
}

pub(crate) async fn run_throughput(
    bench: &mut Bench,
    side: Side,
    journal: &Journal,
    project: &str,
    tag: u16,
    workers: u64,
    duration: Duration,
) -> Res<TpRound> {
    let cpu0 = bench.cpu.now();
    let (completed, errors, elapsed_us) = match side {
        Side::Crate => crate_side::throughput(journal, tag, workers, duration).await,
        _ => {
            let answer = bench
                .peer_call(
                    json!({"op": "throughput", "project": project, "mode": side.mode(),
                    "tag": tag, "workers": workers, "durationMs": duration.as_millis() as u64}),
                )
                .await?;
            (
                answer["completed"].as_u64().unwrap_or(0),
                answer["errors"].as_u64().unwrap_or(0),
                answer["elapsedUs"].as_f64().unwrap_or(f64::NAN),
            )
        }
    };
    Ok(TpRound {
        side,
        workers,
        completed,
        errors,
        elapsed_us,
        cpu: bench.cpu.now().since(&cpu0),
    })
}

/// Alternating order for round `r`: the crate first on even rounds.
pub(crate) fn order(r: u64, sides: &[Side]) -> Vec<Side> {
    let mut sides = sides.to_vec();
    let shift = (r as usize) % sides.len();
    sides.rotate_left(shift);
    sides
}

//! Statistics and the worker loop shared by the side-by-side and round-trip benches
//! (`bench/rtt` includes this file with `#[path]`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The `p` quantile (0..=1) of `values` by the nearest-rank method; NaN when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The arithmetic mean of `values`.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// `d` in microseconds.
pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// `workers` loops, each running `command` on distinct ids (`(worker + 1) * 1_000_000
/// + n`) until `duration` has passed. Returns (completed, failed, elapsed).
pub async fn run_workers<F, Fut>(
    workers: u64,
    duration: Duration,
    command: F,
) -> (u64, u64, Duration)
where
    F: Fn(u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    let completed = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let deadline = t0 + duration;
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let command = command.clone();
            let (completed, errors) = (Arc::clone(&completed), Arc::clone(&errors));
            tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < deadline {
                    let counter = if command((w + 1) * 1_000_000 + n).await {
                        &completed
                    } else {
                        &errors
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    n += 1;
                }
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    (
        completed.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
        t0.elapsed(),
    )
}

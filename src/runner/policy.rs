//! How hard the journal tries: one [`RetryPolicy`] per journal.

use std::num::NonZeroU32;
use std::time::Duration;

/// How the journal retries one operation, set with
/// [`Journal::with_retry_policy`](crate::Journal::with_retry_policy).
///
/// Every operation is idempotent, so a retry is always safe; these only bound how long
/// a call keeps trying before it answers `unavailable`. The defaults:
///
/// | field | default | meaning |
/// |---|---|---|
/// | `attempts` | 10 | attempts per operation that could have written (a first read each); a refused blind or planned commit wrote nothing and is not counted: a read and decide always follows it |
/// | `rpc_timeout` | 10 s | longest wait for one RPC; longer counts as DEADLINE_EXCEEDED and is retried |
/// | `deadline` | none | bound on the whole call, on the monotonic clock: every transition, retry and backoff of it, and the provider's calls of an `execute` (given at most what is left of it) |
/// | `backoff_base`, `backoff_cap` | 4 ms, 250 ms | full-jitter ceiling, doubled per failed attempt up to the cap; RESOURCE_EXHAUSTED waits 1 to 4 caps |
/// | `contention_backoff_base`, `contention_backoff_cap` | 1 s, 10 s | after ABORTED in transaction mode: ½ to 1½ times a base growing 1.5× per attempt up to the cap |
///
/// The contention base is never shorter than half its value: on the emulator,
/// contenders whose commits wait for each other's read locks are aborted one by one by
/// its 2 s lock timeout, and the last one waiting commits only if no aborted contender
/// has come back to read (and so lock) the documents again before it does.
///
/// ```
/// use command_journal::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy {
///     deadline: Some(Duration::from_secs(5)),
///     ..RetryPolicy::default()
/// };
/// assert_eq!(policy.attempts.get(), 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per operation, not counting a refused blind or planned commit.
    pub attempts: NonZeroU32,
    /// Longest wait for one RPC.
    pub rpc_timeout: Duration,
    /// Longest time for the whole call, measured on the monotonic clock from its
    /// start: every transition of it (an `execute` or a recovery runs several), their
    /// retries and backoffs, and the provider's send or lookup, which is given at most
    /// what is left of it (`None`: only the attempt limit applies). A call still
    /// running when it passes ends with `unavailable` (`deadline: true`) and starts no
    /// further RPC but the rollback of a transaction it holds (within a second); a
    /// commit already in flight may or may not have been applied, and calling again
    /// converges on the stored state, as after any unknown outcome. An `execute` whose
    /// provider answered and whose deadline passed before the answer was recorded
    /// leaves its permit standing: the next call, once the lease has run out, re-sends
    /// under the same key and records what the provider answers it.
    pub deadline: Option<Duration>,
    /// First full-jitter backoff ceiling.
    pub backoff_base: Duration,
    /// Largest full-jitter backoff ceiling.
    pub backoff_cap: Duration,
    /// First backoff base after ABORTED in transaction mode.
    pub contention_backoff_base: Duration,
    /// Largest backoff base after ABORTED in transaction mode.
    pub contention_backoff_cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
            rpc_timeout: Duration::from_secs(10),
            deadline: None,
            backoff_base: Duration::from_millis(4),
            backoff_cap: Duration::from_millis(250),
            contention_backoff_base: Duration::from_secs(1),
            contention_backoff_cap: Duration::from_secs(10),
        }
    }
}

//! The instants ahead that matter to a generation's commands (lease ends, settle
//! bounds, cutoffs, key retention): where the driver's targeted clock jumps land.

use super::world::World;
use super::{CUTOFF, LEASE, RETENTION, SECOND, SETTLE};

impl World {
    /// Instants in `(now, until)` at or just past a settle bound of one of `command`'s
    /// requests (its `latest`, or its permit time plus a lease and the settle window).
    pub(super) fn settle_bounds(&self, command: usize, now: i64, until: i64) -> Vec<i64> {
        let mut out = Vec::new();
        for &id in self.by_command.get(&command).into_iter().flatten() {
            let r = &self.requests[id];
            let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
            out.extend([r.latest, r.latest + SECOND, provable, provable + SECOND]);
        }
        out.retain(|&t| now < t && t < until);
        out
    }

    /// Whether a settle bound of one of `command`'s requests lies in `(from, to]`.
    pub(super) fn settles_between(&self, command: usize, from: i64, to: i64) -> bool {
        self.by_command
            .get(&command)
            .into_iter()
            .flatten()
            .any(|&id| {
                let r = &self.requests[id];
                let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
                (from < r.latest && r.latest <= to) || (from < provable && provable <= to)
            })
    }

    /// For a command whose newest request was sent less than a lease and the settle
    /// window before its attempt's cutoff, an instant after that cutoff 1 to 45 s
    /// before the request's settle bound, if one is still ahead.
    pub(super) fn before_provable(&mut self, commands: &[usize]) -> Option<i64> {
        let now = self.now();
        let mut best: Option<i64> = None;
        for c in commands {
            let Some(&id) = self.by_command.get(c).and_then(|ids| ids.last()) else {
                continue;
            };
            let r = &self.requests[id];
            let cutoff = self.first_seen[&(r.account, r.key.clone())] + CUTOFF * SECOND;
            let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
            let at = provable - self.rng.i64(1..=45) * SECOND;
            if at > now && at >= cutoff {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        best
    }

    /// The nearest instant in the last six minutes before the cutoff of a command's
    /// newest attempt, if one is still ahead.
    pub(super) fn before_cutoff(&mut self, commands: &[usize]) -> Option<i64> {
        let now = self.now();
        let mut best: Option<i64> = None;
        for c in commands {
            let Some(&id) = self.by_command.get(c).and_then(|ids| ids.last()) else {
                continue;
            };
            let r = &self.requests[id];
            let cutoff = self.first_seen[&(r.account, r.key.clone())] + CUTOFF * SECOND;
            let at = cutoff - self.rng.i64(1..=360) * SECOND;
            if at > now {
                best = Some(best.map_or(at, |b| b.min(at)));
            }
        }
        best
    }

    /// Instants ahead next to the boundaries of `commands` (those not known terminal),
    /// in order: lease ends, settle bounds, cutoffs (and the last minutes before one,
    /// where a re-send makes a lookup race its settle window), key retention.
    pub(super) fn instants(&mut self, commands: &[usize]) -> Vec<i64> {
        let now = self.now();
        let mut out = Vec::new();
        for c in commands {
            let ids = self.by_command.get(c).cloned().unwrap_or_default();
            for &id in ids.iter().rev().take(4) {
                let r = &self.requests[id];
                let lease_end = r.latest - SETTLE * SECOND;
                let first = self.first_seen[&(r.account, r.key.clone())];
                let provable = r.sent_at + (LEASE + SETTLE) * SECOND;
                let (early, before_provable) = (self.rng.i64(1..=360), self.rng.i64(1..=45));
                out.extend([
                    lease_end,
                    lease_end + SECOND,
                    r.latest - SECOND,
                    r.latest,
                    r.latest + SECOND,
                    provable - before_provable * SECOND,
                    provable,
                    first + (CUTOFF - early) * SECOND,
                    first + CUTOFF * SECOND - 1,
                    first + CUTOFF * SECOND,
                    first + RETENTION * SECOND - SECOND,
                    first + RETENTION * SECOND,
                ]);
            }
        }
        out.retain(|&t| t > now);
        out.sort_unstable();
        out.dedup();
        out
    }
}

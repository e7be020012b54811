//! The journal's clock of one process: the system clock, or in emulator mode the
//! system clock moved by `JOURNAL_CLOCK_OFFSET_MS` ([`OffsetClock`]), so that local
//! instances can disagree about the time (a soak's skewed holders) and a recovery job
//! can run as if later. The configuration refuses an offset outside emulator mode.

use chrono::{DateTime, TimeDelta, Utc};
use command_journal::{Clock, Journal};
use std::sync::Arc;

/// The system clock plus a fixed offset (either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetClock {
    offset: TimeDelta,
}

impl OffsetClock {
    /// The system clock moved by `offset`.
    pub fn new(offset: TimeDelta) -> Self {
        Self { offset }
    }
}

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        let now = Utc::now();
        // The configuration bounds the offset to days: this never overflows.
        now.checked_add_signed(self.offset).unwrap_or(now)
    }
}

/// The offset of `journal`'s clock from the system clock, in whole milliseconds, as
/// measured on the journal itself (its trusted time against the system clock read on
/// either side of it): what a process states it applied. `None` when the journal's
/// clock cannot be read.
pub fn applied_offset_ms(journal: &Journal) -> Option<i64> {
    let before = Utc::now();
    let trusted = journal.now().ok()?.to_datetime();
    let after = Utc::now();
    let system = before + (after - before) / 2;
    let micros = (trusted - system).num_microseconds()?;
    Some((micros + 500).div_euclid(1000))
}

/// `journal` on the clock `offset` names: unchanged (the system clock) when `None`.
pub fn with_offset(journal: Journal, offset: Option<TimeDelta>) -> Journal {
    match offset {
        Some(offset) => journal.with_clock(Arc::new(OffsetClock::new(offset))),
        None => journal,
    }
}

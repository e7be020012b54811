//! The trusted clock and the journal's microsecond [`Timestamp`]: the core's pure items
//! (`command_journal_core::time`: the [`Clock`] trait, [`ManualClock`], [`Timestamp`])
//! and, here in the shell, the one clock that reads the system's time.

pub use command_journal_core::time::*;

use chrono::{DateTime, Utc};

/// The system clock (on Cloud Run, Google's synchronised time): the clock a
/// [`Journal`](crate::Journal) reads unless given another.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

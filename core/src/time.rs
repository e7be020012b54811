//! The trusted clock's trait, a manual clock, and the microsecond timestamps the
//! journal stores. Nothing here reads the system's clock.

use crate::document::value::ValueTime;
use chrono::{DateTime, TimeDelta, Utc};
use std::sync::Mutex;
use std::time::Duration;

/// A point in time in whole microseconds since the Unix epoch, within Firestore's
/// range (years 1 to 9999). Firestore stores microseconds, so a value truncated to
/// this precision compares equal after a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// 0001-01-01T00:00:00Z in microseconds.
const MIN_MICROS: i64 = -62_135_596_800_000_000;
/// 9999-12-31T23:59:59.999999Z in microseconds.
const MAX_MICROS: i64 = 253_402_300_799_999_999;

impl Timestamp {
    /// Truncates `time` to whole microseconds; `None` outside Firestore's range.
    pub fn from_datetime(time: DateTime<Utc>) -> Option<Self> {
        Self::from_micros(time.timestamp_micros())
    }

    /// `None` outside Firestore's range.
    pub fn from_micros(micros: i64) -> Option<Self> {
        (MIN_MICROS..=MAX_MICROS)
            .contains(&micros)
            .then_some(Self(micros))
    }

    /// Microseconds since the Unix epoch.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// As a chrono UTC time.
    pub fn to_datetime(self) -> DateTime<Utc> {
        DateTime::from_timestamp_micros(self.0).unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// Whole seconds since the epoch (floor).
    pub fn seconds(self) -> i64 {
        self.0.div_euclid(1_000_000)
    }

    /// Nanoseconds within the second (a multiple of 1,000).
    pub fn subsec_nanos(self) -> u32 {
        u32::try_from(self.0.rem_euclid(1_000_000) * 1_000).unwrap_or(0)
    }

    /// `self + seconds`, or `None` past Firestore's range.
    pub fn plus_seconds(self, seconds: i64) -> Option<Self> {
        self.0
            .checked_add(seconds.checked_mul(1_000_000)?)
            .and_then(Self::from_micros)
    }

    /// The time from `self` until `later`, zero when `later` is not after `self`: a
    /// lease's remaining time is `now.until(expires_at)`.
    pub fn until(self, later: Timestamp) -> Duration {
        // Both are within Firestore's range: the difference cannot overflow.
        Duration::from_micros(u64::try_from(later.0 - self.0).unwrap_or(0))
    }

    /// The form Firestore stores.
    pub(crate) fn to_value_time(self) -> ValueTime {
        ValueTime {
            seconds: self.seconds(),
            nanos: i32::try_from(self.subsec_nanos()).unwrap_or(0),
        }
    }

    /// Strict: nanos must be in range and whole microseconds.
    pub(crate) fn from_value_time(ts: &ValueTime) -> Option<Self> {
        if !(0..1_000_000_000).contains(&ts.nanos) || ts.nanos % 1_000 != 0 {
            return None;
        }
        ts.seconds
            .checked_mul(1_000_000)?
            .checked_add(i64::from(ts.nanos / 1_000))
            .and_then(Self::from_micros)
    }
}

/// A timestamp in the outputs' JSON shape: `{"seconds":S,"nanoseconds":N}`.
pub struct SecondsNanos(pub Timestamp);

impl serde::Serialize for SecondsNanos {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Timestamp", 2)?;
        s.serialize_field("seconds", &self.0.seconds())?;
        s.serialize_field("nanoseconds", &self.0.subsec_nanos())?;
        s.end()
    }
}

/// The trusted clock. The transaction runner reads it once per operation, before the
/// first attempt, and every attempt reuses that instant. The core reads no clock of
/// its own: the library's `time::SystemClock` reads the system's.
pub trait Clock: Send + Sync {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;

    /// This clock's steady time, read with [`Clock::now`]: a monotonic reading (the
    /// time since an origin of the clock's choosing) that moves forward with it and
    /// never back, whatever steps it takes. Durations derived from a lease (a
    /// provider's deadline) are measured on it, so that no step back of the trusted
    /// time lengthens them. `None`, the default: the driver's own monotonic clock
    /// (`std::time::Instant`), the system clock's steady time. A clock of a test's own
    /// that stands still while real time passes should keep a steady time of its own,
    /// as [`ManualClock`] does: against the real one it looks like a clock stepping
    /// back, and the durations it bounds shrink with real time.
    fn steady(&self) -> Option<Duration> {
        None
    }
}

/// A clock that reads whatever it was last set to: for tests, the demo and the CLI's
/// `--at`. Only ever used against the emulator by the CLI. Its steady time moves by
/// what it is moved forward, never back: a test that sets it back steps the trusted
/// time as a wall clock stepped back would.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<(DateTime<Utc>, Duration)>,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new((now, Duration::ZERO)),
        }
    }

    /// Moves the clock to `now` (also backwards, to test regressions and steps).
    pub fn set(&self, now: DateTime<Utc>) {
        let mut clock = self.now.lock().unwrap_or_else(|e| e.into_inner());
        let forward = (now - clock.0).to_std().unwrap_or_default();
        *clock = (now, clock.1.saturating_add(forward));
    }

    /// Moves the clock by `delta` (forward, or back when negative).
    pub fn advance(&self, delta: TimeDelta) {
        let now = self.now.lock().unwrap_or_else(|e| e.into_inner()).0;
        self.set(now.checked_add_signed(delta).unwrap_or(now));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        self.now.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    fn steady(&self) -> Option<Duration> {
        Some(self.now.lock().unwrap_or_else(|e| e.into_inner()).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_to_whole_microseconds() {
        let time = DateTime::from_timestamp(1_700_000_000, 123_456_789).expect("time");
        let ts = Timestamp::from_datetime(time).expect("in range");
        assert_eq!(ts.subsec_nanos(), 123_456_000);
        assert_eq!(Timestamp::from_value_time(&ts.to_value_time()), Some(ts));
    }

    #[test]
    fn negative_times_round_trip() {
        let ts = Timestamp::from_micros(-1).expect("in range");
        let proto = ts.to_value_time();
        assert_eq!((proto.seconds, proto.nanos), (-1, 999_999_000));
        assert_eq!(Timestamp::from_value_time(&proto), Some(ts));
    }

    #[test]
    fn strict_proto_parsing() {
        let sub_micro = ValueTime {
            seconds: 1,
            nanos: 1,
        };
        assert_eq!(Timestamp::from_value_time(&sub_micro), None);
        let bad_nanos = ValueTime {
            seconds: 1,
            nanos: 1_000_000_000,
        };
        assert_eq!(Timestamp::from_value_time(&bad_nanos), None);
        let too_late = ValueTime {
            seconds: 253_402_300_800,
            nanos: 0,
        };
        assert_eq!(Timestamp::from_value_time(&too_late), None);
    }

    #[test]
    fn plus_seconds_is_checked() {
        let ts = Timestamp::from_micros(0).expect("epoch");
        assert_eq!(ts.plus_seconds(60).map(Timestamp::micros), Some(60_000_000));
        let max = Timestamp::from_micros(MAX_MICROS).expect("max");
        assert_eq!(max.plus_seconds(1), None);
    }

    #[test]
    fn a_manual_clock_s_steady_time_moves_forward_with_it_and_never_back() {
        let at = |s: i64| DateTime::from_timestamp(1_700_000_000 + s, 0).expect("time");
        let clock = ManualClock::new(at(0));
        assert_eq!(clock.steady(), Some(Duration::ZERO));
        clock.advance(TimeDelta::seconds(61));
        clock.set(at(-59));
        clock.advance(TimeDelta::seconds(-1));
        clock.set(at(0));
        assert_eq!(
            (clock.now(), clock.steady()),
            (at(0), Some(Duration::from_secs(121)))
        );
    }

    #[test]
    fn until_is_the_time_left_and_zero_once_passed() {
        let at = |micros| Timestamp::from_micros(micros).expect("in range");
        let cases = [
            (0, 1_500_000, Duration::from_micros(1_500_000)),
            (-1, 0, Duration::from_micros(1)),
            (5, 5, Duration::ZERO),
            (6, 5, Duration::ZERO),
            (MAX_MICROS, MIN_MICROS, Duration::ZERO),
        ];
        for (now, later, left) in cases {
            assert_eq!(at(now).until(at(later)), left, "{now} until {later}");
        }
        let whole = at(MIN_MICROS).until(at(MAX_MICROS));
        assert_eq!(whole.as_micros(), (MAX_MICROS - MIN_MICROS) as u128);
    }
}

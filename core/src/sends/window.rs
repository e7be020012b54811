//! The customer's window: how long a customer the provider waits for (a 3-D Secure
//! challenge, a hosted page) may act after the attempt's first send, as a plan binds
//! it, and `act_by`, the instant it ends, computed from the journal's own records (the
//! stored plan's window and the stored attempt) and nowhere else.
//!
//! ```text
//! act_by = min(sendCutoffAt, firstSentAt + customerWindowSeconds)
//! act_by = sendCutoffAt                       (no window bound)
//! ```

use crate::time::Timestamp;

/// The shortest customer window a plan binds, in seconds (one minute, a lease).
pub const MIN_CUSTOMER_WINDOW_SECONDS: i64 = 60;

/// Whether `window` seconds is a customer window a plan whose cutoff span (seconds
/// from an attempt's first send to its cutoff, `retention − retention / 4`) is
/// `cutoff_span` may bind: at least [`MIN_CUSTOMER_WINDOW_SECONDS`], at most the span
/// (the key may be re-sent with the same `act_by` until then).
pub(crate) fn window_fits(window: i64, cutoff_span: i64) -> bool {
    (MIN_CUSTOMER_WINDOW_SECONDS..=cutoff_span).contains(&window)
}

/// The instant the customer must have acted by for an attempt first sent at
/// `first_sent_at` with stored cutoff `send_cutoff_at`, under the bound plan's
/// `window`: the earlier of the cutoff and the window's end; the cutoff when no
/// window is bound (or its end is past Firestore's range, which a window that fits
/// never is). The same instant on every read of the same records.
pub fn act_by(
    first_sent_at: Timestamp,
    send_cutoff_at: Timestamp,
    window: Option<i64>,
) -> Timestamp {
    window
        .and_then(|seconds| first_sent_at.plus_seconds(seconds))
        .map_or(send_cutoff_at, |end| end.min(send_cutoff_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_micros(seconds * 1_000_000 + 7).expect("in range")
    }

    #[test]
    fn no_window_is_the_cutoff() {
        assert_eq!(act_by(at(1_000), at(65_800), None), at(65_800));
    }

    #[test]
    fn a_window_ends_before_the_cutoff() {
        assert_eq!(act_by(at(1_000), at(65_800), Some(3_600)), at(4_600));
    }

    #[test]
    fn a_window_never_ends_after_the_cutoff() {
        assert_eq!(act_by(at(1_000), at(65_800), Some(64_800)), at(65_800));
        // A stored cutoff earlier than the window's end (never written, but the rule
        // holds): the cutoff.
        assert_eq!(act_by(at(1_000), at(2_000), Some(3_600)), at(2_000));
    }

    #[test]
    fn the_window_fits_from_a_minute_to_the_cutoff_span() {
        assert!(!window_fits(59, 64_800));
        assert!(window_fits(60, 64_800));
        assert!(window_fits(64_800, 64_800));
        assert!(!window_fits(64_801, 64_800));
        assert!(!window_fits(-1, 64_800));
        assert!(window_fits(2_700, 2_700));
        assert!(!window_fits(2_701, 2_700));
    }
}

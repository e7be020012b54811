//! Switches that revert one proven-safety rule each, for the model checker's tests:
//! with a rule reverted, the checker must find the counterexample the rule prevents.
//!
//! Outside `cfg(test)` every rule is always on and [`reverted`] is `false`, except in
//! a build with the test-only feature `plants`, where a process can revert rules for
//! good ([`revert_in_process`], through `crate::plants`): the soak's planted defects
//! (`bench/chaos/README.md`), which its oracle must catch. No deployed build enables
//! the feature (`.ci/run` checks the release build's features).

/// One proven-safety rule of the send layer (`docs/providers.md`, "Proven absence").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))]
#[repr(u16)]
pub(crate) enum Rule {
    /// An absence waits for every lease that permitted the attempt, plus the settle
    /// window (in the journal, and in `execute`, which records a "not found" only from
    /// a lookup started once the absence was provable).
    SenderSettled = 1,
    /// A key-store absence is accepted only while the provider keeps the key.
    KeyRetained = 2,
    /// The sender's success or decline is recorded after the cutoff too.
    EvidenceAfterCutoff = 4,
    /// Every send operation checks the plan before any cutoff or state rule.
    PlanFirst = 8,
    /// Every commit proves the mutable documents its decision read and did not write
    /// (the lifecycle's holder, fence and expiry) unchanged ([`crate::proof`]).
    LeaseProof = 16,
    /// An attempt whose provider replayed a stored unknown answer is never re-sent
    /// and is looked up at once. Not a safety rule but one of progress: reverted (the
    /// replay kept as a plain unknown), the checker reaches no settlement of such an
    /// attempt before its cutoff.
    ReplayedLookedUp = 32,
    /// An absence becomes provable the plan's settle window after the last
    /// permitting lease ends; reverted, at the lease's end, as though the provider's
    /// lookup saw every charge the moment it was made.
    SettleWindow = 64,
    /// The recovery job looks up every attempt whose outcome is unknown, `ambiguous`
    /// ones included; reverted, it leaves `ambiguous` attempts alone. A rule of
    /// progress: reverted, a charge made under such an attempt is never recorded.
    RecoveryLooksUpAmbiguous = 128,
    /// No absence of an indeterminate attempt (a stored 5xx, fresh or replayed) is
    /// ever proven: the provider may still complete it. Reverted (the usual window
    /// applied), the checker finds attempt 2 charged beside a charge the provider
    /// rolled forward under attempt 1's key.
    IndeterminateNeverAbsent = 256,
    /// A read by id of an attempt that waits for its customer may re-send the key (to
    /// learn the object's id) only before the attempt's stored cutoff, while the
    /// provider still keeps the key. Reverted (replayable whenever the caller holds
    /// the plan), the checker finds a re-send past the key's retention making a second
    /// object, closed in the first one's place while the first is still paid.
    ReplayBeforeCutoff = 512,
    /// Under a plan whose lookup is `final_state` (a provider that may complete a
    /// request it never answered), no absence of any attempt is ever proven by a
    /// lookup. Reverted (the usual window applied to an attempt whose stored 500 its
    /// sender never heard), the checker finds attempt 2 charged beside the first
    /// request rolled forward.
    UnansweredNeverAbsent = 1024,
    /// Another holder re-sends an attempt's key only once the lease its last sender
    /// held would have ended (`lastSentAt + 60 s`), however soon that lease was
    /// released: the last request may still be on its way until then.
    ResendAfterSendersLease = 2048,
}

#[cfg(test)]
thread_local! {
    static REVERTED: std::cell::Cell<u16> = const { std::cell::Cell::new(0) };
}

/// Whether `rule` is reverted on this thread (tests only).
#[cfg(test)]
pub fn reverted(rule: Rule) -> bool {
    REVERTED.with(|r| r.get() & rule as u16 != 0)
}

/// The rules reverted on this thread, as the bits of their values (tests only): what
/// a memo of an operation's answer must be keyed by.
#[cfg(test)]
pub fn reverted_bits() -> u16 {
    REVERTED.with(|r| r.get())
}

/// Whether `rule` is reverted: never outside tests.
#[cfg(all(not(test), not(feature = "plants")))]
#[inline(always)]
pub(crate) fn reverted(_rule: Rule) -> bool {
    false
}

/// The rules this process reverted, as the bits of their values (feature `plants`).
#[cfg(all(not(test), feature = "plants"))]
static IN_PROCESS: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);

/// Whether `rule` is reverted in this process (feature `plants`: only where
/// [`revert_in_process`] reverted it).
#[cfg(all(not(test), feature = "plants"))]
pub(crate) fn reverted(rule: Rule) -> bool {
    IN_PROCESS.load(std::sync::atomic::Ordering::SeqCst) & rule as u16 != 0
}

/// Reverts `rules` in this whole process, for good (feature `plants`).
#[cfg(all(not(test), feature = "plants"))]
pub(crate) fn revert_in_process(rules: &[Rule]) {
    let bits = rules.iter().fold(0u16, |acc, r| acc | *r as u16);
    IN_PROCESS.fetch_or(bits, std::sync::atomic::Ordering::SeqCst);
}

/// Runs `f` with `rules` reverted on this thread, restoring them afterwards.
#[cfg(test)]
pub fn with_reverted<R>(rules: &[Rule], f: impl FnOnce() -> R) -> R {
    let bits = rules.iter().fold(0u16, |acc, r| acc | *r as u16);
    let before = REVERTED.with(|r| r.replace(bits));
    let out = f();
    REVERTED.with(|r| r.set(before));
    out
}

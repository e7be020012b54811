//! A worker: a sequence of `execute` calls, each driving the real
//! [`Protocol`]. The protocol is neither `Clone` nor `Hash`, so a call keeps the answers
//! it was given (with the journal's time of each) and replays them into a new
//! protocol whenever it needs the next step: the protocol is a pure function of them.

use super::super::at;
use super::memory::{Flight, Memory};
use super::world::{KeyId, PlanChoice, micros, seconds};
use crate::answer::ProviderAnswer;
use crate::error::JournalError;
use crate::execute::protocol::{Event, Protocol, Step};
use crate::lease::LeaseOutput;
use crate::sends::{BeginSendOutput, LateChargeOutput, SendOutcomeOutput, SendPermit, SendStatus};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// What one step of a call was answered: the protocol's event, in a form that can be
/// cloned and printed (a provider's success names its key; its envelope is the key's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Answer {
    Started(LeaseOutput),
    BeganSend(Result<BeginSendOutput, JournalError>),
    /// The provider's answer to a send: a success under the key, or nothing known.
    Sent(Option<KeyId>),
    /// The provider's answer to a send: the key's stored 5xx, replayed.
    SentReplayed,
    Recorded(Result<SendOutcomeOutput, JournalError>),
    Status(Option<SendStatus>),
    /// The lookup's answer: a success under the key, or not found.
    LookedUp(Option<KeyId>),
    Reconciled(Result<SendOutcomeOutput, JournalError>),
    LateCharge(Result<LateChargeOutput, JournalError>),
}

impl Answer {
    /// The protocol's event for this answer.
    fn event(&self) -> Event {
        match self.clone() {
            Self::Started(lease) => Event::Started(lease),
            Self::BeganSend(answer) => Event::BeganSend(answer),
            Self::Sent(Some(key)) => Event::Sent(ProviderAnswer::Succeeded(key.envelope())),
            Self::Sent(None) => Event::Sent(ProviderAnswer::Unknown),
            Self::SentReplayed => Event::Sent(ProviderAnswer::ReplayedUnknown),
            Self::Recorded(answer) => Event::Recorded(answer),
            Self::Status(send) => Event::Status(send),
            Self::LookedUp(Some(key)) => Event::LookedUp(ProviderAnswer::Succeeded(key.envelope())),
            Self::LookedUp(None) => Event::LookedUp(ProviderAnswer::NotFound),
            Self::Reconciled(answer) => Event::Reconciled(answer),
            Self::LateCharge(answer) => Event::LateCharge(answer),
        }
    }
}

impl Answer {
    /// The journal's refusal this answer carries, if any.
    pub(super) fn error(&self) -> Option<&JournalError> {
        match self {
            Self::BeganSend(Err(error))
            | Self::Recorded(Err(error))
            | Self::Reconciled(Err(error))
            | Self::LateCharge(Err(error)) => Some(error),
            _ => None,
        }
    }

    /// A one-line summary, for a counterexample's trace.
    pub(super) fn summary(&self) -> String {
        let code = |error: &JournalError| error.code().to_owned();
        let outcome = |answer: &Result<SendOutcomeOutput, JournalError>| match answer {
            Ok(SendOutcomeOutput::Terminal(t)) => format!("{t:?}").to_lowercase(),
            Ok(SendOutcomeOutput::Ambiguous { attempt }) => format!("ambiguous {attempt}"),
            Ok(SendOutcomeOutput::Absent { attempt }) => format!("absent {attempt}"),
            Err(error) => code(error),
        };
        match self {
            Self::Started(LeaseOutput::Acquired { fence_epoch, .. }) => {
                format!("start: acquired fence {}", fence_epoch.get())
            }
            Self::Started(lease) => format!("start: {}", lease.outcome()),
            Self::BeganSend(Ok(BeginSendOutput::Permitted(p))) => {
                format!(
                    "begin_send: permit attempt {} resend {}",
                    p.attempt, p.resend
                )
            }
            Self::BeganSend(Ok(BeginSendOutput::Terminal(t))) => {
                format!("begin_send: {t:?}").to_lowercase()
            }
            Self::BeganSend(Err(error)) => format!("begin_send: {}", code(error)),
            Self::Sent(Some(key)) => format!("the provider's answer: success ({key:?})"),
            Self::Sent(None) => "no answer (timeout)".to_owned(),
            Self::SentReplayed => "the provider's answer: a stored 5xx, replayed".to_owned(),
            Self::Recorded(answer) => format!("record: {}", outcome(answer)),
            Self::Status(Some(send)) => format!(
                "status: attempt {} {} needsReconciliation {}",
                send.attempt,
                send.state.as_str(),
                send.needs_reconciliation
            ),
            Self::Status(None) => "status: no send".to_owned(),
            Self::LookedUp(Some(key)) => format!("lookup: found ({key:?})"),
            Self::LookedUp(None) => "lookup: not found".to_owned(),
            Self::Reconciled(answer) => format!("reconcile: {}", outcome(answer)),
            Self::LateCharge(Ok(output)) => format!("late charge: {}", output.label()),
            Self::LateCharge(Err(error)) => format!("late charge: {}", code(error)),
        }
    }
}

/// Where a call stands between actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Phase {
    /// The protocol's next step is due.
    Ready,
    /// The request with `key` is on the wire; the driver waits for the answer until
    /// `deadline` (seconds); `answered` once the provider has processed it into a
    /// success, `replayed` into the replay of the key's stored 5xx.
    Sending {
        key: KeyId,
        deadline: i64,
        answered: bool,
        replayed: bool,
    },
    /// A journal operation's commit is in flight (`Call::flight`): it lands or is
    /// refused at a later action.
    Committing,
}

/// One `execute` call: its plan, its lease owner, the answers it was given (with the
/// journal's time of each, in seconds) and the protocol's next step; in preconditions
/// mode also what its last operation left known and the commit it has in flight.
/// Hashed and compared by a fingerprint of the protocol's state (its `Debug`) and next
/// step, and of the key whose result it holds (an envelope's `Debug` is redacted): two
/// calls that got there by different answers behave the same from there on.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub plan: PlanChoice,
    pub owner: usize,
    pub phase: Phase,
    /// What the call's last journal operation left known (the driver's `Memory`).
    pub memory: Option<Memory>,
    /// The commit in flight, while `phase` is `Committing`.
    pub flight: Option<Flight>,
    /// Whether a commit of this call landed.
    pub wrote: bool,
    history: Vec<(Answer, i64)>,
    next: Step,
    fingerprint: u64,
}

impl Call {
    fn key(&self) -> impl Eq + Hash + '_ {
        let state = (self.plan, self.owner, self.phase, self.fingerprint);
        (state, &self.memory, &self.flight, self.wrote)
    }
}

impl Hash for Call {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}

impl PartialEq for Call {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Call {}

/// A worker's turn at the current instant. Journal operations at one instant are
/// serialized by the lease, and the provider's actions commute with them, so the model
/// lets one worker run its steps at an instant without another worker's or the
/// provider's actions in between, until it waits for the provider, ends, or yields (it
/// then acts again only after the clock has moved). The time between any two steps of
/// a call is still free.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(super) enum Turn {
    /// May act at this instant.
    #[default]
    Idle,
    /// Acting: no other worker and no provider action until it stops.
    Running,
    /// Done for this instant; acts again once the clock moves.
    Yielded,
}

/// A worker: how many calls it started, its turn, and the call running; and what its
/// last action did, for a counterexample's trace (not part of the state).
#[derive(Debug, Clone, Default)]
pub(super) struct Worker {
    pub calls: u8,
    pub turn: Turn,
    pub call: Option<Call>,
    pub did: String,
}

impl Hash for Worker {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (self.calls, self.turn, &self.call).hash(state);
    }
}

impl PartialEq for Worker {
    fn eq(&self, other: &Self) -> bool {
        (self.calls, self.turn, &self.call) == (other.calls, other.turn, &other.call)
    }
}

impl Eq for Worker {}

impl Call {
    /// A new call: its first step is `start`.
    pub(super) fn new(plan: PlanChoice, owner: usize) -> Self {
        Self {
            plan,
            owner,
            phase: Phase::Ready,
            memory: None,
            flight: None,
            wrote: false,
            history: Vec::new(),
            next: Protocol::new().1,
            fingerprint: 0,
        }
    }

    /// The fingerprint of `protocol`'s state and next step, and of the key whose
    /// result the call holds.
    fn fingerprint(&self, protocol: &Protocol) -> u64 {
        let held = self
            .history
            .iter()
            .rev()
            .find_map(|(answer, _)| match answer {
                Answer::Sent(Some(key)) | Answer::LookedUp(Some(key)) => Some(*key),
                _ => None,
            });
        let mut hasher = DefaultHasher::new();
        (format!("{protocol:?} {:?}", self.next), held).hash(&mut hasher);
        hasher.finish()
    }

    /// The protocol rebuilt from the answers, and its next step.
    fn replay(&self) -> (Protocol, Step) {
        let (mut protocol, mut step) = Protocol::new();
        for (answer, now) in &self.history {
            step = protocol
                .step(answer.event(), at(micros(*now)))
                .expect("a replayed step answers as it did");
        }
        (protocol, step)
    }

    /// The protocol's next step.
    pub(super) fn step(&self) -> &Step {
        &self.next
    }

    /// Whether the call has had no answer yet (its next step is its first start).
    pub(super) fn is_new(&self) -> bool {
        self.history.is_empty()
    }

    /// Gives the protocol `answer` at `now` (seconds): its next step, `None` when the
    /// call ends with an execution, or the error it ends with.
    pub(super) fn feed(&mut self, answer: Answer, now: i64) -> Result<Option<Step>, JournalError> {
        let (mut protocol, _) = self.replay();
        match protocol.step(answer.event(), at(micros(now)))? {
            Step::Done(_) => Ok(None),
            step => {
                self.history.push((answer, now));
                self.next = step.clone();
                self.fingerprint = self.fingerprint(&protocol);
                self.phase = Phase::Ready;
                Ok(Some(step))
            }
        }
    }

    /// The permit the last step was answered, if it was one.
    pub(super) fn permit(&self) -> Option<&SendPermit> {
        match self.history.last() {
            Some((Answer::BeganSend(Ok(BeginSendOutput::Permitted(permit))), _)) => Some(permit),
            _ => None,
        }
    }

    /// The end of the lease the call holds (seconds), if it took one.
    pub(super) fn lease_end(&self) -> Option<i64> {
        self.history
            .iter()
            .rev()
            .find_map(|(answer, _)| match answer {
                Answer::Started(LeaseOutput::Acquired {
                    lease_expires_at, ..
                }) => Some(seconds(*lease_expires_at)),
                _ => None,
            })
    }

    /// Whether the call's next step records a provider's answer or a lookup's
    /// evidence.
    pub(super) fn holds_evidence(&self) -> bool {
        matches!(self.step(), Step::Record { .. } | Step::Reconcile { .. })
    }

    /// Whether the call holds a provider's success it has not had recorded.
    pub(super) fn holds_success(&self) -> bool {
        matches!(self.history.last(), Some((Answer::Sent(Some(_)), _)))
    }

    /// `execute` without the rule `EvidenceAfterCutoff`, where recording a success was
    /// refused past the cutoff: it dropped the answer and read the send status under
    /// the same lease. The protocol is rebuilt as if `begin_send` had answered
    /// `send_cutoff_passed` under that lease: the same lease, no answer held, the
    /// status read next.
    pub(super) fn drop_answer(&mut self, now: i64) {
        let started = self
            .history
            .iter()
            .rfind(|(answer, _)| matches!(answer, Answer::Started(_)))
            .cloned()
            .expect("a call that sent was started");
        let refused = Answer::BeganSend(Err(JournalError::SendCutoffPassed));
        self.history = vec![started, (refused, now)];
        self.memory = None;
        let (protocol, next) = self.replay();
        self.next = next;
        self.fingerprint = self.fingerprint(&protocol);
        self.phase = Phase::Ready;
    }
}

/// The driver's send deadline (on the sender's clock, `skew` seconds ahead of the
/// global one) and the request's settle deadline (on the global clock) under `permit`:
/// the answer must arrive before the lease's end less the margin, and the provider
/// settles the request at the latest a settle window after the lease's end.
pub(super) fn deadlines(permit: &SendPermit, margin: i64, settle: i64, skew: i64) -> (i64, i64) {
    let lease_end = seconds(permit.lease_expires_at);
    (lease_end - margin, lease_end - skew + settle)
}

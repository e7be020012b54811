//! Pure invariant checks over one command's provider-send documents
//! (`docs/providers.md`): the plan, the current attempt, the whole version-3 send
//! audit chain, and their agreement with the lifecycle. The scan gathers [`SendDocs`]
//! per command key hash (`commerce::check_command`) and reports each
//! [`FindingCode`] as the matching `FindingCode`.
//!
//! - plan immutability: created once, never rewritten, in the commit of attempt 1's
//!   `provider_send_opened` (revision 1);
//! - the attempt chain: revisions 1..=`sendRevision` without a gap or an extra event;
//!   replayed from nothing, each event follows the state the one before left, attempts
//!   open only from `absent` and one at a time, nothing follows a closed attempt, fences
//!   never go back and a re-send comes from a later fence; the replay ends exactly at
//!   the current document, and each event is created in a later commit than the one
//!   before, the current document last written by the commit of the last one;
//! - cutoff arithmetic: every opening's `sendCutoffAt` is its `occurredAt + r − ⌊r/4⌋`
//!   for the plan's retention, every later event of the attempt carries it, and no
//!   permit or sender's `ambiguous` is recorded at or after it (a sender's success or
//!   decline is evidence whenever it arrives);
//! - proven absence: every `provider_send_reconciled_absent` lies in the window in
//!   which the journal can prove an absence (`crate::sends::absence`), and follows no
//!   indeterminate state (`replayed_unknown`, `indeterminate`), whose absence is never
//!   provable;
//! - the stored result: a version-2 send record says `resultStored` exactly when
//!   `results/current` exists;
//! - agreement with the lifecycle: a plan implies a lifecycle; the attempt is closed
//!   exactly when the command is terminal, `succeeded` with succeeded and `declined`
//!   with failed_final, by the commit that ended the command (same time, same fence,
//!   same commit time); no send fence beyond the lifecycle's. (The first send rewrites
//!   the lifecycle unchanged, which keeps its update time: the lifecycle's last write
//!   is still its current B2B event's commit.)

use crate::digest::Digest;
use crate::document::lifecycle::{Lifecycle, LifecycleState};
use crate::fence::FenceEpoch;
use crate::sends::AttemptNumber;
use crate::sends::absence;
use crate::sends::attempt::{self, AttemptState, OutcomeSource, SendAttempt};
use crate::sends::bound_plan::{self, BoundPlan};
use crate::sends::event::{self, SendEvent, SendEventType};
use crate::sends::load::partners;
use crate::sends::plan::send_cutoff_at;
use crate::time::Timestamp;

use super::report::{Finding, FindingCode};

pub(crate) use super::stored::{StoredDoc, WriteTime};

/// Everything of the send layer stored under one command key hash, and the parsed
/// lifecycle (with its document) when it parsed.
#[derive(Debug, Clone, Default)]
pub(crate) struct SendDocs<'a> {
    /// `providerSends/plan`.
    pub plan: Option<&'a StoredDoc>,
    /// `providerSends/current`.
    pub current: Option<&'a StoredDoc>,
    /// `auditEvents/provider_send_{hash}_{revision}`, in revision order.
    pub events: Vec<(i64, &'a StoredDoc)>,
    /// The lifecycle document and its parsed fields.
    pub lifecycle: Option<(&'a StoredDoc, &'a Lifecycle)>,
    /// `results/current`, when stored.
    pub result: Option<&'a StoredDoc>,
}

fn at(code: FindingCode, path: &str) -> Finding {
    Finding {
        code,
        path: path.to_owned(),
    }
}

/// What replaying the chain reconstructs of the current attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Replayed {
    attempt: AttemptNumber,
    state: AttemptState,
    first_sent_at: Timestamp,
    first_sent_fence_epoch: FenceEpoch,
    send_cutoff_at: Timestamp,
    last_sent_at: Timestamp,
    last_sent_fence_epoch: FenceEpoch,
    outcome: Option<(Timestamp, FenceEpoch, OutcomeSource)>,
    send_revision: i64,
}

/// The findings of one command's send documents (none when it has none).
pub(crate) fn check_sends(hash: &Digest, docs: &SendDocs<'_>) -> Vec<Finding> {
    use FindingCode as C;
    let mut out = Vec::new();
    let (plan_doc, current_doc) = match (docs.plan, docs.current) {
        (None, None) => {
            for (_, doc) in &docs.events {
                out.push(at(C::UnpairedSendRecord, &doc.path));
            }
            return out;
        }
        (Some(plan), Some(current)) => (plan, current),
        (Some(doc), None) | (None, Some(doc)) => {
            out.push(at(C::UnpairedSendRecord, &doc.path));
            return out;
        }
    };
    let plan = BoundPlan::parse(hash, &plan_doc.fields);
    let current = SendAttempt::parse(hash, &current_doc.fields);
    if plan.is_err() {
        out.push(at(C::MalformedSendDocument, &plan_doc.path));
    }
    if current.is_err() {
        out.push(at(C::MalformedSendDocument, &current_doc.path));
    }
    let mut events = Vec::new();
    for (revision, doc) in &docs.events {
        match SendEvent::parse(&event::id(hash, *revision), &doc.fields) {
            Ok(parsed) => events.push((*revision, *doc, parsed)),
            Err(_) => out.push(at(C::MalformedSendDocument, &doc.path)),
        }
    }
    let (Ok(plan), Ok(current)) = (plan, current) else {
        return out;
    };
    if plan_doc.rewritten() {
        out.push(at(C::PlanNotImmutable, &plan_doc.path));
    }
    // Revisions 1..=sendRevision, each exactly once.
    let mut expected = 1;
    for (revision, doc) in &docs.events {
        if *revision > current.send_revision {
            out.push(at(C::ExtraSendEvent, &doc.path));
        } else if *revision != expected {
            out.push(at(C::SendAuditGap, &event::path(hash, expected)));
        }
        expected = revision + 1;
    }
    if expected <= current.send_revision {
        out.push(at(C::SendAuditGap, &event::path(hash, expected)));
    }
    check_write_times(docs, plan_doc, current_doc, &mut out);
    let replayed = replay(hash, &plan, &events, &mut out);
    match &replayed {
        Some(replayed) if matches_current(replayed, &current) => {}
        _ => out.push(at(C::SendChainMismatch, &current_doc.path)),
    }
    if let Some((_, _, last)) = events.last()
        && last.send_revision == current.send_revision
        && !partners(&current, last)
    {
        out.push(at(C::SendChainMismatch, &current_doc.path));
    }
    check_lifecycle(hash, docs, &plan, &current, &mut out);
    if current.version >= 2 && current.result_stored != docs.result.is_some() {
        out.push(at(C::SendResultMismatch, &current_doc.path));
    }
    out.sort();
    out.dedup();
    out
}

fn matches_current(replayed: &Replayed, current: &SendAttempt) -> bool {
    let outcome = current.outcome.map(|o| (o.at, o.fence_epoch, o.source));
    replayed.attempt == current.attempt
        && replayed.state == current.state
        && replayed.first_sent_at == current.first_sent_at
        && replayed.first_sent_fence_epoch == current.first_sent_fence_epoch
        && replayed.send_cutoff_at == current.send_cutoff_at
        && replayed.last_sent_at == current.last_sent_at
        && replayed.last_sent_fence_epoch == current.last_sent_fence_epoch
        && replayed.outcome == outcome
        && replayed.send_revision == current.send_revision
}

/// Replays the parsed chain from nothing; `None` when it cannot start.
fn replay(
    hash: &Digest,
    plan: &BoundPlan,
    events: &[(i64, &StoredDoc, SendEvent)],
    out: &mut Vec<Finding>,
) -> Option<Replayed> {
    use FindingCode as C;
    let mut state: Option<Replayed> = None;
    let mut highest_fence = FenceEpoch::FIRST;
    for (_, doc, event) in events {
        let path = &doc.path;
        if event.command_key_hash != *hash {
            out.push(at(C::SendChainMismatch, path));
        }
        if event.fence_epoch < highest_fence {
            out.push(at(C::SendChainMismatch, path));
        }
        highest_fence = highest_fence.max(event.fence_epoch);
        let before = state.as_ref().map(|s| s.state);
        if event.from_state != before {
            out.push(at(C::SendChainMismatch, path));
        }
        let next = match (event.event_type, state.clone()) {
            (SendEventType::Opened, previous) => {
                let attempt = previous
                    .as_ref()
                    .map_or(Some(AttemptNumber::FIRST), |p| p.attempt.next());
                let opens_in_turn = Some(event.attempt) == attempt
                    && previous
                        .as_ref()
                        .is_none_or(|p| p.state == AttemptState::Absent);
                if !opens_in_turn {
                    out.push(at(C::SendChainMismatch, path));
                }
                let cutoff = send_cutoff_at(event.occurred_at, plan.key_retention_seconds);
                if cutoff != Some(event.send_cutoff_at) {
                    out.push(at(C::SendCutoffMismatch, path));
                }
                Replayed {
                    attempt: event.attempt,
                    state: AttemptState::Sending,
                    first_sent_at: event.occurred_at,
                    first_sent_fence_epoch: event.fence_epoch,
                    send_cutoff_at: event.send_cutoff_at,
                    last_sent_at: event.occurred_at,
                    last_sent_fence_epoch: event.fence_epoch,
                    outcome: None,
                    send_revision: event.send_revision,
                }
            }
            (_, None) => {
                out.push(at(C::SendChainMismatch, path));
                return None;
            }
            (kind, Some(previous)) => {
                if event.attempt != previous.attempt
                    || !kind.allows_from(Some(previous.state), event.attempt)
                    || event.occurred_at < previous.last_sent_at
                {
                    out.push(at(C::SendChainMismatch, path));
                }
                if event.send_cutoff_at != previous.send_cutoff_at {
                    out.push(at(C::SendCutoffMismatch, path));
                }
                let source = match kind {
                    SendEventType::Ambiguous
                    | SendEventType::ReplayedUnknown
                    | SendEventType::Indeterminate
                    | SendEventType::AwaitingCustomer
                    | SendEventType::Succeeded
                    | SendEventType::Declined => Some(OutcomeSource::ProviderAnswer),
                    SendEventType::Resent | SendEventType::Opened => None,
                    _ => Some(OutcomeSource::Reconciliation),
                };
                // Permits and a sender's `ambiguous`, `replayed_unknown`,
                // `indeterminate` or `awaiting_customer` come before the cutoff; a
                // sender's success or decline, and reconciliation, may follow it.
                let before_cutoff = matches!(
                    kind,
                    SendEventType::Resent
                        | SendEventType::Ambiguous
                        | SendEventType::ReplayedUnknown
                        | SendEventType::Indeterminate
                        | SendEventType::AwaitingCustomer
                );
                if before_cutoff && event.occurred_at >= previous.send_cutoff_at {
                    out.push(at(C::SendCutoffMismatch, path));
                }
                let sent = absence::Sent {
                    first_sent_at: previous.first_sent_at,
                    last_sent_at: previous.last_sent_at,
                    indeterminate: previous.state.indeterminate(),
                };
                if kind == SendEventType::ReconciledAbsent
                    && !absence::recorded_in_window(plan, sent, event.occurred_at)
                {
                    out.push(at(C::AbsenceNotProven, path));
                }
                match source {
                    None => {
                        if event.fence_epoch <= previous.last_sent_fence_epoch {
                            out.push(at(C::SendChainMismatch, path));
                        }
                        Replayed {
                            state: AttemptState::Sending,
                            last_sent_at: event.occurred_at,
                            last_sent_fence_epoch: event.fence_epoch,
                            outcome: None,
                            send_revision: event.send_revision,
                            ..previous
                        }
                    }
                    Some(source) => {
                        let fence_fits = match source {
                            OutcomeSource::ProviderAnswer => {
                                event.fence_epoch == previous.last_sent_fence_epoch
                            }
                            OutcomeSource::Reconciliation => {
                                event.fence_epoch >= previous.last_sent_fence_epoch
                            }
                        };
                        if !fence_fits {
                            out.push(at(C::SendChainMismatch, path));
                        }
                        Replayed {
                            state: kind.to_state(),
                            outcome: Some((event.occurred_at, event.fence_epoch, source)),
                            send_revision: event.send_revision,
                            ..previous
                        }
                    }
                }
            }
        };
        state = Some(next);
    }
    let first = events.first().map(|(_, _, e)| e);
    if let Some(first) = first
        && (first.occurred_at != plan.bound_at || first.fence_epoch != plan.bound_fence_epoch)
    {
        out.push(at(FindingCode::PlanNotImmutable, &bound_plan::path(hash)));
    }
    state
}

fn check_write_times(
    docs: &SendDocs<'_>,
    plan: &StoredDoc,
    current: &StoredDoc,
    out: &mut Vec<Finding>,
) {
    use FindingCode as C;
    let mut previous: Option<WriteTime> = None;
    for (revision, doc) in &docs.events {
        if doc.rewritten() || previous.is_some_and(|p| doc.created <= p) {
            out.push(at(C::SendCommitTimeMismatch, &doc.path));
        }
        if *revision == 1 && (doc.created != plan.created || current.created != plan.created) {
            out.push(at(C::PlanNotImmutable, &plan.path));
        }
        previous = Some(doc.created);
    }
    if let Some(last) = previous
        && current.updated != last
    {
        out.push(at(C::SendCommitTimeMismatch, &current.path));
    }
}

fn check_lifecycle(
    hash: &Digest,
    docs: &SendDocs<'_>,
    plan: &BoundPlan,
    current: &SendAttempt,
    out: &mut Vec<Finding>,
) {
    use FindingCode as C;
    let path = attempt::path(hash);
    let Some((lifecycle_doc, lifecycle)) = docs.lifecycle else {
        out.push(at(C::SendLifecycleMismatch, &path));
        return;
    };
    let fences_fit = plan.bound_fence_epoch <= current.first_sent_fence_epoch
        && current.last_sent_fence_epoch <= lifecycle.fence_epoch
        && current.updated_by() <= lifecycle.fence_epoch
        && lifecycle.created_at <= plan.bound_at;
    let closed_with = match current.state {
        AttemptState::Succeeded => Some(LifecycleState::Succeeded),
        AttemptState::Declined => Some(LifecycleState::FailedFinal),
        _ => None,
    };
    let terminal_fits = match closed_with {
        Some(state) => {
            lifecycle.state == state
                && current.outcome.is_some_and(|o| {
                    o.at == lifecycle.updated_at && o.fence_epoch == lifecycle.fence_epoch
                })
                && docs
                    .current
                    .is_some_and(|c| c.updated == lifecycle_doc.updated)
        }
        None => lifecycle.state == LifecycleState::Leased,
    };
    if !fences_fit || !terminal_fits {
        out.push(at(C::SendLifecycleMismatch, &path));
    }
}

#[cfg(test)]
mod tests;

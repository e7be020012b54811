//! An answer given to the settle program (a retrieve by id, an event, a backfill), and
//! which attempt of the command it is about: never the caller's word, but the attempt
//! whose key, derived from the stored plan's operation, is the key the evidence names.
//!
//! | the key the evidence names | the answer | what it does |
//! |---|---|---|
//! | the current attempt's, its outcome unknown, the command leased | any | weighed as a lookup's evidence ([`Named::Open`]), never an absence |
//! | the current attempt's, awaiting its customer, the command leased | `Closed` read by id just now ([`Given::closed_by_id`]) | weighed as a retrieve's: the command's final failure, nothing charged |
//! | an earlier attempt's, or the current one recorded absent | a charge | a late charge under that attempt ([`Named::Late`], [`Late::MovedOn`]) |
//! | | anything else | nothing written: [`Settled::NothingOpen`] |
//! | any attempt's, the command ended | a charge | a late charge under that attempt ([`Late::Ended`]; the command's own charge answers [`Settled::Ended`]) |
//! | | anything else | nothing written: [`Settled::Ended`] |
//! | no attempt's (another command's, a later attempt's, none bound) | any | refused, nothing written: `invalid_input` on `providerIdempotencyKey` |
//! | an attempt's other than the one the key index names (found through the index) | any | `journal_corrupt`, nothing written |

use super::{Late, Settled};
use crate::error::JournalError;
use crate::evidence::READ_BY_ID_FRESH_SECONDS;
use crate::identity::{CommandIdentity, OperationSlug};
use crate::lease::{CommandState, TerminalOutput};
use crate::sends::plan::attempt_key;
use crate::sends::provider::ProviderAnswer;
use crate::sends::{AttemptNumber, AttemptState, CommandStatus};
use crate::time::Timestamp;

/// An answer given to the settle program with the provider idempotency key the
/// evidence names (what the provider's object carries). `Debug` shows the answer,
/// never the key.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Given {
    /// The provider idempotency key the evidence names.
    pub(crate) key: String,
    /// What the provider holds for it.
    pub(crate) answer: ProviderAnswer,
    /// The attempt the key index names for the key, when it was found through it:
    /// the attempt proven from the stored plan must be that one.
    pub(crate) indexed: Option<AttemptNumber>,
    /// When the provider's adapter read the object by id for this answer (on the
    /// journal's clock), if it did: a fresh `Closed` so read ends an attempt that
    /// waits for its customer, as a retrieve's does ([`Given::closed_by_id`]).
    pub(crate) read_at: Option<Timestamp>,
}

impl Given {
    /// Whether the answer is `Closed`, read by id at most
    /// [`READ_BY_ID_FRESH_SECONDS`] before `now` and not after it: the object's
    /// own final state, seen just now, as a retrieve by id sees it.
    pub(crate) fn closed_by_id(&self, now: Timestamp) -> bool {
        let fresh = self.read_at.is_some_and(|at| {
            at <= now
                && now.micros().saturating_sub(at.micros())
                    <= READ_BY_ID_FRESH_SECONDS.saturating_mul(1_000_000)
        });
        self.answer == ProviderAnswer::Closed && fresh
    }
}

impl std::fmt::Debug for Given {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Given")
            .field("answer", &self.answer)
            .field("read_at", &self.read_at)
            .finish_non_exhaustive()
    }
}

/// What an answer given does, once the status read shows the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Named {
    /// The key of the attempt open now: weighed as a lookup's evidence.
    Open(AttemptNumber),
    /// A charge the command can no longer take as its outcome: recorded late under
    /// the attempt whose key it names.
    Late(AttemptNumber, Late),
    /// Nothing written.
    Done(Settled),
}

/// Which attempt of the command `status` shows the key of `given` names, its keys
/// derived for `identity` under `operation` (the stored plan's, `None` while none is
/// bound), and what the answer does to it (the table above). `operation` is proven
/// the stored one: the current attempt's key derived from it is the key the status
/// read derived from the stored plan.
pub(super) fn named(
    given: &Given,
    identity: &CommandIdentity,
    operation: Option<&OperationSlug>,
    status: &CommandStatus,
) -> Result<Named, JournalError> {
    let refused = || JournalError::invalid("providerIdempotencyKey");
    let (Some(send), Some(operation)) = (&status.send, operation) else {
        return Err(refused());
    };
    if attempt_key(identity, operation, send.attempt) != send.key {
        return Err(JournalError::internal(
            "settle: keys derived from another operation than the stored plan's",
        ));
    }
    let attempt = (1..=send.attempt.get())
        .filter_map(|n| AttemptNumber::new(n).ok())
        .find(|&n| attempt_key(identity, operation, n) == given.key)
        .ok_or_else(refused)?;
    if given.indexed.is_some_and(|indexed| indexed != attempt) {
        return Err(JournalError::corrupt(
            "a provider key index names another attempt than its key's",
        ));
    }
    let ended = match status.command.state {
        CommandState::Succeeded => Some(TerminalOutput::Succeeded),
        CommandState::FailedFinal => Some(TerminalOutput::FailedFinal),
        CommandState::Registered | CommandState::Leased => None,
    };
    let moved_on = attempt < send.attempt || send.state == AttemptState::Absent;
    Ok(match ended {
        None if !moved_on => Named::Open(attempt),
        _ if !given.answer.charged() => Named::Done(match ended {
            Some(_) => Settled::Ended(status.command.state),
            None => Settled::NothingOpen,
        }),
        Some(ended) => Named::Late(attempt, Late::Ended(ended)),
        None => Named::Late(attempt, Late::MovedOn),
    })
}

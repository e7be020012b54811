//! The journal's [`Provider`] over a [`Stripe`] client, for one payment (or for a
//! recovery job), noting for a log line whether Stripe was called and the code of the
//! last send that did not succeed.

use crate::answer::{self, RetrieveAnswer, SendAnswer};
use crate::charge::{Charge, InvalidParameters};
use crate::client::Stripe;
use crate::intent::Expected;
use crate::retrieve::Retrieval;
use command_journal::sends::{LookupRequest, RetrieveRequest};
use command_journal::{Provider, ProviderAnswer, SendRequest};
use serde_json::Value;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the provider sends.
enum Role {
    /// One payment: its charge (or why its parameters make none) and expectation.
    Request(Result<Charge, InvalidParameters>, Expected),
    /// A recovery job's: lookups by key alone, never a send.
    Recovery,
}

/// [`Provider`] for one payment ([`Stripe::payment`]) or a recovery job
/// ([`Stripe::recovery`]).
pub struct Payment<'a> {
    stripe: &'a Stripe,
    role: Role,
    called: AtomicBool,
    code: Mutex<Option<&'static str>>,
}

impl std::fmt::Debug for Payment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Payment")
            .field("called", &self.called())
            .field("code", &self.code())
            .finish_non_exhaustive()
    }
}

impl Stripe {
    /// The provider of one payment of `parameters` (the plan's).
    pub fn payment(&self, parameters: &Value) -> Payment<'_> {
        Payment::request(self, parameters)
    }

    /// The provider of a recovery job: lookups by key alone, and no send.
    pub fn recovery(&self) -> Payment<'_> {
        Payment::recovery(self)
    }
}

impl<'a> Payment<'a> {
    fn request(stripe: &'a Stripe, parameters: &Value) -> Self {
        let charge = Charge::from_parameters(parameters);
        let expected = match &charge {
            Ok(charge) => Expected::of(charge),
            Err(_) => Expected::key_only(),
        };
        Self::new(stripe, Role::Request(charge, expected))
    }

    fn recovery(stripe: &'a Stripe) -> Self {
        Self::new(stripe, Role::Recovery)
    }

    fn new(stripe: &'a Stripe, role: Role) -> Self {
        Self {
            stripe,
            role,
            called: AtomicBool::new(false),
            code: Mutex::new(None),
        }
    }

    /// Whether Stripe was asked anything (a send or a lookup).
    pub fn called(&self) -> bool {
        self.called.load(Ordering::Relaxed)
    }

    /// The code of the last send that did not succeed ([`SendAnswer::code`]), if any;
    /// `provider_timeout` for a send the journal stopped waiting for.
    pub fn code(&self) -> Option<&'static str> {
        *self.code.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, code: Option<&'static str>) {
        *self.code.lock().unwrap_or_else(|e| e.into_inner()) = code;
    }
}

impl Provider for Payment<'_> {
    async fn send(&self, request: SendRequest) -> ProviderAnswer {
        let Role::Request(charge, _) = &self.role else {
            // `Journal::recover` never sends: an ambiguous answer can never be taken
            // for a success.
            return ProviderAnswer::Unknown;
        };
        let charge = match charge {
            Ok(charge) => charge,
            // A re-send: an earlier holder sent this key, perhaps with a version that
            // took these parameters, and it may have charged. Never a decline.
            Err(_) if request.resend => {
                self.note(Some("invalid_parameters"));
                return ProviderAnswer::Unknown;
            }
            Err(_) => {
                // Nothing can be sent for these parameters, now or ever.
                self.note(Some("invalid_parameters"));
                return ProviderAnswer::Declined;
            }
        };
        self.called.store(true, Ordering::Relaxed);
        // Noted before the POST: a send the journal stops waiting for is a timeout.
        self.note(Some("provider_timeout"));
        let sent = self
            .stripe
            .create_and_confirm(&request.key, charge, request.deadline)
            .await;
        self.note(match &sent {
            SendAnswer::Succeeded(_) => None,
            other => Some(other.code()),
        });
        if let SendAnswer::ReplayedOpen(id) = &sent {
            // A replay of an open intent is the first answer's state: its current one
            // is read by id at once, and the key is never sent again for it.
            let expected = Expected::of(charge);
            let now = self
                .stripe
                .retrieve_by_id(id, &request.key, &expected, request.deadline)
                .await;
            self.note(match &now {
                RetrieveAnswer::Succeeded(_) => None,
                other => Some(other.code()),
            });
            return answer::retrieve_result(now);
        }
        answer::send_result(sent)
    }

    async fn lookup(&self, request: LookupRequest) -> ProviderAnswer {
        let key = request.key.as_str();
        let expected = match &self.role {
            Role::Request(Ok(_), expected) => expected,
            // Parameters this version cannot send may have been sent by another (a
            // re-send of them is unknown, never a decline): the key alone says whose
            // intent it is, as for a recovery job.
            Role::Request(Err(_), _) => &Expected::key_only(),
            Role::Recovery => &Expected::key_only(),
        };
        self.called.store(true, Ordering::Relaxed);
        answer::lookup_result(self.stripe.find(key, expected).await)
    }

    async fn retrieve(&self, request: RetrieveRequest) -> ProviderAnswer {
        // The plan's parameters say what a re-send of the key repeats; a recovery job
        // has them too. Parameters this version cannot read find the intent by the
        // key alone, through the lookup (never a re-send of other bytes).
        let charge = Charge::from_parameters(&request.parameters).ok();
        let expected = charge
            .as_ref()
            .map_or_else(Expected::key_only, Expected::of);
        // A re-send of a create-and-confirm may charge (if the first never ran): a
        // recovery job, which never sends, finds the intent through the lookup.
        let sends = matches!(self.role, Role::Request(..));
        let retrieval = Retrieval {
            replayable: request.replayable && charge.is_some() && sends,
            cancel: request.cancel,
            end_refusal: request.end_refusal,
            deadline: request.deadline,
        };
        self.called.store(true, Ordering::Relaxed);
        let now = self
            .stripe
            .retrieve_intent(&request.key, charge.as_ref(), &expected, retrieval)
            .await;
        self.note(match &now {
            RetrieveAnswer::Succeeded(_) => None,
            other => Some(other.code()),
        });
        answer::retrieve_result(now)
    }
}

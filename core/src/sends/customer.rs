//! What the customer must do for a payment to go on (3-D Secure, a hosted page): the
//! action a provider answers with [`ProviderAnswer::CustomerMustAct`](super::provider::ProviderAnswer::CustomerMustAct)
//! and `Journal::execute` hands to the caller. The secret part of it, a [`Handoff`], is
//! never stored, logged, serialized or shown by `Debug`.

use crate::error::JournalError;

/// A value the customer's browser needs and nothing else may see (a client secret, a
/// hosted page's URL): never stored, logged, serialized or shown by `Debug`/`Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Handoff(String);

impl Handoff {
    /// Wraps the value the customer's browser needs.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, for the response to the customer's browser only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handoff(<redacted>)")
    }
}

/// What the customer must do for the payment to go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerAction {
    /// Confirm in the browser with the provider's SDK (Stripe.js `handleNextAction`
    /// with the PaymentIntent's client secret); `next_action` is the provider's name of
    /// the action (Stripe's `next_action.type`, e.g. `use_stripe_sdk`, `redirect_to_url`).
    Confirm {
        /// The secret the browser confirms with.
        client_secret: Handoff,
        /// The provider's name of the action.
        next_action: ActionName,
    },
    /// Open the page the provider hosts (a Stripe Checkout Session's `url`).
    Open {
        /// The page's address.
        url: Handoff,
    },
}

/// A provider's name of a next action: 1 to 64 of `[a-z0-9_]` (not secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionName(String);

impl ActionName {
    /// The name, if it is 1 to 64 of `[a-z0-9_]`; `invalid_input` naming `nextAction`
    /// otherwise.
    pub fn new(name: &str) -> Result<Self, JournalError> {
        let valid = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if valid {
            Ok(Self(name.to_owned()))
        } else {
            Err(JournalError::invalid("nextAction"))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::{ActionName, CustomerAction, Handoff};
    use crate::error::JournalError;

    #[test]
    fn a_handoff_never_shows_in_debug() {
        let action = CustomerAction::Confirm {
            client_secret: Handoff::new("pi_canary_secret_canary"),
            next_action: ActionName::new("use_stripe_sdk").unwrap(),
        };
        let shown = format!("{action:?} {:?}", Handoff::new("https://canary.example/c"));
        assert!(!shown.contains("canary"), "{shown}");
        assert!(shown.contains("Handoff(<redacted>)"));
        assert!(shown.contains("use_stripe_sdk"));
        assert_eq!(Handoff::new("x").expose(), "x");
    }

    #[test]
    fn action_names_are_a_closed_alphabet() {
        for good in ["use_stripe_sdk", "redirect_to_url", "a", &"a".repeat(64)] {
            assert_eq!(ActionName::new(good).unwrap().as_str(), good);
        }
        for bad in ["", "Use", "a-b", "a b", &"a".repeat(65), "é"] {
            assert_eq!(
                ActionName::new(bad),
                Err(JournalError::invalid("nextAction"))
            );
        }
    }
}

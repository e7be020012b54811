//! What the customer's browser needs for a payment to go on, as Stripe answered it: a
//! PaymentIntent's client secret and the kind of its next action, or a Checkout
//! Session's hosted page. Neither is ever logged, stored, or shown by `Debug`.

use std::fmt;

/// What the customer must do, in this package's terms (the journal's
/// `CustomerAction` once handed over: [`crate::answer::send_result`]).
#[derive(Clone, PartialEq, Eq)]
pub enum CustomerStep {
    /// Confirm the PaymentIntent in the browser (Stripe.js `handleNextAction` with its
    /// client secret): `next_action` is Stripe's `next_action.type`
    /// (`use_stripe_sdk`, `redirect_to_url`, ...).
    Confirm {
        /// The intent's `client_secret`.
        client_secret: String,
        /// Its `next_action.type`.
        next_action: String,
    },
    /// Open the Checkout Session's hosted page (its `url`).
    Open {
        /// The session's `url`.
        url: String,
    },
}

impl fmt::Debug for CustomerStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The client secret and the page's URL go to the customer's browser only.
        match self {
            Self::Confirm { next_action, .. } => f
                .debug_struct("Confirm")
                .field("client_secret", &"<redacted>")
                .field("next_action", next_action)
                .finish(),
            Self::Open { .. } => f.debug_struct("Open").field("url", &"<redacted>").finish(),
        }
    }
}

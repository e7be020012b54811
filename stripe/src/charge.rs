//! What a create-and-confirm sends: the plan's parameters as Stripe's form.

use serde_json::Value;
use std::fmt;

/// The largest amount Stripe takes (eight digits in the smallest currency unit).
pub const MAX_AMOUNT: i64 = 99_999_999;

/// One PaymentIntent's parameters, read from the plan's: `amount` (a positive integer in
/// the currency's smallest unit, at most [`MAX_AMOUNT`]), `currency` (three ASCII
/// letters, sent in lowercase) and an optional `paymentMethod` (a Stripe payment method
/// id). Every other parameter stays with the journal: it is never sent to Stripe.
#[derive(Clone, PartialEq, Eq)]
pub struct Charge {
    amount: i64,
    currency: String,
    payment_method: Option<String>,
}

impl fmt::Debug for Charge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The payload's values stay out of logs.
        f.debug_struct("Charge").finish_non_exhaustive()
    }
}

/// Parameters no intent can be made from; names the parameter, never its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidParameters {
    /// `amount`, `currency` or `paymentMethod` (`parameters` when they are no object).
    pub field: &'static str,
}

impl fmt::Display for InvalidParameters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the plan's {} cannot be sent to Stripe", self.field)
    }
}

impl std::error::Error for InvalidParameters {}

impl Charge {
    /// Reads `amount`, `currency` and `paymentMethod` from `parameters`.
    pub fn from_parameters(parameters: &Value) -> Result<Self, InvalidParameters> {
        let invalid = |field| InvalidParameters { field };
        let object = parameters.as_object().ok_or(invalid("parameters"))?;
        let amount = object
            .get("amount")
            .and_then(Value::as_i64)
            .filter(|amount| (1..=MAX_AMOUNT).contains(amount))
            .ok_or(invalid("amount"))?;
        let currency = object
            .get("currency")
            .and_then(Value::as_str)
            .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_alphabetic()))
            .ok_or(invalid("currency"))?
            .to_ascii_lowercase();
        let payment_method = match object.get("paymentMethod") {
            None => None,
            Some(Value::String(id))
                if (1..=255).contains(&id.len())
                    && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                Some(id.clone())
            }
            Some(_) => return Err(invalid("paymentMethod")),
        };
        Ok(Self {
            amount,
            currency,
            payment_method,
        })
    }

    /// The amount, in the currency's smallest unit.
    pub fn amount(&self) -> i64 {
        self.amount
    }

    /// The currency, lowercase.
    pub fn currency(&self) -> &str {
        &self.currency
    }

    /// The form of `POST /v1/payment_intents` under `key`, in a fixed order (a re-send
    /// sends the same bytes, as Stripe's parameter check wants): create and confirm at
    /// once, cards only (so that a server-side confirm needs no `return_url`), and the
    /// key in the metadata, where the lookup finds it.
    pub fn form(&self, key: &str) -> Vec<(&'static str, String)> {
        let mut form = vec![
            ("amount", self.amount.to_string()),
            ("currency", self.currency.clone()),
            ("confirm", "true".to_owned()),
        ];
        if let Some(payment_method) = &self.payment_method {
            form.push(("payment_method", payment_method.clone()));
        }
        form.push(("payment_method_types[0]", "card".to_owned()));
        form.push(("metadata[journal_key]", key.to_owned()));
        form
    }
}

//! The adapter's client as the webhook settlement's reader of an object by id
//! ([`ReadById`]): `GET /v1/payment_intents/{id}` or `GET /v1/checkout/sessions/{id}`,
//! read after write, with the client's key, version and account.

use crate::client::Stripe;
use crate::webhook::{ObjectKind, ObjectRef, ReadById};
use reqwest::Method;

impl ReadById for Stripe {
    async fn read(&self, object: &ObjectRef) -> Option<String> {
        let collection = match object.kind() {
            ObjectKind::PaymentIntent => "payment_intents",
            ObjectKind::CheckoutSession => "checkout/sessions",
        };
        // An `ObjectRef`'s id is its kind's prefix and `[A-Za-z0-9_]`: a path
        // segment as it is.
        let path = format!("/v1/{collection}/{}", object.id());
        let answered = self
            .call(Method::GET, &path, None, None, self.config().timeout)
            .await
            .ok()?;
        (answered.status == reqwest::StatusCode::OK).then_some(answered.body)
    }
}

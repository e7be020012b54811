//! The handler of README.md, "Using it in a handler", compiled: the block below the
//! marker is the README's, character for character (`the_readme_handler_is_the_compiled_example`
//! in `src/surface.rs` checks it). `cargo run --bin readme-handler`
//! only checks that it builds and links.

// README block
use command_journal::{
    CommandInput, CommandRequest, Connection, Execution, Journal, JournalError, Target,
};
use command_journal_stripe::{Account, SecretKey, Stripe, StripeConfig};
use serde_json::Value;

/// One checkout: at most one PaymentIntent per caller and command id, whatever retries.
/// Answers the HTTP status, the `Retry-After` seconds (if any) and the JSON body of the
/// checkout service's table (examples/checkout-service/README.md, "Answers").
async fn checkout(
    journal: &Journal,
    stripe: &Stripe,
    uid: &str,        // the verified caller
    command_id: &str, // the client's idempotency key, a UUID v4
    payload: &Value,  // {"amount": 1250, "currency": "eur", "paymentMethod": "pm_…", …}
) -> Result<(u16, Option<u64>, String), JournalError> {
    let command = CommandInput::new(CommandRequest {
        environment: "production",
        caller_scope_kind: "member",
        caller_id: uid,
        command_id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload,
    })?;
    // Binds Stripe, the account, the key's mode, the API version and the payload.
    let plan = stripe.plan(payload)?;
    let provider = stripe.payment(payload); // Stripe PaymentIntents under the journal's key
    let (status, retry_after, body) = match journal.execute(&command, &plan, &provider).await? {
        Execution::Succeeded(intent) => {
            let body = format!(
                r#"{{"status":"succeeded","charge":{}}}"#,
                intent.canonical()
            );
            return Ok((200, None, body));
        }
        Execution::SucceededWithoutResult => (200, None, r#"{"status":"succeeded"}"#),
        Execution::Declined => (402, None, r#"{"status":"failed"}"#),
        Execution::InProgress => (409, Some(2), r#"{"status":"in_progress"}"#),
        // Whole seconds, at least 1: until the lease this call holds expires.
        Execution::RetryLater { after } => (503, Some(after.as_secs()), r#"{"status":"retry"}"#),
        Execution::PendingReconciliation => {
            (202, Some(60), r#"{"status":"pending_reconciliation"}"#)
        }
        // 3-D Secure or a hosted page: the browser acts on `action`, then calls again.
        Execution::CustomerMustAct(_action) => (202, None, r#"{"status":"customer_must_act"}"#),
    };
    Ok((status, retry_after, body.to_owned()))
}

/// The Stripe client: the secret key (never logged), the account the intents are
/// made on, and the `Stripe-Version` every request pins.
fn stripe() -> Result<Stripe, Box<dyn std::error::Error>> {
    let key = SecretKey::new(&std::env::var("STRIPE_SECRET_KEY")?)?;
    let config = StripeConfig::new(key, "2026-01-28.clover", Account::Own("acct_1234".into()));
    Ok(Stripe::new(config)?)
}

async fn connect() -> Result<Journal, JournalError> {
    // Application Default Credentials: on Cloud Run, the service account.
    Ok(Journal::new(
        Connection::connect("my-project", Target::Production).await?,
    ))
}
// end of README block

#[tokio::main]
async fn main() {
    // Referenced so that the example links every function of the README's block.
    let _ = (checkout, connect, stripe);
}

//! The handler of README.md, "Using it in a handler", compiled: the block below the
//! marker is the README's, character for character (`the_readme_handler_is_the_compiled_example`
//! in `src/surface.rs` checks it). `cargo run --release --bin readme-handler`
//! only checks that it builds and links.

// README block
use command_journal::{
    CommandInput, CommandRequest, Connection, Execution, Journal, JournalError, Provider,
    ProviderAnswer, ProviderPlan, ProviderPlanRequest, ResultEnvelope, SendRequest, Target,
};
use serde_json::Value;

/// The payment provider behind the journal's two calls: a charge under the journal's
/// idempotency key, and a lookup of that key.
struct Charges {
    http: reqwest::Client,
    base_url: String,
    expected: Value, // the request's parameters: its amount and currency
}

impl Provider for Charges {
    async fn send(&self, request: SendRequest<'_>) -> ProviderAnswer {
        let sent = self
            .http
            .post(format!("{}/v1/charges", self.base_url))
            .header("Idempotency-Key", request.key) // the journal's key for this attempt
            .json(request.parameters)
            .timeout(request.deadline) // ends before the lease does
            .send()
            .await;
        match sent {
            Ok(answer) if answer.status().is_success() => match answer.json::<Value>().await {
                // A final success of this request only: it becomes the stored result,
                // replayed byte for byte. Anything else is unknown: sent again later.
                Ok(charge)
                    if charge["status"] == "succeeded" && self.owns(&charge, request.key) =>
                {
                    ResultEnvelope::new(&charge)
                        .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded)
                }
                _ => ProviderAnswer::Unknown,
            },
            Ok(answer) if answer.status().as_u16() == 402 => ProviderAnswer::Declined,
            // A 5xx, a timeout, a lost connection: the retry sends again with the same key.
            _ => ProviderAnswer::Unknown,
        }
    }

    async fn lookup(&self, key: &str) -> ProviderAnswer {
        let url = format!("{}/v1/charges?idempotency_key={key}", self.base_url);
        let page = match self.http.get(url).send().await {
            Ok(answer) if answer.status().is_success() => answer.json::<Value>().await.ok(),
            _ => None,
        };
        match page
            .as_ref()
            .and_then(|page| page["data"].as_array())
            .map(Vec::as_slice)
        {
            Some([]) => ProviderAnswer::NotFound,
            // Evidence only for a charge of this request, under this key.
            Some([charge]) if !self.owns(charge, key) => ProviderAnswer::Unknown,
            Some([charge]) if charge["status"] == "succeeded" => ResultEnvelope::new(charge)
                .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
            Some([charge]) if charge["status"] == "failed" => ProviderAnswer::Declined,
            _ => ProviderAnswer::Unknown,
        }
    }
}

impl Charges {
    /// Whether `charge` is this request's: its amount and currency, and the key the
    /// provider recorded with it.
    fn owns(&self, charge: &Value, key: &str) -> bool {
        charge["amount"] == self.expected["amount"]
            && charge["currency"] == self.expected["currency"]
            && charge["metadata"]["journal_key"] == key
    }
}

/// One checkout: at most one charge per caller and command id, whatever retries.
async fn checkout(
    journal: &Journal,
    provider: &Charges,
    uid: &str,        // the verified caller
    command_id: &str, // the client's idempotency key, a UUID v4
    payload: &Value,
) -> Result<(u16, String), JournalError> {
    let command = CommandInput::new(CommandRequest {
        environment: "production",
        caller_scope_kind: "member",
        caller_id: uid,
        command_id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload,
    })?;
    let plan = ProviderPlan::new(ProviderPlanRequest {
        provider: "acme",
        account: "acct_1234",
        mode: "live",
        api_version: "2026-01-01",
        operation: "charge",
        endpoint: "POST /v1/charges",
        parameters: payload,
        key_retention_seconds: 86_400, // how long the provider keeps a key
    })?;
    Ok(match journal.execute(&command, &plan, provider).await? {
        Execution::Succeeded(charge) => (200, charge.canonical().to_owned()),
        Execution::SucceededWithoutResult => (200, r#"{"status":"succeeded"}"#.to_owned()),
        Execution::Declined => (402, r#"{"status":"declined"}"#.to_owned()),
        Execution::InProgress => (409, r#"{"status":"in_progress"}"#.to_owned()),
        Execution::RetryLater { after } => {
            (503, format!(r#"{{"retryAfter":{}}}"#, after.as_secs()))
        }
        Execution::PendingReconciliation => (202, r#"{"status":"pending"}"#.to_owned()),
    })
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
    let _ = (checkout, connect);
}

//! The recovery job: `checkout-service recover` settles every checkout whose charge
//! outcome is unknown (its request crashed, timed out or was abandoned, and its client
//! never came back) from the provider's evidence, through `Journal::recover`, with the
//! same provider and configuration as the service. Run it as a Cloud Run job on a
//! schedule (`README.md` beside `main.rs`).
//!
//! One log line per command handled (its key hash and outcome, never a raw id) and one
//! summary line (the pending commands by reason, the count of each outcome, the cursor
//! to resume from): a job is not scraped, so these are its metrics (the library's
//! `command_journal_pending_commands` and `command_journal_recoveries_total`, as
//! log-based metrics). It exits 0 when every command was handled (settled or left listed
//! for a reason) and 1 when a command's recovery or the listing failed, or a command's
//! plan was bound to another provider account than the job's (`other_account`: a job
//! configured for the wrong account, or commands of an account the service no longer
//! uses, which only a person settles).
//!
//! The job declares the service's provider account (`PROVIDER_NAME`,
//! `PROVIDER_ACCOUNT`, `PROVIDER_MODE`) as `RecoverOptions::account`: its "not found"
//! then records an attempt's absence where the command's plan was bound to that
//! account, once the absence is provable, as the service's own lookups do.

use super::config::ConfigError;
use super::logging::{Logger, Severity};
use super::provider::{Charges, Expected, Looked};
use command_journal::identity::Digest;
use command_journal::pending::Unblock;
use command_journal::recovery::{RecoverOptions, Recovered, Recovery};
use command_journal::{Journal, Provider, ProviderAnswer, ResultEnvelope, SendRequest};
use serde_json::{Map, Value, json};

/// The job's own settings, beside the service's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSettings {
    /// `RECOVERY_CONCURRENCY` (default 4, at most 64), `RECOVERY_PER_SECOND`
    /// (default 10, at most 10000), `RECOVERY_AFTER` (a cursor, 64 lowercase hex) and
    /// `RECOVERY_LIMIT` (commands this run, unbounded when unset).
    pub options: RecoverOptions,
}

fn refuse(variable: &'static str, problem: &'static str) -> ConfigError {
    ConfigError { variable, problem }
}

impl JobSettings {
    /// Reads the job's settings through `get` (empty values count as unset).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| get(name).filter(|value| !value.trim().is_empty());
        let mut options = RecoverOptions::default();
        if let Some(text) = get("RECOVERY_CONCURRENCY") {
            options.concurrency = text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=command_journal::recovery::MAX_CONCURRENCY).contains(n))
                .ok_or(refuse("RECOVERY_CONCURRENCY", "must be 1 to 64"))?;
        }
        if let Some(text) = get("RECOVERY_PER_SECOND") {
            options.per_second = Some(
                text.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=command_journal::recovery::MAX_PER_SECOND).contains(n))
                    .ok_or(refuse("RECOVERY_PER_SECOND", "must be 1 to 10000"))?,
            );
        }
        if let Some(text) = get("RECOVERY_AFTER") {
            options.after = Some(Digest::parse(text.trim()).ok_or(refuse(
                "RECOVERY_AFTER",
                "must be a command key hash (64 lowercase hex)",
            ))?);
        }
        if let Some(text) = get("RECOVERY_LIMIT") {
            options.limit = Some(
                text.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or(refuse("RECOVERY_LIMIT", "must be a whole number from 1"))?,
            );
        }
        Ok(Self { options })
    }
}

/// The library's [`Provider`] for the recovery job: lookups only, each checked
/// against the key alone ([`Expected::key_only`]: the job holds no parameters).
/// `Journal::recover` never sends; `send` answers ambiguous, so that a send could
/// never be taken for a success.
pub struct RecoveryProvider<'a> {
    charges: &'a Charges,
}

impl<'a> RecoveryProvider<'a> {
    /// Lookups over `charges`.
    pub fn new(charges: &'a Charges) -> Self {
        Self { charges }
    }
}

impl Provider for RecoveryProvider<'_> {
    async fn send(&self, _request: SendRequest<'_>) -> ProviderAnswer {
        ProviderAnswer::Unknown
    }

    async fn lookup(&self, key: &str) -> ProviderAnswer {
        match self.charges.lookup(key, &Expected::key_only()).await {
            Looked::Found(fields) => ResultEnvelope::new(&Value::Object(fields))
                .map_or(ProviderAnswer::Unknown, ProviderAnswer::Succeeded),
            Looked::Declined => ProviderAnswer::Declined,
            Looked::NotFound => ProviderAnswer::NotFound,
            Looked::Unavailable(_) => ProviderAnswer::Unknown,
        }
    }
}

/// Runs one recovery over `journal` with `charges`, logging each command and a
/// summary; the report, or `None` when the listing failed (logged).
pub async fn run(
    journal: &Journal,
    charges: &Charges,
    settings: &JobSettings,
    logger: &Logger,
) -> Option<Recovery> {
    run_with(journal, &RecoveryProvider::new(charges), settings, logger).await
}

/// [`run`] with any lookup-only provider (Stripe's, `Stripe::recovery`).
pub async fn run_with<P: Provider>(
    journal: &Journal,
    provider: &P,
    settings: &JobSettings,
    logger: &Logger,
) -> Option<Recovery> {
    let ran = journal
        .recover(provider, &settings.options, |progress| {
            let mut fields = Map::new();
            fields.insert(
                "commandKeyHash".into(),
                json!(progress.command.command_key_hash.as_str()),
            );
            let (severity, outcome) = match &progress.command.outcome {
                Ok(Recovered::OtherAccount) => (Severity::Error, Recovered::OtherAccount.as_str()),
                Ok(outcome) => (Severity::Info, outcome.as_str()),
                Err(error) => (Severity::Error, error.code()),
            };
            fields.insert("outcome".into(), json!(outcome));
            fields.insert("done".into(), json!(progress.done));
            fields.insert("total".into(), json!(progress.total));
            logger.log(severity, "recovered", None, fields);
        })
        .await;
    match ran {
        Ok(report) => {
            logger.log(
                if succeeded(&report) {
                    Severity::Info
                } else {
                    Severity::Error
                },
                "recovery finished",
                None,
                summary(&report),
            );
            Some(report)
        }
        Err(error) => {
            let mut fields = Map::new();
            fields.insert("error".into(), json!(error.code()));
            logger.log(Severity::Error, "recovery failed", None, fields);
            None
        }
    }
}

/// Whether the run handled every command without an error and found no command
/// bound to another account: the job's exit status.
pub fn succeeded(report: &Recovery) -> bool {
    report.errors() == 0 && report.count(Recovered::OtherAccount) == 0
}

/// The summary line's fields: commands listed and handled, the count of each
/// outcome, the errors, and the cursor to resume from (`null` when done).
pub fn summary(report: &Recovery) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("listed".into(), json!(report.pending.len()));
    let mut waiting = Map::new();
    for reason in Unblock::ALL {
        waiting.insert(reason.as_str().into(), json!(report.waiting(reason)));
    }
    fields.insert("pending".into(), Value::Object(waiting));
    fields.insert("handled".into(), json!(report.commands.len()));
    let mut outcomes = Map::new();
    for outcome in Recovered::ALL {
        outcomes.insert(outcome.as_str().into(), json!(report.count(outcome)));
    }
    fields.insert("outcomes".into(), Value::Object(outcomes));
    fields.insert("errors".into(), json!(report.errors()));
    fields.insert(
        "cursor".into(),
        json!(report.cursor.as_ref().map(Digest::as_str)),
    );
    fields
}

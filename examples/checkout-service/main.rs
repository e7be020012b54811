//! A Cloud Run checkout service on the command journal.
//!
//! `POST /v1/checkouts` charges a Firebase-authenticated caller at most once per
//! command id through `Journal::execute`: the fenced lease, the permit recorded
//! before the POST, the provider's idempotency key, the outcome under the fence, the
//! lookup past the send cutoff and the stored charge on every replay. Configured from
//! the environment (see `service::config`), metrics at `GET /metrics`; run with
//! `cargo run --release --bin checkout-service` (`README.md` beside this file).
//!
//! `checkout-service recover` runs the recovery job instead (`service::recovery`):
//! with the same configuration, it settles every checkout whose charge outcome is
//! unknown from the provider's evidence, then exits. On Stripe it first backfills the
//! events since its checkpoint from the Events API (`service::event_backfill`).
//!
//! With `STRIPE_WEBHOOK_SECRET` set, the service also takes Stripe's signed events at
//! `POST /webhooks/stripe` (`service::webhook`, docs/webhooks.md).

mod service;

use command_journal::Connection;
use command_journal::Journal;
use command_journal::identity::Environment;
use serde_json::{Map, Value, json};
use service::auth::GoogleKeys;
use service::backend::Backend;
use service::config::Config;
use service::handler::App;
use service::logging::{Logger, Severity, TracingLayer};
use service::recovery::JobSettings;
use service::server;
use service::shutdown;
use service::webhook::{WebhookSettings, Webhooks};
use std::process::ExitCode;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// What the process was asked to do.
enum Mode {
    /// Serve checkouts (no argument).
    Serve,
    /// Run the recovery job once (`recover`), backfilling Stripe's events of the
    /// window first.
    Recover(JobSettings, i64),
}

fn main() -> ExitCode {
    let mode = match std::env::args().nth(1).as_deref() {
        None => Mode::Serve,
        Some("recover") => {
            match JobSettings::from_lookup(|name| std::env::var(name).ok()).and_then(|settings| {
                let window = service::event_backfill::window(|name| std::env::var(name).ok())?;
                Ok((settings, window))
            }) {
                Ok((settings, window)) => Mode::Recover(settings, window),
                Err(error) => {
                    eprintln!("{error}");
                    return ExitCode::from(1);
                }
            }
        }
        Some(_) => {
            eprintln!("usage: checkout-service [recover]");
            return ExitCode::from(2);
        }
    };
    let config = match Config::from_env() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(1);
        }
    };
    // Validated at start-up, never printed (its error names the variable only).
    let webhooks = match WebhookSettings::from_lookup(|name| std::env::var(name).ok(), &config) {
        Ok(webhooks) => webhooks,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(1);
        }
    };
    // A test build's planted defect (`service::plant`); never in a deployed build.
    let plant = match service::plant::install(config.environment) {
        Ok(plant) => plant,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("start-up error: the async runtime could not start: {error}");
            return ExitCode::from(1);
        }
    };
    match mode {
        Mode::Serve => runtime.block_on(run(config, webhooks, plant)),
        Mode::Recover(settings, window) => {
            runtime.block_on(recover(config, settings, window, plant))
        }
    }
}

/// What a process states of its start in emulator mode (`None` otherwise), for the
/// soak to compare with what it drew: the offset of the journal's clock from the
/// system's, measured on the journal itself, and the planted defect, if any.
fn stated(config: &Config, journal: &Journal, plant: Option<&str>) -> Option<Map<String, Value>> {
    if config.environment != Environment::Emulator {
        return None;
    }
    let mut fields = Map::new();
    if let Some(offset) = service::clock::applied_offset_ms(journal) {
        fields.insert("clockOffsetMs".into(), json!(offset));
    }
    if let Some(plant) = plant {
        fields.insert("plant".into(), json!(plant));
    }
    Some(fields)
}

/// The journal's clock, which the provider's client reads too (a Checkout Session's
/// `expires_at` is clamped against it): the system clock, moved by
/// `JOURNAL_CLOCK_OFFSET_MS` in emulator mode as the journal's is.
fn journal_clock(config: &Config) -> Arc<dyn command_journal::Clock> {
    let offset = config.clock_offset.unwrap_or_default();
    Arc::new(service::clock::OffsetClock::new(offset))
}

/// The recovery job: one run over every pending checkout, then exit.
async fn recover(
    config: Config,
    settings: JobSettings,
    window: i64,
    plant: Option<&str>,
) -> ExitCode {
    let logger = Logger::stdout(&config.project);
    let _ = tracing_subscriber::registry()
        .with(TracingLayer(logger.clone()))
        .try_init();
    let fail = |message: &str| {
        logger.log(Severity::Error, message, None, Map::new());
        ExitCode::from(1)
    };
    let connection = match Connection::connect(&config.project, config.target.clone()).await {
        Ok(connection) => connection,
        Err(_) => return fail("start-up error: Firestore could not be reached"),
    };
    let Some(backend) = Backend::new(&config) else {
        return fail("start-up error: the HTTP client could not be built");
    };
    let backend = backend.with_clock(journal_clock(&config));
    let journal = service::clock::with_offset(Journal::new(connection), config.clock_offset)
        .with_concurrency(config.concurrency);
    let policy = command_journal::RetryPolicy {
        deadline: Some(config.firestore_deadline),
        ..journal.retry_policy()
    };
    let journal = journal.with_retry_policy(policy);
    if let Some(fields) = stated(&config, &journal, plant) {
        logger.log(Severity::Info, "recovery starting", None, fields);
    }
    // The lookups ask the service's own account: declared, a "not found" proves an
    // absence where a command's plan was bound to it.
    let mut settings = settings;
    settings.options.account = match backend.account() {
        Ok(account) => Some(account),
        Err(_) => return fail("start-up error: the provider account is invalid"),
    };
    let mut backfilled = true;
    let report = match &backend {
        Backend::Charges(charges, _) => {
            service::recovery::run(&journal, charges, &settings, &logger).await
        }
        Backend::Stripe(stripe) => {
            // The events first: what one settles costs no lookup.
            let Ok(now) = journal.now() else {
                return fail("start-up error: the journal's clock could not be read");
            };
            let events =
                service::event_backfill::run(&journal, stripe, now.seconds(), window, &logger)
                    .await;
            backfilled = events.clean();
            // A checkpoint the journal cannot read (malformed): the job refuses,
            // writing nothing, its lookups included.
            if events.from.is_none() {
                return ExitCode::from(1);
            }
            let provider = stripe.recovery();
            service::recovery::run_with(&journal, &provider, &settings, &logger).await
        }
        Backend::Checkout(stripe, pages) => {
            let provider = stripe.checkout_recovery(pages);
            service::recovery::run_with(&journal, &provider, &settings, &logger).await
        }
    };
    // A rollback the job could not deliver is the reaper's: let it finish first.
    let _ = tokio::time::timeout(shutdown::REAPING, journal.reaped()).await;
    match service::recovery::exit_status(report.as_ref()) {
        // Events left untaken fail a run that was otherwise clean.
        0 if !backfilled => ExitCode::from(1),
        status => ExitCode::from(status),
    }
}

async fn run(config: Config, webhooks: Option<WebhookSettings>, plant: Option<&str>) -> ExitCode {
    let logger = Logger::stdout(&config.project);
    let _ = tracing_subscriber::registry()
        .with(TracingLayer(logger.clone()))
        .try_init();
    let fail = |message: &str| {
        logger.log(Severity::Error, message, None, Map::new());
        ExitCode::from(1)
    };

    let connection = match Connection::connect(&config.project, config.target.clone()).await {
        Ok(connection) => connection,
        Err(_) => return fail("start-up error: Firestore could not be reached"),
    };
    let journal = service::clock::with_offset(Journal::new(connection), config.clock_offset)
        .with_concurrency(config.concurrency);
    let keys = Arc::new(GoogleKeys::new(reqwest::Client::new()));
    let Some(metrics) = service::metrics::install(service::metrics::recorder()) else {
        return fail("start-up error: the metrics recorder could not be installed");
    };
    let stated_fields = stated(&config, &journal, plant).unwrap_or_default();
    let reaper = journal.clone();
    let webhooks = match webhooks {
        None => None,
        Some(settings) => match Webhooks::new(settings, &config, journal.clone(), logger.clone()) {
            Some(webhooks) => Some(Arc::new(webhooks)),
            None => return fail("start-up error: the Stripe client could not be built"),
        },
    };
    let app = match App::new(&config, journal, keys, logger.clone(), metrics) {
        Ok(app) => Arc::new(app.with_provider_clock(journal_clock(&config))),
        Err(_) => return fail("start-up error: the HTTP client could not be built"),
    };
    let listener = match tokio::net::TcpListener::bind((config.bind_address, config.port)).await {
        Ok(listener) => listener,
        Err(_) => return fail("start-up error: PORT could not be bound"),
    };
    let port = listener
        .local_addr()
        .map(|a| a.port())
        .unwrap_or(config.port);
    let mut fields = Map::new();
    fields.insert("port".into(), json!(port));
    fields.insert(
        "loopbackOnly".into(),
        json!(config.bind_address.is_loopback()),
    );
    fields.insert("environment".into(), json!(config.environment.as_str()));
    fields.insert("unsignedTokensAccepted".into(), json!(config.auth_emulator));
    fields.insert("concurrency".into(), json!(config.concurrency.as_str()));
    fields.insert("flow".into(), json!(config.flow.as_str()));
    fields.insert("stripeWebhooks".into(), json!(webhooks.is_some()));
    fields.extend(stated_fields);
    logger.log(Severity::Info, "listening", None, fields);

    let router = match webhooks {
        Some(webhooks) => app.router().merge(webhooks.router()),
        None => app.router(),
    };
    let served = server::serve(
        listener,
        router,
        config.http,
        logger.clone(),
        shutdown::signal(),
        shutdown::DRAIN,
    )
    .await;
    // The transactions dropped requests left open are rolled back before the
    // runtime stops (the reaper's tasks stop with it).
    if tokio::time::timeout(shutdown::REAPING, reaper.reaped())
        .await
        .is_err()
    {
        let message = "shutdown: transactions still being rolled back were abandoned";
        logger.log(Severity::Warning, message, None, Map::new());
    }
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => fail("the server stopped on an I/O error"),
    }
}

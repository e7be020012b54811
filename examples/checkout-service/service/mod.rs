//! The checkout service: configuration, caller authentication, the provider call,
//! the journal's clock, the HTTP handler, Cloud Logging lines, Prometheus metrics,
//! graceful shutdown, the recovery job, Stripe's webhook endpoint and its events, and
//! the soak's planted defects (test builds only).

pub mod answer;
pub mod auth;
pub mod backend;
pub mod called;
pub mod caller_id;
pub mod clock;
pub mod config;
pub mod event_backfill;
pub mod flow;
pub mod handler;
pub mod key_cache;
pub mod keyed;
pub mod logging;
pub mod metrics;
pub mod plant;
pub mod provider;
pub mod recovery;
pub mod request_log;
pub mod server;
pub mod shutdown;
pub mod webhook;
pub mod webhook_event;
pub mod webhook_metrics;

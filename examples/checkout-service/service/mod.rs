//! The checkout service: configuration, caller authentication, the provider call,
//! the HTTP handler, Cloud Logging lines and graceful shutdown.

pub mod auth;
pub mod caller_id;
pub mod config;
pub mod handler;
pub mod key_cache;
pub mod logging;
pub mod provider;
pub mod request_log;
pub mod server;
pub mod shutdown;

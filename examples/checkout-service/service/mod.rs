//! The checkout service: configuration, caller authentication, the provider call,
//! the HTTP handler, Cloud Logging lines and graceful shutdown.

pub mod auth;
pub mod config;
pub mod handler;
pub mod logging;
pub mod provider;
pub mod shutdown;

//! Structured log lines in Cloud Logging's shape, one JSON object per line on stdout.
//!
//! Cloud Run forwards stdout to Cloud Logging, which reads `severity`, `message`,
//! `logging.googleapis.com/trace`, `logging.googleapis.com/spanId`,
//! `logging.googleapis.com/trace_sampled` and `httpRequest` from each line and keeps
//! every other field as the entry's payload. Lines never carry a raw caller id,
//! command id, lease id, payload or provider answer: callers pass only fixed codes,
//! counts and digests.

use serde_json::{Map, Value, json};
use std::sync::Arc;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::Context;

/// Cloud Logging severities the service uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Routine events.
    Info,
    /// Something a human may want to look at.
    Warning,
    /// A request failed on the service's side.
    Error,
}

impl Severity {
    fn as_str(self) -> &'static str {
        match self {
            Self::Info => "INFO",
            Self::Warning => "WARNING",
            Self::Error => "ERROR",
        }
    }
}

/// The trace a request belongs to, from its `X-Cloud-Trace-Context` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    resource: String,
    span_id: Option<String>,
    sampled: bool,
}

/// Where lines go: stdout in the service, a buffer in tests.
pub type Sink = Arc<dyn Fn(&str) + Send + Sync>;

/// Writes Cloud Logging lines for one project.
#[derive(Clone)]
pub struct Logger {
    project: Arc<str>,
    sink: Sink,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("project", &self.project)
            .finish_non_exhaustive()
    }
}

impl Logger {
    /// Lines on stdout, one `write` per line so concurrent lines never interleave.
    pub fn stdout(project: &str) -> Self {
        Self::with_sink(
            project,
            Arc::new(|line: &str| {
                use std::io::Write as _;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(format!("{line}\n").as_bytes());
                let _ = out.flush();
            }),
        )
    }

    /// Lines handed to `sink`, without the newline.
    pub fn with_sink(project: &str, sink: Sink) -> Self {
        Self {
            project: Arc::from(project),
            sink,
        }
    }

    /// Parses `X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=OPTIONS` strictly (32 hex
    /// digits, a decimal span id); anything else is ignored rather than logged.
    pub fn trace(&self, header: Option<&str>) -> Option<Trace> {
        let header = header?.trim();
        let (trace_id, rest) = header.split_once('/').unwrap_or((header, ""));
        let hex = trace_id.len() == 32 && trace_id.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex {
            return None;
        }
        let (span, options) = rest.split_once(';').unwrap_or((rest, ""));
        let span_id =
            (!span.is_empty() && span.len() <= 20 && span.bytes().all(|b| b.is_ascii_digit()))
                .then(|| span.to_owned());
        Some(Trace {
            resource: format!(
                "projects/{}/traces/{}",
                self.project,
                trace_id.to_ascii_lowercase()
            ),
            span_id,
            sampled: options.trim() == "o=1",
        })
    }

    /// Writes one line: `severity`, `message`, the trace fields when known, then
    /// `fields`.
    pub fn log(
        &self,
        severity: Severity,
        message: &str,
        trace: Option<&Trace>,
        fields: Map<String, Value>,
    ) {
        let mut line = Map::new();
        line.insert("severity".into(), json!(severity.as_str()));
        line.insert("message".into(), json!(message));
        if let Some(trace) = trace {
            line.insert("logging.googleapis.com/trace".into(), json!(trace.resource));
            if let Some(span) = &trace.span_id {
                line.insert("logging.googleapis.com/spanId".into(), json!(span));
            }
            line.insert(
                "logging.googleapis.com/trace_sampled".into(),
                json!(trace.sampled),
            );
        }
        for (key, value) in fields {
            line.entry(key).or_insert(value);
        }
        (self.sink)(&Value::Object(line).to_string());
    }

    /// Shorthand for an `INFO` line without trace or fields.
    pub fn info(&self, message: &str) {
        self.log(Severity::Info, message, None, Map::new());
    }
}

/// Forwards `tracing` events at `INFO` and above (the journal's own warnings, for
/// instance) to a [`Logger`], so every line on stdout has the same shape.
#[derive(Debug, Clone)]
pub struct TracingLayer(pub Logger);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for TracingLayer {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let level = *event.metadata().level();
        let severity = if level == tracing::Level::ERROR {
            Severity::Error
        } else if level == tracing::Level::WARN {
            Severity::Warning
        } else if level == tracing::Level::INFO {
            Severity::Info
        } else {
            return;
        };
        let mut visitor = Fields::default();
        event.record(&mut visitor);
        visitor
            .fields
            .insert("target".into(), json!(event.metadata().target()));
        self.0.log(severity, &visitor.message, None, visitor.fields);
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    fields: Map<String, Value>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        if field.name() == "message" {
            self.message = text;
        } else {
            self.fields.insert(field.name().to_owned(), json!(text));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.fields.insert(field.name().to_owned(), json!(value));
        }
    }
}

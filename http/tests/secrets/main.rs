//! No secret out: a key, a caller id, a body value or a stored response given as
//! canary values never appears in a log line (every level, every target), a metric's
//! name or label, a problem body or header, or the `Debug` of any type of the package.
//!
//! A test binary of its own, one test on one thread: `tracing` caches each call site's
//! interest process-wide, and another test's thread that reaches a call site first,
//! while this test's subscriber is being installed, could leave that site silent here
//! (seen: the journal's spans missing from the capture when it ran in the suite).

// The conformance suite's service; this binary uses part of it.
#[allow(dead_code)]
#[path = "../conformance/support.rs"]
mod support;

use command_journal::ProviderAnswer;
use command_journal::identity::CallerScopeKind;
use command_journal_http::{IdempotencyKey, Problem, VerifiedCaller};
use metrics_util::debugging::DebuggingRecorder;
use std::io::Write;
use std::sync::{Arc, Mutex};
use support::{Act, Call, charged, note_call, service};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

const CANARY: &str = "CANARY";

/// Every line written, in one buffer.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lines").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Lines {
    type Writer = Lines;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn canary_values_never_leave_in_logs_metrics_problems_or_debug() {
    // A current-thread runtime: the layer's tasks log and count on this thread's
    // subscriber and recorder.
    let lines = Lines::default();
    let _logs = tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_span_events(FmtSpan::FULL)
        .with_ansi(false)
        .with_writer(lines.clone())
        .finish()
        .set_default();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let service = service(false).await;

    let caller = "CANARYcaller_7f3a";
    let key = "\"CANARYkey-91c2\"";
    let body = r#"{"text": "CANARYbody"}"#;
    let mut answers = Vec::new();
    service.script.acts([Act::Created, Act::Status(503)]);
    answers.push(service.send(&note_call(caller, key, body)).await);
    answers.push(service.send(&note_call(caller, key, body)).await);
    let changed = r#"{"text": "CANARYchanged"}"#;
    answers.push(service.send(&note_call(caller, key, changed)).await);
    let unknown = "\"CANARYkey-503\"";
    answers.push(service.send(&note_call(caller, unknown, body)).await);
    answers.push(service.send(&note_call(caller, unknown, body)).await);
    for refused in [
        note_call(caller, "\"CANARY key\"", body),
        note_call(caller, "CANARYtoken", body),
        note_call(caller, key, r#"{"CANARYdup": 1, "CANARYdup": 2}"#),
        note_call(caller, key, r#"{"CANARYfloat": 1.5}"#),
        Call {
            content_type: Some("text/CANARY"),
            ..note_call(caller, key, body)
        },
        Call {
            caller: None,
            ..note_call(caller, key, body)
        },
    ] {
        answers.push(service.send(&refused).await);
    }
    service
        .script
        .answers([ProviderAnswer::Succeeded(charged("ch_CANARY"))]);
    let charge = Call {
        path: "/v1/charges",
        ..note_call(caller, key, r#"{"amount": 500, "currency": "CANARYeur"}"#)
    };
    answers.push(service.send(&charge).await);
    answers.push(service.send(&charge).await);

    // The handler's own answers carry what it chose to echo, to its own caller: every
    // answer of the layer (a problem) carries nothing of the request.
    let problems: Vec<_> = answers.iter().filter(|a| a.problem().is_some()).collect();
    assert!(problems.len() >= 8, "{answers:?}");
    for answer in problems {
        let text = format!(
            "{:?} {}",
            answer.headers,
            String::from_utf8_lossy(&answer.body)
        );
        assert!(!text.contains(CANARY), "{text}");
    }

    let logged = String::from_utf8_lossy(&lines.0.lock().expect("lines")).into_owned();
    assert!(
        logged.contains("journal.start") && logged.contains("journal.execute"),
        "the journal's spans were captured"
    );
    assert!(!logged.contains(CANARY), "{logged}");

    let metrics = format!("{:?}", snapshotter.snapshot().into_vec());
    assert!(
        metrics.contains("command_journal_http_replays_total"),
        "{metrics}"
    );
    assert!(!metrics.contains(CANARY), "{metrics}");

    let verified = VerifiedCaller::new(CallerScopeKind::Member, caller).expect("a caller");
    let parsed = IdempotencyKey::parse_field(key.as_bytes()).expect("a key");
    let printed = format!(
        "{verified:?} {parsed:?} {:?} {:?}",
        Problem::journal(command_journal::JournalError::corrupt("CANARY")),
        service.router
    );
    assert!(!printed.contains(CANARY), "{printed}");
}

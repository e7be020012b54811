//! `verify` at scale: loads a valid journal of N documents into the emulator quickly,
//! then times the verifier against a bare scan of the same collections at one read
//! time, each in a fresh child process so that its peak RSS (VmHWM) is its own.
//!
//! The loader does not go through the runner: for command `i` it asks the pure
//! `Start` decision what a first start writes into an empty journal (root,
//! revision-1 audit event, lifecycle, revision-2 lease event: 4 documents) and
//! commits those writes raw, 500 to a `Commit` (125 commands), several commits in
//! flight, with `exists: false` preconditions as the runner would. The journal it
//! writes is therefore exactly what `Journal::start` writes, and must verify clean;
//! the run stops otherwise.
//!
//! Run: `cargo bench --bench verify_scale` (10k and 100k documents);
//! sizes after `--`: `cargo bench --bench verify_scale -- 10000 100000
//! 1000000`. With
//! `-- --ranges N 10000 …` it also times `verify_in_ranges` in N consistent ranges. A
//! bench target, so `cargo test` never builds or runs it. Reuses
//! `FIRESTORE_EMULATOR_HOST` when set, otherwise starts its own emulator.

use command_journal::Timestamp;
use command_journal::verify::ScanRanges;
use command_journal::{CommandInput, CommandRequest, LeaseId};
use command_journal::{Connection, Target};
use command_journal_core::tools::start::Start;
use command_journal_core::tools::transaction::{Decision, Snapshot, Transition, Write};
use command_journal_emulator::Emulator;
use firestore::{FirestoreConsistencySelector, FirestoreDb};
use futures::StreamExt;
use futures::stream::{FuturesUnordered, select_all};
use gcloud_sdk::google::firestore::v1::precondition::ConditionType;
use gcloud_sdk::google::firestore::v1::{
    BatchGetDocumentsRequest, CommitRequest, Document, Precondition, Write as RawWrite, write,
};
use serde_json::json;
use std::time::Instant;

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Documents one started command leaves in the journal.
const DOCS_PER_COMMAND: u64 = 4;
/// Writes per `Commit` (Firestore's limit is 500).
const BATCH_WRITES: usize = 500;
/// Commits in flight while loading.
const IN_FLIGHT: usize = 4;

/// The top-level collections whose whole subtrees `verify` scans.
const SUBTREES: [&str; 4] = [
    "checkoutRequests",
    "auditEvents",
    "ledgerReservations",
    "ledgerTransactions",
];

/// The least document id Firestore orders: a subtree's lower bound.
const MIN_ID: &str = "__id-9223372036854775808__";

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let result = if args.first().map(String::as_str) == Some("--child") {
        child(&args[1..]).await
    } else {
        parent(&args).await
    };
    if let Err(error) = result {
        eprintln!("verify_scale: {error}");
        std::process::exit(1);
    }
}

async fn connect(host: &str, project: &str) -> Res<Connection> {
    Connection::connect(project, Target::Emulator(host.to_owned()))
        .await
        .map_err(err)
}

/// The writes of a first start of command `n`, as the runner would commit them.
fn command_writes(n: u64, root: &str, now: Timestamp) -> Res<Vec<RawWrite>> {
    let command_id = format!("5ca1e000-0000-4000-8000-{n:012x}");
    let lease_text = format!("5ca1e000-0001-4000-8000-{n:012x}");
    let payload = json!({"sku": "tee", "quantity": 1, "n": n});
    let command = CommandInput::new(CommandRequest {
        environment: "emulator",
        caller_scope_kind: "member",
        caller_id: "scale-caller",
        command_id: &command_id,
        command_type: "checkout",
        endpoint_schema_version: 1,
        payload: &payload,
    })
    .map_err(err)?;
    let lease = LeaseId::parse(&lease_text).map_err(err)?;
    let identity = command.identity();
    let owner = command.lease_owner(&identity, &lease).map_err(err)?;
    let start = Start::new(identity, owner, now);
    let empty = Snapshot::new(start.paths().into_iter().map(|p| (p, None)));
    let Decision::Mutate(writes, _) = start.decide(&empty) else {
        return Err("a start into an empty journal did not decide to write".into());
    };
    writes
        .into_iter()
        .map(|w| match w {
            Write::Create { path, fields } => Ok(RawWrite {
                update_mask: None,
                update_transforms: Vec::new(),
                current_document: Some(Precondition {
                    condition_type: Some(ConditionType::Exists(false)),
                }),
                operation: Some(write::Operation::Update(Document {
                    name: format!("{root}/{path}"),
                    fields: command_journal::wire::fields_to_wire(&fields),
                    create_time: None,
                    update_time: None,
                })),
            }),
            Write::Replace { .. } | Write::AssertAbsent { .. } | Write::AssertUnchanged { .. } => {
                Err("a first start did more than create".into())
            }
        })
        .collect()
}

/// Writes `commands` started commands; returns the documents written.
async fn load(connection: &Connection, commands: u64) -> Res<u64> {
    let root = connection.documents_path();
    let database = connection.database_path();
    let now = Timestamp::from_datetime(chrono::Utc::now()).ok_or("clock out of range")?;
    let per_batch = BATCH_WRITES as u64 / DOCS_PER_COMMAND;
    let mut in_flight = FuturesUnordered::new();
    let mut written = 0;
    let mut next = 0;
    while next < commands || !in_flight.is_empty() {
        while next < commands && in_flight.len() < IN_FLIGHT {
            let end = (next + per_batch).min(commands);
            let mut writes = Vec::with_capacity(BATCH_WRITES);
            for n in next..end {
                writes.extend(command_writes(n, &root, now)?);
            }
            next = end;
            let count = writes.len() as u64;
            let request = CommitRequest {
                database: database.clone(),
                writes,
                transaction: Vec::new(),
                request_options: None,
            };
            let mut raw = connection.raw();
            in_flight.push(async move { raw.commit(request).await.map(|_| count) });
        }
        if let Some(done) = in_flight.next().await {
            written += done.map_err(|s| format!("commit: {}", s.message()))?;
        }
    }
    Ok(written)
}

/// The server's read time now (from a one-document read), as `verify` takes it.
async fn read_time(connection: &Connection) -> Res<firestore::jiff::Timestamp> {
    let request = BatchGetDocumentsRequest {
        database: connection.database_path(),
        documents: vec![format!(
            "{}/checkoutRequests/~scale",
            connection.documents_path()
        )],
        mask: None,
        request_options: None,
        consistency_selector: None,
    };
    let mut stream = connection
        .raw()
        .batch_get_documents(request)
        .await
        .map_err(|s| s.message().to_owned())?
        .into_inner();
    while let Some(message) = stream.message().await.map_err(|s| s.message().to_owned())? {
        if let Some(t) = message.read_time {
            let nanos = i128::from(t.seconds) * 1_000_000_000 + i128::from(t.nanos);
            return firestore::jiff::Timestamp::from_nanosecond(nanos).map_err(err);
        }
    }
    Err("no read time".into())
}

/// The bare scan: the same name-ordered queries as `verify` (a kindless
/// all-descendants query per journal collection bounded by `__name__`, and the stray
/// `lifecycle` collection group before and after `checkoutRequests`), at one read
/// time, consumed concurrently; only counts the documents.
async fn bare_scan(connection: &Connection) -> Res<u64> {
    let at = read_time(connection).await?;
    let db: FirestoreDb = connection
        .db()
        .clone_with_consistency_selector(FirestoreConsistencySelector::ReadTime(at));
    let documents = connection.documents_path();
    let reference = |path: String| {
        firestore::FirestoreValue::from(gcloud_sdk::google::firestore::v1::Value {
            value_type: Some(
                gcloud_sdk::google::firestore::v1::value::ValueType::ReferenceValue(format!(
                    "{documents}/{path}"
                )),
            ),
        })
    };
    let mut queries: Vec<(&str, Option<String>, Option<String>)> = SUBTREES
        .iter()
        .map(|c| {
            (
                "",
                Some(format!("{c}/{MIN_ID}")),
                Some(format!("{c}\0/{MIN_ID}")),
            )
        })
        .collect();
    queries.push((
        "lifecycle",
        None,
        Some(format!("checkoutRequests/{MIN_ID}")),
    ));
    queries.push((
        "lifecycle",
        Some(format!("checkoutRequests\0/{MIN_ID}")),
        None,
    ));
    let mut streams = Vec::new();
    for (group, start, end) in queries {
        let (start, end) = (start.map(reference), end.map(reference));
        let query = db
            .fluent()
            .select()
            .from(group)
            .all_descendants()
            .filter(|q| {
                q.for_all([
                    start
                        .clone()
                        .and_then(|v| q.field("__name__").greater_than_or_equal(v)),
                    end.clone().and_then(|v| q.field("__name__").less_than(v)),
                ])
            })
            .order(|o| o.fields([o.field("__name__").asc()]));
        streams.push(query.stream_query_with_errors().await.map_err(err)?);
    }
    let mut all = select_all(streams);
    let mut count = 0;
    while let Some(doc) = all.next().await {
        let doc = doc.map_err(err)?;
        std::hint::black_box(&doc);
        count += 1;
    }
    Ok(count)
}

/// Peak resident set (VmHWM) of this process, in KiB.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// CPU seconds (user + system) of process `pid` (`self` for this one).
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return f64::NAN;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    match (ticks(11), ticks(12)) {
        (Some(u), Some(s)) => (u + s) as f64 / hz,
        _ => f64::NAN,
    }
}

/// `--child verify|bare HOST PROJECT RANGES`: one scan (`verify` in `RANGES` consistent
/// ranges); prints `docs seconds peak_kib cpu_s`.
async fn child(args: &[String]) -> Res<()> {
    let [mode, host, project, ranges] = args else {
        return Err("usage: --child verify|bare HOST PROJECT RANGES".into());
    };
    let ranges = ranges
        .parse()
        .map_err(err)
        .and_then(|n| ScanRanges::new(n).map_err(err))?;
    let connection = connect(host, project).await?;
    let cpu0 = cpu_seconds("self");
    let t0 = Instant::now();
    let docs = match mode.as_str() {
        "verify" => {
            let report =
                command_journal::verify::verify_in_ranges(&connection, ranges, &mut |_| {})
                    .await
                    .map_err(err)?;
            if !report.clean {
                return Err(format!("verify found {:?}", report.finding_counts));
            }
            report.scanned.total()
        }
        "bare" => bare_scan(&connection).await?,
        other => return Err(format!("unknown child mode {other}")),
    };
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds("self") - cpu0;
    println!("{docs} {secs} {} {cpu}", peak_rss_kib());
    Ok(())
}

struct Scan {
    docs: u64,
    secs: f64,
    peak_kib: u64,
    cpu: f64,
    emulator_cpu: f64,
}

async fn run_child(
    mode: &str,
    ranges: u16,
    host: &str,
    project: &str,
    emulator: Option<u32>,
) -> Res<Scan> {
    let exe = std::env::current_exe().map_err(err)?;
    let jvm = emulator.map(|p| p.to_string());
    let jvm0 = jvm.as_deref().map_or(f64::NAN, cpu_seconds);
    let out = tokio::process::Command::new(exe)
        .args(["--child", mode, host, project, &ranges.to_string()])
        .output()
        .await
        .map_err(err)?;
    let jvm1 = jvm.as_deref().map_or(f64::NAN, cpu_seconds);
    if !out.status.success() {
        return Err(format!(
            "{mode} child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = text.split_whitespace().collect();
    let parse = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    match (parse(0), parse(1), parse(2), parse(3)) {
        (Some(docs), Some(secs), Some(peak), Some(cpu)) => Ok(Scan {
            docs: docs as u64,
            secs,
            peak_kib: peak as u64,
            cpu,
            emulator_cpu: jvm1 - jvm0,
        }),
        _ => Err(format!("unreadable child output {text:?}")),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

async fn parent(args: &[String]) -> Res<()> {
    let (ranges, args) = match args {
        [flag, n, rest @ ..] if flag == "--ranges" => {
            let n = n.parse::<u32>().map_err(err)?;
            (Some(ScanRanges::new(n).map_err(err)?.count()), rest)
        }
        _ => (None, args),
    };
    let sizes: Vec<u64> = if args.is_empty() {
        vec![10_000, 100_000]
    } else {
        args.iter()
            .map(|a| a.parse().map_err(|_| format!("not a document count: {a}")))
            .collect::<Res<_>>()?
    };
    eprintln!("emulator…");
    let emulator = tokio::task::spawn_blocking(Emulator::from_env_or_start)
        .await
        .map_err(err)?
        .map_err(err)?;
    let host = emulator.host().to_owned();
    let jvm = emulator.pid();
    println!("load average before: {}", load_average());
    println!(
        "| documents | load docs/s | bare scan docs/s | verify docs/s | verify ÷ bare | bare peak RSS | verify peak RSS | verify CPU µs/doc | bare CPU µs/doc | emulator CPU µs/doc (verify) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut split_rows = Vec::new();
    for size in sizes {
        let project = emulator.new_project_id();
        let connection = connect(&host, &project).await?;
        let commands = size.div_ceil(DOCS_PER_COMMAND);
        let t0 = Instant::now();
        let written = load(&connection, commands).await?;
        let load_rate = written as f64 / t0.elapsed().as_secs_f64();
        eprintln!("{size}: loaded {written} documents at {load_rate:.0}/s");
        // Bare, verify (and split), twice: the better of two of each, to damp the
        // noise of a shared machine.
        let mut bare: Option<Scan> = None;
        let mut verify: Option<Scan> = None;
        let mut split: Option<Scan> = None;
        for _ in 0..2 {
            let b = run_child("bare", 1, &host, &project, jvm).await?;
            let v = run_child("verify", 1, &host, &project, jvm).await?;
            let r = match ranges {
                Some(n) => Some(run_child("verify", n, &host, &project, jvm).await?),
                None => None,
            };
            let split_docs = r.as_ref().map_or(written, |r| r.docs);
            if b.docs != written || v.docs != written || split_docs != written {
                return Err(format!(
                    "scanned {} (bare), {} (verify) and {split_docs} (ranges) of {written} documents",
                    b.docs, v.docs
                ));
            }
            eprintln!(
                "{size}: bare {:.2} s, verify {:.2} s{} (peak {} / {} KiB)",
                b.secs,
                v.secs,
                r.as_ref()
                    .map(|r| format!(", in ranges {:.2} s", r.secs))
                    .unwrap_or_default(),
                b.peak_kib,
                v.peak_kib
            );
            for (best, scan) in [
                (&mut bare, Some(b)),
                (&mut verify, Some(v)),
                (&mut split, r),
            ] {
                if let Some(scan) = scan
                    && best.as_ref().is_none_or(|x| scan.secs < x.secs)
                {
                    *best = Some(scan);
                }
            }
        }
        let (Some(b), Some(v)) = (bare, verify) else {
            return Err("no scan ran".into());
        };
        let n = written as f64;
        println!(
            "| {written} | {load_rate:.0} | {:.0} | {:.0} | {:.2} | {:.1} MiB | {:.1} MiB | {:.1} | {:.1} | {:.1} |",
            n / b.secs,
            n / v.secs,
            b.secs / v.secs,
            b.peak_kib as f64 / 1024.0,
            v.peak_kib as f64 / 1024.0,
            v.cpu * 1e6 / n,
            b.cpu * 1e6 / n,
            v.emulator_cpu * 1e6 / n,
        );
        if let Some(r) = split {
            split_rows.push(format!(
                "| {written} | {:.2} s | {:.2} s | {:.3} | {:.1} MiB | {:.1} | {:.1} |",
                v.secs,
                r.secs,
                v.secs / r.secs,
                r.peak_kib as f64 / 1024.0,
                r.cpu * 1e6 / n,
                r.emulator_cpu * 1e6 / n,
            ));
        }
        let _ = emulator.clear(&project).await;
    }
    if let Some(n) = ranges {
        println!();
        println!(
            "| documents | verify, one read time | verify in {n} ranges | one ÷ ranges | ranges peak RSS | ranges CPU µs/doc | emulator CPU µs/doc (ranges) |"
        );
        println!("|---|---|---|---|---|---|---|");
        for row in split_rows {
            println!("{row}");
        }
    }
    println!("load average after: {}", load_average());
    Ok(())
}

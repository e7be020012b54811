//! `command-journal verify`: the JSON report on stdout, a human summary and progress
//! on stderr (a bar with the total from COUNT aggregations and an ETA on a terminal,
//! plain lines every few seconds otherwise); exit 5 when anything is broken, and exit
//! 7 when it scanned no journal document at all (a wrong project or database must not
//! pass as clean) unless `--allow-empty`. `--ranges N` splits the scan into consistent
//! ranges.

use super::Global;
use super::exit::{self, Exit};
use crate::verify::Scanned;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Runs the verifier against the selected project.
pub async fn run(options: &Global, allow_empty: bool, ranges: &str) -> ExitCode {
    let ranges = match ranges.parse::<crate::verify::ScanRanges>() {
        Ok(ranges) => ranges,
        Err(error) => return exit::report(Err(error)),
    };
    let journal = match options.journal().await {
        Ok(journal) => journal,
        Err(error) => return exit::report(Err(error)),
    };
    // The total is only for the display: a failed count leaves the bar without one.
    let total = crate::verify::count_documents(journal.connection())
        .await
        .ok();
    let mut progress = Progress::new(total);
    let result = {
        let mut update = |read: u64| progress.set(read);
        crate::verify::verify_in_ranges(journal.connection(), ranges, &mut update).await
    };
    progress.finish();
    let report = match result {
        Ok(report) if allow_empty => report.allow_empty(),
        Ok(report) => report,
        Err(error) => return exit::report(Err(error)),
    };
    // Through a `serde_json` map, so that the keys print sorted, as every line does.
    match super::output::to_json(&report) {
        Ok(line) => println!("{line}"),
        Err(_) => return exit::internal("report serialization failed"),
    }
    let connection = journal.connection();
    let database_path = connection.database_path();
    let database = database_path.rsplit('/').next().unwrap_or_default();
    let at = match ranges.count() {
        1 => "one read time".to_owned(),
        n => format!("{n} ranges, each at its own read time"),
    };
    eprintln!(
        "verify: project {}, database {database} ({at}); scanned:",
        connection.project()
    );
    for (collection, count) in per_collection(&report.scanned) {
        eprintln!("  {collection:<34} {count:>10}");
    }
    if report.empty && !allow_empty {
        eprintln!(
            "verify: scanned no journal document in project {} database {database}: is \
             this the right project and database? (--allow-empty accepts an empty journal)",
            connection.project()
        );
        return Exit::Empty.into();
    }
    if report.clean {
        eprintln!("verify: clean ({} documents)", report.scanned.total());
        Exit::Success.into()
    } else {
        let total: u64 = report.finding_counts.values().sum();
        eprintln!("verify: {total} broken invariants");
        for (code, count) in &report.finding_counts {
            eprintln!("  {code}: {count}");
        }
        Exit::Broken.into()
    }
}

/// Plain progress lines are printed at most this often.
const LINE_EVERY: Duration = Duration::from_secs(5);

/// Documents read so far: a bar with the total and an ETA when stderr is a terminal,
/// otherwise a plain line at most every [`LINE_EVERY`].
enum Progress {
    Bar(indicatif::ProgressBar),
    Lines {
        total: Option<u64>,
        started: Instant,
        last: Instant,
    },
}

impl Progress {
    fn new(total: Option<u64>) -> Self {
        use std::io::IsTerminal as _;
        if !std::io::stderr().is_terminal() {
            let now = Instant::now();
            if let Some(total) = total {
                eprintln!("verify: about {total} documents to read");
            }
            return Self::Lines {
                total,
                started: now,
                last: now,
            };
        }
        let bar = match total {
            Some(total) => indicatif::ProgressBar::new(total),
            None => indicatif::ProgressBar::no_length(),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "  [{bar:30}] {pos}/{len} documents ({per_sec}, ETA {eta}, {elapsed})",
        ) {
            bar.set_style(style.progress_chars("#>."));
        }
        Self::Bar(bar)
    }

    fn set(&mut self, read: u64) {
        match self {
            Self::Bar(bar) => {
                // The total is counted before the scan's read time: grow it if needed.
                if bar.length().is_some_and(|len| read > len) {
                    bar.set_length(read);
                }
                bar.set_position(read);
            }
            Self::Lines {
                total,
                started,
                last,
            } => {
                if last.elapsed() < LINE_EVERY {
                    return;
                }
                *last = Instant::now();
                let secs = started.elapsed().as_secs_f64();
                let rate = read as f64 / secs.max(1e-3);
                match total {
                    Some(total) if *total > read && rate > 0.0 => eprintln!(
                        "verify: {read}/{total} documents read ({rate:.0}/s, about {:.0} s left)",
                        (*total - read) as f64 / rate
                    ),
                    _ => eprintln!("verify: {read} documents read ({rate:.0}/s)"),
                }
            }
        }
    }

    /// Clears the bar; the summary that follows gives the final counts.
    fn finish(self) {
        if let Self::Bar(bar) = self {
            bar.finish_and_clear();
        }
    }
}

/// The scanned counts by collection, as their documents are named.
fn per_collection(scanned: &Scanned) -> [(&'static str, u64); 8] {
    [
        ("checkoutRequests", scanned.checkout_requests),
        ("checkoutRequests/*/lifecycle", scanned.lifecycles),
        ("auditEvents", scanned.audit_events),
        ("ledgerReservations", scanned.ledger_reservations),
        ("ledgerTransactions", scanned.ledger_transactions),
        ("recoveryCheckpoints", scanned.recovery_checkpoints),
        ("providerKeys", scanned.provider_keys),
        ("evidenceCheckpoints", scanned.evidence_checkpoints),
    ]
}

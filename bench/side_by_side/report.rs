//! The Markdown report of a run.

use crate::Side;
use crate::cpu::Cpu;
use crate::phases::{RaceRound, SeqSamples, TpRound};
use crate::rpc::RpcRow;
use crate::setup::{Plan, machine};
use crate::stats::{mean, percentile};
use std::fmt::Write as _;

pub(crate) struct RenderInput<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) quick: bool,
    pub(crate) load: &'a str,
    pub(crate) versions: &'a str,
    /// This crate's concurrency mode.
    pub(crate) mode: &'a str,
    pub(crate) parity: &'a [String],
    pub(crate) rpc: &'a [RpcRow],
    pub(crate) seq: &'a [SeqSamples],
    pub(crate) races: &'a [RaceRound],
    pub(crate) tps: &'a [TpRound],
}

pub(crate) fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

pub(crate) fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

pub(crate) fn render(input: &RenderInput<'_>) -> String {
    let mut out = String::new();
    let plan = input.plan;
    let _ = writeln!(
        out,
        "## Side by side: command-journal vs the Node.js client\n"
    );
    if input.quick {
        let _ = writeln!(
            out,
            "**--quick smoke run: too few rounds for the table.**\n"
        );
    }
    let _ = writeln!(
        out,
        "Machine: {}; 1-minute load average {}. Peer: {}. This crate in {} mode. One emulator, sides alternating per round.\n",
        machine(),
        input.load,
        input.versions,
        input.mode
    );
    for note in input.parity {
        let _ = writeln!(out, "- parity: {note}");
    }

    // Sequential.
    let get = |side: Side| input.seq.iter().find(|s| s.side == side);
    let column = |s: &SeqSamples, k: usize| s.samples.iter().map(|x| x[k]).collect::<Vec<_>>();
    let sum = |s: &SeqSamples| s.samples.iter().map(|x| x[1] + x[2]).collect::<Vec<_>>();
    let _ = writeln!(
        out,
        "\n### Sequential latency ({} commands per side, {} blocks alternating)\n",
        plan.seq_blocks * plan.seq_block_len,
        plan.seq_blocks
    );
    let _ = writeln!(
        out,
        "| operation | crate p50 | peer p50 | ratio p50 | crate p99 | peer p99 | ratio p99 | peer (speculative reads) p50 |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    let mut acq_complete_ratio = f64::NAN;
    if let (Some(c), Some(p), Some(ps)) = (
        get(Side::Crate),
        get(Side::Peer),
        get(Side::PeerSpeculative),
    ) {
        let rows = [
            ("register", column(c, 0), column(p, 0), column(ps, 0)),
            ("acquire (first)", column(c, 1), column(p, 1), column(ps, 1)),
            ("complete", column(c, 2), column(p, 2), column(ps, 2)),
            ("acquire + complete", sum(c), sum(p), sum(ps)),
        ];
        for (name, cv, pv, psv) in rows {
            let (c50, p50, c99, p99) = (
                percentile(&cv, 0.5),
                percentile(&pv, 0.5),
                percentile(&cv, 0.99),
                percentile(&pv, 0.99),
            );
            if name == "acquire + complete" {
                acq_complete_ratio = c50 / p50;
            }
            let _ = writeln!(
                out,
                "| {name} | {} | {} | **{:.2}** | {} | {} | {:.2} | {} |",
                ms(c50),
                ms(p50),
                c50 / p50,
                ms(c99),
                ms(p99),
                c99 / p99,
                ms(percentile(&psv, 0.5))
            );
        }
    }

    // Race.
    let walls = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .map(|r| r.wall_us)
            .collect::<Vec<_>>()
    };
    let errors = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .flat_map(|r| r.outcomes.iter())
            .filter(|o| o.starts_with("error"))
            .count()
    };
    let exact = |side: Side| {
        input
            .races
            .iter()
            .filter(|r| r.side == side)
            .filter(|r| {
                let acquired = r.outcomes.iter().filter(|o| *o == "lease_acquired").count();
                let busy = r.outcomes.iter().filter(|o| *o == "lease_busy").count();
                acquired == 1 && busy == r.outcomes.len() - 1
            })
            .count()
    };
    let error_codes = |side: Side| {
        let mut codes: Vec<&str> = input
            .races
            .iter()
            .filter(|r| r.side == side)
            .flat_map(|r| r.outcomes.iter())
            .filter(|o| o.starts_with("error"))
            .map(String::as_str)
            .collect();
        codes.sort_unstable();
        codes.dedup();
        codes.join(", ")
    };
    let (cw, pw) = (walls(Side::Crate), walls(Side::Peer));
    let race_ratio = percentile(&cw, 0.5) / percentile(&pw, 0.5);
    let _ = writeln!(
        out,
        "\n### {}-holder first-acquire race ({} rounds per side, alternating)\n",
        plan.holders, plan.race_rounds
    );
    let _ = writeln!(out, "| | crate | peer | ratio |\n|---|---|---|---|");
    let _ = writeln!(
        out,
        "| wall time to all answers, median | {} | {} | **{:.3}** |",
        ms(percentile(&cw, 0.5)),
        ms(percentile(&pw, 0.5)),
        race_ratio
    );
    let _ = writeln!(
        out,
        "| wall time, mean | {} | {} | {:.3} |",
        ms(mean(&cw)),
        ms(mean(&pw)),
        mean(&cw) / mean(&pw)
    );
    let _ = writeln!(
        out,
        "| wall time, worst round | {} | {} | {:.3} |",
        ms(percentile(&cw, 1.0)),
        ms(percentile(&pw, 1.0)),
        percentile(&cw, 1.0) / percentile(&pw, 1.0)
    );
    let nth_answer = |side: Side, k: usize| {
        let per_round: Vec<f64> = input
            .races
            .iter()
            .filter(|r| r.side == side)
            .filter_map(|r| {
                let mut a = r.answered_us.clone();
                a.sort_by(f64::total_cmp);
                a.get(k).copied()
            })
            .collect();
        percentile(&per_round, 0.5)
    };
    for (label, k) in [("first answer", 0), ("second answer", 1)] {
        let (c, p) = (nth_answer(Side::Crate, k), nth_answer(Side::Peer, k));
        let _ = writeln!(
            out,
            "| {label}, median | {} | {} | {:.3} |",
            ms(c),
            ms(p),
            c / p
        );
    }
    let _ = writeln!(
        out,
        "| answers that were errors | {} of {} | {} of {} | |",
        errors(Side::Crate),
        cw.len() as u64 * plan.holders,
        errors(Side::Peer),
        pw.len() as u64 * plan.holders
    );
    let _ = writeln!(
        out,
        "| rounds with exactly 1 acquired + {} busy | {} of {} | {} of {} | |",
        plan.holders - 1,
        exact(Side::Crate),
        cw.len(),
        exact(Side::Peer),
        pw.len()
    );
    for side in [Side::Crate, Side::Peer] {
        let codes = error_codes(side);
        if !codes.is_empty() {
            let _ = writeln!(out, "\n{side:?} race errors: {codes}");
        }
    }

    // Throughput.
    let _ = writeln!(
        out,
        "\n### Throughput on distinct commands (register + acquire + complete per command; {} rounds × {:?} per side and level)\n",
        plan.tp_rounds, plan.tp_duration
    );
    let _ = writeln!(
        out,
        "| workers | crate commands/s | peer commands/s | ratio | crate errors | peer errors |\n|---|---|---|---|---|---|"
    );
    let mut tp16 = f64::NAN;
    for &w in &plan.tp_levels {
        let rate = |side: Side| {
            let rounds: Vec<&TpRound> = input
                .tps
                .iter()
                .filter(|t| t.side == side && t.workers == w)
                .collect();
            let done: u64 = rounds.iter().map(|t| t.completed).sum();
            let errs: u64 = rounds.iter().map(|t| t.errors).sum();
            let secs: f64 = rounds.iter().map(|t| t.elapsed_us).sum::<f64>() / 1e6;
            (done as f64 / secs, errs)
        };
        let ((c, ce), (p, pe)) = (rate(Side::Crate), rate(Side::Peer));
        if w == 16 {
            tp16 = c / p;
        }
        let _ = writeln!(
            out,
            "| {w} | {c:.1} | {p:.1} | **{:.2}** | {ce} | {pe} |",
            c / p
        );
    }

    // RPCs.
    let _ = writeln!(
        out,
        "\n### RPCs per operation (counted at a loopback proxy: client-opened HTTP/2 streams)\n"
    );
    let _ = writeln!(
        out,
        "| operation | crate RPCs | crate BatchGet / Commit | peer RPCs | peer BatchGet / Commit / BeginTransaction / Rollback |\n|---|---|---|---|---|"
    );
    let mut two_rpcs = true;
    let mut crate_proxy_agrees = true;
    for row in input.rpc {
        let calls = row.calls as f64;
        let s = &row.crate_stats;
        let pc = |k: &str| row.peer_counts[k].as_u64().unwrap_or(0) as f64 / calls;
        let crate_rpcs = row.crate_proxy as f64 / calls;
        let peer_rpcs = row.peer_proxy as f64 / calls;
        if row.crate_proxy != s.rpcs() {
            crate_proxy_agrees = false;
        }
        if ["register", "acquire (first)", "complete"].contains(&row.op.as_str()) {
            // One commit each and at most one read before it: a new registration is
            // its blind creation alone in preconditions mode (1 RPC).
            two_rpcs &= s.rpcs() <= 2 * row.calls && s.commits == row.calls && s.rollbacks == 0;
        }
        let _ = writeln!(
            out,
            "| {} | {crate_rpcs:.2} | {:.2} / {:.2} | {peer_rpcs:.2} | {:.2} / {:.2} / {:.2} / {:.2} |",
            row.op,
            s.batch_gets as f64 / calls,
            s.commits as f64 / calls,
            pc("batchGet"),
            pc("commit"),
            pc("beginTransaction"),
            pc("rollback"),
        );
    }
    let _ = writeln!(
        out,
        "\nThe crate's own counters (`journal.stats()`) {} the proxy's count.",
        if crate_proxy_agrees {
            "agree with"
        } else {
            "DISAGREE with"
        }
    );

    // CPU.
    let _ = writeln!(
        out,
        "\n### Where the CPU went (per command; cores = CPU seconds / wall seconds, of 2)\n"
    );
    let _ = writeln!(
        out,
        "| workload | side | client CPU per command | emulator CPU per command | client cores | emulator cores |\n|---|---|---|---|---|---|"
    );
    let client = |side: Side, cpu: &Cpu| {
        if side == Side::Crate {
            cpu.runner
        } else {
            cpu.node
        }
    };
    let mut cpu_row = |name: &str, side: Side, cpu: &Cpu, commands: f64, wall_s: f64| {
        let _ = writeln!(
            out,
            "| {name} | {side:?} | {:.2} ms | {:.2} ms | {:.2} | {:.2} |",
            client(side, cpu) * 1e3 / commands,
            cpu.emulator * 1e3 / commands,
            client(side, cpu) / wall_s,
            cpu.emulator / wall_s
        );
    };
    for s in input.seq {
        cpu_row(
            "sequential",
            s.side,
            &s.cpu,
            s.samples.len() as f64,
            s.wall_s,
        );
    }
    for side in [Side::Crate, Side::Peer] {
        let mut cpu = Cpu::default();
        let mut wall = 0.0;
        let mut n = 0.0;
        for r in input.races.iter().filter(|r| r.side == side) {
            cpu.add(&r.cpu);
            wall += r.wall_us / 1e6;
            n += 1.0;
        }
        cpu_row(
            "race (per round, incl. its registration)",
            side,
            &cpu,
            n,
            wall,
        );
    }
    for &w in &plan.tp_levels {
        for side in [Side::Crate, Side::Peer] {
            let mut cpu = Cpu::default();
            let mut wall = 0.0;
            let mut n = 0.0;
            for t in input
                .tps
                .iter()
                .filter(|t| t.side == side && t.workers == w)
            {
                cpu.add(&t.cpu);
                wall += t.elapsed_us / 1e6;
                n += t.completed as f64;
            }
            cpu_row(&format!("throughput, {w} workers"), side, &cpu, n, wall);
        }
    }

    // Targets.
    let race_errors = errors(Side::Crate);
    let _ = writeln!(out, "\n### Targets\n");
    let _ = writeln!(out, "| target | measured | |\n|---|---|---|");
    let _ = writeln!(
        out,
        "| at most 2 RPCs per committed operation, no BeginTransaction | {} | {} |",
        if two_rpcs {
            "≤ 2 (BatchGet + Commit; a new registration: Commit alone)"
        } else {
            "other"
        },
        verdict(two_rpcs)
    );
    let _ = writeln!(
        out,
        "| sequential acquire+complete p50 ≤ 0.7 × peer | {acq_complete_ratio:.2} × | {} |",
        verdict(acq_complete_ratio <= 0.7)
    );
    let _ = writeln!(
        out,
        "| {}-holder race wall time ≤ 0.5 × peer, no errors | {race_ratio:.3} ×, {race_errors} errors | {} |",
        plan.holders,
        verdict(race_ratio <= 0.5 && race_errors == 0)
    );
    let _ = writeln!(
        out,
        "| 16-worker throughput ≥ 1.5 × peer | {tp16:.2} × | {} |",
        verdict(tp16 >= 1.5)
    );
    out
}

"""The report of one run: the oracle's counts and coverage, the faults drawn and
fired, the throughput figures, every checkout's answers and the ledger, as the JSON
line's `result` and `report.json`."""

import json
import os

from . import oracle, settlement
from .deployment import PROJECT, SETTLE, STRIPE_SETTLE
from .plants import caught
from .tally import RpcTimes, Tally

# How far a process's stated clock offset may lie from the one drawn: the measure's
# own jitter (two system-clock reads around the journal's, on a loaded machine), far
# below the 2 s between any two offsets drawn.
STATED_TOLERANCE_MS = 250

def compare_statements(statements, plant, faults):
    """Each service process's stated clock offset and plant (`statements`: what it
    drew, `drawnMs`, of which `faultMs` is the fault's part, and what it stated)
    against the draw: the harness errors of processes that did not apply what they
    were given. A recovery run killed before its statement (`silent`), which comes
    before its first journal call, did nothing and states nothing. Draws every nonzero offset in `faults` and fires those
    stated as drawn; a fault kind drawn again and again that never fired is an error
    too."""
    errors = []
    for st in statements:
        if st["faultMs"]:
            faults.draw("clock_offset")
        if st["silent"]:
            continue
        stated = st["statedMs"]
        if stated is None:
            errors.append(f"{st['process']} stated no clock offset")
        elif abs(stated - st["drawnMs"]) > STATED_TOLERANCE_MS:
            errors.append(f"{st['process']} applied a clock offset of {stated} ms, "
                          f"drawn {st['drawnMs']} ms")
        elif st["faultMs"]:
            faults.fire("clock_offset")
        if st["plant"] != plant:
            errors.append(f"{st['process']} planted {st['plant']}, asked for {plant} "
                          "(a plant needs the binaries of cargo test --all-features)")
    for kind in faults.never_fired():
        errors.append(f"the fault {kind} was drawn {faults.drawn[kind]} times and never fired")
    return errors


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def stats(soak, population):
    main = [a for c in population.checkouts for a in c.answers if a.phase == "main"]
    finals = [f[3] - f[2] for c in population.checkouts for f in c.finals
              if f[4] == "main" and f[1] in (200, 402)]
    each = [a.answered - a.sent for a in main]
    seconds = soak.main_seconds
    return {
        "mainSeconds": round(seconds, 1),
        "requests": len(main),
        "requestsPerSecond": round(len(main) / seconds, 1) if seconds else None,
        "finalAnswers": len(finals),
        "finalAnswersPerSecond": round(len(finals) / seconds, 2) if seconds else None,
        "finalAnswerP50Ms": round(1000 * percentile(finals, 0.5)) if finals else None,
        "finalAnswerP99Ms": round(1000 * percentile(finals, 0.99)) if finals else None,
        "requestP50Ms": round(1000 * percentile(each, 0.5)) if each else None,
        "requestP99Ms": round(1000 * percentile(each, 0.99)) if each else None,
    }



def lock_wait(proxies):
    """The Firestore RPCs every proxy timed (`proxies.TcpFaultProxy.rpcs`), merged,
    and the figure of the JSON line, `lockWait`: the longest time the emulator took
    to answer a `Commit` (from its headers reaching the emulator to the first header
    block of its answer, never across a stall or partition of the proxy: the time a
    holder's commit waited on another transaction's lock, the emulator answering
    ABORTED after its 2 s lock timeout), how many were timed and how many the
    emulator aborted (gRPC status 10: each a commit that waited out the lock timeout,
    or met a conflict, and was retried by its call). `(lockWait, every method's)`."""
    rpcs = RpcTimes()
    for proxy in proxies:
        rpcs.merge(proxy.rpcs)
    figure = {"longestCommitMs": round(1000 * rpcs.longest.get("Commit", 0.0)),
              "commitsTimed": rpcs.timed.get("Commit", 0),
              "commitsAborted": rpcs.statuses.get("Commit 10", 0),
              "rpcsTimedUnderHold": sum(rpcs.under_hold.values())}
    every = {"longestMs": {k: round(1000 * v) for k, v in sorted(rpcs.longest.items())},
             "timed": rpcs.timed.sorted(), "underHold": rpcs.under_hold.sorted(),
             "statuses": rpcs.statuses.sorted()}
    return figure, every


def build(soak, population):
    ledger = soak.standin.ledger()
    checkouts = population.checkouts
    # Stripe's form carries no checkout reference: an intent is its key's checkout's.
    refs = {k: c.payload["ref"] for c in checkouts for k in c.keys}
    for x in ledger:
        if x["ref"] is None:
            x["ref"] = refs.get(x["key"])
    webhooks = getattr(soak, "webhooks", None)
    settle = SETTLE if webhooks is None else STRIPE_SETTLE
    journal = oracle.journal_state(soak.emulator.port, PROJECT, checkouts)
    counts, findings = oracle.check(checkouts, ledger, journal)
    values = oracle.canaries(checkouts, ledger, population.tokens, soak.account)
    if webhooks is not None:
        values.update({webhooks.secret, webhooks.secret_key})
    soak.log(f"journal read: {len(journal)} commands")
    raw, examples = oracle.scan_logs(soak.logs, values)
    soak.log("logs scanned")
    events = oracle.audit_events(soak.emulator.port, PROJECT)
    stale, stale_examples, taken_over = oracle.stale_fence_writes(events)
    early, early_findings = oracle.absences_before_settled(events, settle)
    leaseless, leaseless_findings = oracle.absences_without_lease(events)
    mismatches, mismatch_findings = oracle.ledger_mismatches(checkouts, ledger)
    unsettled, unsettled_findings = oracle.unsettled_attempts(
        soak.pending, checkouts, ledger, soak.final_job_at)
    if soak.pending_exit != 0:
        unsettled += 1
        unsettled_findings.append(f"command-journal pending exited {soak.pending_exit}: "
                                  "what is left unsettled cannot be listed")
    final, final_findings = oracle.final_recovery(soak.final_job)
    statements = soak.check_statements()
    answers = Tally()
    for c in checkouts:
        for a in c.answers:
            key = "lost" if a.status == 0 else str(a.status)
            if a.status == 500:
                try:
                    key += ":" + json.loads(a.text).get("error", "?")
                except (ValueError, AttributeError):
                    key += ":?"
            answers.add(key)
    recovered = Tally()
    for job in soak.jobs:
        for k in ("succeeded", "declined", "absent"):
            recovered.add(k, job["outcomes"].get(k, 0))
    by_reason = Tally()
    for entry in soak.pending:
        by_reason.add(entry.get("unblockedBy", "?"))
    faults = Tally(soak.faults.fired)
    for kind, n in soak.standin.counts.items():
        faults.add(kind, n)
    lock, rpcs = lock_wait(soak.fs_proxies())
    result = {
        "journalConcurrency": soak.args.journal_concurrency,
        "checkouts": len(checkouts),
        "charges": counts["charges"],
        "doubleCharges": counts["doubleCharges"],
        "chargesWithoutSettlement": counts["chargesWithoutSettlement"],
        "ledgerMismatches": mismatches,
        "disagreeingAnswers": counts["disagreeingAnswers"],
        "unsettledAttempts": unsettled,
        "absencesBeforeSettled": early,
        "absencesWithoutLease": leaseless,
        "resendsAfterCutoff": soak.standin.counts.get("resend_after_cutoff", 0),
        "staleFenceWrites": stale,
        "finalRecovery": final,
        "rawValuesInLogs": raw,
        "verifyFindings": 0 if soak.verify_clean else 1,
        "coverage": oracle.coverage(soak.logs, soak.jobs, soak.standin.counts,
                                    soak.faulted_empty_lookups, checkouts, events,
                                    soak.faulted_until),
        "faults": faults.sorted(),
        "answers": answers.sorted(),
        "recovered": sum(recovered.values()),
        "pending": by_reason.sorted(),
        "lockWait": lock,
    }
    if webhooks is not None:
        hooks, hook_findings = webhooks.findings(journal)
        result.update(hooks)
        findings += hook_findings
    result["failures"] = oracle.failures(result, require_coverage=not soak.args.no_faults)
    if webhooks is not None:
        result["failures"] += [k for k in hooks if result[k]]
    result["settlement"] = settlement.figure(events, getattr(soak, "jumps", []))
    errors = soak.errors + population.harness_errors
    result["harnessErrors"] = len(errors)
    result["plant"] = soak.args.plant
    result["plantCaught"] = (caught(soak.args.plant, result["failures"])
                             if soak.args.plant else None)
    findings += ([f"a write under a superseded fence: {e}" for e in stale_examples]
                 + early_findings + leaseless_findings + mismatch_findings + unsettled_findings
                 + final_findings)
    extra = {"stats": stats(soak, population), "findings": findings, "logExamples": examples,
             "auditEvents": len(events), "commandsTakenOver": taken_over,
             "harnessErrors": errors, "injected": getattr(soak, "injected", []),
             "faultsDrawn": soak.faults.drawn.sorted(), "faultsIdle": soak.faults.idle(),
             "statements": statements, "recoveredByOutcome": recovered.sorted(),
             "lateClients": getattr(soak, "late_clients", 0),
             "jobs": [{k: j[k] for k in ("run", "task", "tasks", "final", "exit", "outcomes")}
                      for j in soak.jobs],
             "rpcs": rpcs, "ledger": ledger, "seed": soak.args.seed,
             "events": webhooks.summary() if webhooks is not None else None,
             "checkouts": [{"index": c.index, "hash": c.hash, "targeted": c.gone,
                            "answers": [[round(a.sent - soak.t0, 2), round(a.answered - soak.t0, 2),
                                         a.status, a.phase] for a in c.answers],
                            "finals": [[f[0], f[1], f[4]] for f in c.finals]}
                           for c in checkouts]}
    with open(os.path.join(soak.run_dir, "report.json"), "w") as f:
        json.dump({"result": result, **extra}, f, indent=1)
    return result, extra



"""The oracle: the provider's ledger against the journal, every client's answers,
the recovery job's own report and the logs; and the coverage it requires.

Each check is one count of the JSON line (`FINDINGS`, in order), which must be 0:

- `doubleCharges`: checkouts with more than one succeeded charge in the ledger;
- `chargesWithoutSettlement`: succeeded charges not settled in the journal with that
  charge (the command `succeeded`, its stored envelope the charge's) under one of the
  checkout's attempt keys, and charges of no checkout; after the final recovery a
  charge the journal still waits on is unsettled;
- `ledgerMismatches`: ledger entries that differ from their checkout's payload (the
  amount, the currency), a decline the payload does not ask for or a charge where it
  asks for one (`standin.declines`), and entries of no checkout;
- `disagreeingAnswers`: checkouts whose answers disagree (two 200 bodies not byte for
  byte the same, a 200 and a 402), a 200 that is not the journal's stored result or
  that a client heard before Firestore committed that result, a
  402 beside a charge or without a decline in the ledger, a `failed_final` command
  without a decline or beside a charge, a stored envelope that names no charge;
- `unsettledAttempts`: attempts `command-journal pending` still lists `sending`,
  `ambiguous`, `replayed_unknown` or `indeterminate` after the final recovery
  although the provider holds a charge or decline for their key, or their absence
  was provable when it ran (and 1 when `pending` itself refused the journal: nothing unsettled could be
  ruled out);
- `absencesBeforeSettled`: attempts the journal recorded absent before the last
  permitting lease plus the settle window had passed (`provider_send_reconciled_absent`
  against the attempt's last `opened` or `resent` event, recomputed here from the
  contract, not from the journal's code);
- `absencesWithoutLease`: attempts recorded absent under the fence of their last
  permit or an older one: whoever records an absence holds a lease taken after the
  permit's ended, under a higher fence;
- `resendsAfterCutoff`: POSTs the provider received under a key the send cutoff or
  more after the key's first (in its own clock; `standin`'s
  `resend_after_cutoff`): past the cutoff an attempt is looked up, never re-sent;
- `staleFenceWrites`: audit events written under a fence older than one an earlier
  event of the command was written under, in Firestore's commit order;
- `finalRecovery`: the final recovery run's problems: an exit code other than 0, a
  run that never reported, lookups the provider left unanswered, errors;
- `rawValuesInLogs`: log lines of any process holding a raw value (a caller id,
  command id, any UUID v4, a payload value, a charge id, a provider key, the account,
  a token);
- `verifyFindings`: 1 when `command-journal verify` found anything.

`COVERAGE` lists the dangerous situations each safety rule exists for, which the run
must show happening (each above zero, counted from their effects): a holder whose
lease was taken over trying to record its provider answer and refused
(`staleHolderRefused`, the service's `lease_lost` answers), a lookup before the
absence was provable not taken for one (`lookupsInSettleWindow`, recovery runs of
the faulted phase answering `not_found`), a re-send reaching the provider after the
window the `post_key_window_60s` plant gives a key (`resendsAfterKeyWindow`), and
recovery settling commands during the faulted phase (`recoverySettledInFaultedPhase`).
A new check is one more function and one more key in `FINDINGS` (or `COVERAGE`).
"""

import datetime
import glob
import json
import os
import re
import urllib.request

from .standin import declines
from .tally import Tally

FINDINGS = ("doubleCharges", "chargesWithoutSettlement", "ledgerMismatches",
            "disagreeingAnswers", "unsettledAttempts", "absencesBeforeSettled",
            "absencesWithoutLease", "resendsAfterCutoff", "staleFenceWrites",
            "finalRecovery", "rawValuesInLogs", "verifyFindings")
COVERAGE = ("staleHolderRefused", "lookupsInSettleWindow", "resendsAfterKeyWindow",
            "recoverySettledInFaultedPhase")
UNKNOWN_STATES = ("sending", "ambiguous", "replayed_unknown", "indeterminate")
PERMITS = ("provider_send_opened", "provider_send_resent")
ABSENT = "provider_send_reconciled_absent"
LEASE_SECONDS = 60

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.I)
PROVIDER_KEY = re.compile(r"cj1-[0-9a-f]{64}")
WORD = re.compile(r"[A-Za-z0-9_\-]+")


def envelope_of(charge):
    """The envelope the service stores for a ledger charge: its id, amount, currency
    and status, as RFC 8785 canonical text (sorted keys; integers and ASCII here)."""
    fields = {k: charge[k] for k in ("amount", "currency", "id", "status")}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"))


def read_documents(emulator_port, project, names):
    """`{name: document}` of the documents that exist, by the REST API's batchGet
    (each with its `fields` and Firestore's `createTime`)."""
    found = {}
    base = f"http://127.0.0.1:{emulator_port}/v1/projects/{project}/databases/(default)/documents"
    prefix = f"projects/{project}/databases/(default)/documents/"
    for i in range(0, len(names), 200):
        body = json.dumps({"documents": [prefix + n for n in names[i:i + 200]]}).encode()
        request = urllib.request.Request(base + ":batchGet", data=body, method="POST", headers={
            "Authorization": "Bearer owner", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            for item in json.load(response):
                if "found" in item:
                    found[item["found"]["name"][len(prefix):]] = item["found"]
    return found


def journal_state(emulator_port, project, checkouts):
    """`{hash: (lifecycle state or None, stored envelope text or None, the time the
    result was stored or None)}`: the time is Firestore's commit time of the result
    document (its `createTime`, on this machine's clock), in seconds."""
    names = []
    for c in checkouts:
        names += [f"checkoutRequests/{c.hash}/lifecycle/current",
                  f"checkoutRequests/{c.hash}/results/current"]
    docs = read_documents(emulator_port, project, names)
    state = {}
    for c in checkouts:
        life = docs.get(f"checkoutRequests/{c.hash}/lifecycle/current")
        result = docs.get(f"checkoutRequests/{c.hash}/results/current")
        state[c.hash] = (
            life["fields"]["state"]["stringValue"] if life else None,
            result["fields"]["envelope"]["stringValue"] if result else None,
            _seconds_of(result["createTime"]) if result else None,
        )
    return state


def audit_events(emulator_port, project):
    """Every audit event's command, fence, type, attempt, send revision and time of
    occurrence with its create time, by one
    `runQuery` over `auditEvents` (one scan; the REST list pages one scan each):
    `(fields, createTime)`."""
    url = (f"http://127.0.0.1:{emulator_port}/v1/projects/{project}/databases/(default)/"
           "documents:runQuery")
    fields = ("commandKeyHash", "fenceEpoch", "eventType", "attempt", "sendRevision",
              "occurredAt")
    query = {"structuredQuery": {
        "from": [{"collectionId": "auditEvents"}],
        "select": {"fields": [{"fieldPath": f} for f in fields]},
    }}
    request = urllib.request.Request(url, data=json.dumps(query).encode(), method="POST",
                                     headers={"Authorization": "Bearer owner",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        rows = json.load(response)
    return [(r["document"].get("fields", {}), r["document"]["createTime"])
            for r in rows if "document" in r]


def _seconds_of(text):
    """An RFC 3339 UTC time in seconds since the epoch."""
    seconds, nanos = _instant(text)
    return seconds + nanos / 1e9


def _instant(text):
    """An RFC 3339 UTC time as (seconds, nanoseconds), whatever its fraction's length."""
    main, _, fraction = text.rstrip("Z").partition(".")
    seconds = datetime.datetime.fromisoformat(main).replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return int(seconds), int((fraction + "000000000")[:9])


def stale_fence_writes(events):
    """Audit events (`(fields, createTime)`) written under a fence older than one an
    event of the same command was written under before them, in Firestore's own
    commit order (create times): a write under a superseded fence. `(count, examples,
    commands whose lease was taken over at least once)`."""
    by_command = {}
    for fields, created in events:
        fence = fields.get("fenceEpoch", {}).get("integerValue")
        if fence is None:
            continue
        by_command.setdefault(fields["commandKeyHash"]["stringValue"], []).append(
            (_instant(created), int(fence), fields["eventType"]["stringValue"]))
    count, examples = 0, []
    taken_over = sum(1 for t in by_command.values() if max(f for _, f, _ in t) >= 2)
    for command, timeline in by_command.items():
        timeline.sort()
        highest, pending_time, pending_max = 0, None, 0
        for at, fence, kind in timeline:
            if at != pending_time:
                highest = max(highest, pending_max)
                pending_time, pending_max = at, 0
            pending_max = max(pending_max, fence)
            if fence < highest:
                count += 1
                if len(examples) < 10:
                    examples.append(f"{command}: {kind} at fence {fence} after fence {highest}")
    return count, examples, taken_over


def _seconds(ts):
    return ts["seconds"] + ts["nanoseconds"] / 1e9


def _send_chains(events):
    """`{command: [(send revision, event type, attempt, occurredAt, fence or None)]}`
    of the send events (those with a send revision), each chain in revision order."""
    by_command = {}
    for fields, _ in events:
        revision = fields.get("sendRevision", {}).get("integerValue")
        if revision is None:
            continue
        fence = fields.get("fenceEpoch", {}).get("integerValue")
        by_command.setdefault(fields["commandKeyHash"]["stringValue"], []).append(
            (int(revision), fields["eventType"]["stringValue"],
             int(fields["attempt"]["integerValue"]),
             _instant(fields["occurredAt"]["timestampValue"]),
             None if fence is None else int(fence)))
    return {command: sorted(chain) for command, chain in by_command.items()}


def absences_before_settled(events, settle_seconds):
    """Attempts recorded absent (`provider_send_reconciled_absent`) before their last
    permit (`opened` or `resent`, by send revision) plus the lease plus
    `settle_seconds`: `(count, findings)`. Both times are the journal's own, in the
    clock of the process that wrote each, as the contract decides by."""
    count, findings = 0, []
    for command, chain in _send_chains(events).items():
        last_sent = {}
        for _, kind, attempt, at, _ in chain:
            if kind in PERMITS:
                last_sent[attempt] = at
            elif kind == ABSENT:
                sent = last_sent.get(attempt)
                if sent is None:
                    early = None
                else:
                    early = (at[0] - sent[0]) + (at[1] - sent[1]) / 1e9
                if early is None or early < LEASE_SECONDS + settle_seconds:
                    count += 1
                    findings.append(f"{command}: attempt {attempt} recorded absent "
                                    f"{'with no permit' if early is None else f'{early:.1f} s'} "
                                    f"after its last permit (provable from "
                                    f"{LEASE_SECONDS + settle_seconds} s)")
    return count, findings


def absences_without_lease(events):
    """Attempts recorded absent under the fence of their last permit or an older one:
    `(count, findings)`. The permit's lease must have ended before the absence is
    provable, so whoever records it holds a lease taken since, under a higher fence;
    an absence written under the permit's own fence was written without a lease of
    its own (an absence of no permit is `absences_before_settled`'s)."""
    count, findings = 0, []
    for command, chain in _send_chains(events).items():
        permit_fence = {}
        for _, kind, attempt, _, fence in chain:
            if kind in PERMITS:
                permit_fence[attempt] = fence
            elif kind == ABSENT and attempt in permit_fence:
                permitted = permit_fence[attempt]
                if fence is None or permitted is None or fence <= permitted:
                    count += 1
                    findings.append(f"{command}: attempt {attempt} recorded absent under "
                                    f"fence {fence}, its last permit's {permitted}")
    return count, findings


def unsettled_attempts(pending, checkouts, ledger, at_seconds):
    """Attempts listed `sending`, `ambiguous` or `replayed_unknown` after the final
    recovery although the provider holds an entry (a charge or a decline) for their
    key, or their absence was provable at `at_seconds` (the final recovery's time):
    `(count, findings)`. A listed command of no checkout is one too."""
    keys = {x["key"] for x in ledger}
    by_hash = {c.hash: c for c in checkouts}
    count, findings = 0, []
    for entry in pending:
        send = entry.get("send") or {}
        state = send.get("state")
        if state not in UNKNOWN_STATES:
            continue
        c = by_hash.get(entry.get("commandKeyHash"))
        attempt = send.get("attempt")
        if c is None or not isinstance(attempt, int) or not 1 <= attempt <= len(c.keys):
            count += 1
            findings.append(f"{entry.get('commandKeyHash')}: listed {state}, of no checkout")
            continue
        provable = send.get("absenceProvableFrom")
        if c.keys[attempt - 1] in keys:
            why = "the provider holds an entry for its key"
        elif provable and _seconds(provable) <= at_seconds:
            why = "its absence was provable"
        else:
            continue
        count += 1
        findings.append(f"checkout {c.index} ({c.hash}): attempt {attempt} left {state}: {why}")
    return count, findings


def ledger_mismatches(checkouts, ledger):
    """Ledger entries that differ from their checkout's payload: `(count, findings)`."""
    by_ref = {c.payload["ref"]: c for c in checkouts}
    count, findings = 0, []
    for x in ledger:
        c = by_ref.get(x["ref"])
        if c is None:
            count += 1
            findings.append(f"a {x['status']} ledger entry of no checkout")
            continue
        amount, currency = c.payload["amount"], str(c.payload["currency"]).lower()
        wrong = []
        if x["amount"] != amount:
            wrong.append(f"amount {x['amount']} for {amount}")
        if x["currency"] != currency:
            wrong.append(f"currency {x['currency']} for {currency}")
        if (x["status"] == "failed") != declines(amount):
            wrong.append(f"{x['status']} where the payload asks for "
                         f"{'a decline' if declines(amount) else 'a charge'}")
        if wrong:
            count += 1
            findings.append(f"checkout {c.index} ({c.hash}): ledger entry with " + ", ".join(wrong))
    return count, findings


def check(checkouts, ledger, journal):
    """The ledger, journal and answer checks: `(counts, findings)`."""
    by_ref = {}
    for charge in ledger:
        by_ref.setdefault(charge["ref"], []).append(charge)
    counts = {"charges": 0, "doubleCharges": 0, "chargesWithoutSettlement": 0,
              "disagreeingAnswers": 0}
    findings = []
    known_refs = set()
    for c in checkouts:
        ref = c.payload["ref"]
        known_refs.add(ref)
        mine = by_ref.get(ref, [])
        charged = [x for x in mine if x["status"] == "succeeded"]
        counts["charges"] += len(charged)
        if len(charged) > 1:
            counts["doubleCharges"] += 1
            findings.append(f"checkout {c.index} ({c.hash}): {len(charged)} charges")
        state, stored, stored_at = journal.get(c.hash, (None, None, None))
        for x in charged:
            ours = x["key"] in c.keys
            settled = state == "succeeded" and stored == envelope_of(x)
            if not ours or not settled:
                counts["chargesWithoutSettlement"] += 1
                findings.append(f"checkout {c.index} ({c.hash}): charge without settlement "
                                f"(journal {state}, key ours {ours})")
        disagree = []
        oks = [a.text for a in c.answers if a.status == 200]
        if len(set(oks)) > 1:
            disagree.append("two different 200 bodies")
        declined = any(a.status == 402 for a in c.answers)
        if oks and declined:
            disagree.append("a 200 and a 402")
        if declined and charged:
            disagree.append("a 402 while the ledger holds a charge")
        if declined and not any(x["status"] == "failed" for x in mine):
            disagree.append("a 402 the provider never answered")
        for text in set(oks):
            try:
                got = json.dumps(json.loads(text)["charge"], sort_keys=True, separators=(",", ":"))
            except (ValueError, KeyError, TypeError):
                got = None
            if len(charged) != 1 or got != envelope_of(charged[0]):
                disagree.append("a 200 whose charge is not the ledger's")
            if stored is None or text != '{"status":"succeeded","charge":' + stored + "}":
                disagree.append("a 200 that is not the journal's stored result")
        # A 200 is the journal's stored result: heard only after Firestore committed it
        # (both times on this machine's clock), never ahead of the record.
        if stored_at is not None and any(a.status == 200 and a.heard < stored_at
                                         for a in c.answers):
            disagree.append("a 200 heard before the journal stored its result")
        if state == "succeeded" and stored is None:
            disagree.append("succeeded without a stored envelope")
        # A final decline in the journal is the provider's: a declined charge in the
        # ledger, and no charge beside it.
        if state == "failed_final" and not any(x["status"] == "failed" for x in mine):
            disagree.append("failed in the journal without a decline in the ledger")
        if state == "failed_final" and charged:
            disagree.append("failed in the journal while the ledger holds a charge")
        if stored is not None and stored not in {envelope_of(x) for x in charged}:
            disagree.append("a stored envelope the ledger does not hold")
        if disagree:
            counts["disagreeingAnswers"] += 1
            findings.append(f"checkout {c.index} ({c.hash}): " + "; ".join(sorted(set(disagree))))
    for charge in ledger:
        if charge["status"] == "succeeded" and charge["ref"] not in known_refs:
            counts["charges"] += 1
            counts["chargesWithoutSettlement"] += 1
            findings.append("a charge of no checkout")
    return counts, findings


def final_recovery(job):
    """The final recovery run's problems (`job`: its exit code and summary, `None`
    when it never ran): `(count, findings)`. It must exit 0 and report, with every
    lookup answered and no error."""
    if job is None:
        return 1, ["the final recovery never ran"]
    findings = []
    if job["exit"] != 0:
        findings.append(f"the final recovery exited {job['exit']}")
    summary = job.get("summary")
    if summary is None:
        findings.append("the final recovery reported nothing")
    else:
        unanswered = (summary.get("lookups") or {}).get("unavailable", 0)
        if unanswered:
            findings.append(f"the final recovery's provider left {unanswered} lookups unanswered")
        if summary.get("errors"):
            findings.append(f"the final recovery had {summary['errors']} errors")
    return len(findings), findings


def _refused_lines(logdir):
    """The commands of the service's `checkout` lines answered `lease_lost`, one per
    line."""
    refused = []
    for path in sorted(glob.glob(os.path.join(logdir, "instance-*.stdout"))):
        with open(path, "rb") as f:
            for raw in f:
                if b'"lease_lost"' not in raw:
                    continue
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if line.get("message") == "checkout" and line.get("outcome") == "lease_lost":
                    refused.append(line.get("commandKeyHash"))
    return refused


def coverage(logdir, jobs, standin_counts, empty_lookups, checkouts, events, faulted_until):
    """The dangerous situations the run made happen: `COVERAGE`'s counts, each a
    process's own line (the service's answer, a recovery run's outcome for a command)
    counted only where the journal's or the provider's records show it happened.

    - `staleHolderRefused`: `checkout` lines answered `lease_lost` (the holder called
      the provider and its record was refused) of a command the audit events show
      taken over (an event under a fence above 1): a lease that merely ran out is not
      a stale holder;
    - `lookupsInSettleWindow`: `not_found` outcomes of the faulted phase's recovery
      runs for a command under one of whose keys the provider answered a lookup with
      nothing during that phase (`empty_lookups`, the stand-in's keys by the phase's
      end);
    - `resendsAfterKeyWindow`: the stand-in's own count;
    - `recoverySettledInFaultedPhase`: `succeeded` and `declined` outcomes of the
      faulted phase's runs for a command whose reconciliation
      (`provider_send_reconciled_succeeded` or `_declined`) Firestore committed before
      the phase ended (`faulted_until`, seconds on this machine's clock).

    `jobs` are the recovery runs, each with `final` and `commands`, the `(command,
    outcome)` of each of its `recovered` lines."""
    taken_over, reconciled_at = set(), {}
    for fields, created in events:
        command = fields.get("commandKeyHash", {}).get("stringValue")
        fence = fields.get("fenceEpoch", {}).get("integerValue")
        if fence is not None and int(fence) >= 2:
            taken_over.add(command)
        kind = fields.get("eventType", {}).get("stringValue")
        if kind in ("provider_send_reconciled_succeeded", "provider_send_reconciled_declined"):
            at = _seconds_of(created)
            reconciled_at[command] = min(at, reconciled_at.get(command, at))
    keys = {c.hash: set(c.keys) for c in checkouts}
    looked_up, settled = 0, 0
    for job in jobs:
        if job["final"]:
            continue
        for command, outcome in job["commands"]:
            if outcome == "not_found" and keys.get(command, set()) & empty_lookups:
                looked_up += 1
            elif (outcome in ("succeeded", "declined")
                  and reconciled_at.get(command, faulted_until) < faulted_until):
                settled += 1
    return {
        "staleHolderRefused": sum(1 for c in _refused_lines(logdir) if c in taken_over),
        "lookupsInSettleWindow": looked_up,
        "resendsAfterKeyWindow": standin_counts.get("resend_after_key_window", 0),
        "recoverySettledInFaultedPhase": settled,
    }


def failures(result, require_coverage=True):
    """The keys that fail the run: every finding above zero, then `coverage.<key>`
    for every situation that never happened (when required)."""
    failed = [k for k in FINDINGS if result.get(k)]
    if require_coverage:
        failed += [f"coverage.{k}" for k in COVERAGE if not result["coverage"].get(k)]
    return failed


def canaries(checkouts, ledger, tokens, account):
    """Every raw value the system's processes must never write."""
    values = {account}
    for c in checkouts:
        values.update({c.uid, c.command_id, c.payload["ref"]})
    for charge in ledger:
        values.add(charge["id"])
    for _, token in tokens.values():
        values.update(p for p in token.split(".") if len(p) > 40)
    return values


def scan_logs(logdir, values):
    """`(offending lines, examples)` over every process's output in `logdir`."""
    offending, examples = 0, []
    for path in sorted(glob.glob(os.path.join(logdir, "*"))):
        name = os.path.basename(path)
        if name.startswith("harness") or name.startswith("identity"):
            continue
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                line = raw.decode("utf-8", "replace")
                hit = None
                if UUID4.search(line):
                    hit = "a UUID v4"
                elif PROVIDER_KEY.search(line):
                    hit = "a provider key"
                else:
                    for word in WORD.findall(line):
                        if word in values:
                            hit = "a raw value"
                            break
                if hit:
                    offending += 1
                    if len(examples) < 10:
                        examples.append(f"{name}:{number}: {hit}")
    return offending, examples

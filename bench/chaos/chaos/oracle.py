"""The oracle: the provider's ledger against the journal and every client's answers.

After the run and a final recovery, for every checkout:

- at most one succeeded charge in the ledger (`doubleCharges` counts the checkouts
  charged more than once);
- every succeeded charge belongs to a checkout (its request's reference and its key,
  one of the checkout's attempt keys) that the journal has `succeeded` with that
  charge's envelope (`results/current`, read through the emulator's REST API), or
  that `command-journal pending` still lists with that charge's attempt's outcome
  unknown (`sending`, `ambiguous`, `replayed_unknown` or `indeterminate`: a listing
  that has the attempt absent, or a later attempt open, has disowned the charge); any
  other charge counts in `chargesWithoutSettlement`;
- `disagreeingAnswers` counts the checkouts where two answers disagree (two 200
  bodies that are not byte for byte the same, a 200 and a 402), where a 200's charge
  is not the one the ledger holds, a 402 where the ledger holds a charge or no
  decline, or where
  the journal's stored envelope names no charge of the ledger;
- no command listed `sending` once its absence is provable (`stillSending`);
- `command-journal verify` clean;
- beyond the JSON line's keys, the journal's own record: no audit event written under
  a fence older than one an earlier event of the command was written under, in
  Firestore's commit order (`stale_fence_writes`: a write under a superseded fence);
- no raw value (a caller id, command id, any UUID v4 such as a lease id, a payload
  value, a charge id, a provider key, the provider account, a token) in any line any
  process of the system wrote (`rawValuesInLogs`).
"""

import datetime
import glob
import json
import os
import re
import urllib.request

UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.I)
PROVIDER_KEY = re.compile(r"cj1-[0-9a-f]{64}")
WORD = re.compile(r"[A-Za-z0-9_\-]+")


def envelope_of(charge):
    """The envelope the service stores for a ledger charge: its id, amount, currency
    and status, as RFC 8785 canonical text (sorted keys; integers and ASCII here)."""
    fields = {k: charge[k] for k in ("amount", "currency", "id", "status")}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"))


def read_documents(emulator_port, project, names):
    """`{name: fields}` of the documents that exist, by the REST API's batchGet."""
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
                    found[item["found"]["name"][len(prefix):]] = item["found"].get("fields", {})
    return found


def journal_state(emulator_port, project, checkouts):
    """`{hash: (lifecycle state or None, stored envelope text or None)}`."""
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
            life["state"]["stringValue"] if life else None,
            result["envelope"]["stringValue"] if result else None,
        )
    return state


def audit_events(emulator_port, project):
    """Every audit event's command, fence and type with its create time, by one
    `runQuery` over `auditEvents` (one scan; the REST list pages one scan each):
    `(fields, createTime)`."""
    url = (f"http://127.0.0.1:{emulator_port}/v1/projects/{project}/databases/(default)/"
           "documents:runQuery")
    query = {"structuredQuery": {
        "from": [{"collectionId": "auditEvents"}],
        "select": {"fields": [{"fieldPath": f}
                              for f in ("commandKeyHash", "fenceEpoch", "eventType")]},
    }}
    request = urllib.request.Request(url, data=json.dumps(query).encode(), method="POST",
                                     headers={"Authorization": "Bearer owner",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        rows = json.load(response)
    return [(r["document"].get("fields", {}), r["document"]["createTime"])
            for r in rows if "document" in r]


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


def still_sending(pending, at_seconds):
    """Listed `sending` at or past the time its absence became provable."""
    n = 0
    for entry in pending:
        send = entry.get("send") or {}
        provable = send.get("absenceProvableFrom")
        if send.get("state") == "sending" and provable and _seconds(provable) <= at_seconds:
            n += 1
    return n


def unknown(entry, attempt):
    """Whether a pending listing `entry` holds attempt `attempt`'s outcome as
    unknown (`sending`, `ambiguous`, or a stored 5xx's `replayed_unknown` or
    `indeterminate`, which wait for the provider's final state): a charge under that
    attempt's key is then still to be found. Listed any other way (no send, the
    attempt recorded absent, a later attempt opened) the journal has disowned a charge
    the ledger holds."""
    send = (entry or {}).get("send") or {}
    open_states = ("sending", "ambiguous", "replayed_unknown", "indeterminate")
    return send.get("attempt") == attempt and send.get("state") in open_states


def check(checkouts, ledger, journal, pending):
    """The ledger, journal and answer checks: `(counts, findings)`."""
    listed = {e["commandKeyHash"]: e for e in pending}
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
        state, stored = journal.get(c.hash, (None, None))
        for x in charged:
            ours = x["key"] in c.keys
            settled = state == "succeeded" and stored == envelope_of(x)
            waiting = ours and unknown(listed.get(c.hash), c.keys.index(x["key"]) + 1)
            if not ours or not (settled or waiting):
                counts["chargesWithoutSettlement"] += 1
                findings.append(f"checkout {c.index} ({c.hash}): charge without settlement "
                                f"(journal {state}, key ours {ours}, "
                                f"listed {json.dumps(listed.get(c.hash, {}).get('send'))})")
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

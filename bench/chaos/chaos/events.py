"""Stripe's events, as the stand-in sends them: the event objects, their signatures,
the Events API's listing, and the delivery with its faults.

What Stripe documents, and the stand-in does:

- An event is `{"id": "evt_…", "object": "event", "api_version", "created",
  "data": {"object": …}, "livemode", "pending_webhooks", "request", "type"}`
  (https://docs.stripe.com/api/events/object); its `data.object` is the object as it
  was when the event was made (here a PaymentIntent, `intent_of`).
- Each delivery is signed: `Stripe-Signature: t=<Unix seconds>,v1=<hex>`, the
  HMAC-SHA256 of the timestamp's text, `.` and the exact body bytes, with the
  endpoint's secret; during a secret's roll, one `v1` per active secret
  (https://docs.stripe.com/webhooks/signatures). Each attempt is signed at its own
  time, so a retry hours later carries a fresh timestamp.
- Events are not ordered, may be delivered more than once, and a delivery answered
  with anything but a 2xx (or not answered) is retried with an exponential back-off
  for up to three days (https://docs.stripe.com/webhooks, "Event ordering", "Handle
  duplicate events", "Retry behavior").
- `GET /v1/events` lists the events of the last 30 days, newest first, `limit` 1 to
  100 (10 by default), paged by `starting_after` / `ending_before`, filtered by
  `created` and `type` / `types[]` (https://docs.stripe.com/api/events/list).

The delivery's faults (`DeliveryFaults`, per event; `Delivery` counts each by effect):
`event_dropped` (never delivered: only the Events API has it), `event_duplicated` (one
or two more deliveries), `event_delayed` (held a few seconds, or, for `late` ones,
until the soak's clock jump: hours of simulated time later), `event_reordered` (held
so that the events made after it go first), and two forgeries beside the genuine
delivery, which the endpoint must refuse with 400 and which must write nothing:
`event_forged_signature` (a success the stand-in never made, for an intent id of its
own, signed with a secret the endpoint does not hold) and `event_forged_stale`
(a genuine body signed with the right secret an hour ago, a replayed capture).
"""

import asyncio
import hashlib
import hmac
import json
import time
import urllib.parse

API_VERSION = "2026-01-28.clover"
EVENT_RETENTION = 30 * 86_400
STALE_SECONDS = 3_600
FORGED_PREFIX = "pi_forged"
# Stripe's retry schedule is hours long; the soak's is seconds, capped.
RETRY_FIRST = 0.5
RETRY_MAX = 8.0


def sign(secret, timestamp, body):
    """The `v1` signature: HMAC-SHA256 of `"<timestamp>." + body` under `secret`."""
    message = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signature_header(secrets, timestamp, body):
    """`Stripe-Signature` for `body` at `timestamp`: one `v1` per secret in `secrets`."""
    return ",".join([f"t={timestamp}"] + [f"v1={sign(s, timestamp, body)}" for s in secrets])


def intent_of(record, status, created):
    """The PaymentIntent Stripe would show for one of the stand-in's charges: its key
    in `metadata.journal_key`, `status` `succeeded`, `requires_payment_method` with
    the decline as `last_payment_error`, or `canceled`
    (https://docs.stripe.com/api/payment_intents/object)."""
    charge = record["charge"]
    failed = status == "requires_payment_method"
    return {
        "id": record["intent"],
        "object": "payment_intent",
        "amount": charge["amount"],
        "currency": charge["currency"],
        "status": status,
        "created": created,
        "livemode": False,
        "latest_charge": charge["id"] if status == "succeeded" or failed else None,
        "last_payment_error": ({"type": "card_error", "code": "card_declined"}
                               if failed else None),
        "metadata": {"journal_key": record["key"]},
    }


class EventLog:
    """Every event the stand-in made, oldest first, each with the exact body bytes
    every delivery and the Events API send."""

    def __init__(self, rng):
        self.rng = rng
        self.events = []
        self.by_id = {}

    def make(self, kind, obj, created, key=None):
        """A new event of type `kind` over `obj`, made at `created` (Unix seconds)."""
        event = {
            "id": "evt_" + "".join(self.rng.choice("0123456789abcdef") for _ in range(24)),
            "object": "event",
            "api_version": API_VERSION,
            "created": created,
            "data": {"object": obj},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": key},
            "type": kind,
        }
        body = json.dumps(event, separators=(",", ":")).encode()
        entry = {"event": event, "body": body}
        self.events.append(entry)
        self.by_id[event["id"]] = entry
        return entry

    def list(self, query, now):
        """`GET /v1/events?<query>` at `now` (Unix seconds): `(status, body)`."""
        params = urllib.parse.parse_qs(query, keep_blank_values=True)

        def one(name):
            values = params.get(name, [])
            return values[0] if len(values) == 1 else None

        try:
            limit = int(one("limit") or 10)
            bounds = {op: int(one(f"created[{op}]")) for op in ("gt", "gte", "lt", "lte")
                      if one(f"created[{op}]") is not None}
        except ValueError:
            return 400, {"error": {"type": "invalid_request_error"}}
        if not 1 <= limit <= 100:
            return 400, {"error": {"type": "invalid_request_error"}}
        types = set(params.get("types[]", [])) | set(params.get("type", []))
        tests = {"gt": lambda c, b: c > b, "gte": lambda c, b: c >= b,
                 "lt": lambda c, b: c < b, "lte": lambda c, b: c <= b}
        newest = [e["event"] for e in reversed(self.events)
                  if e["event"]["created"] > now - EVENT_RETENTION
                  and (not types or e["event"]["type"] in types)
                  and all(tests[op](e["event"]["created"], b) for op, b in bounds.items())]
        after, before = one("starting_after"), one("ending_before")
        ids = [e["id"] for e in newest]
        if after is not None:
            if after not in ids:
                return 400, {"error": {"type": "invalid_request_error"}}
            newest = newest[ids.index(after) + 1:]
            page = newest[:limit]
        elif before is not None:
            if before not in ids:
                return 400, {"error": {"type": "invalid_request_error"}}
            newest = newest[:ids.index(before)]
            page = newest[-limit:]
        else:
            page = newest[:limit]
        return 200, {"object": "list", "data": page, "has_more": len(newest) > len(page),
                     "url": "/v1/events"}


class DeliveryFaults:
    """The delivery's fault mix: probabilities per event."""

    def __init__(self, drop=0.0, duplicate=0.0, delay=0.0, delay_max=0.0, late=0.0,
                 reorder=0.0, forge_signature=0.0, forge_stale=0.0):
        self.drop = drop
        self.duplicate = duplicate
        self.delay = delay
        self.delay_max = delay_max
        self.late = late
        self.reorder = reorder
        self.forge_signature = forge_signature
        self.forge_stale = forge_stale


class Delivery:
    """Sends each event to the endpoint (`send(body, header) -> status or None`) with
    the faults drawn, retrying a genuine delivery until a 2xx, as Stripe does. Keeps
    what each delivery was answered: `refused_genuine` (a genuine, fresh delivery
    answered 400) and `forged_accepted` (a forgery answered anything but 400) are the
    oracle's; `forged_intents` the intent ids only forgeries named."""

    def __init__(self, rng, faults, secrets, clock, send, counts):
        self.rng = rng
        self.faults = faults
        self.secrets = list(secrets)
        self.clock = clock
        self.send = send
        self.counts = counts
        self.tasks = set()
        self.late = []
        self.held_until = 0.0
        self.delivered = {}
        self.refused_genuine = []
        self.forged_accepted = []
        self.forged_sent = 0
        self.forged_intents = set()
        self.first = True

    def _count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def _spawn(self, coro):
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def publish(self, entry):
        """Plans the deliveries of one new event (`EventLog.make`'s entry). The first
        event of a run with forgeries gets one of each, so that every run has them."""
        f, rng = self.faults, self.rng
        first, self.first = self.first, False
        if rng.random() < f.forge_signature or (first and f.forge_signature):
            self._spawn(self._forged_signature(entry))
        if rng.random() < f.forge_stale or (first and f.forge_stale):
            self._spawn(self._forged_stale(entry))
        if rng.random() < f.drop:
            self._count("event_dropped")
            return
        copies = 1
        if rng.random() < f.duplicate:
            copies += rng.choice((1, 2))
            self._count("event_duplicated")
        if rng.random() < f.late:
            self._count("event_delayed_late")
            self.late.extend([entry] * copies)
            return
        for _ in range(copies):
            wait = 0.0
            if rng.random() < f.delay:
                self._count("event_delayed")
                wait = rng.uniform(1.0, f.delay_max)
            elif rng.random() < f.reorder:
                # Held past the next events' deliveries: they overtake it.
                self._count("event_reordered")
                wait = rng.uniform(0.5, 3.0)
            self._spawn(self._genuine(entry, wait))

    def flush_late(self):
        """Delivers the events held for the clock's jump (hours after they were made)."""
        late, self.late = self.late, []
        for entry in late:
            self._spawn(self._genuine(entry, 0.0))

    async def _genuine(self, entry, wait):
        if wait:
            await asyncio.sleep(wait)
        backoff = RETRY_FIRST
        while True:
            now = int(self.clock())
            status = await self.send(entry["body"],
                                     signature_header(self.secrets, now, entry["body"]))
            if status is not None and 200 <= status < 300:
                self.delivered[entry["event"]["id"]] = \
                    self.delivered.get(entry["event"]["id"], 0) + 1
                return
            if status == 400:
                self.refused_genuine.append(entry["event"]["id"])
                return
            self._count("event_retried")
            await asyncio.sleep(backoff * self.rng.uniform(0.5, 1.0))
            backoff = min(backoff * 2, RETRY_MAX)

    async def _forged(self, body, header, kind):
        self.forged_sent += 1
        status = await self.send(body, header)
        while status is None or status in (502, 503):
            await asyncio.sleep(RETRY_FIRST)
            status = await self.send(body, header)
        self._count(kind)
        if status != 400:
            self.forged_accepted.append((kind, status))

    async def _forged_signature(self, entry):
        """A succeeded intent the stand-in never made, under the event's key, signed
        with a secret the endpoint does not hold."""
        obj = dict(entry["event"]["data"]["object"])
        obj["id"] = FORGED_PREFIX + "".join(self.rng.choice("0123456789") for _ in range(15))
        obj["status"] = "succeeded"
        self.forged_intents.add(obj["id"])
        event = dict(entry["event"], id="evt_forged" + obj["id"][len(FORGED_PREFIX):],
                     type="payment_intent.succeeded", data={"object": obj})
        body = json.dumps(event, separators=(",", ":")).encode()
        now = int(self.clock())
        await self._forged(body, signature_header(["whsec_forger" + "0" * 24], now, body),
                           "event_forged_signature")

    async def _forged_stale(self, entry):
        """The genuine body, signed with the endpoint's secret an hour ago."""
        then = int(self.clock()) - STALE_SECONDS
        await self._forged(entry["body"], signature_header(self.secrets, then, entry["body"]),
                           "event_forged_stale")

    async def drain(self, timeout):
        """Waits up to `timeout` seconds for every delivery under way; True when none
        is left."""
        deadline = time.monotonic() + timeout
        while self.tasks and time.monotonic() < deadline:
            await asyncio.wait(set(self.tasks), timeout=max(0.0, deadline - time.monotonic()))
        return not self.tasks

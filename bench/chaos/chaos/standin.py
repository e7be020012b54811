"""The provider stand-in: a Stripe-like charges API that keeps the ledger.

It answers the checkout service's provider contract (docs/providers.md):
`POST /v1/charges` with `Idempotency-Key` and `GET /v1/charges?idempotency_key=`,
and behaves as Stripe's API v1 does where the contract leaves room:

- A key's first request is acted on once; its answer (2xx, 402, and a 500 alike) is
  stored under the key and replayed to every later request with that key and the
  same body, with `Idempotent-Replayed: true`, for as long as the key is retained
  (`retention`; then the key is forgotten, as Stripe forgets keys after 24 h).
- A request while the key's first one is still being processed answers 409 and is
  not stored; the same key with another body answers 400.
- A 429 (rate limited) is not stored. A stored 500 may or may not have created the
  charge (`stored_5xx_charged`): the client cannot tell, and only a lookup can.
- Its lookup answers from the key store (the plan's `key_store`): a charge becomes
  visible to lookups some time after it is created (`lookup lag`, drawn within the
  plan's settle window), and nothing of a forgotten key is found.

The ledger (`charges`) records every charge ever created, its key and the checkout
reference its request carried, and is never forgotten: it is the oracle's
independent record of what happened. A declined charge (the checkout's amount
≡ 13 mod 50, deterministically) is recorded as `failed`.

It counts what it did by effect (`counts`): among them `replayed`, `key_in_use`,
`stored_5xx_replayed`, `resend_after_key_window`, a POST under a key whose first
request came `POST_KEY_WINDOW` seconds or more before (in its own clock): the re-send
a provider that keeps its keys for less than it promised would charge again; and
`resend_after_cutoff`, one the plan's send cutoff (`deployment.CUTOFF`) plus the
widest skew between two processes' clocks (`CUTOFF_SKEW`) or more after it, which the
journal must never make (past its cutoff an attempt is looked up; the cutoff is
stored in the first sender's clock and read in the re-sender's, hence the skew). No
legitimate re-send comes near that bound: the soak's clocks jump from minutes after a
key's first use to past the cutoff plus 5 minutes (the late phase). It keeps the keys
whose lookup it answered with nothing (`empty_lookups`): the coverage of lookups
inside the settle window counts only those.

With events (`with_events`, the soak's `--events`; `chaos/events.py`) it makes
Stripe's events for what it does, each charge being a PaymentIntent (`intent`):
`payment_intent.created` and then `payment_intent.succeeded` or, for a decline,
`payment_intent.payment_failed`; it answers `GET /v1/events` and a PaymentIntent read
by id (`GET /v1/payment_intents/{id}`). With `roll_forward` (the soak's `--stripe` and
`--events`) it rolls stored 500s forward, as Stripe's
engineers complete a failed request's mutation during an incident's remediation
(https://docs.stripe.com/error-low-level, "Server errors"): a stored 500 that charged
nothing is completed, with a fraction `roll_forward`, `roll_forward_after` seconds of
its clock later (`roll_forward_due`; `tick` completes what is due): its charge then
exists, its lookups find it, its event (if any) is sent, and the key still replays
its 500.

Keys under a targeted injection (`exempt`) draw none of the random faults: the
injection decides what happens to them (`proxies.ProviderFront.target`).

Planted defects (the soak's `--plant`): `forget_early` forgets each key
`FORGET_EARLY_SECONDS` after its first request, lookups included;
`post_key_window_60s` honours a key for POSTs only `POST_KEY_WINDOW` seconds (a later
POST charges anew; lookups still answer from the key store). Either way a re-send
under the same key then charges again.
"""

import asyncio
import json
import time
import urllib.parse

from .deployment import CUTOFF, OFFSETS_MS
from .events import intent_of

DECLINE_MODULUS = 50
DECLINE_REMAINDER = 13
FORGET_EARLY_SECONDS = 3.0
# The widest skew between two processes' clocks, in seconds.
CUTOFF_SKEW = (max(OFFSETS_MS) - min(OFFSETS_MS)) / 1000
POST_KEY_WINDOW = 60.0
PLANTS = ("forget_early", "post_key_window_60s")


def declines(amount):
    """Whether the stand-in declines a charge of `amount` (the card's fate)."""
    return amount % DECLINE_MODULUS == DECLINE_REMAINDER


class Faults:
    """The stand-in's own fault mix (probabilities per request, times in seconds)."""

    def __init__(self, stored_5xx=0.0, stored_5xx_charged=0.5, rate_limited=0.0,
                 lookup_503=0.0, lookup_lag=0.0, lookup_lag_max=0.0,
                 latency=0.0, latency_max=0.0, roll_forward=0.0,
                 roll_forward_after=(0.0, 0.0)):
        self.roll_forward = roll_forward
        self.roll_forward_after = roll_forward_after
        self.stored_5xx = stored_5xx
        self.stored_5xx_charged = stored_5xx_charged
        self.rate_limited = rate_limited
        self.lookup_503 = lookup_503
        self.lookup_lag = lookup_lag
        self.lookup_lag_max = lookup_lag_max
        self.latency = latency
        self.latency_max = latency_max


class StandIn:
    """The provider's state: the key store, the ledger and the counts of what it did."""

    def __init__(self, rng, faults, retention, plant=None):
        self.rng = rng
        self.faults = faults
        self.retention = retention
        self.plant = plant
        self.keys = {}
        self.charges = []
        self.by_key = {}
        self.counts = {}
        self.sim_offset = 0.0
        self.in_flight = 0
        self.last_visible = 0.0
        self.exempt = set()
        self.first_use = {}
        self.resent_after_window = set()
        self.empty_lookups = set()
        self.received = {}
        self.events = None
        self.delivery = None
        self.api = None
        self.intents = {}
        self.roll_forward_due = []
        self.rolled_forward = {}

    def with_events(self, log, delivery):
        """Makes an event of everything it does into `log` (`events.EventLog`) and
        hands each to `delivery` (`events.Delivery`)."""
        self.events = log
        self.delivery = delivery
        return self

    def with_stripe(self, api):
        """Answers Stripe's PaymentIntents API (`stripe_api.StripeApi`) instead of the
        charges contract: its ledger's ids are then the intents'."""
        self.api = api
        return self

    def unix(self):
        """The provider's wall clock, in Unix seconds (events' `created`, signatures'
        `t`): the system's, plus the simulated time jump."""
        return int(time.time() + self.sim_offset)

    def _emit(self, kind, record, status):
        if self.events is None:
            return
        # A targeted injection decides what happens to its key: no event of it is made
        # (neither delivered nor listed), so that recovery's lookup settles it.
        if record["key"] in self.exempt:
            self.count("event_withheld_for_injection")
            return
        obj = intent_of(record, status, record["created"])
        self.delivery.publish(self.events.make(kind, obj, self.unix(), record["key"]))

    def tick(self):
        """Completes every roll-forward due by now: its charge and its event."""
        now = self.now()
        due = [r for r in self.roll_forward_due if r[0] <= now]
        self.roll_forward_due = [r for r in self.roll_forward_due if r[0] > now]
        for _, key, params in due:
            self.count("stored_5xx_rolled_forward")
            charge = self._charge(key, params, "succeeded")
            self.rolled_forward[key] = charge["id"]

    def now(self):
        """The provider's clock: monotonic seconds, plus the simulated time jump of
        a late phase (so that its key retention passes as the journal's does)."""
        return time.monotonic() + self.sim_offset

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def advance(self, seconds):
        """Moves the provider's clock `seconds` ahead (a targeted injection: the time
        between a key's first request and a re-send, without waiting for it)."""
        self.sim_offset += seconds

    def _chance(self, key, p):
        """A random fault's draw, never for a key under a targeted injection."""
        return key not in self.exempt and self.rng.random() < p

    def _retained(self, entry):
        held = FORGET_EARLY_SECONDS if self.plant == "forget_early" else self.retention
        return self.now() < entry["stored_at"] + held

    def _charge(self, key, params, status):
        charge = {
            "id": "ch_" + "".join(self.rng.choice("0123456789abcdef") for _ in range(24)),
            "object": "charge",
            "amount": params.get("amount"),
            "currency": str(params.get("currency", "")).lower(),
            "status": status,
            "metadata": {"journal_key": key},
        }
        lag = 0.0
        if self._chance(key, self.faults.lookup_lag):
            lag = self.rng.uniform(0, self.faults.lookup_lag_max)
            self.count("lookup_lag")
        visible = self.now() + lag
        self.last_visible = max(self.last_visible, time.monotonic() + lag)
        record = {"charge": charge, "key": key, "ref": params.get("ref"),
                  "visible_at": visible, "created": self.unix(),
                  "intent": "pi_" + charge["id"][3:]}
        self.charges.append(record)
        self.by_key.setdefault(key, []).append(record)
        self.intents[record["intent"]] = record
        self._emit("payment_intent.created", record, "requires_confirmation")
        if status == "succeeded":
            self._emit("payment_intent.succeeded", record, "succeeded")
        else:
            self._emit("payment_intent.payment_failed", record, "requires_payment_method")
        return charge

    async def handle(self, method, target, headers, body, via=None):
        """One request, through the front named `via` (counted in `received`):
        `(status, extra headers, JSON body)`."""
        self.received[via] = self.received.get(via, 0) + 1
        self.in_flight += 1
        try:
            path, _, query = target.partition("?")
            if self.api is not None:
                answer = await self.api.handle(method, path, query, headers, body)
                return answer or (404, {}, {"error": {"type": "invalid_request_error"}})
            if method == "POST" and path == "/v1/charges":
                return await self._post(headers.get("idempotency-key"), body)
            if method == "GET" and path == "/v1/events" and self.events is not None:
                status, answer = self.events.list(query, self.unix())
                return status, {}, answer
            if (method == "GET" and path.startswith("/v1/payment_intents/")
                    and self.events is not None):
                return self.retrieve(path[len("/v1/payment_intents/"):])
            if method == "GET" and path == "/v1/charges":
                keys = urllib.parse.parse_qs(query).get("idempotency_key", [])
                return await self._lookup(keys[0] if len(keys) == 1 else None)
            return 404, {}, {"error": {"type": "invalid_request_error"}}
        finally:
            self.in_flight -= 1

    async def _post(self, key, body):
        try:
            params = json.loads(body)
        except ValueError:
            params = None
        return await self.act(key, body, params)

    async def act(self, key, body, params):
        """One create under `key` with the request's `body` and its `params`."""
        if not key or not isinstance(params, dict):
            return 400, {}, {"error": {"type": "invalid_request_error"}}
        now = self.now()
        first = self.first_use.setdefault(key, now)
        if now - first >= POST_KEY_WINDOW:
            self.count("resend_after_key_window")
            self.resent_after_window.add(key)
        if now - first >= CUTOFF + CUTOFF_SKEW:
            self.count("resend_after_cutoff")
        entry = self.keys.get(key)
        if entry is not None and not self._retained(entry):
            del self.keys[key]
            entry = None
        if (entry is not None and self.plant == "post_key_window_60s"
                and now >= entry["stored_at"] + POST_KEY_WINDOW):
            entry = None
        if entry is not None:
            if entry["body"] != body:
                return 400, {}, {"error": {"type": "idempotency_error"}}
            if entry["answer"] is None:
                self.count("key_in_use")
                return 409, {}, {"error": {"type": "idempotency_error", "code": "in_use"}}
            self.count("replayed")
            status, answer = entry["answer"]
            if status >= 500:
                self.count("stored_5xx_replayed")
            return status, {"Idempotent-Replayed": "true"}, answer
        entry = {"body": body, "answer": None, "stored_at": self.now()}
        self.keys[key] = entry
        f = self.faults
        if self._chance(key, f.latency):
            self.count("provider_latency")
            await asyncio.sleep(self.rng.uniform(0, f.latency_max))
        if self._chance(key, f.rate_limited):
            self.count("rate_limited")
            del self.keys[key]
            return 429, {}, {"error": {"type": "rate_limit_error"}}
        amount = params.get("amount")
        if isinstance(amount, int) and declines(amount):
            charge = self._charge(key, params, "failed")
            answer = (402, {"error": {"type": "card_error", "code": "card_declined",
                                      "charge": charge["id"]}})
            if self.api is not None:
                answer = self.api.answer_declined(self.by_key[key][-1])
        elif self._chance(key, f.stored_5xx):
            charged = self.rng.random() < f.stored_5xx_charged
            self.count("stored_5xx_charged" if charged else "stored_5xx")
            if charged:
                self._charge(key, params, "succeeded")
            elif f.roll_forward and self._chance(key, f.roll_forward):
                low, high = f.roll_forward_after
                self.roll_forward_due.append((self.now() + self.rng.uniform(low, high),
                                              key, params))
            answer = (500, {"error": {"type": "api_error"}})
        else:
            answer = (200, self._charge(key, params, "succeeded"))
            if self.api is not None:
                answer = self.api.answer_ok(self.by_key[key][-1])
        # Kept from the first request on (set when the entry was made), as Stripe
        # counts a key's 24 hours from its first use.
        entry["answer"] = answer
        return answer[0], {}, answer[1]

    async def _lookup(self, key):
        if key is None:
            return 400, {}, {"error": {"type": "invalid_request_error"}}
        if self.lookup_fault(key):
            return 503, {}, {"error": {"type": "api_error"}}
        entry = self.keys.get(key)
        seen = []
        if entry is not None and self._retained(entry):
            now = self.now()
            seen = [c["charge"] for c in self.by_key.get(key, []) if c["visible_at"] <= now]
        if not seen:
            self.empty_lookups.add(key)
        return 200, {}, {"object": "list", "data": seen}

    def lookup_fault(self, key):
        """Whether this lookup answers 503 (the `lookup_503` fault)."""
        if self._chance(key, self.faults.lookup_503):
            self.count("lookup_503")
            return True
        return False

    def retrieve(self, intent):
        """A PaymentIntent read by id, as it is now."""
        record = self.intents.get(intent)
        if record is None:
            return 404, {}, {"error": {"type": "invalid_request_error",
                                       "code": "resource_missing"}}
        status = ("succeeded" if record["charge"]["status"] == "succeeded"
                  else "requires_payment_method")
        return 200, {}, intent_of(record, status, record["created"])

    def ledger(self):
        """Every charge ever created, as the oracle reads it."""
        return [{"id": c["intent"] if self.api is not None else c["charge"]["id"],
                 "key": c["key"], "ref": c["ref"],
                 "amount": c["charge"]["amount"], "currency": c["charge"]["currency"],
                 "status": c["charge"]["status"]} for c in self.charges]

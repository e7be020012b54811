"""Stripe's PaymentIntents API over the stand-in's key store and ledger (the soak's
`--events`, where the service runs with `PROVIDER_NAME=stripe` against it), written
from the same pages as the crate's own stand-in (`stripe/tests/stand_in/`):

- `POST /v1/payment_intents` (form-encoded, `confirm=true`, the key in
  `metadata[journal_key]`, the `Idempotency-Key` header) acts as the stand-in's POST
  does (one action per key, its answer stored and replayed, a stored 500 included,
  https://docs.stripe.com/api/idempotent_requests): 200 with the intent `succeeded`,
  402 `card_error` carrying the intent `requires_payment_method` with its
  `last_payment_error` (https://docs.stripe.com/api/errors), 500 `api_error`, 429
  `rate_limit_error`, 409 for a key in use, 400 `idempotency_error` for another body.
- `GET /v1/payment_intents/search?query=metadata['journal_key']:'<key>'` sees an intent
  only `search_lag` seconds after it was made ("Don't use search for read-after-write
  flows", https://docs.stripe.com/search#data-freshness); a lookup answers 503 with
  the stand-in's `lookup_503`.
- `GET /v1/payment_intents?created[gte]=&limit=&starting_after=` lists, newest first,
  every intent at once (read after write); `GET /v1/payment_intents/{id}` reads one.
- `GET /v1/events` lists `log` (`events.EventLog`: empty when no event is made).
- Every request needs `Authorization: Bearer <the run's secret key>` (401 otherwise).
"""

import urllib.parse

from .events import intent_of

DEFAULT_SEARCH_LAG = 60


def form(body):
    """A form body (or query) as `{name: value}`, the last value of a repeated name."""
    return {k: v[-1] for k, v in urllib.parse.parse_qs(body.decode() if isinstance(body, bytes)
                                                        else body,
                                                        keep_blank_values=True).items()}


def refused(kind, code=None):
    error = {"type": kind}
    if code is not None:
        error["code"] = code
    return {"error": error}


def intent_now(record):
    """A ledger record's intent as it is now."""
    status = ("succeeded" if record["charge"]["status"] == "succeeded"
              else "requires_payment_method")
    return intent_of(record, status, record["created"])


class StripeApi:
    """The routes above, over `standin` (a `standin.StandIn`)."""

    def __init__(self, standin, secret_key, log, search_lag=DEFAULT_SEARCH_LAG):
        self.standin = standin
        self.log = log
        self.secret_key = secret_key
        self.search_lag = search_lag

    def answer_ok(self, record):
        return 200, intent_now(record)

    def answer_declined(self, record):
        error = refused("card_error", "card_declined")
        error["error"]["payment_intent"] = intent_now(record)
        return 402, error

    async def handle(self, method, path, query, headers, body):
        """`(status, extra headers, JSON body)`, or None for a path not Stripe's."""
        if headers.get("authorization") != f"Bearer {self.secret_key}":
            return 401, {}, refused("invalid_request_error")
        s = self.standin
        if method == "POST" and path == "/v1/payment_intents":
            params = form(body)
            try:
                params["amount"] = int(params["amount"])
            except (KeyError, ValueError):
                return 400, {}, refused("invalid_request_error", "parameter_missing")
            if params.get("confirm") != "true" or "currency" not in params:
                return 400, {}, refused("invalid_request_error", "parameter_missing")
            return await s.act(headers.get("idempotency-key"), body, params)
        if method != "GET":
            return None
        if path == "/v1/payment_intents/search":
            return self._search(form(query))
        if path == "/v1/payment_intents":
            return self._list(form(query))
        if path.startswith("/v1/payment_intents/"):
            return s.retrieve(path[len("/v1/payment_intents/"):])
        if path == "/v1/events":
            status, answer = self.log.list(query, s.unix())
            return status, {}, answer
        return None

    def _newest_first(self):
        # Made in order, on a clock that only moves forward.
        return list(reversed(self.standin.charges))

    def _search(self, query):
        s = self.standin
        text = query.get("query", "")
        prefix, suffix = "metadata['journal_key']:'", "'"
        if not (text.startswith(prefix) and text.endswith(suffix)):
            return 400, {}, refused("invalid_request_error", "parameter_invalid_string")
        key = text[len(prefix):-len(suffix)]
        if s.lookup_fault(key):
            return 503, {}, refused("api_error")
        now = s.unix()
        found = [intent_now(r) for r in self._newest_first()
                 if r["key"] == key and r["created"] + self.search_lag <= now]
        if not s.by_key.get(key):
            s.empty_lookups.add(key)
        return 200, {}, {"object": "search_result", "data": found[:10],
                         "has_more": len(found) > 10, "next_page": None,
                         "url": "/v1/payment_intents/search"}

    def _list(self, query):
        try:
            since = int(query.get("created[gte]", "0"))
            limit = max(1, min(100, int(query.get("limit", "10"))))
        except ValueError:
            return 400, {}, refused("invalid_request_error")
        records = [r for r in self._newest_first() if r["created"] >= since]
        after = query.get("starting_after")
        if after is not None:
            ids = [r["intent"] for r in records]
            records = records[ids.index(after) + 1:] if after in ids else []
        page = [intent_now(r) for r in records[:limit]]
        return 200, {}, {"object": "list", "data": page, "has_more": len(records) > limit,
                         "url": "/v1/payment_intents"}

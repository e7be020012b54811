"""The harness's checks of its events (`chaos/events.py`, `chaos/webhooks.py`,
`chaos/settlement.py`), run with the rest by `python3 -m unittest
bench.chaos.chaos.tests`: the signature against the crate's vector, the Events API's
listing, each delivery fault by its effect against an endpoint that verifies as
Stripe documents, a forgery an endpoint accepts counted, a stored 500 rolled forward
with its event, and the settlement figure."""

import asyncio
import hashlib
import hmac
import json
import random
import unittest

from .events import (FORGED_PREFIX, STALE_SECONDS, Delivery, DeliveryFaults, EventLog,
                     sign, signature_header)
from .settlement import settlement_times
from .standin import Faults, StandIn
from .webhooks import Webhooks

SECRET = "whsec_CANARYsoakSecret0123456789"
T = 1_893_456_000


def run(coro):
    return asyncio.run(coro)


def verifies(header, body, secret, now, tolerance=300):
    """What the endpoint must do, written from Stripe's page: the `t` element and every
    `v1`, each compared with the HMAC of `t.body`; a timestamp within `tolerance`."""
    parts = [p.split("=", 1) for p in header.split(",")]
    t = [v for k, v in parts if k == "t"]
    v1 = [v for k, v in parts if k == "v1"]
    if len(t) != 1 or abs(now - int(t[0])) > tolerance:
        return False
    mac = hmac.new(secret.encode(), t[0].encode() + b"." + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(mac, v) for v in v1)


class Endpoint:
    """A stand-in for the service's endpoint: 400 unless the signature verifies, else
    200 (or `answer`); every delivery kept."""

    def __init__(self, clock, answer=None):
        self.clock = clock
        self.answer = answer
        self.seen = []

    async def send(self, body, header):
        ok = verifies(header, body, SECRET, self.clock())
        self.seen.append((json.loads(body), header, ok))
        if self.answer is not None:
            return self.answer
        return 200 if ok else 400


def made(log, n, kind="payment_intent.succeeded"):
    return [log.make(kind, {"id": f"pi_{i}", "object": "payment_intent"}, T + i)
            for i in range(n)]


class Signatures(unittest.TestCase):
    def test_the_crate_s_fixed_vector(self):
        # stripe/tests/webhook.rs, a_fixed_vector_computed_independently_verifies.
        body = (b'{"id":"evt_fixed0001","object":"event","api_version":"2026-01-28.clover",'
                b'"created":1893456000,"data":{"object":{"id":"pi_fixed0001",'
                b'"object":"payment_intent","amount":1250,"currency":"eur",'
                b'"status":"succeeded","metadata":{"journal_key":"cj1-00"}}},'
                b'"livemode":false,"pending_webhooks":1,"request":{"id":null,'
                b'"idempotency_key":null},"type":"payment_intent.succeeded"}')
        expected = "86a5044530ba5da4ee7fcc1597eb2ac3d734435d0f8026a60a264da2b2d676be"
        self.assertEqual(sign("whsec_CANARYfixedvector0123456789", 1893456000, body), expected)
        self.assertEqual(signature_header(["whsec_CANARYfixedvector0123456789"], T, body),
                         f"t={T},v1={expected}")

    def test_a_roll_signs_with_every_secret(self):
        header = signature_header([SECRET, "whsec_other"], T, b"{}")
        self.assertEqual(header.count("v1="), 2)
        self.assertTrue(verifies(header, b"{}", SECRET, T))
        self.assertFalse(verifies(header, b"{} ", SECRET, T))
        self.assertFalse(verifies(header, b"{}", SECRET, T + 301))


class EventsApi(unittest.TestCase):
    def test_newest_first_paged_and_filtered(self):
        log = EventLog(random.Random(1))
        events = made(log, 5) + [log.make("payment_intent.created", {}, T + 9)]
        ids = [e["event"]["id"] for e in events]
        status, page = log.list("limit=2&type=payment_intent.succeeded", T + 10)
        self.assertEqual(status, 200)
        self.assertEqual([e["id"] for e in page["data"]], [ids[4], ids[3]])
        self.assertTrue(page["has_more"])
        _, rest = log.list(f"limit=10&types[]=payment_intent.succeeded&starting_after={ids[3]}",
                           T + 10)
        self.assertEqual([e["id"] for e in rest["data"]], [ids[2], ids[1], ids[0]])
        self.assertFalse(rest["has_more"])
        _, newer = log.list(f"ending_before={ids[1]}&limit=2", T + 10)
        self.assertEqual([e["id"] for e in newer["data"]], [ids[3], ids[2]])
        _, since = log.list(f"created[gte]={T + 4}", T + 10)
        self.assertEqual([e["id"] for e in since["data"]], [ids[5], ids[4]])
        # Kept 30 days; a limit outside 1 to 100, or an unknown cursor, is refused.
        _, old = log.list("limit=100", T + 30 * 86_400 + 2)
        self.assertEqual([e["id"] for e in old["data"]], [ids[5], ids[4], ids[3]])
        self.assertEqual(log.list("limit=101", T)[0], 400)
        self.assertEqual(log.list("starting_after=evt_nope", T)[0], 400)
        # The body listed is the body delivered, byte for byte.
        self.assertEqual(json.loads(events[0]["body"]), events[0]["event"])


class Deliveries(unittest.TestCase):
    def deliver(self, faults, n=20, answer=None):
        clock = [float(T)]
        endpoint = Endpoint(lambda: clock[0], answer)
        counts = {}
        log = EventLog(random.Random(2))
        delivery = Delivery(random.Random(3), faults, [SECRET], lambda: clock[0],
                            endpoint.send, counts)

        async def scenario():
            for entry in made(log, n):
                delivery.publish(entry)
            await delivery.drain(30)
        run(scenario())
        return endpoint, delivery, counts, log

    def test_without_faults_each_event_once_in_order(self):
        endpoint, delivery, counts, log = self.deliver(DeliveryFaults())
        self.assertEqual([s[0]["id"] for s in endpoint.seen],
                         [e["event"]["id"] for e in log.events])
        self.assertTrue(all(ok for _, _, ok in endpoint.seen))
        self.assertEqual(counts, {})
        self.assertEqual(delivery.forged_accepted + delivery.refused_genuine, [])

    def test_dropped_duplicated_and_reordered_by_effect(self):
        endpoint, _, counts, log = self.deliver(DeliveryFaults(drop=1.0))
        self.assertEqual((endpoint.seen, counts), ([], {"event_dropped": 20}))
        endpoint, delivery, counts, _ = self.deliver(DeliveryFaults(duplicate=1.0))
        self.assertEqual(len(endpoint.seen), sum(delivery.delivered.values()))
        self.assertGreaterEqual(len(endpoint.seen), 40)
        self.assertEqual(counts, {"event_duplicated": 20})
        endpoint, _, counts, log = self.deliver(DeliveryFaults(reorder=0.5))
        order = [s[0]["id"] for s in endpoint.seen]
        self.assertEqual(sorted(order), sorted(e["event"]["id"] for e in log.events))
        self.assertNotEqual(order, [e["event"]["id"] for e in log.events])
        self.assertGreater(counts["event_reordered"], 0)

    def test_late_events_wait_for_the_jump_and_are_signed_then(self):
        clock = [float(T)]
        endpoint = Endpoint(lambda: clock[0])
        log = EventLog(random.Random(2))
        delivery = Delivery(random.Random(3), DeliveryFaults(late=1.0), [SECRET],
                            lambda: clock[0], endpoint.send, {})

        async def scenario():
            for entry in made(log, 3):
                delivery.publish(entry)
            await delivery.drain(1)
            before = len(endpoint.seen)
            clock[0] += 18 * 3600
            delivery.flush_late()
            await delivery.drain(5)
            return before
        self.assertEqual(run(scenario()), 0)
        self.assertEqual(len(endpoint.seen), 3)
        self.assertTrue(all(ok for _, _, ok in endpoint.seen))

    def test_forgeries_are_refused_by_a_verifying_endpoint(self):
        endpoint, delivery, counts, _ = self.deliver(
            DeliveryFaults(forge_signature=1.0, forge_stale=1.0), n=5)
        forged = [s for s in endpoint.seen if not s[2]]
        self.assertEqual(len(forged), 10)
        self.assertEqual(delivery.forged_sent, 10)
        self.assertEqual(counts, {"event_forged_signature": 5, "event_forged_stale": 5})
        self.assertEqual(delivery.forged_accepted, [])
        self.assertEqual(len(delivery.forged_intents), 5)
        stale = [s for s in forged if not s[0]["data"]["object"]["id"].startswith(FORGED_PREFIX)]
        self.assertEqual(len(stale), 5)
        self.assertTrue(all(f"t={T - STALE_SECONDS}," in s[1] for s in stale))

    def test_an_endpoint_that_accepts_a_forgery_is_caught(self):
        _, delivery, _, _ = self.deliver(DeliveryFaults(forge_signature=1.0), n=2, answer=200)
        self.assertEqual(delivery.forged_accepted, [("event_forged_signature", 200)] * 2)
        _, delivery, _, _ = self.deliver(DeliveryFaults(), n=2, answer=400)
        self.assertEqual(len(delivery.refused_genuine), 2)

    def test_a_genuine_delivery_is_retried_until_answered(self):
        answers = [None, 503, 502, 200]
        seen = []

        async def send(body, header):
            seen.append(header)
            return answers[len(seen) - 1]
        counts = {}
        delivery = Delivery(random.Random(3), DeliveryFaults(), [SECRET], lambda: T, send, counts)

        async def scenario():
            delivery.publish(made(EventLog(random.Random(2)), 1)[0])
            await delivery.drain(30)
        run(scenario())
        self.assertEqual((len(seen), counts), (4, {"event_retried": 3}))


class RollForward(unittest.TestCase):
    def with_events(self, s):
        sent = []

        async def send(body, header):
            sent.append(json.loads(body))
            return 200
        s.with_events(EventLog(random.Random(4)),
                      Delivery(random.Random(5), DeliveryFaults(), [SECRET], s.unix, send, {}))
        return sent

    def test_a_stored_500_is_completed_later_with_its_event(self):
        s = StandIn(random.Random(1), Faults(stored_5xx=1.0, stored_5xx_charged=0.0,
                                            roll_forward=1.0, roll_forward_after=(600, 600)),
                    86_400)
        sent = self.with_events(s)
        body = b'{"amount":1250,"currency":"eur","ref":"pvr"}'

        async def scenario():
            first = await s.handle("POST", "/v1/charges", {"idempotency-key": "k9"}, body)
            s.tick()
            before = (list(s.ledger()), list(sent))
            s.advance(601)
            s.tick()
            await s.delivery.drain(5)
            again = await s.handle("POST", "/v1/charges", {"idempotency-key": "k9"}, body)
            looked = await s.handle("GET", "/v1/charges?idempotency_key=k9", {}, b"")
            return first, before, again, looked
        first, before, again, looked = run(scenario())
        self.assertEqual(first[0], 500)
        self.assertEqual(before, ([], []))
        self.assertEqual(again[:2], (500, {"Idempotent-Replayed": "true"}))
        self.assertEqual([c["status"] for c in s.ledger()], ["succeeded"])
        self.assertEqual(looked[2]["data"][0]["id"], s.ledger()[0]["id"])
        self.assertEqual([e["type"] for e in sent],
                         ["payment_intent.created", "payment_intent.succeeded"])
        intent = sent[1]["data"]["object"]
        self.assertEqual((intent["status"], intent["metadata"]["journal_key"], intent["amount"]),
                         ("succeeded", "k9", 1250))
        read = run(s.handle("GET", "/v1/payment_intents/" + intent["id"], {}, b""))
        self.assertEqual(read[2], intent)
        self.assertEqual(run(s.handle("GET", "/v1/payment_intents/pi_nope", {}, b""))[0], 404)
        listed = run(s.handle("GET", "/v1/events?limit=1", {}, b""))
        self.assertEqual(listed[2]["data"], [sent[1]])
        self.assertEqual(s.rolled_forward, {"k9": s.ledger()[0]["id"]})

    def test_without_events_the_roll_forward_sends_none(self):
        s = StandIn(random.Random(1), Faults(stored_5xx=1.0, stored_5xx_charged=0.0,
                                            roll_forward=1.0, roll_forward_after=(0, 0)),
                    86_400)
        body = b'{"amount":1250,"currency":"eur","ref":"pvr"}'
        self.assertEqual(run(s.handle("POST", "/v1/charges", {"idempotency-key": "k"}, body))[0],
                         500)
        self.assertEqual(s.ledger(), [])
        s.tick()
        self.assertEqual([(x["key"], x["status"]) for x in s.ledger()], [("k", "succeeded")])
        self.assertEqual(run(s.handle("GET", "/v1/events", {}, b""))[0], 404)

    def test_no_roll_forward_draws_nothing(self):
        # The charges contract's runs draw as before the roll-forward existed: latency,
        # rate limit, stored 500 and whether it charged, nothing more.
        rng = random.Random(1)
        s = StandIn(rng, Faults(stored_5xx=1.0, stored_5xx_charged=0.0), 86_400)
        run(s.handle("POST", "/v1/charges", {"idempotency-key": "k"}, b'{"amount":1250}'))
        fresh = random.Random(1)
        for _ in range(4):
            fresh.random()
        self.assertEqual(rng.random(), fresh.random())


class StripeMode(unittest.TestCase):
    def test_payment_intents_as_stripe_answers_them(self):
        s = StandIn(random.Random(1), Faults(), 86_400)
        hooks = Webhooks(s, random.Random(4), True, None, search_lag=7200)
        auth = {"authorization": "Bearer " + hooks.secret_key}

        def post(key, amount):
            body = (f"amount={amount}&currency=eur&confirm=true&payment_method_types%5B0%5D=card"
                    f"&metadata%5Bjournal_key%5D={key}").encode()
            return run(s.handle("POST", "/v1/payment_intents",
                                {**auth, "idempotency-key": key}, body))

        def get(target, headers=auth):
            return run(s.handle("GET", target, headers, b""))
        ok = post("cj1-a", 1250)
        self.assertEqual((ok[0], ok[2]["object"], ok[2]["status"], ok[2]["id"][:3]),
                         (200, "payment_intent", "succeeded", "pi_"))
        self.assertEqual(post("cj1-a", 1250), (200, {"Idempotent-Replayed": "true"}, ok[2]))
        declined = post("cj1-b", 1263)
        self.assertEqual((declined[0], declined[2]["error"]["type"]), (402, "card_error"))
        intent = declined[2]["error"]["payment_intent"]
        self.assertEqual((intent["status"], intent["last_payment_error"]["code"]),
                         ("requires_payment_method", "card_declined"))
        self.assertEqual([x["id"] for x in s.ledger()], [ok[2]["id"], intent["id"]])
        self.assertEqual(get("/v1/payment_intents")[0], 200)
        self.assertEqual(get("/v1/payment_intents", {})[0], 401)
        # Search lags two hours; the listing reads after write, paged newest first.
        query = "/v1/payment_intents/search?query=metadata%5B%27journal_key%27%5D%3A%27cj1-a%27"
        self.assertEqual(get(query)[2]["data"], [])
        page = get("/v1/payment_intents?limit=1&created%5Bgte%5D=0")[2]
        self.assertEqual(([x["id"] for x in page["data"]], page["has_more"]), ([intent["id"]], True))
        rest = get(f"/v1/payment_intents?limit=1&starting_after={intent['id']}")[2]
        self.assertEqual(([x["id"] for x in rest["data"]], rest["has_more"]), ([ok[2]["id"]], False))
        s.advance(7200)
        self.assertEqual(get(query)[2]["data"], [ok[2]])
        self.assertEqual(get("/v1/payment_intents/" + ok[2]["id"])[2], ok[2])
        self.assertEqual(get("/v1/events?limit=100")[2]["data"][0]["type"],
                         "payment_intent.payment_failed")

    def test_lookups_alone_list_no_event(self):
        s = StandIn(random.Random(1), Faults(), 86_400)
        hooks = Webhooks(s, random.Random(4), True, None, deliver=False)
        auth = {"authorization": "Bearer " + hooks.secret_key}
        body = b"amount=1250&currency=eur&confirm=true&metadata%5Bjournal_key%5D=cj1-a"
        self.assertEqual(run(s.handle("POST", "/v1/payment_intents",
                                      {**auth, "idempotency-key": "cj1-a"}, body))[0], 200)
        self.assertEqual(run(s.handle("GET", "/v1/events", auth, b""))[2]["data"], [])
        self.assertNotIn("STRIPE_WEBHOOK_SECRET", hooks.env())
        self.assertEqual(hooks.findings({}), ({}, []))


def audit(command, kind, at):
    return ({"commandKeyHash": {"stringValue": command}, "eventType": {"stringValue": kind}},
            f"2030-01-01T00:00:{at:02d}.000000Z")


class Settlement(unittest.TestCase):
    def test_from_the_first_ambiguity_to_the_first_outcome(self):
        events = [audit("a", "provider_send_ambiguous", 1),
                  audit("a", "provider_send_replayed_unknown", 3),
                  audit("a", "provider_send_reconciled_succeeded", 6),
                  audit("b", "provider_send_succeeded", 2),
                  audit("c", "provider_send_replayed_unknown", 10),
                  audit("c", "provider_send_reconciled_declined", 40),
                  audit("d", "provider_send_ambiguous", 50)]
        times, never = settlement_times(events, [])
        self.assertEqual((sorted(times), never), ([5.0, 30.0], 1))
        # A settlement after the clock's jump counts the hours it waited.
        jump_at = 1893456000 + 20
        times, _ = settlement_times(events, [(jump_at, 3600)])
        self.assertEqual(sorted(times), [5.0, 3630.0])

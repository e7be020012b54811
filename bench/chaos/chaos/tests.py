"""The harness's own checks (`python3 -m unittest bench.chaos.chaos.tests`): the
derivations against the crate's vectors, the stand-in's Stripe-like semantics and
its plants, that the oracle fails on each kind of violation it exists to catch and
holds on what must pass, that faults count only from their effects (a lost rollback
cut before its first byte reaches the emulator, a client's disconnect cutting its
instance's request), that the gRPC wire is read right (HPACK against RFC 7541's
examples, RPCs timed from their headers to their answer's), and that a process whose
stated offset or plant differs from the draw is a harness error."""

import asyncio
import json
import os
import random
import tempfile
import unittest

from . import oracle
from .clients import Answer, Checkout
from .deployment import CUTOFF
from .httpio import read_message
from .identity import attempt_key, command_key_hash
from .plants import EVENT_PLANTS, PLANTS, caught, in_service
from .h2wire import PREFACE, Decoder, Half, WireError, huffman_decode, method
from .proxies import Balancer, FrontFaults, ProviderFront, TcpFaultProxy
from .report import lock_wait
from .report import compare_statements
from .standin import CUTOFF_SKEW, POST_KEY_WINDOW, Faults, StandIn
from .tally import FaultLog
from .webhooks import FINDINGS as WEBHOOK_FINDINGS
from .tests_events import (Deliveries, EventsApi, RollForward, Settlement,  # noqa: F401
                           StripeMode,
                           Signatures)

COMMAND_ID = "c0ffee00-ca4a-4e11-8a5e-0000deadbe01"


class Identity(unittest.TestCase):
    def test_the_crate_vectors(self):
        # `command-journal identity` on callerId "abc", this command id, operation charge.
        h = command_key_hash("abc", COMMAND_ID)
        self.assertEqual(h, "52b75fce4fa0115803d18e4129ce715e8d7246948f0aee3e760e8a85c991a45d")
        self.assertEqual(attempt_key(h, 1),
                         "cj1-a534d4e16b9b5b900a30d72c33fc9182f72ff75b6cbc3c4a6c59bdfd5340f383")
        self.assertNotEqual(attempt_key(h, 2), attempt_key(h, 1))


def run(coro):
    return asyncio.run(coro)


class StandInSemantics(unittest.TestCase):
    def standin(self, plant=None, **faults):
        return StandIn(random.Random(1), Faults(**faults), 86_400, plant)

    def post(self, s, key, body):
        return run(s.handle("POST", "/v1/charges", {"idempotency-key": key}, body))

    def test_a_key_is_acted_on_once_and_replayed(self):
        s = self.standin()
        body = json.dumps({"amount": 1250, "currency": "EUR", "ref": "pvx"}).encode()
        first = self.post(s, "k1", body)
        again = self.post(s, "k1", body)
        self.assertEqual(first[0], 200)
        self.assertEqual(again, (200, {"Idempotent-Replayed": "true"}, first[2]))
        self.assertEqual(first[2]["currency"], "eur")
        self.assertEqual(len(s.ledger()), 1)
        self.assertEqual(self.post(s, "k1", b'{"amount":1}')[0], 400)

    def test_a_stored_500_is_replayed(self):
        s = self.standin(stored_5xx=1.0, stored_5xx_charged=0.0)
        body = b'{"amount":1250,"currency":"eur","ref":"pvy"}'
        self.assertEqual(self.post(s, "k2", body)[0], 500)
        self.assertEqual(self.post(s, "k2", body)[:2], (500, {"Idempotent-Replayed": "true"}))
        self.assertEqual(s.ledger(), [])
        looked = run(s.handle("GET", "/v1/charges?idempotency_key=k2", {}, b""))
        self.assertEqual(looked, (200, {}, {"object": "list", "data": []}))

    def test_a_key_in_use_answers_409(self):
        s = self.standin(latency=1.0, latency_max=0.2)
        body = b'{"amount":1250,"currency":"eur","ref":"pvz"}'

        async def both():
            return await asyncio.gather(
                s.handle("POST", "/v1/charges", {"idempotency-key": "k3"}, body),
                s.handle("POST", "/v1/charges", {"idempotency-key": "k3"}, body))
        statuses = sorted(r[0] for r in run(both()))
        self.assertEqual(statuses, [200, 409])
        self.assertEqual(len(s.ledger()), 1)

    def test_declines_and_lookups(self):
        s = self.standin(lookup_lag=1.0, lookup_lag_max=30.0)
        declined = self.post(s, "k4", b'{"amount":113,"currency":"eur","ref":"pvd"}')
        self.assertEqual(declined[0], 402)
        self.assertEqual(s.ledger()[0]["status"], "failed")
        self.post(s, "k5", b'{"amount":1250,"currency":"eur","ref":"pvl"}')
        looked = run(s.handle("GET", "/v1/charges?idempotency_key=k5", {}, b""))
        self.assertEqual(looked[2]["data"], [], "not yet visible: the lag")
        s.sim_offset = 31
        looked = run(s.handle("GET", "/v1/charges?idempotency_key=k5", {}, b""))
        self.assertEqual(len(looked[2]["data"]), 1)

    def test_the_planted_defect_charges_twice(self):
        s = self.standin(plant="forget_early")
        body = b'{"amount":1250,"currency":"eur","ref":"pvp"}'
        self.post(s, "k6", body)
        s.sim_offset = 5
        self.assertEqual(self.post(s, "k6", body)[0], 200)
        self.assertEqual(len(s.ledger()), 2)

    def test_a_resend_after_the_key_window_is_counted_and_charges_only_when_planted(self):
        body = b'{"amount":1250,"currency":"eur","ref":"pvw"}'
        for plant, charges in ((None, 1), ("post_key_window_60s", 2)):
            s = self.standin(plant=plant)
            self.post(s, "k7", body)
            s.advance(POST_KEY_WINDOW - 1)
            self.assertEqual(self.post(s, "k7", body)[1], {"Idempotent-Replayed": "true"})
            self.assertEqual(s.counts.get("resend_after_key_window", 0), 0)
            s.advance(1)
            self.post(s, "k7", body)
            self.assertEqual(s.counts["resend_after_key_window"], 1)
            self.assertEqual(s.resent_after_window, {"k7"})
            self.assertEqual(len(s.ledger()), charges, plant)
            # The lookup still answers from the key store, both charges and all.
            looked = run(s.handle("GET", "/v1/charges?idempotency_key=k7", {}, b""))
            self.assertEqual(len(looked[2]["data"]), charges)

    def test_a_resend_past_the_send_cutoff_is_counted(self):
        s = self.standin()
        body = b'{"amount":1250,"currency":"eur","ref":"pvc"}'
        self.post(s, "kc", body)
        # Within the cutoff plus the widest skew of two senders' clocks: not counted.
        s.advance(CUTOFF + CUTOFF_SKEW - 1)
        self.post(s, "kc", body)
        self.assertEqual(s.counts.get("resend_after_cutoff", 0), 0)
        s.advance(1)
        self.assertEqual(self.post(s, "kc", body)[1], {"Idempotent-Replayed": "true"})
        self.assertEqual(s.counts["resend_after_cutoff"], 1)
        self.assertEqual(len(s.ledger()), 1, "replayed within the retention: no charge")

    def test_a_key_under_a_targeted_injection_draws_no_random_fault(self):
        s = self.standin(stored_5xx=1.0, rate_limited=1.0, lookup_503=1.0, lookup_lag=1.0,
                         lookup_lag_max=30.0)
        s.exempt.add("k8")
        body = b'{"amount":1250,"currency":"eur","ref":"pve"}'
        self.assertEqual(self.post(s, "k8", body)[0], 200)
        looked = run(s.handle("GET", "/v1/charges?idempotency_key=k8", {}, b""))
        self.assertEqual((looked[0], len(looked[2]["data"])), (200, 1))
        self.assertEqual(self.post(s, "k9", body)[0], 429, "other keys still draw")


async def read_or_cut(reader, n=-1):
    """What `reader` gives, `b""` when the peer cut the connection (RST)."""
    try:
        return await reader.read(n)
    except ConnectionResetError:
        return b""


class FaultsByEffect(unittest.TestCase):
    """A fault counts as fired only from what it did."""

    def test_the_log_keeps_draws_and_effects_apart(self):
        log = FaultLog()
        for _ in range(3):
            log.draw("firestore_reset")
        log.draw("firestore_stall")
        log.fire("firestore_stall")
        log.fire("firestore_connections_reset", 4)
        self.assertEqual(log.idle(), {"firestore_reset": 3})
        self.assertEqual(log.never_fired(), ["firestore_reset"])
        log.fire("firestore_reset")
        self.assertEqual(log.never_fired(), [])

    def test_a_proxy_counts_what_it_held_and_cut(self):
        async def scenario():
            async def echo(reader, writer):
                while data := await reader.read(1024):
                    writer.write(data)
                    await writer.drain()
                writer.close()
            upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
            log = FaultLog()
            proxy = await TcpFaultProxy("t", upstream.sockets[0].getsockname()[1], log).start()
            # Nothing open: a reset has nothing to act on; a stall is armed, and holds
            # the next bytes (the "a" below) for its length from then.
            proxy.reset()
            proxy.stall(0.05)
            await asyncio.sleep(0.1)
            idle = dict(log.fired)
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
            writer.write(b"a")
            await writer.drain()
            self.assertEqual(await reader.read(1), b"a")
            # Open and talking: the stall holds the next byte, the reset cuts.
            proxy.stall(0.2)
            writer.write(b"b")
            await writer.drain()
            self.assertEqual(await reader.read(1), b"b")
            proxy.reset()
            self.assertEqual(await read_or_cut(reader, 1), b"")
            writer.close()
            proxy.close()
            upstream.close()
            return idle, log
        idle, log = run(scenario())
        self.assertEqual(idle, {})
        self.assertEqual(log.drawn, {"firestore_reset": 2, "firestore_stall": 2})
        self.assertEqual(log.fired, {"firestore_stall": 2, "firestore_reset": 1,
                                     "firestore_connections_reset": 1})

    def test_a_front_does_what_a_target_asks_once(self):
        async def scenario():
            s = StandIn(random.Random(1), Faults(), 86_400)
            log = FaultLog()
            front = await ProviderFront("f", s, random.Random(2), FrontFaults(), log).start()
            body = b'{"amount":1250,"currency":"eur","ref":"pvt"}'

            async def post(key):
                reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
                head = (f"POST /v1/charges HTTP/1.1\r\nIdempotency-Key: {key}\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n").encode()
                writer.write(head + body)
                await writer.drain()
                try:
                    answer = await read_message(reader)
                except (ConnectionError, asyncio.IncompleteReadError):
                    answer = None
                writer.close()
                return answer and answer.status
            lost = front.target("kl", "lose_answer")
            dropped = front.target("kd", "drop")
            held = front.target("kh", "hold")
            self.assertIsNone(await post("kl"))
            self.assertIsNone(await post("kd"))
            waiting = asyncio.ensure_future(post("kh"))
            await held.arrived.wait()
            self.assertFalse(held.fired)
            held.release.set()
            self.assertIsNone(await waiting)
            # Once only: the next POST of the key goes through (the stored answer).
            self.assertEqual(await post("kl"), 200)
            front.close()
            return s, log, (lost.fired, dropped.fired, held.fired), (front.accounting(),
                                                                     dict(front.fates))
        s, log, fired, front_books = run(scenario())
        self.assertEqual(fired, (True, True, True))
        self.assertEqual([x["key"] for x in s.ledger()], ["kl"], "only the lost answer charged")
        self.assertEqual(log.fired, {"injected_lose_answer": 1, "injected_drop": 1,
                                     "injected_hold": 1})
        self.assertEqual(front_books[0], [])
        self.assertEqual(front_books[1], {"injected_lose_answer": 1, "injected_drop": 1,
                                          "injected_hold": 1, "answered": 1})

    def test_a_front_books_one_fate_per_request_against_the_provider(self):
        async def scenario():
            s = StandIn(random.Random(1), Faults(), 86_400)
            front = await ProviderFront("f", s, random.Random(2), FrontFaults(drop_request=1.0),
                                        FaultLog()).start()

            async def get():
                reader, writer = await asyncio.open_connection("127.0.0.1", front.port)
                writer.write(b"GET /v1/charges?idempotency_key=k HTTP/1.1\r\n"
                             b"Content-Length: 0\r\n\r\n")
                await writer.drain()
                try:
                    answer = await read_message(reader)
                except (ConnectionError, asyncio.IncompleteReadError):
                    answer = None
                writer.close()
                return answer and answer.status
            self.assertIsNone(await get())
            front.faults = FrontFaults()
            self.assertEqual(await get(), 200)
            honest = (front.accounting(), dict(front.fates), dict(s.received))
            # A request the provider took from the front that its books do not hold
            # (a drop that forwarded anyway): the books disagree.
            await s.handle("GET", "/v1/charges?idempotency_key=k", {}, b"", via="f")
            front.close()
            return honest, front.accounting()
        honest, lying = run(scenario())
        self.assertEqual(honest, ([], {"dropped": 1, "answered": 1}, {"f": 1}))
        self.assertEqual(lying, ["f: forwarded 1 requests, the provider received 2"])


class Statements(unittest.TestCase):
    """A process states the clock offset and plant it applied; the draw must match."""

    def statement(self, **kw):
        st = {"process": "instance-0-1", "drawnMs": 90_000, "faultMs": 90_000,
              "statedMs": 90_000, "plant": None, "silent": False}
        st.update(kw)
        return st

    def test_only_an_offset_stated_as_drawn_fires(self):
        log = FaultLog()
        ok = [self.statement(), self.statement(statedMs=90_212),
              self.statement(drawnMs=0, faultMs=0, statedMs=0),
              self.statement(statedMs=None, silent=True)]
        self.assertEqual(compare_statements(ok, None, log), [])
        self.assertEqual((log.drawn["clock_offset"], log.fired["clock_offset"]), (3, 2))
        for wrong in (self.statement(statedMs=0), self.statement(statedMs=None),
                      self.statement(plant="overcharge")):
            self.assertEqual(len(compare_statements([wrong], None, FaultLog())), 1, wrong)
        # A plant asked for and not stated (a build without the feature).
        self.assertEqual(len(compare_statements([self.statement()], "overcharge",
                                                FaultLog())), 1)


def checkout(ref="pv1"):
    return Checkout(0, "u1", COMMAND_ID, {"amount": 1250, "currency": "eur", "ref": ref})


def charge(c, attempt=1, cid="ch_1", status="succeeded"):
    return {"id": cid, "key": c.keys[attempt - 1], "ref": c.payload["ref"], "amount": 1250,
            "currency": "eur", "status": status}


def ok_body(x):
    return json.dumps({"status": "succeeded", "charge": json.loads(oracle.envelope_of(x))},
                      separators=(",", ":"))


def stored_answer(x):
    """The 200 the service answers for the stored envelope of `x`."""
    return '{"status":"succeeded","charge":' + oracle.envelope_of(x) + "}"


class Oracle(unittest.TestCase):
    def test_a_settled_charge_holds(self):
        c = checkout()
        x = charge(c)
        c.answers = [Answer(1, 0, 1, 200, stored_answer(x), None, "main")] * 2
        counts, _ = oracle.check([c], [x], {c.hash: ("succeeded", oracle.envelope_of(x), 0.0)})
        self.assertEqual(counts, {"charges": 1, "doubleCharges": 0,
                                  "chargesWithoutSettlement": 0, "disagreeingAnswers": 0})
        self.assertEqual(oracle.ledger_mismatches([c], [x]), (0, []))

    def test_each_violation_is_counted(self):
        c = checkout()
        x, y = charge(c), charge(c, 2, "ch_2")
        env = oracle.envelope_of(x)
        cases = [
            # two charges
            ([x, y], {c.hash: ("succeeded", env, 0.0)}, [], "doubleCharges"),
            # charged, journal leased: not settled, whatever a listing says
            ([x], {c.hash: ("leased", None, 0.0)}, [], "chargesWithoutSettlement"),
            # charged, settled with another envelope
            ([x], {c.hash: ("succeeded", oracle.envelope_of(y), 0.0)}, [],
             "chargesWithoutSettlement"),
            # a 200 whose charge the ledger does not hold
            ([], {c.hash: ("leased", None, 0.0)}, [(200, ok_body(x))], "disagreeingAnswers"),
            # a 200 with the ledger's charge that is not the stored result's bytes
            ([x], {c.hash: ("succeeded", env, 0.0)}, [(200, ok_body(x).replace(":", ": ", 1))],
             "disagreeingAnswers"),
            # a 200 while the journal stores nothing
            ([x], {c.hash: ("leased", None, 0.0)}, [(200, stored_answer(x))], "disagreeingAnswers"),
            # a 402 beside a charge
            ([x], {c.hash: ("succeeded", env, 0.0)}, [(402, '{"status":"failed"}')],
             "disagreeingAnswers"),
            # a 402 the provider never answered
            ([], {c.hash: ("failed_final", None, 0.0)}, [(402, '{"status":"failed"}')],
             "disagreeingAnswers"),
            # two 200 bodies that differ in bytes
            ([x], {c.hash: ("succeeded", env, 0.0)},
             [(200, stored_answer(x)), (200, stored_answer(x) + " ")], "disagreeingAnswers"),
            # a stored envelope of no ledger charge
            ([], {c.hash: ("succeeded", env, 0.0)}, [], "disagreeingAnswers"),
            # a final decline in the journal the provider never made (no client heard it)
            ([], {c.hash: ("failed_final", None, 0.0)}, [], "disagreeingAnswers"),
            # a final decline in the journal beside a charge
            ([x], {c.hash: ("failed_final", None, 0.0)}, [], "disagreeingAnswers"),
        ]
        for ledger, journal, answers, kind in cases:
            c.answers = [Answer(1, 0, 1, s, t, None, "main") for s, t in answers]
            counts, findings = oracle.check([c], ledger, journal)
            self.assertGreaterEqual(counts[kind], 1, (kind, findings))

    def test_a_200_heard_before_the_journal_stored_it(self):
        # The service answered from the provider's answer before its record (or
        # without one: recovery stored the same envelope later): the bytes agree,
        # the order does not.
        c = checkout()
        x = charge(c)
        c.answers = [Answer(1, 0, 1, 200, stored_answer(x), None, "main", heard=100.0)]
        for stored_at, n in ((99.999, 0), (100.001, 1)):
            journal = {c.hash: ("succeeded", oracle.envelope_of(x), stored_at)}
            counts, findings = oracle.check([c], [x], journal)
            self.assertEqual(counts["disagreeingAnswers"], n, findings)

    def test_a_decline_the_ledger_holds_holds(self):
        c = checkout()
        c.payload["amount"] = 113
        declined = dict(charge(c), status="failed", amount=113)
        c.answers = [Answer(1, 0, 1, 402, '{"status":"failed"}', None, "main")]
        counts, findings = oracle.check([c], [declined], {c.hash: ("failed_final", None, 0.0)})
        self.assertEqual(counts["disagreeingAnswers"], 0, findings)
        self.assertEqual(oracle.ledger_mismatches([c], [declined]), (0, []))

    def test_every_ledger_entry_matches_its_payload(self):
        c = checkout()
        x = charge(c)
        wrong = [dict(x, amount=1251), dict(x, currency="usd"), dict(x, status="failed"),
                 dict(x, ref="pv-nobody")]
        for entry in wrong:
            n, findings = oracle.ledger_mismatches([c], [entry])
            self.assertEqual(n, 1, (entry, findings))
        # The payload asks for a decline (13 modulo 50): a charge is a mismatch.
        c.payload["amount"] = 1263
        self.assertEqual(oracle.ledger_mismatches([c], [dict(x, amount=1263)])[0], 1)
        self.assertEqual(
            oracle.ledger_mismatches([c], [dict(x, amount=1263, status="failed")])[0], 0)
        # A payload currency in capitals is the stand-in's lower case.
        c.payload.update(amount=1250, currency="EUR")
        self.assertEqual(oracle.ledger_mismatches([c], [x])[0], 0)

    def test_an_attempt_left_unknown_is_unsettled_where_the_provider_holds_a_charge(self):
        c = checkout()
        x = charge(c)
        for state in ("sending", "ambiguous", "replayed_unknown"):
            pending = [{"commandKeyHash": c.hash,
                        "send": {"attempt": 1, "state": state,
                                 "absenceProvableFrom": {"seconds": 500, "nanoseconds": 0}}}]
            self.assertEqual(oracle.unsettled_attempts(pending, [c], [x], 100.0)[0], 1, state)
            # Nothing at the provider: unsettled once its absence was provable.
            self.assertEqual(oracle.unsettled_attempts(pending, [c], [], 100.0)[0], 0, state)
            self.assertEqual(oracle.unsettled_attempts(pending, [c], [], 500.0)[0], 1, state)
        # A decline held for the key counts as well; attempt 2's key is not attempt 1's.
        pending = [{"commandKeyHash": c.hash, "send": {"attempt": 2, "state": "ambiguous"}}]
        self.assertEqual(oracle.unsettled_attempts(pending, [c], [x], 100.0)[0], 0)
        declined = dict(charge(c, 2, "ch_2"), status="failed")
        self.assertEqual(oracle.unsettled_attempts(pending, [c], [declined], 100.0)[0], 1)
        # Absent, or listed for a retry only: not an unknown outcome.
        for send in ({"attempt": 1, "state": "absent"}, None):
            listed = [{"commandKeyHash": c.hash, "send": send}]
            self.assertEqual(oracle.unsettled_attempts(listed, [c], [x], 1e12)[0], 0)
        # A listed command of no checkout.
        stray = [{"commandKeyHash": "f" * 64, "send": {"attempt": 1, "state": "sending"}}]
        self.assertEqual(oracle.unsettled_attempts(stray, [c], [], 0.0)[0], 1)

    def test_an_absence_recorded_before_the_settle_window_passed(self):
        def event(revision, kind, at, attempt=1):
            return ({"commandKeyHash": {"stringValue": "h"}, "eventType": {"stringValue": kind},
                     "attempt": {"integerValue": str(attempt)},
                     "sendRevision": {"integerValue": str(revision)},
                     "occurredAt": {"timestampValue": at}}, at)
        opened = event(1, "provider_send_opened", "2026-01-01T00:00:00Z")
        resent = event(3, "provider_send_resent", "2026-01-01T00:01:30Z")
        ambiguous = event(2, "provider_send_ambiguous", "2026-01-01T00:00:05Z")
        # The lease (60 s) plus the settle window (240 s) after the last permit.
        on_time = event(4, "provider_send_reconciled_absent", "2026-01-01T00:06:30Z")
        early = event(4, "provider_send_reconciled_absent", "2026-01-01T00:06:29.999999Z")
        self.assertEqual(oracle.absences_before_settled(
            [opened, ambiguous, resent, on_time], 240)[0], 0)
        self.assertEqual(oracle.absences_before_settled(
            [opened, ambiguous, resent, early], 240)[0], 1)
        # Counted from the last permit, not the first.
        self.assertEqual(oracle.absences_before_settled(
            [opened, ambiguous, on_time], 240)[0], 0)
        # An absence of an attempt never permitted.
        lone = event(1, "provider_send_reconciled_absent", "2026-01-01T00:06:30Z", attempt=2)
        self.assertEqual(oracle.absences_before_settled([opened, lone], 240)[0], 1)
        # Lease events carry no send revision: never read as send events.
        lease = ({"commandKeyHash": {"stringValue": "h"},
                  "eventType": {"stringValue": "lease_acquired"},
                  "fenceEpoch": {"integerValue": "1"}}, "2026-01-01T00:00:00Z")
        self.assertEqual(oracle.absences_before_settled([lease], 240), (0, []))

    def test_an_absence_recorded_under_its_permits_fence(self):
        def event(revision, kind, fence, attempt=1):
            return ({"commandKeyHash": {"stringValue": "h"}, "eventType": {"stringValue": kind},
                     "attempt": {"integerValue": str(attempt)},
                     "sendRevision": {"integerValue": str(revision)},
                     "fenceEpoch": {"integerValue": str(fence)},
                     "occurredAt": {"timestampValue": "2026-01-01T00:00:00Z"}},
                    "2026-01-01T00:00:00Z")
        opened = event(1, "provider_send_opened", 1)
        resent = event(2, "provider_send_resent", 3)
        # Recorded under a lease taken after the permit's: a higher fence.
        self.assertEqual(oracle.absences_without_lease(
            [opened, event(2, "provider_send_reconciled_absent", 2)]), (0, []))
        # Under the permit's own fence, or an older one than the last permit's.
        for chain in ([opened, event(2, "provider_send_reconciled_absent", 1)],
                      [opened, resent, event(3, "provider_send_reconciled_absent", 2)]):
            self.assertEqual(oracle.absences_without_lease(chain)[0], 1, chain)
        # The next attempt's permit is its own.
        chain = [opened, event(2, "provider_send_reconciled_absent", 2),
                 event(3, "provider_send_opened", 2, attempt=2),
                 event(4, "provider_send_reconciled_absent", 2, attempt=2)]
        self.assertEqual(oracle.absences_without_lease(chain)[0], 1)

    def test_the_final_recovery_is_part_of_the_oracle(self):
        clean = {"exit": 0, "summary": {"lookups": {"answered": 3, "unavailable": 0},
                                        "errors": 0}}
        self.assertEqual(oracle.final_recovery(clean), (0, []))
        for job in (None, dict(clean, exit=3), dict(clean, exit=None),
                    dict(clean, summary=None),
                    dict(clean, summary={"lookups": {"answered": 2, "unavailable": 1},
                                         "errors": 0}),
                    dict(clean, summary={"lookups": {}, "errors": 2})):
            self.assertGreaterEqual(oracle.final_recovery(job)[0], 1, job)

    def test_coverage_counts_effects_and_each_situation_is_required(self):
        # Each process's line counts only where the journal's or the provider's
        # records show the situation: "lease_lost" of a command taken over (h1, not
        # h2: its lease merely ran out), "not_found" where the provider answered a
        # lookup with nothing, a settlement Firestore committed in the faulted phase.
        c1, c2 = checkout("pv1"), checkout("pv2")
        c2.hash = "h2"
        c2.keys = ["k2"]
        c1.hash = "h1"

        def event(command, kind, fence, created="2026-01-01T00:00:00Z"):
            return ({"commandKeyHash": {"stringValue": command},
                     "eventType": {"stringValue": kind},
                     "fenceEpoch": {"integerValue": str(fence)}}, created)
        events = [event("h1", "command_lease_taken_over", 2),
                  event("h2", "command_lease_acquired", 1),
                  event("h1", "provider_send_reconciled_succeeded", 2, "2026-01-01T00:00:10Z"),
                  event("h2", "provider_send_reconciled_declined", 1, "2026-01-01T00:00:30Z")]
        until = oracle._seconds_of("2026-01-01T00:00:20Z")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "instance-0-1.stdout"), "w") as f:
                for command in ("h1", "h2"):
                    f.write('{"message":"checkout","outcome":"lease_lost",'
                            '"commandKeyHash":"%s"}\n' % command)
                f.write('{"message":"checkout","outcome":"lease_busy","commandKeyHash":"h1"}\n')
                f.write('{"message":"listening","note":"lease_lost"}\n')
            jobs = [{"final": False, "commands": [("h1", "not_found"), ("h2", "not_found"),
                                                  ("h1", "succeeded"), ("h2", "declined")]},
                    {"final": True, "commands": [("h1", "not_found"), ("h1", "declined")]}]
            got = oracle.coverage(d, jobs, {"resend_after_key_window": 1}, {c1.keys[0]},
                                  [c1, c2], events, until)
            self.assertEqual(got, {"staleHolderRefused": 1, "lookupsInSettleWindow": 1,
                                   "resendsAfterKeyWindow": 1,
                                   "recoverySettledInFaultedPhase": 1})
            # Claims alone count nothing.
            self.assertEqual(oracle.coverage(d, jobs, {}, set(), [c1, c2], [], until),
                             {k: 0 for k in oracle.COVERAGE})
        result = {k: 0 for k in oracle.FINDINGS}
        result["coverage"] = got
        self.assertEqual(oracle.failures(result), [])
        for k in oracle.COVERAGE:
            result["coverage"] = dict(got, **{k: 0})
            self.assertEqual(oracle.failures(result), [f"coverage.{k}"])
            self.assertEqual(oracle.failures(result, require_coverage=False), [])
        result["coverage"] = got
        for k in oracle.FINDINGS:
            self.assertEqual(oracle.failures(dict(result, **{k: 1})), [k])

    def test_every_plant_names_a_finding_of_its_own_place(self):
        self.assertEqual(len(PLANTS), 8)
        for name, (where, reason, _) in PLANTS.items():
            findings = oracle.FINDINGS + (WEBHOOK_FINDINGS if name in EVENT_PLANTS else ())
            self.assertIn(reason, findings, name)
            self.assertIn(where, ("provider", "service", "journal"), name)
            self.assertEqual(in_service(name), where != "provider")
            self.assertTrue(caught(name, [reason, "coverage.staleHolderRefused"]))
            self.assertFalse(caught(name, [k for k in findings if k != reason]))
        self.assertFalse(in_service(None))

    def test_a_write_under_a_superseded_fence(self):
        def event(kind, fence, created):
            return ({"commandKeyHash": {"stringValue": "h"}, "eventType": {"stringValue": kind},
                     "fenceEpoch": {"integerValue": str(fence)}}, created)
        clean = [event("lease_acquired", 1, "2026-01-01T00:00:00.1Z"),
                 event("send_opened", 1, "2026-01-01T00:00:00.1Z"),
                 event("lease_acquired", 2, "2026-01-01T00:00:01.000001Z"),
                 event("send_succeeded", 2, "2026-01-01T00:00:02Z")]
        self.assertEqual(oracle.stale_fence_writes(clean)[:3:2], (0, 1))
        stale = clean + [event("send_ambiguous", 1, "2026-01-01T00:00:01.5Z")]
        self.assertEqual(oracle.stale_fence_writes(stale)[0], 1)

    def test_the_log_scan_finds_each_kind(self):
        c = checkout()
        values = oracle.canaries([c], [charge(c)], {}, "acct_secret")
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "instance-0-1.stdout"), "w") as f:
                f.write('{"message":"checkout","commandKeyHash":"%s"}\n' % c.hash)
                f.write('{"lease":"%s"}\n' % "0f0e0d0c-0b0a-4909-8807-060504030201")
                f.write('{"key":"%s"}\n' % c.keys[0])
                f.write('{"uid":"u1"}\n{"charge":"ch_1"}\n{"a":"acct_secret"}\n{"p":"pv1"}\n')
            n, examples = oracle.scan_logs(d, values)
        # Every line but the first (a key hash is no raw value).
        self.assertEqual(n, 6, examples)
        self.assertFalse(any(e.startswith("instance-0-1.stdout:1:") for e in examples))


if __name__ == "__main__":
    unittest.main()


def frame(kind, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def literal(name, value):
    """A header as a literal without indexing, its name and value not Huffman-coded."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def request_headers(path, stream, split=False):
    """A gRPC request's HEADERS for `path` (in two frames, HEADERS and CONTINUATION,
    when `split`)."""
    block = b"\x83" + literal(b":path", path) + literal(b"content-type", b"application/grpc")
    if not split:
        return frame(0x1, 0x4, stream, block)
    return frame(0x1, 0x0, stream, block[:7]) + frame(0x9, 0x4, stream, block[7:])


SETTINGS = frame(0x4, 0x0, 0, b"")
ROLLBACK = b"/google.firestore.v1.Firestore/Rollback"
COMMIT = b"/google.firestore.v1.Firestore/Commit"


class Wire(unittest.TestCase):
    def test_hpack_decodes_rfc_7541_examples(self):
        # C.3.1, literal strings; C.4.1 to C.4.3, Huffman-coded, one dynamic table.
        plain = Decoder().decode(bytes.fromhex("828684410f7777772e6578616d706c652e636f6d"))
        self.assertEqual(plain[3], (b":authority", b"www.example.com"))
        d = Decoder()
        first = d.decode(bytes.fromhex("828684418cf1e3c2e5f23a6ba0ab90f4ff"))
        self.assertEqual(first, [(b":method", b"GET"), (b":scheme", b"http"), (b":path", b"/"),
                                 (b":authority", b"www.example.com")])
        self.assertEqual(d.size, 57)
        second = d.decode(bytes.fromhex("828684be5886a8eb10649cbf"))
        self.assertEqual(second[-1], (b"cache-control", b"no-cache"))
        third = d.decode(bytes.fromhex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"))
        self.assertEqual(third[-1], (b"custom-key", b"custom-value"))
        self.assertEqual(third[2], (b":path", b"/index.html"))
        self.assertEqual(d.size, 164)
        # The encoder's size update evicts; an index past both tables is an error.
        d.decode(b"\x20")
        self.assertEqual((d.table, d.size), ([], 0))
        with self.assertRaises(WireError):
            d.decode(b"\xbe")
        with self.assertRaises(WireError):
            huffman_decode(b"\xf1\x00")

    def test_a_header_block_is_held_until_whole(self):
        half = Half(client=True)
        stream = PREFACE + SETTINGS + request_headers(ROLLBACK, 1, split=True)
        units = half.feed(stream[:len(PREFACE) + len(SETTINGS) + 12])
        self.assertEqual([u[2] for u in units], [None, None])
        self.assertEqual(bytes(half.pending), stream[len(PREFACE) + len(SETTINGS):][:12])
        (raw, sid, headers), = half.feed(stream[len(PREFACE) + len(SETTINGS) + 12:])
        self.assertEqual((raw, sid, method(headers)), (request_headers(ROLLBACK, 1, True), 1,
                                                       "Rollback"))
        self.assertEqual(bytes(half.pending), b"")
        with self.assertRaises(WireError):
            Half(client=True).feed(b"GET / HTTP/1.1\r\n\r\n" + bytes(16))

    def test_a_lost_rollback_never_reaches_the_emulator_and_rpcs_are_timed(self):
        async def scenario():
            received = []

            async def emulator(reader, writer):
                got = bytearray()
                try:
                    while data := await read_or_cut(reader, 65536):
                        got += data
                        if COMMIT in got and not writer.is_closing():
                            answer = b"\x88" + literal(b"grpc-status", b"10")
                            writer.write(frame(0x1, 0x5, 1, answer))
                finally:
                    received.append(bytes(got))
                    writer.close()
            upstream = await asyncio.start_server(emulator, "127.0.0.1", 0)
            log = FaultLog()
            proxy = await TcpFaultProxy("t", upstream.sockets[0].getsockname()[1], log).start()

            async def call(path):
                reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
                writer.write(PREFACE + SETTINGS + request_headers(path, 1))
                await writer.drain()
                answer = await asyncio.wait_for(read_or_cut(reader, 65536), 5)
                writer.close()
                return answer
            proxy.lose_rollbacks(0.0)
            self.assertEqual(await call(ROLLBACK), b"")
            self.assertEqual(len(await call(COMMIT)), 9 + 1 + 16)
            proxy.close()
            upstream.close()
            await asyncio.sleep(0.05)
            return received, log, proxy
        received, log, proxy = run(scenario())
        # Everything before the Rollback's headers went through; nothing of them.
        self.assertEqual(sorted(received), [PREFACE + SETTINGS,
                                            PREFACE + SETTINGS + request_headers(COMMIT, 1)])
        self.assertEqual(log.fired, {"firestore_lost_rollback": 1, "firestore_rollbacks_cut": 1})
        self.assertEqual(proxy.wire_errors, [])
        figure, every = lock_wait([proxy])
        self.assertEqual((figure["commitsTimed"], figure["commitsAborted"]), (1, 1))
        self.assertLess(figure["longestCommitMs"], 1000)
        self.assertEqual(every["statuses"], {"Commit 10": 1})

    def test_a_client_that_leaves_cuts_its_instance_s_request(self):
        async def scenario():
            cut = asyncio.Event()

            async def instance(reader, writer):
                await read_message(reader)
                # Cut with RST: read as an error or an end.
                self.assertEqual(await read_or_cut(reader, 1), b"")
                cut.set()
            server = await asyncio.start_server(instance, "127.0.0.1", 0)

            class Up:
                up = True
                port = server.sockets[0].getsockname()[1]
            log = FaultLog()
            balancer = await Balancer([Up()], log).start()
            reader, writer = await asyncio.open_connection("127.0.0.1", balancer.port)
            writer.write(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            await asyncio.sleep(0.1)
            writer.close()
            await asyncio.wait_for(cut.wait(), 5)
            balancer.close()
            server.close()
            return log
        self.assertEqual(run(scenario()).fired, {"client_disconnect": 1})

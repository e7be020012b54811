"""The harness's own checks (`python3 -m unittest bench.chaos.chaos.tests`): the
derivations against the crate's vectors, the stand-in's Stripe-like semantics, and
that the oracle fails on each kind of violation it exists to catch."""

import asyncio
import json
import os
import random
import tempfile
import unittest

from . import oracle
from .clients import Answer, Checkout
from .identity import attempt_key, command_key_hash
from .standin import Faults, StandIn

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


def checkout(ref="pv1"):
    return Checkout(0, "u1", COMMAND_ID, {"amount": 1250, "currency": "eur", "ref": ref})


def charge(c, attempt=1, cid="ch_1", status="succeeded"):
    return {"id": cid, "key": c.keys[attempt - 1], "ref": c.payload["ref"], "amount": 1250,
            "currency": "eur", "status": status}


def ok_body(x):
    return json.dumps({"status": "succeeded", "charge": json.loads(oracle.envelope_of(x))},
                      separators=(",", ":"))


class Oracle(unittest.TestCase):
    def test_a_settled_charge_holds(self):
        c = checkout()
        x = charge(c)
        c.answers = [Answer(1, 0, 1, 200, ok_body(x), None, "main")] * 2
        counts, _ = oracle.check([c], [x], {c.hash: ("succeeded", oracle.envelope_of(x))}, [])
        self.assertEqual(counts, {"charges": 1, "doubleCharges": 0,
                                  "chargesWithoutSettlement": 0, "disagreeingAnswers": 0})

    def test_each_violation_is_counted(self):
        c = checkout()
        x, y = charge(c), charge(c, 2, "ch_2")
        env = oracle.envelope_of(x)
        cases = [
            # two charges
            ([x, y], {c.hash: ("succeeded", env)}, [], [], "doubleCharges"),
            # charged, journal leased, not listed
            ([x], {c.hash: ("leased", None)}, [], [], "chargesWithoutSettlement"),
            # charged, listed with the charged attempt recorded absent
            ([x], {c.hash: ("leased", None)},
             [{"commandKeyHash": c.hash, "send": {"attempt": 1, "state": "absent"}}], [],
             "chargesWithoutSettlement"),
            # charged, a later attempt opened
            ([x], {c.hash: ("leased", None)},
             [{"commandKeyHash": c.hash, "send": {"attempt": 2, "state": "sending"}}], [],
             "chargesWithoutSettlement"),
            # a 200 whose charge the ledger does not hold
            ([], {c.hash: ("leased", None)}, [], [(200, ok_body(x))], "disagreeingAnswers"),
            # a 402 beside a charge
            ([x], {c.hash: ("succeeded", env)}, [], [(402, '{"status":"failed"}')],
             "disagreeingAnswers"),
            # a 402 the provider never answered
            ([], {c.hash: ("failed_final", None)}, [], [(402, '{"status":"failed"}')],
             "disagreeingAnswers"),
            # two 200 bodies that differ in bytes
            ([x], {c.hash: ("succeeded", env)}, [],
             [(200, ok_body(x)), (200, ok_body(x) + " ")], "disagreeingAnswers"),
            # a stored envelope of no ledger charge
            ([], {c.hash: ("succeeded", env)}, [], [], "disagreeingAnswers"),
            # a final decline in the journal the provider never made (no client heard it)
            ([], {c.hash: ("failed_final", None)}, [], [], "disagreeingAnswers"),
            # a final decline in the journal beside a charge
            ([x], {c.hash: ("failed_final", None)}, [], [], "disagreeingAnswers"),
        ]
        for ledger, journal, pending, answers, kind in cases:
            c.answers = [Answer(1, 0, 1, s, t, None, "main") for s, t in answers]
            counts, findings = oracle.check([c], ledger, journal, pending)
            self.assertGreaterEqual(counts[kind], 1, (kind, findings))

    def test_a_decline_the_ledger_holds_holds(self):
        c = checkout()
        declined = dict(charge(c), status="failed")
        c.answers = [Answer(1, 0, 1, 402, '{"status":"failed"}', None, "main")]
        counts, findings = oracle.check([c], [declined], {c.hash: ("failed_final", None)}, [])
        self.assertEqual(counts["disagreeingAnswers"], 0, findings)

    def test_an_unknown_outcome_listed_holds(self):
        c = checkout()
        x = charge(c)
        pending = [{"commandKeyHash": c.hash, "send": {"attempt": 1, "state": "ambiguous"}}]
        counts, _ = oracle.check([c], [x], {c.hash: ("leased", None)}, pending)
        self.assertEqual(counts["chargesWithoutSettlement"], 0)

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

    def test_still_sending(self):
        entry = {"send": {"state": "sending",
                          "absenceProvableFrom": {"seconds": 100, "nanoseconds": 0}}}
        self.assertEqual(oracle.still_sending([entry], 99.0), 0)
        self.assertEqual(oracle.still_sending([entry], 100.0), 1)

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

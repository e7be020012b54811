#!/usr/bin/env python3
"""Independent reference generator for the provider-send golden vectors.

Usage (from the crate root):
    python3 testdata/send_vectors.py > testdata/send_vectors.json

Stdlib only; reuses the frame, digest and RFC 8785 code of identity_vectors.py (the
crate's other independent implementation). Implements docs/identity.md,
"Provider plan and attempt keys":
  * planFingerprint (plan version 2) = digest of domain "command-journal.provider-plan",
    version "2", commandKeyHash, provider, account, mode, apiVersion, operation,
    endpoint, canonical parameters, str(keyRetentionSeconds), lookup ("key_store" when
    absent), str(lookupSettleSeconds) (300 when absent)
  * with customerWindowSeconds (plan version 3): the version-2 parts under version
    "3", then str(customerWindowSeconds); without it, exactly version 2
  * planFingerprintV1 (plans bound before version 2) = the same frame under version
    "1" without the last two parts
  * accountFingerprint (plan documents of version 3) = digest of domain
    "command-journal.provider-account", version "1", commandKeyHash, provider,
    account, mode
  * attempt 1 key   = cj1- + digest("command-journal.provider-key", commandKeyHash, operation)
  * attempt n >= 2  = cj1- + digest("command-journal.provider-attempt-key",
    commandKeyHash, operation, str(n))
  * cutoff seconds  = retention - retention // 4
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from identity_vectors import canonical_payload, derive, digest, frame  # noqa: E402

COMMAND = {
    "environment": "test", "callerScopeKind": "member", "callerId": "member_7",
    "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "commandType": "checkout",
    "endpointSchemaVersion": 1, "payload": {"sku": "tee", "qty": 2},
    "leaseId": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "terminalReferenceFingerprint": "0" * 64, "operation": "charge",
}

PLANS = [
    {
        "name": "stripe_payment_intent_24h",
        "plan": {
            "provider": "stripe", "account": "acct_1Nv0FGQ9RKHgCVdK", "mode": "test",
            "apiVersion": "2024-06-20", "operation": "charge",
            "endpoint": "POST /v1/payment_intents",
            "parameters": {"amount": 1250, "currency": "usd",
                           "metadata": {"order": "A-17", "\u00e9t\u00e9": True}},
            "keyRetentionSeconds": 86400,
        },
        "attempts": [1, 2, 3, 10, 9999],
    },
    {
        "name": "live_refund_min_retention_unicode_account",
        "plan": {
            "provider": "adyen", "account": "Compte \u00e9t\u00e9 \U0001F600", "mode": "live",
            "apiVersion": "v71", "operation": "refund",
            "endpoint": "DELETE /v1/refunds/re_%2F42/items:cancel",
            "parameters": {}, "keyRetentionSeconds": 3600,
            "lookup": "key_store", "lookupSettleSeconds": 840,
        },
        "attempts": [1, 2],
    },
    {
        "name": "max_retention_odd_division",
        "plan": {
            "provider": "p", "account": "a", "mode": "test", "apiVersion": "1",
            "operation": "capture_funds", "endpoint": "PATCH /a/b~c/d@e",
            "parameters": {"b": [1, -9007199254740991, None, "x"], "a": {"z": False}},
            "keyRetentionSeconds": 2592000, "lookup": "durable", "lookupSettleSeconds": 0,
        },
        "attempts": [1, 4],
    },
    {
        "name": "retention_not_divisible_by_four",
        "plan": {
            "provider": "stripe", "account": "acct_x", "mode": "live", "apiVersion": "2023-10-16",
            "operation": "charge", "endpoint": "PUT /v1/x", "parameters": {"k": "v"},
            "keyRetentionSeconds": 3601,
        },
        "attempts": [2],
    },
    {
        "name": "stripe_checkout_customer_window_1h",
        "plan": {
            "provider": "stripe", "account": "acct_1Nv0FGQ9RKHgCVdK", "mode": "test",
            "apiVersion": "2024-06-20", "operation": "checkout",
            "endpoint": "POST /v1/checkout/sessions",
            "parameters": {"amount": 1250, "currency": "usd"},
            "keyRetentionSeconds": 86400, "lookup": "final_state", "lookupSettleSeconds": 300,
            "customerWindowSeconds": 3600,
        },
        "attempts": [1, 2],
    },
]


def plan_parts(ckh, plan):
    return [ckh, plan["provider"], plan["account"], plan["mode"], plan["apiVersion"],
            plan["operation"], plan["endpoint"], canonical_payload(plan["parameters"]),
            str(plan["keyRetentionSeconds"])]


def plan_fingerprint_v1(ckh, plan):
    return digest("command-journal.provider-plan", *plan_parts(ckh, plan))


def plan_fingerprint(ckh, plan):
    parts = plan_parts(ckh, plan) + [plan.get("lookup", "key_store"),
                                     str(plan.get("lookupSettleSeconds", 300))]
    version = "2"
    if "customerWindowSeconds" in plan:
        version = "3"
        parts.append(str(plan["customerWindowSeconds"]))
    data = frame(["command-journal.provider-plan", version] + parts)
    return hashlib.sha256(data).hexdigest()


def account_fingerprint(ckh, plan):
    return digest("command-journal.provider-account", ckh, plan["provider"],
                  plan["account"], plan["mode"])


def attempt_key(ckh, operation, n):
    if n == 1:
        return "cj1-" + digest("command-journal.provider-key", ckh, operation)
    return "cj1-" + digest("command-journal.provider-attempt-key", ckh, operation, str(n))


def main():
    ckh = derive(COMMAND)["commandKeyHash"]
    cases = []
    for case in PLANS:
        plan = case["plan"]
        retention = plan["keyRetentionSeconds"]
        cases.append({
            "name": case["name"],
            "plan": plan,
            "expected": {
                "canonicalParameters": canonical_payload(plan["parameters"]),
                "planFingerprint": plan_fingerprint(ckh, plan),
                "planFingerprintV1": plan_fingerprint_v1(ckh, plan),
                "accountFingerprint": account_fingerprint(ckh, plan),
                "cutoffSeconds": retention - retention // 4,
                "attemptKeys": {str(n): attempt_key(ckh, plan["operation"], n)
                                for n in case["attempts"]},
            },
        })
    # Attempt 1 is the B1 provider key; later attempts are all distinct.
    assert cases[0]["expected"]["attemptKeys"]["1"] == derive(COMMAND)["providerIdempotencyKey"]
    keys = list(cases[0]["expected"]["attemptKeys"].values())
    assert len(set(keys)) == len(keys)
    assert cases[0]["expected"]["cutoffSeconds"] == 18 * 3600
    doc = {"generator": "testdata/send_vectors.py", "command": COMMAND,
           "commandKeyHash": ckh, "plans": cases}
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()

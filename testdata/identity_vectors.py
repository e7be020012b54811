#!/usr/bin/env python3
"""Independent reference generator for command-journal identity golden vectors.

Usage (from the crate root):
    python3 testdata/identity_vectors.py > testdata/identity_vectors.json

Stdlib only. Implements docs/identity.md (the design contract's "Identity (B1): exact encodings"):
  * frame = for each part: u32 big-endian byte length, then UTF-8 bytes
  * digest = lowercase hex SHA-256 of the frame
  * canonical payload = RFC 8785 (JCS) text, own serializer for the allowed
    subset (objects, arrays, strings, integers |n| <= 2^53-1, bools, null).
Output is deterministic: all UUIDs are hard-coded.
"""

import hashlib
import json
import re
import struct
import sys
import uuid

VERSION = "1"
MAX_SAFE = 2**53 - 1
MAX_DEPTH = 32
MAX_CANONICAL_BYTES = 65536


# --------------------------------------------------------------------------
# frame / digest
# --------------------------------------------------------------------------

def frame(parts):
    out = bytearray()
    for p in parts:
        if not isinstance(p, str):
            raise TypeError("frame parts must be str")
        b = p.encode("utf-8")
        out += struct.pack(">I", len(b))
        out += b
    return bytes(out)


def digest(domain, *fields):
    return hashlib.sha256(frame([domain, VERSION] + list(fields))).hexdigest()


# Hand-checked: frame(["ab", "1"]) == 00000002 6162 00000001 31
assert frame(["ab", "1"]) == bytes.fromhex("00000002" "6162" "00000001" "31"), frame(["ab", "1"]).hex()
# Multi-byte UTF-8: length is in bytes, not code points ("é" = c3 a9).
assert frame(["\u00e9"]) == bytes.fromhex("00000002" "c3a9")
assert frame([""]) == bytes.fromhex("00000000")
# digest of an empty-ish frame must equal sha256 of the explicit bytes
assert digest("x") == hashlib.sha256(bytes.fromhex("00000001" "78" "00000001" "31")).hexdigest()


# --------------------------------------------------------------------------
# RFC 8785 canonical JSON (restricted subset)
# --------------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def jcs_string(s):
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            raise ValueError("lone surrogate not allowed")
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif cp < 0x20:
            out.append("\\u%04x" % cp)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _utf16_key(s):
    return s.encode("utf-16-be")


def jcs(value, depth=0):
    """Canonical text. depth counts containers; the outermost container is depth 1."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE:
            raise ValueError("integer out of range")
        return str(value)
    if isinstance(value, float):
        raise ValueError("floats not allowed")
    if isinstance(value, str):
        return jcs_string(value)
    if isinstance(value, list):
        if depth + 1 > MAX_DEPTH:
            raise ValueError("too deep")
        return "[" + ",".join(jcs(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        if depth + 1 > MAX_DEPTH:
            raise ValueError("too deep")
        keys = sorted(value.keys(), key=_utf16_key)
        return "{" + ",".join(jcs_string(k) + ":" + jcs(value[k], depth + 1) for k in keys) + "}"
    raise TypeError("unsupported type %r" % type(value))


def depth_of(value):
    if isinstance(value, dict):
        return 1 + max([depth_of(v) for v in value.values()] or [0])
    if isinstance(value, list):
        return 1 + max([depth_of(v) for v in value] or [0])
    return 0


def canonical_payload(payload):
    if not isinstance(payload, dict):
        raise ValueError("payload must be an object")
    text = jcs(payload)
    if len(text.encode("utf-8")) > MAX_CANONICAL_BYTES:
        raise ValueError("canonical payload too large")
    return text


# Self-checks against RFC 8785 examples.
# Section 3.2.3 sorting example (UTF-16 code unit order; emoji D83D sorts before FB33).
_rfc_sort = {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\U0001F600": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis",
}
assert [k for k in sorted(_rfc_sort, key=_utf16_key)] == [
    "\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001F600", "\ufb33"]
# Section 3.2.2.2 string example.
assert jcs_string("\u20ac$\u000f\nA'B\"\\\\\"/") == "\"\u20ac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\""
assert jcs({"b": 1, "a": [True, False, None, -3, "x"]}) == '{"a":[true,false,null,-3,"x"],"b":1}'
assert jcs_string("\x7f\u001f/") == '"\x7f\\u001f/"'


# --------------------------------------------------------------------------
# input validation (mirrors the input rules of docs/identity.md)
# --------------------------------------------------------------------------

ENVIRONMENTS = {"emulator", "test", "staging", "production"}
SCOPE_KINDS = {"member", "guest", "officer", "service"}
CALLER_ID_RE = re.compile(r"\A[A-Za-z0-9_-]{1,128}\Z")
SLUG_RE = re.compile(r"\A[a-z][a-z0-9_]{0,62}\Z")
UUID_RE = re.compile(r"\A[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")
HEX64_RE = re.compile(r"\A[0-9a-f]{64}\Z")


def check_uuid(s):
    assert UUID_RE.match(s), s
    u = uuid.UUID(s)
    assert u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == s, s


def validate(inp):
    assert inp["environment"] in ENVIRONMENTS
    assert inp["callerScopeKind"] in SCOPE_KINDS
    assert CALLER_ID_RE.match(inp["callerId"]), inp["callerId"]
    check_uuid(inp["commandId"])
    check_uuid(inp["leaseId"])
    assert inp["commandId"] != inp["leaseId"]
    assert SLUG_RE.match(inp["commandType"]), inp["commandType"]
    assert SLUG_RE.match(inp["operation"]), inp["operation"]
    v = inp["endpointSchemaVersion"]
    assert isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 9999
    assert HEX64_RE.match(inp["terminalReferenceFingerprint"])
    assert isinstance(inp["payload"], dict)
    assert depth_of(inp["payload"]) <= MAX_DEPTH


# --------------------------------------------------------------------------
# derivations
# --------------------------------------------------------------------------

def derive(inp):
    validate(inp)
    ckh = digest(
        "command-journal.command-key",
        inp["environment"],
        inp["callerScopeKind"],
        inp["callerId"],
        inp["commandType"],
        str(inp["endpointSchemaVersion"]),
        inp["commandId"],
    )
    cp = canonical_payload(inp["payload"])
    return {
        "commandKeyHash": ckh,
        "canonicalPayload": cp,
        "payloadFingerprint": digest("command-journal.payload", ckh, cp),
        "leaseOwnerFingerprint": digest("command-journal.lease-owner", ckh, inp["leaseId"]),
        "terminalCommitmentHash": digest(
            "command-journal.terminal-commitment", ckh, "business_record_digest",
            inp["terminalReferenceFingerprint"]),
        "providerIdempotencyKey": "cj1-" + digest("command-journal.provider-key", ckh, inp["operation"]),
    }


def reservation_id(class_id, feat_code, idempotency_key):
    return digest("ledger.reservation", class_id, feat_code, idempotency_key)


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------

def nested(depth):
    """An object whose total depth (outermost object = 1) is exactly `depth`.
    The innermost object is empty."""
    obj = {}
    for i in range(depth - 1):
        obj = {"d%02d" % (depth - 1 - i): obj}
    return obj


DEPTH32 = nested(32)
assert depth_of(DEPTH32) == 32

T1 = "0" * 64
T2 = "f" * 64
T3 = hashlib.sha256(b"terminal-reference-3").hexdigest()
T4 = "0123456789abcdef" * 4

SLUG63 = "a" + "b0_" * 20 + "z9"
assert len(SLUG63) == 63 and SLUG_RE.match(SLUG63)
CALLER128 = ("Ab0_-" * 26)[:128]
assert len(CALLER128) == 128

COMMANDS = [
    {
        "name": "minimal_empty_payload",
        "input": {
            "environment": "emulator", "callerScopeKind": "member", "callerId": "u",
            "commandId": "00000000-0000-4000-8000-000000000000", "commandType": "checkout",
            "endpointSchemaVersion": 1, "payload": {},
            "leaseId": "00000000-0000-4000-8000-000000000001",
            "terminalReferenceFingerprint": T1, "operation": "charge",
        },
    },
    {
        "name": "test_guest_simple_payload",
        "input": {
            "environment": "test", "callerScopeKind": "guest", "callerId": "guest_42",
            "commandId": "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "commandType": "store_purchase",
            "endpointSchemaVersion": 2,
            "payload": {"quantity": 3, "policyUuid": "9b2e7f1c-6a3d-4e8b-b1f0-2c4d5e6f7a8b"},
            "leaseId": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "terminalReferenceFingerprint": T2, "operation": "reserve_funds",
        },
    },
    {
        "name": "staging_officer_key_ordering",
        "input": {
            "environment": "staging", "callerScopeKind": "officer", "callerId": "Officer-7",
            "commandId": "a8098c1a-f86e-41da-bd2f-0123456789ab", "commandType": "rent_payment",
            "endpointSchemaVersion": 17,
            "payload": {
                "b": 1, "a": 2, "aa": 3, "A": 4, "_": 5, "\u00e9": 6, "\u20ac": 7,
                "\U0001F600": "astral", "\uFFFF": "bmp-max", "": "empty-key", "10": 8, "9": 9,
                "nested": {"z": {"y": 1, "x": 2}, "Z": [], "m": {}},
            },
            "leaseId": "c0ffee00-1234-4abc-9def-0123456789ab",
            "terminalReferenceFingerprint": T3, "operation": "post_rent",
        },
    },
    {
        "name": "production_service_arrays_bools_null",
        "input": {
            "environment": "production", "callerScopeKind": "service", "callerId": "billing-worker_01",
            "commandId": "e4eaaaf2-d142-41e0-9f8e-1a2b3c4d5e6f", "commandType": "insurance_premium",
            "endpointSchemaVersion": 9999,
            "payload": {
                "flags": [True, False, None],
                "empty": [],
                "mixed": [1, "two", {"three": 3, "b": [], "a": {}}, [[], [0]], None],
                "ok": True, "no": False, "nothing": None,
            },
            "leaseId": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
            "terminalReferenceFingerprint": T4, "operation": "settle_premium",
        },
    },
    {
        "name": "string_escaping",
        "input": {
            "environment": "production", "callerScopeKind": "member", "callerId": "m-9",
            "commandId": "16fd2706-8baf-433b-82eb-8c7fada847da", "commandType": "note",
            "endpointSchemaVersion": 3,
            "payload": {
                "quote": "say \"hi\"",
                "backslash": "C:\\path\\to",
                "controls": "\b\f\n\r\t",
                "low": "\u0000\u0001\u0007\u000b\u000e\u001f",
                "newline_tab": "line1\nline2\tcol",
                "del": "\u007f",
                "slash": "a/b</script>",
                "non_ascii": "caf\u00e9 \u00fc\u00df \u20ac \u4e2d\u6587 \u0600",
                "emoji": "\U0001F600\U0001F680 \U0010FFFF",
                "ws": " \u00a0\u2028\u2029",
                "mixed \"key\"\n": "value\\",
            },
            "leaseId": "b3e1c7a4-2f5d-4c6e-8a9b-0d1e2f3a4b5c",
            "terminalReferenceFingerprint": T1, "operation": "send",
        },
    },
    {
        "name": "integer_bounds",
        "input": {
            "environment": "test", "callerScopeKind": "service", "callerId": "svc",
            "commandId": "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d", "commandType": "overdraft_fee",
            "endpointSchemaVersion": 100,
            "payload": {
                "zero": 0, "one": 1, "minus_one": -1,
                "max_safe": 9007199254740991, "min_safe": -9007199254740991,
                "list": [0, 9007199254740991, -9007199254740991, 1000000, -42],
            },
            "leaseId": "1b4e28ba-2fa1-41d2-883f-0016d3cca427",
            "terminalReferenceFingerprint": T2, "operation": "apply_fee",
        },
    },
    {
        "name": "depth_32_payload",
        "input": {
            "environment": "emulator", "callerScopeKind": "officer", "callerId": "deep",
            "commandId": "6ba7b810-9dad-41d1-80b4-00c04fd430c8", "commandType": "deep_payload",
            "endpointSchemaVersion": 32,
            "payload": DEPTH32,
            "leaseId": "6ba7b811-9dad-41d1-b0b4-00c04fd430c8",
            "terminalReferenceFingerprint": T3, "operation": "deep_op",
        },
    },
    {
        "name": "caller_id_128_chars",
        "input": {
            "environment": "staging", "callerScopeKind": "member", "callerId": CALLER128,
            "commandId": "d9428888-122b-41d7-b5f3-9e8f7a6b5c4d", "commandType": "checkout",
            "endpointSchemaVersion": 1, "payload": {"k": "v"},
            "leaseId": "e1f2a3b4-c5d6-4e7f-8a9b-c0d1e2f3a4b5",
            "terminalReferenceFingerprint": T4, "operation": "charge",
        },
    },
    {
        "name": "command_type_63_chars",
        "input": {
            "environment": "production", "callerScopeKind": "guest", "callerId": "Z",
            "commandId": "2c1d43f6-7a9b-4e8c-a1d2-3e4f5a6b7c8d", "commandType": SLUG63,
            "endpointSchemaVersion": 9999, "payload": {"long": True},
            "leaseId": "2c1d43f6-7a9b-4e8c-a1d2-3e4f5a6b7c8e",
            "terminalReferenceFingerprint": T1, "operation": SLUG63,
        },
    },
    {
        "name": "single_letter_slugs",
        "input": {
            "environment": "emulator", "callerScopeKind": "service", "callerId": "-",
            "commandId": "4a5b6c7d-8e9f-4a0b-9c1d-2e3f4a5b6c7d", "commandType": "x",
            "endpointSchemaVersion": 10, "payload": {"a": {"b": {"c": [1, [2, [3, {}]]]}}},
            "leaseId": "5b6c7d8e-9fa0-4b1c-ad2e-3f4a5b6c7d8e",
            "terminalReferenceFingerprint": T2, "operation": "y",
        },
    },
    {
        "name": "same_key_different_payload_a",
        "input": {
            "environment": "production", "callerScopeKind": "member", "callerId": "member_123",
            "commandId": "8f14e45f-ceea-467a-9575-1c8a3b2d4e6f", "commandType": "store_purchase",
            "endpointSchemaVersion": 5, "payload": {"quantity": 1, "sku": "apple"},
            "leaseId": "aab32389-2b33-4f2e-8a0d-1c2b3a4d5e6f",
            "terminalReferenceFingerprint": T3, "operation": "reserve_funds",
        },
    },
    {
        "name": "same_key_different_payload_b",
        "input": {
            "environment": "production", "callerScopeKind": "member", "callerId": "member_123",
            "commandId": "8f14e45f-ceea-467a-9575-1c8a3b2d4e6f", "commandType": "store_purchase",
            "endpointSchemaVersion": 5, "payload": {"sku": "apple", "quantity": 2},
            "leaseId": "bbc4349a-3c44-4a3f-9b1e-2d3c4b5e6f70",
            "terminalReferenceFingerprint": T4, "operation": "capture_funds",
        },
    },
]

RESERVATIONS = [
    {"classId": "class_2024_fall", "featCode": "STORE_PURCHASE", "idempotencyKey": "cj1-abc123"},
    {"classId": "klasse-\u00e9t\u00e9", "featCode": "F\u00dc\u20ac-\u4e2d", "idempotencyKey": "key-\U0001F600-\u00f1"},
    {"classId": "c", "featCode": "f", "idempotencyKey": "k"},
    {"classId": "C" * 128, "featCode": "FEAT_" + "X" * 251, "idempotencyKey": "i" * 1024},
]


def main():
    commands = []
    for case in COMMANDS:
        commands.append({"name": case["name"], "input": case["input"], "expected": derive(case["input"])})

    # Cases a/b share identity but differ in payload: same key hash, different fingerprints.
    a, b = commands[-2]["expected"], commands[-1]["expected"]
    assert a["commandKeyHash"] == b["commandKeyHash"]
    assert a["payloadFingerprint"] != b["payloadFingerprint"]
    hashes = [c["expected"]["commandKeyHash"] for c in commands[:-1]]
    assert len(set(hashes)) == len(hashes)

    reservations = []
    for r in RESERVATIONS:
        out = dict(r)
        out["reservationId"] = reservation_id(r["classId"], r["featCode"], r["idempotencyKey"])
        reservations.append(out)

    doc = {"generator": "testdata/identity_vectors.py", "commands": commands, "reservations": reservations}
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()

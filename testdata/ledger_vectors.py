#!/usr/bin/env python3
"""Independent reference generator for ledger fingerprint golden vectors.

Usage (from the crate root):
    python3 testdata/ledger_vectors.py > testdata/ledger_vectors.json

Stdlib only; shares no code with the Rust crate. Implements the design contract's "Ledger
(SPEC-LED-002) on Firestore" and seed 003 (fingerprint versions 4 and 5, the intent
tuples and the internal-transfer serializer), with the decisions documented in
core/src/ledger/fingerprint.rs:

  * input: {family, fingerprintVersion, effects, intent} or
    {family: internal_transfer, fingerprintVersion, transfer}; absent == null
  * v4 effect keys: the twelve of seed 003; v5 adds compensation_subtype
  * amounts: JSON strings -?(0|[1-9][0-9]{0,12})(.[0-9]{1,2})? -> two decimals,
    no negative zero; negative only inside effects
  * text: non-empty, <= 1024 UTF-8 bytes, or null
  * fingerprint = sha256(utf8(JCS canonical JSON)), lowercase hex
  * every rejection names its container: input, family, fingerprintVersion,
    effects, intent, transfer; versions other than 4 and 5 are unsupported

Each case records the exact input JSON, and either the expected canonical text and
fingerprint, or the expected error code (and field, for invalid_input).

The "accepted" cases are booked plans, as `accept` receives them: their expected
fingerprint is the one `accept` stores (reservation schema version 3), whose items
are the booked effects with the family's derived amounts null (docs/ledger.md,
"Booked rows and fingerprint items"): every effect's amount of an overdraft fee, and
of a rent payment without a requested amount; every other family's amounts as booked.
"""

import hashlib
import json
import re
import sys

MAX_SAFE = 2**53 - 1
MAX_EFFECTS = 256
MAX_TEXT_BYTES = 1024

V4_KEYS = [
    "seat_id", "target_seat_id", "actor_seat_id", "mechanism", "amount",
    "account_type", "type", "original_transaction_id", "policy_id",
    "compensation_origin_locator", "compensation_amount_cents",
    "correction_intent_locator",
]
SUBTYPE = "compensation_subtype"
TRANSFER_KEYS = [
    "account_direction", "target_seat_id", "actor_seat_id", "amount", "type",
    "original_transaction_id", "policy_id",
]
FAMILIES = [
    "store_purchase", "rent_payment", "insurance_premium", "overdraft_fee",
    "reversal", "effect_plan", "internal_transfer",
]
TOP_KEYS = {"family", "fingerprintVersion", "effects", "intent", "transfer"}

AMOUNT = re.compile(r"(-?)(0|[1-9][0-9]{0,12})(?:\.([0-9]{1,2}))?")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Invalid(Exception):
    def __init__(self, field):
        super().__init__(field)
        self.field = field


class Unsupported(Exception):
    pass


# --------------------------------------------------------------------------
# RFC 8785 canonical JSON for the subset used here (null, bool, int, str, list, dict)
# --------------------------------------------------------------------------

_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
          "\r": "\\r", "\t": "\\t"}


def jcs_string(s):
    out = ['"']
    for ch in s:
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            raise ValueError("lone surrogate")
        if ch in _SHORT:
            out.append(_SHORT[ch])
        elif cp < 0x20:
            out.append("\\u%04x" % cp)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def jcs(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if abs(value) > MAX_SAFE:
            raise ValueError("integer outside the exact IEEE-754 range")
        return str(value)
    if isinstance(value, str):
        return jcs_string(value)
    if isinstance(value, list):
        return "[" + ",".join(jcs(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs_string(k) + ":" + jcs(value[k]) for k in keys) + "}"
    raise TypeError(type(value).__name__)


# Hand-checked JCS facts.
assert jcs({"b": 1, "a": [True, None, "x"]}) == '{"a":[true,null,"x"],"b":1}'
assert jcs("\u0001\u001f\u007f/\u2028\"\\\n") == '"\\u0001\\u001f\u007f/\u2028\\"\\\\\\n"'
# UTF-16 order: U+FB01 (one unit 0xFB01) sorts after U+1F600 (surrogates 0xD83D...).
assert jcs({"\ufb01": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb01":1}'


# --------------------------------------------------------------------------
# validation and normalization
# --------------------------------------------------------------------------

def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def text(v, field):
    if v is None:
        return None
    if isinstance(v, str) and 1 <= len(v.encode("utf-8")) <= MAX_TEXT_BYTES:
        return v
    raise Invalid(field)


def required_text(v, field):
    if v is None:
        raise Invalid(field)
    return text(v, field)


def amount(v, signed, field):
    if v is None:
        return None
    if not isinstance(v, str):
        raise Invalid(field)
    m = AMOUNT.fullmatch(v)
    if m is None:
        raise Invalid(field)
    sign, whole, frac = m.group(1), m.group(2), (m.group(3) or "").ljust(2, "0")
    if sign and whole == "0" and frac == "00":
        raise Invalid(field)  # negative zero
    if sign and not signed:
        raise Invalid(field)
    return sign + whole + "." + frac


def safe_uint(v, field, minimum=0):
    if is_int(v) and minimum <= v <= MAX_SAFE:
        return v
    raise Invalid(field)


def only_keys(obj, allowed, field):
    if not isinstance(obj, dict) or any(k not in allowed for k in obj):
        raise Invalid(field)
    return obj


def parse_version(v):
    if not is_int(v) or not (-(2**63) <= v <= 2**64 - 1):
        raise Invalid("fingerprintVersion")
    if v not in (4, 5):
        raise Unsupported()
    return v


def parse_effect(raw):
    f = "effects"
    obj = only_keys(raw, set(V4_KEYS) | {SUBTYPE}, f)
    effect = {}
    for key in V4_KEYS + [SUBTYPE]:
        v = obj.get(key)
        if key == "amount":
            effect[key] = amount(v, True, f)
        elif key == "compensation_amount_cents":
            effect[key] = 0 if v is None else safe_uint(v, f)
        else:
            effect[key] = text(v, f)
    return effect


def parse_intent(family, raw):
    f = "intent"
    if family in ("reversal", "effect_plan"):
        if raw is not None:
            raise Invalid(f)
        return None
    if family == "store_purchase":
        obj = only_keys(raw, {"policyUuid", "quantity"}, f)
        uuid = required_text(obj.get("policyUuid"), f)
        if UUID.fullmatch(uuid) is None:
            raise Invalid(f)
        return ["STORE_PURCHASE", uuid, safe_uint(obj.get("quantity"), f, minimum=1)]
    if family == "rent_payment":
        obj = only_keys(raw, {"obligationCorrelation", "requestedPaymentAmount"}, f)
        return ["RENT_PAYMENT", required_text(obj.get("obligationCorrelation"), f),
                amount(obj.get("requestedPaymentAmount"), False, f)]
    if family == "insurance_premium":
        obj = only_keys(raw, {"entitlementId", "selectedObligationCorrelation"}, f)
        return ["INSURANCE_PREMIUM", required_text(obj.get("entitlementId"), f),
                text(obj.get("selectedObligationCorrelation"), f)]
    if family == "overdraft_fee":
        obj = only_keys(raw, {"forceAuthority"}, f)
        force = obj.get("forceAuthority")
        if not isinstance(force, bool):
            raise Invalid(f)
        return ["OVERDRAFT_FEE", force]
    raise AssertionError(family)


def parse_transfer(raw):
    f = "transfer"
    obj = only_keys(raw, set(TRANSFER_KEYS), f)
    return {k: amount(obj.get(k), False, f) if k == "amount" else text(obj.get(k), f)
            for k in TRANSFER_KEYS}


def amounts_derived(family, raw_intent):
    """Whether the family's business tuple leaves its effect amounts derived."""
    if family == "overdraft_fee":
        return True
    if family == "rent_payment":
        return (raw_intent or {}).get("requestedPaymentAmount") is None
    return False


def canonical_text(inp, accepted=False):
    """The canonical text hashed for `inp` under its declared version; with
    `accepted`, for `inp` as booked effects (derived amounts null)."""
    if not isinstance(inp, dict) or any(k not in TOP_KEYS for k in inp):
        raise Invalid("input")
    family = inp.get("family")
    if family not in FAMILIES:  # also rejects non-strings
        raise Invalid("family")
    version = parse_version(inp.get("fingerprintVersion"))
    if family == "internal_transfer":
        if inp.get("effects") is not None:
            raise Invalid("effects")
        if inp.get("intent") is not None:
            raise Invalid("intent")
        return jcs(parse_transfer(inp.get("transfer")))
    if inp.get("transfer") is not None:
        raise Invalid("transfer")
    raw_effects = inp.get("effects")
    if not isinstance(raw_effects, list) or not 1 <= len(raw_effects) <= MAX_EFFECTS:
        raise Invalid("effects")
    effects = [parse_effect(e) for e in raw_effects]
    if accepted and amounts_derived(family, inp.get("intent")):
        for e in effects:
            e["amount"] = None
    if version == 4:
        for e in effects:
            del e[SUBTYPE]
    intent = parse_intent(family, inp.get("intent"))
    return jcs({"effects": effects, "intent": intent})


def expected(inp, accepted=False):
    try:
        canonical = canonical_text(inp, accepted)
    except Invalid as e:
        return {"error": "invalid_input", "field": e.field}
    except Unsupported:
        return {"error": "unsupported_fingerprint_version"}
    return {
        "fingerprintVersion": inp["fingerprintVersion"],
        "canonical": canonical,
        "fingerprint": hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
    }


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------

POLICY = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"


def charge_effect(**extra):
    e = {
        "seat_id": "seat-A",
        "target_seat_id": "seat-A",
        "actor_seat_id": "seat-A",
        "mechanism": "WALLET",
        "amount": "12.5",
        "account_type": "checking",
        "type": "DEBIT",
        "policy_id": "policy-7",
    }
    e.update(extra)
    return e


def reversal_effect():
    return {
        "seat_id": "seat-A",
        "target_seat_id": "seat-A",
        "actor_seat_id": "officer-9",
        "mechanism": "REVERSAL",
        "amount": "12.50",
        "account_type": "checking",
        "type": "CREDIT",
        "original_transaction_id": "txn-0001",
        "policy_id": None,
        "compensation_origin_locator": "ledgerTransactions/txn-0001",
        "compensation_amount_cents": 1250,
        "correction_intent_locator": "corrections/c-77",
        "compensation_subtype": "DUPLICATE_CHARGE",
    }


def plan(family, version, effects, intent=None, include_intent=True):
    inp = {"family": family, "fingerprintVersion": version, "effects": effects}
    if include_intent:
        inp["intent"] = intent
    return inp


def store(version, effects=None, **intent):
    i = {"policyUuid": POLICY, "quantity": 2}
    i.update(intent)
    return plan("store_purchase", version, effects or [charge_effect()], i)


TRANSFER = {
    "account_direction": "checking_to_savings",
    "target_seat_id": "seat-B",
    "actor_seat_id": "seat-A",
    "amount": "25",
    "type": "TRANSFER",
    "original_transaction_id": None,
    "policy_id": "policy-7",
}

UNICODE = "caf\u00e9 \u6f22\u5b57 \U0001f600 \"q\" back\\slash /slash \t\n\u0001\u001f\u007f\u2028"

CASES = [
    ("store_purchase_v5", store(5)),
    ("store_purchase_v4_same_plan", store(4)),
    ("store_purchase_max_quantity", store(5, quantity=MAX_SAFE)),
    ("rent_payment_v5_partial_amount", plan("rent_payment", 5, [charge_effect(amount="12.50")],
                                            {"obligationCorrelation": "rent-2026-10",
                                             "requestedPaymentAmount": "12.5"})),
    ("rent_payment_v5_amount_absent", plan("rent_payment", 5, [charge_effect(amount="800")],
                                           {"obligationCorrelation": "rent-2026-10"})),
    ("rent_payment_v4_amount_null", plan("rent_payment", 4, [charge_effect(amount="800")],
                                         {"obligationCorrelation": "rent-2026-10",
                                          "requestedPaymentAmount": None})),
    ("insurance_premium_v5_no_selection", plan("insurance_premium", 5, [charge_effect(amount="45.00")],
                                               {"entitlementId": "ent-3"})),
    ("insurance_premium_v4_selected", plan("insurance_premium", 4, [charge_effect(amount="45.00")],
                                           {"entitlementId": "ent-3",
                                            "selectedObligationCorrelation": "obl-9"})),
    ("overdraft_fee_forced", plan("overdraft_fee", 5, [charge_effect(amount="35", mechanism="FEE")],
                                  {"forceAuthority": True})),
    ("overdraft_fee_not_forced", plan("overdraft_fee", 5, [charge_effect(amount="35", mechanism="FEE")],
                                      {"forceAuthority": False})),
    ("reversal_v5_with_subtype", plan("reversal", 5, [reversal_effect()], None)),
    ("reversal_v4_subtype_not_covered", plan("reversal", 4, [reversal_effect()], None)),
    ("reversal_v5_intent_absent", plan("reversal", 5, [reversal_effect()], include_intent=False)),
    ("effect_plan_minimal_effect_all_defaults", plan("effect_plan", 5, [{}])),
    ("effect_plan_null_amount_and_null_cents", plan("effect_plan", 4, [
        charge_effect(amount=None, compensation_amount_cents=None)])),
    ("effect_plan_debit_credit_pair", plan("effect_plan", 5, [
        charge_effect(amount="-25", type="DEBIT"),
        charge_effect(seat_id="seat-B", target_seat_id="seat-B", amount="25", type="CREDIT"),
    ])),
    ("effect_plan_debit_credit_pair_reordered", plan("effect_plan", 5, [
        charge_effect(seat_id="seat-B", target_seat_id="seat-B", amount="25", type="CREDIT"),
        charge_effect(amount="-25", type="DEBIT"),
    ])),
    ("amount_normalization", plan("effect_plan", 5, [
        charge_effect(amount="3"),
        charge_effect(amount="0.5"),
        charge_effect(amount="-4.1"),
        charge_effect(amount="0"),
        charge_effect(amount="10.05"),
        charge_effect(amount="9999999999999.99"),
        charge_effect(amount="-0.01"),
    ])),
    ("max_compensation_cents", plan("effect_plan", 5, [
        dict(reversal_effect(), compensation_amount_cents=MAX_SAFE)])),
    ("unicode_strings", plan("effect_plan", 5, [
        charge_effect(seat_id="s\u00e9at-\u00fc", account_type=UNICODE,
                      compensation_subtype="\U0001f4b8")])),
    ("insurance_unicode_correlation", plan("insurance_premium", 5, [charge_effect()],
                                           {"entitlementId": "\u00e9nt-\u2603",
                                            "selectedObligationCorrelation": UNICODE})),
    ("internal_transfer_v4", {"family": "internal_transfer", "fingerprintVersion": 4,
                              "transfer": TRANSFER}),
    ("internal_transfer_v5_same_bytes", {"family": "internal_transfer", "fingerprintVersion": 5,
                                         "transfer": TRANSFER}),
    ("internal_transfer_absent_fields", {"family": "internal_transfer", "fingerprintVersion": 5,
                                         "transfer": {"amount": "0.1"}, "effects": None,
                                         "intent": None}),
]


def fee_effects(amount):
    return [charge_effect(amount="-" + amount, mechanism="FEE", type="FEE"),
            charge_effect(seat_id="class-7", amount=amount, mechanism="FEE", type="FEE",
                          account_type="fees")]


# Booked plans of every family under versions 4 and 5, as accept receives them.
ACCEPTED = []
for v in (4, 5):
    ACCEPTED += [
        ("store_purchase_v%d_amounts_booked" % v, store(v)),
        ("rent_payment_v%d_requested_amount_booked" % v,
         plan("rent_payment", v, [charge_effect(amount="-12.50")],
              {"obligationCorrelation": "rent-2026-10", "requestedPaymentAmount": "12.50"})),
        ("rent_payment_v%d_full_balance_derived" % v,
         plan("rent_payment", v, [charge_effect(amount="-800")],
              {"obligationCorrelation": "rent-2026-10"})),
        ("rent_payment_v%d_full_balance_derived_other_amount" % v,
         plan("rent_payment", v, [charge_effect(amount="-0.01")],
              {"obligationCorrelation": "rent-2026-10", "requestedPaymentAmount": None})),
        ("insurance_premium_v%d_amounts_booked" % v,
         plan("insurance_premium", v, [charge_effect(amount="-45.00")],
              {"entitlementId": "ent-3", "selectedObligationCorrelation": "obl-9"})),
        ("overdraft_fee_v%d_derived" % v,
         plan("overdraft_fee", v, fee_effects("35"), {"forceAuthority": False})),
        ("overdraft_fee_v%d_derived_other_balance" % v,
         plan("overdraft_fee", v, fee_effects("12.40"), {"forceAuthority": False})),
        ("overdraft_fee_v%d_forced_derived" % v,
         plan("overdraft_fee", v, fee_effects("35"), {"forceAuthority": True})),
        ("reversal_v%d_amounts_booked" % v, plan("reversal", v, [reversal_effect()], None)),
        ("effect_plan_v%d_amounts_booked" % v, plan("effect_plan", v, [
            charge_effect(amount="-25", type="DEBIT"),
            charge_effect(seat_id="seat-B", target_seat_id="seat-B", amount="25", type="CREDIT"),
        ])),
        ("internal_transfer_v%d_amount_booked" % v,
         {"family": "internal_transfer", "fingerprintVersion": v, "transfer": TRANSFER}),
    ]


def bad_effect_amount(a):
    return store(5, effects=[charge_effect(amount=a)])


REJECTIONS = [
    ("input_not_object", [1, 2]),
    ("unknown_top_level_key", dict(store(5), note="x")),
    ("family_unknown", dict(store(5), family="storePurchase")),
    ("family_missing", {k: v for k, v in store(5).items() if k != "family"}),
    ("version_missing", {k: v for k, v in store(5).items() if k != "fingerprintVersion"}),
    ("version_string", dict(store(5), fingerprintVersion="5")),
    ("version_float", dict(store(5), fingerprintVersion=5.0)),
    ("version_1", store(1)),
    ("version_2", store(2)),
    ("version_3", store(3)),
    ("version_3_with_bad_body", dict(store(3), effects=[])),
    ("version_0", store(0)),
    ("version_6", store(6)),
    ("version_negative", store(-5)),
    ("version_3_transfer", {"family": "internal_transfer", "fingerprintVersion": 3,
                            "transfer": TRANSFER}),
    ("amount_three_decimals", bad_effect_amount("1.005")),
    ("amount_json_number", bad_effect_amount(12.5)),
    ("amount_json_integer", bad_effect_amount(12)),
    ("amount_plus_sign", bad_effect_amount("+1.00")),
    ("amount_leading_zero", bad_effect_amount("01.00")),
    ("amount_exponent", bad_effect_amount("1e2")),
    ("amount_empty", bad_effect_amount("")),
    ("amount_whitespace", bad_effect_amount(" 1.00")),
    ("amount_trailing_dot", bad_effect_amount("1.")),
    ("amount_leading_dot", bad_effect_amount(".5")),
    ("amount_negative_zero", bad_effect_amount("-0.00")),
    ("amount_fourteen_digits", bad_effect_amount("12345678901234")),
    ("amount_fullwidth_digit", bad_effect_amount("\uff11.00")),
    ("amount_comma", bad_effect_amount("1,00")),
    ("cents_negative", store(5, effects=[charge_effect(compensation_amount_cents=-1)])),
    ("cents_too_large", store(5, effects=[charge_effect(compensation_amount_cents=MAX_SAFE + 1)])),
    ("cents_string", store(5, effects=[charge_effect(compensation_amount_cents="0")])),
    ("cents_fraction", store(5, effects=[charge_effect(compensation_amount_cents=1.5)])),
    ("cents_bool", store(5, effects=[charge_effect(compensation_amount_cents=False)])),
    ("effects_empty", store(5, effects=None) | {"effects": []}),
    ("effects_missing", {k: v for k, v in store(5).items() if k != "effects"}),
    ("effects_not_array", store(5) | {"effects": {"seat_id": "x"}}),
    ("effect_not_object", store(5) | {"effects": ["seat-A"]}),
    ("effect_unknown_key", store(5, effects=[charge_effect(seatId="seat-A")])),
    ("effect_empty_string", store(5, effects=[charge_effect(seat_id="")])),
    ("effect_text_too_long", store(5, effects=[charge_effect(policy_id="p" * 1025)])),
    ("effect_bool_text", store(5, effects=[charge_effect(mechanism=True)])),
    ("effect_number_text", store(5, effects=[charge_effect(original_transaction_id=17)])),
    ("store_intent_null", store(5) | {"intent": None}),
    ("store_intent_absent", {k: v for k, v in store(5).items() if k != "intent"}),
    ("store_intent_unknown_key", store(5, sku="tee")),
    ("store_intent_array", store(5) | {"intent": ["STORE_PURCHASE", POLICY, 2]}),
    ("store_quantity_zero", store(5, quantity=0)),
    ("store_quantity_string", store(5, quantity="2")),
    ("store_quantity_too_large", store(5, quantity=MAX_SAFE + 1)),
    ("store_policy_uppercase", store(5, policyUuid=POLICY.upper())),
    ("store_policy_not_uuid", store(5, policyUuid="policy-7")),
    ("rent_amount_three_decimals", plan("rent_payment", 5, [charge_effect()],
                                        {"obligationCorrelation": "r", "requestedPaymentAmount": "1.005"})),
    ("rent_amount_negative", plan("rent_payment", 5, [charge_effect()],
                                  {"obligationCorrelation": "r", "requestedPaymentAmount": "-1.00"})),
    ("rent_amount_number", plan("rent_payment", 5, [charge_effect()],
                                {"obligationCorrelation": "r", "requestedPaymentAmount": 12.5})),
    ("rent_correlation_missing", plan("rent_payment", 5, [charge_effect()],
                                      {"requestedPaymentAmount": "12.50"})),
    ("rent_with_store_intent", plan("rent_payment", 5, [charge_effect()],
                                    {"policyUuid": POLICY, "quantity": 2})),
    ("insurance_entitlement_null", plan("insurance_premium", 5, [charge_effect()],
                                        {"entitlementId": None})),
    ("fee_force_string", plan("overdraft_fee", 5, [charge_effect()], {"forceAuthority": "true"})),
    ("fee_force_missing", plan("overdraft_fee", 5, [charge_effect()], {})),
    ("reversal_with_intent", plan("reversal", 5, [reversal_effect()], {})),
    ("effect_plan_with_intent_tuple", plan("effect_plan", 5, [charge_effect()],
                                           ["STORE_PURCHASE", POLICY, 2])),
    ("effect_plan_with_transfer", plan("effect_plan", 5, [charge_effect()]) | {"transfer": TRANSFER}),
    ("transfer_missing", {"family": "internal_transfer", "fingerprintVersion": 5}),
    ("transfer_null", {"family": "internal_transfer", "fingerprintVersion": 5, "transfer": None}),
    ("transfer_with_effects", {"family": "internal_transfer", "fingerprintVersion": 5,
                               "transfer": TRANSFER, "effects": [charge_effect()]}),
    ("transfer_with_intent", {"family": "internal_transfer", "fingerprintVersion": 5,
                              "transfer": TRANSFER, "intent": {"forceAuthority": True}}),
    ("transfer_unknown_key", {"family": "internal_transfer", "fingerprintVersion": 5,
                              "transfer": dict(TRANSFER, seat_id="seat-A")}),
    ("transfer_amount_negative", {"family": "internal_transfer", "fingerprintVersion": 5,
                                  "transfer": dict(TRANSFER, amount="-25.00")}),
    ("transfer_amount_number", {"family": "internal_transfer", "fingerprintVersion": 5,
                                "transfer": dict(TRANSFER, amount=25)}),
]


def main():
    out = {"generator": "testdata/ledger_vectors.py", "cases": [], "rejections": [],
           "accepted": []}
    for name, inp in CASES:
        exp = expected(inp)
        assert "error" not in exp, (name, exp)
        out["cases"].append({"name": name, "input": inp, "expected": exp})
    for name, inp in REJECTIONS:
        exp = expected(inp)
        assert "error" in exp, (name, exp)
        out["rejections"].append({"name": name, "input": inp, "expected": exp})

    for name, inp in ACCEPTED:
        exp = expected(inp, accepted=True)
        assert "error" not in exp, (name, exp)
        out["accepted"].append({"name": name, "input": inp, "expected": exp})

    accepted = {c["name"]: c["expected"] for c in out["accepted"]}
    for v in (4, 5):
        # A derived amount is out of the fingerprint; a booked one is in it.
        assert accepted["overdraft_fee_v%d_derived" % v]["fingerprint"] == \
            accepted["overdraft_fee_v%d_derived_other_balance" % v]["fingerprint"]
        assert accepted["overdraft_fee_v%d_derived" % v]["fingerprint"] != \
            accepted["overdraft_fee_v%d_forced_derived" % v]["fingerprint"]
        assert accepted["rent_payment_v%d_full_balance_derived" % v]["fingerprint"] == \
            accepted["rent_payment_v%d_full_balance_derived_other_amount" % v]["fingerprint"]
        assert '"amount":null' in accepted["overdraft_fee_v%d_derived" % v]["canonical"]
        assert '"amount":"-12.50"' in accepted["rent_payment_v%d_requested_amount_booked" % v]["canonical"]
    # The families that fingerprint their amounts hash exactly what the serializer does.
    for name, inp in ACCEPTED:
        if not amounts_derived(inp["family"], inp.get("intent")) or inp["family"] == "internal_transfer":
            assert accepted[name] == expected(inp), name

    by_name = {c["name"]: c["expected"] for c in out["cases"]}
    # Sanity checks on the generated set itself.
    assert by_name["store_purchase_v5"]["fingerprint"] != by_name["store_purchase_v4_same_plan"]["fingerprint"]
    assert by_name["reversal_v5_with_subtype"]["canonical"] == by_name["reversal_v5_intent_absent"]["canonical"]
    assert "compensation_subtype" not in by_name["reversal_v4_subtype_not_covered"]["canonical"]
    assert by_name["internal_transfer_v4"]["canonical"] == by_name["internal_transfer_v5_same_bytes"]["canonical"]
    assert by_name["effect_plan_debit_credit_pair"]["fingerprint"] != by_name["effect_plan_debit_credit_pair_reordered"]["fingerprint"]
    assert '"amount":"12.50"' in by_name["store_purchase_v5"]["canonical"]
    assert by_name["effect_plan_minimal_effect_all_defaults"]["canonical"] == (
        '{"effects":[{"account_type":null,"actor_seat_id":null,"amount":null,'
        '"compensation_amount_cents":0,"compensation_origin_locator":null,'
        '"compensation_subtype":null,"correction_intent_locator":null,"mechanism":null,'
        '"original_transaction_id":null,"policy_id":null,"seat_id":null,'
        '"target_seat_id":null,"type":null}],"intent":null}')
    assert by_name["internal_transfer_v4"]["canonical"] == (
        '{"account_direction":"checking_to_savings","actor_seat_id":"seat-A",'
        '"amount":"25.00","original_transaction_id":null,"policy_id":"policy-7",'
        '"target_seat_id":"seat-B","type":"TRANSFER"}')

    json.dump(out, sys.stdout, ensure_ascii=False, indent=2, allow_nan=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

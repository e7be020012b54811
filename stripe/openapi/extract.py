#!/usr/bin/env python3
"""Writes checkout_sessions.json: the operations the Checkout Sessions provider and the
PaymentIntents retrieve call, cut from Stripe's published description.

    git -C <a clone of github.com/stripe/openapi> show \
        88c60c84c2a27840508261e7b06ac4b7a43e2c99:openapi/spec3.yaml > spec3.yaml
    python3 stripe/openapi/extract.py spec3.yaml > stripe/openapi/checkout_sessions.json

Each schema keeps only the properties named below (Stripe's own types, enums,
nullability and descriptions), and its `required` list is Stripe's, cut to them.
Needs PyYAML; the tests read only the JSON it writes.
"""

import json
import sys

import yaml

COMMIT = "88c60c84c2a27840508261e7b06ac4b7a43e2c99"

# A kept property: `None` keeps it whole; a dict keeps those of its properties (or of
# its items', for an array).
SESSION_FORM = {
    "cancel_url": None,
    "expires_at": None,
    "line_items": {
        "price_data": {"currency": None, "product_data": {"name": None}, "unit_amount": None},
        "quantity": None,
    },
    "metadata": None,
    "mode": None,
    "payment_intent_data": {"metadata": None},
    "success_url": None,
}
SESSION = {
    name: None
    for name in [
        "amount_total", "automatic_tax", "cancel_url", "currency", "expires_at", "id", "livemode",
        "metadata", "mode", "object", "payment_intent", "payment_method_types",
        "payment_status", "shipping_options", "status", "success_url", "url",
    ]
}
# The components the kept properties name, cut the same way (a shipping option's
# `shipping_rate` names the whole shipping rate tree: the stand-in answers none).
COMPONENTS = {
    "payment_pages_checkout_session_automatic_tax": None,
    "payment_pages_checkout_session_shipping_option": {"shipping_amount": None},
}
OPERATIONS = [
    ("/v1/checkout/sessions", "post"),
    ("/v1/checkout/sessions", "get"),
    ("/v1/checkout/sessions/{session}", "get"),
    ("/v1/checkout/sessions/{session}/expire", "post"),
    ("/v1/payment_intents/{intent}", "get"),
    ("/v1/payment_intents/{intent}/cancel", "post"),
]
# Query parameters kept (the path's are dropped: the stand-in routes on them).
QUERIES = {("/v1/checkout/sessions", "get"): ["limit", "payment_intent"]}


def cut(schema, keep):
    """`schema` with only the properties of `keep`, recursively."""
    if keep is None:
        return schema
    if schema.get("type") == "array":
        return {**schema, "items": cut(schema["items"], keep)}
    properties = {name: cut(schema["properties"][name], sub) for name, sub in keep.items()}
    out = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    out["properties"] = properties
    required = [name for name in schema.get("required", []) if name in keep]
    if required:
        out["required"] = required
    return out


def main(path):
    spec = yaml.safe_load(open(path))
    paths = {}
    for route, method in OPERATIONS:
        operation = json.loads(json.dumps(spec["paths"][route][method]))
        operation.pop("description", None)
        queries = QUERIES.get((route, method), [])
        operation["parameters"] = [
            p for p in operation.get("parameters", []) if p["in"] == "query" and p["name"] in queries
        ]
        form = operation.get("requestBody", {}).get("content", {})
        form = form.get("application/x-www-form-urlencoded")
        if route == "/v1/checkout/sessions" and method == "post":
            form["schema"] = cut(form["schema"], SESSION_FORM)
            form["encoding"] = {k: v for k, v in form["encoding"].items() if k in SESSION_FORM}
        paths.setdefault(route, {})[method] = operation
    schemas = {"checkout.session": cut(spec["components"]["schemas"]["checkout.session"], SESSION)}
    for name, keep in COMPONENTS.items():
        schemas[name] = cut(spec["components"]["schemas"][name], keep)
    document = {
        "openapi": "3.0.0",
        "info": {
            "title": "Stripe API: the Checkout Sessions subset command-journal-stripe uses",
            "version": spec["info"]["version"],
            "x-source": f"github.com/stripe/openapi {COMMIT} openapi/spec3.yaml",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
    json.dump(document, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])

"""The plant suite: defects planted in the provider stand-in, the service or the
journal, each of which the oracle must catch with its own reason (the key of the JSON
line it drives above zero). `bench/chaos/plants.sh` runs them all; RELIABILITY.md
keeps the table of planted defects caught.

Plants in the service or the journal exist only in a build with the test-only cargo
feature `plants` (`examples/checkout-service/service/plant.rs`), which reads
`CHAOS_PLANT`; each service process states the plant it applied, and a run whose
processes did not state the one asked for is a harness error.
"""

# name: (where it is planted, the oracle's key that must catch it, the defect)
PLANTS = {
    "overcharge": ("service", "ledgerMismatches",
                   "the service charges amount + 1 on every checkout"),
    "recovery_skips_ambiguous": ("journal", "unsettledAttempts",
                                 "recovery leaves ambiguous attempts alone"),
    "no_lease_proof": ("journal", "staleFenceWrites",
                       "commits no longer prove the lease they read"),
    "no_settle_window": ("journal", "absencesBeforeSettled",
                         "an absence is provable at the lease's end, without the settle window"),
    "lookup_found_as_pending": ("service", "finalRecovery",
                                "a lookup takes every charge it finds for a pending one"),
    "webhook_any_timestamp": ("service", "forgedEventsAccepted",
                              "the webhook endpoint verifies a signature at its own "
                              "timestamp: a stale capture replayed is taken"),
    "post_key_window_60s": ("provider", "doubleCharges",
                            "the provider honours a POST key for 60 s only"),
    "forget_early": ("provider", "doubleCharges",
                     "the provider forgets every key 3 s after its first request"),
}


def in_service(name):
    """Whether the plant is the service's or the journal's (read from `CHAOS_PLANT`
    by the service's plants build), rather than the stand-in's."""
    return name is not None and PLANTS[name][0] != "provider"


# Plants only Stripe's events can show: a run planted with one runs with `--events`.
EVENT_PLANTS = ("webhook_any_timestamp",)


def caught(name, failed):
    """Whether a run planted with `name` failed with the plant's own reason."""
    return PLANTS[name][1] in failed

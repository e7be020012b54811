"""The settlement figure: the time from an ambiguous send to its settlement.

An ambiguous send is an audit event `provider_send_ambiguous`,
`provider_send_replayed_unknown` or `provider_send_indeterminate` (the service did not
learn what the provider did: a lost or slow answer, a stored 500); its settlement is
the command's first later event that knows the outcome: `provider_send_succeeded` or
`provider_send_declined` (a re-send's replayed answer), or
`provider_send_reconciled_succeeded` or `provider_send_reconciled_declined` (a lookup's
evidence, or an event's), or `provider_send_reconciled_absent` (proven absent). Both are timed by Firestore's commit time (`createTime`, this
machine's clock); a settlement committed after the soak's clock jump has the jumped
simulated time added (`jumps`: `[(real time, seconds added from then on)]`), so that
an ambiguity left for the late phase or the final recovery counts the hours it waited.
"""

from . import report
from .oracle import _seconds_of

AMBIGUOUS = ("provider_send_ambiguous", "provider_send_replayed_unknown",
             "provider_send_indeterminate")
SETTLED = ("provider_send_succeeded", "provider_send_declined",
           "provider_send_reconciled_succeeded", "provider_send_reconciled_declined",
           "provider_send_reconciled_absent")


def _simulated(at, jumps):
    return at + sum(seconds for since, seconds in jumps if at >= since)


def settlement_times(events, jumps):
    """`(seconds from each ambiguous send to its settlement, ambiguous sends never
    settled)` over `events` (`oracle.audit_events`' rows)."""
    by_command = {}
    for fields, created in events:
        kind = fields.get("eventType", {}).get("stringValue")
        if kind in AMBIGUOUS or kind in SETTLED:
            command = fields["commandKeyHash"]["stringValue"]
            by_command.setdefault(command, []).append((_seconds_of(created), kind))
    times, unsettled = [], 0
    for timeline in by_command.values():
        timeline.sort()
        open_since = None
        for at, kind in timeline:
            if kind in AMBIGUOUS:
                if open_since is None:
                    open_since = at
            elif open_since is not None:
                times.append(_simulated(at, jumps) - _simulated(open_since, jumps))
                open_since = None
        if open_since is not None:
            unsettled += 1
    return times, unsettled


def figure(events, jumps):
    """The report's `settlement`: how many, p50 and p99 in seconds, and the unsettled."""
    times, unsettled = settlement_times(events, jumps)
    return {"ambiguousSettled": len(times),
            "p50Seconds": round(report.percentile(times, 0.5), 1) if times else None,
            "p99Seconds": round(report.percentile(times, 0.99), 1) if times else None,
            "neverSettled": unsettled}

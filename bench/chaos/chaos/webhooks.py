"""The soak on Stripe (`--stripe`: the service runs with `PROVIDER_NAME=stripe` against
the stand-in's PaymentIntents API, `stripe_api.py`, and stored 500s roll forward:
lookups alone) and its events (`--events`, the same and more: the stand-in's events
delivered, signed and under their faults, `events.py`, to the balancer's
`POST /webhooks/stripe`, listed at `GET /v1/events`), and what the oracle requires of
them.

The endpoint's secret is drawn per run (a `whsec_` canary the log scan looks for) and
given to every service process as `STRIPE_WEBHOOK_SECRET`. Deliveries go through the
balancer, as Stripe's go to one URL: a 502 or 503 (an instance killed, none up) or no
answer is retried, as Stripe retries. Events delayed `late` are held until the soak's
clock jump (`LATE_JUMP`, 18 h 5 min of simulated time) and delivered then, freshly
signed; the other delays are seconds of real time. The stand-in's roll-forwards are
completed by `tick`, once a second.

The oracle's counts (zero for the run to hold):

- `forgedEventsAccepted`: forged deliveries (another secret's signature, or a stale
  timestamp) answered anything but 400;
- `genuineEventsRefused`: genuine, freshly signed deliveries answered 400;
- `forgedEventsRecorded`: journal results naming an intent only a forgery named (a
  forgery that wrote), from the journal's stored envelopes;
- `eventsUndelivered`: genuine deliveries still under way when the run ends.
"""

import asyncio

from .events import FORGED_PREFIX, Delivery, DeliveryFaults, EventLog
from .httpio import call
from .stripe_api import StripeApi

PATH = "/webhooks/stripe"
FINDINGS = ("forgedEventsAccepted", "genuineEventsRefused", "forgedEventsRecorded",
            "eventsUndelivered")


def fault_mix(no_faults):
    """The delivery's faults, per event."""
    if no_faults:
        return DeliveryFaults()
    return DeliveryFaults(drop=0.05, duplicate=0.1, delay=0.05, delay_max=20.0, late=0.02,
                          reorder=0.1, forge_signature=0.03, forge_stale=0.03)


class Webhooks:
    """The run's event delivery, wired to the stand-in and the balancer."""

    def __init__(self, standin, rng, no_faults, counts, search_lag=60, deliver=True):
        self.secret = "whsec_chaos" + "".join(rng.choice("0123456789abcdef") for _ in range(24))
        self.secret_key = "sk_test_chaos" + "".join(rng.choice("0123456789abcdef")
                                                    for _ in range(24))
        self.log = EventLog(rng)
        standin.with_stripe(StripeApi(standin, self.secret_key, self.log, search_lag))
        self.deliver = deliver
        self.port = None
        self.delivery = Delivery(rng, fault_mix(no_faults), [self.secret], standin.unix,
                                 self._send, standin.counts)
        self.standin = standin
        if deliver:
            standin.with_events(self.log, self.delivery)
        self.counts = counts
        self.running = True
        self.ticker = None

    def env(self):
        """What every service process is given."""
        env = {"PROVIDER_NAME": "stripe", "STRIPE_SECRET_KEY": self.secret_key}
        if self.deliver:
            env["STRIPE_WEBHOOK_SECRET"] = self.secret
        return env

    def start(self, port):
        """Delivers to the balancer at `port`; completes roll-forwards once a second."""
        self.port = port
        self.ticker = asyncio.ensure_future(self._tick())

    async def _tick(self):
        while self.running:
            self.standin.tick()
            await asyncio.sleep(1.0)

    async def _send(self, body, header):
        try:
            answer = await call(self.port, "POST", PATH, body=body,
                                headers={"Stripe-Signature": header}, timeout=30.0)
        except (ConnectionError, OSError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            return None
        return answer.status

    def jumped(self):
        """After the clock's jump: what is due rolls forward, the late events go."""
        self.standin.tick()
        self.delivery.flush_late()

    async def stop(self, timeout):
        """Waits up to `timeout` s for the deliveries under way; stops the ticker."""
        self.standin.tick()
        drained = await self.delivery.drain(timeout)
        self.running = False
        if self.ticker is not None:
            await self.ticker
        return drained

    def findings(self, journal):
        """`(counts by FINDINGS key, examples)`; `journal` as `oracle.journal_state`
        reads it (each command's stored envelope, if any). None without deliveries."""
        if not self.deliver:
            return {}, []
        d = self.delivery
        recorded = [h for h, state in journal.items()
                    if FORGED_PREFIX in str(state)]
        counts = {
            "forgedEventsAccepted": len(d.forged_accepted),
            "genuineEventsRefused": len(d.refused_genuine),
            "forgedEventsRecorded": len(recorded),
            "eventsUndelivered": len(d.tasks) + len(d.late),
        }
        examples = ([f"forged event ({kind}) answered {status}"
                     for kind, status in d.forged_accepted[:10]]
                    + [f"genuine event answered 400 (#{i})"
                       for i, _ in enumerate(d.refused_genuine[:10])]
                    + [f"command {h[:12]}… stores a forged intent" for h in recorded[:10]])
        return counts, examples

    def summary(self):
        """What was made and delivered, for report.json."""
        d = self.delivery
        return {"made": len(self.log.events), "delivered": sum(d.delivered.values()),
                "forgedSent": d.forged_sent,
                "rolledForward": len(self.standin.rolled_forward),
                "rollForwardsPending": len(self.standin.roll_forward_due)}

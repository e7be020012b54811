"""Targeted injections: the dangerous situations each safety rule exists for, made to
happen in every run rather than left to chance (bench/chaos/README.md, "Targeted
injections"). They run at the start of the main phase, beside the clients, on two
instances of their own outside the balancer (`twin-base`, clock offset 0, and
`twin-ahead`, +90 s), each with its own Firestore path and provider front without
random faults; each has a checkout of its own whose client never comes back.

| injection | what happens | the rule it exercises |
|---|---|---|
| `lost_answer` | twin-base's POST reaches the provider, which charges; the answer is cut | recovery settles the charge (`recoverySettledInFaultedPhase`) |
| `dropped_send` | twin-base's POST is cut before the provider sees it | a lookup inside the settle window is no absence (`lookupsInSettleWindow`) |
| `held_send` | twin-base's POST is held; meanwhile `command-journal acquire`, on a clock 90 s ahead, takes the lease over (fence 2); then the POST is cut | the stale holder's record is refused (`staleHolderRefused`; `staleFenceWrites` stays 0) |
| `resend_after_window` | twin-base's POST charges and its answer is cut; the provider's clock moves 61 s on; the client retries on twin-ahead, which takes the lease over and re-sends the key | a re-send after the key window (`resendsAfterKeyWindow`) |
| `recovery` | then a recovery run on a clock 90 s ahead, straight to the emulator and a clean provider front | it settles `lost_answer`'s charge and looks `dropped_send` up inside its settle window |

Each checks that its own setup fired (the POST arrived and was cut, the takeover took
fence 2, the re-send reached the provider past the window); a setup that did not is a
harness error. What the journal then did is the oracle's to judge. Their clients send
again until their POST arrives (`ARRIVAL_LIMIT_S`), and the twins wait for Firestore
as long as a lease allows: a loaded emulator answers the first requests of a run
slowly.
"""

import asyncio
import datetime
import json
import time
import uuid

from .identity import identity_input
from .standin import POST_KEY_WINDOW, declines

TAKEOVER_AHEAD_S = 90
TWIN_AHEAD_MS = 90_000
RECOVERY_AHEAD_MS = 90_000
# How long an injection's client keeps sending until its POST reaches the front: past
# a lease an early request may have taken (60 s), with time to spare.
ARRIVAL_LIMIT_S = 150


def _at(offset_s):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Injections:
    """The targeted injections of one run, over `soak`'s twins and `population`."""

    def __init__(self, soak, population, rng):
        self.soak = soak
        self.population = population
        self.rng = rng
        self.errors = []
        self.fired = []

    def _checkout(self):
        """A checkout of its own, charged (never declined, nor by an overcharge), whose
        client never comes back."""
        amount = self.rng.randrange(100, 100_000)
        while declines(amount) or declines(amount + 1):
            amount += 1
        c = self.population.new_checkout(self.rng, amount)
        c.gone = True
        return c

    def _fail(self, name, why):
        self.errors.append(f"targeted injection {name}: {why}")

    async def _until_arrived(self, c, port, target):
        """Sends `c` to the twin at `port` until its POST reaches the front (the
        target's `arrived`), as a client retries: a loaded emulator may answer the
        first requests 503 before any POST, and a lease such a request took answers
        409 until it expires. The last status."""
        deadline = time.monotonic() + ARRIVAL_LIMIT_S
        while True:
            status = await self.population.send_once(c, port)
            if target.arrived.is_set() or time.monotonic() >= deadline:
                return status
            await asyncio.sleep(2.0)

    async def run(self):
        """Every injection, then the recovery run; harness errors in `errors`."""
        base = self.soak.twins["base"]
        ahead = self.soak.twins["ahead"]
        await asyncio.gather(self.lost_answer(base), self.dropped_send(base),
                             self.held_send(base), self.resend_after_window(base, ahead))
        code, summary = await self.soak.run_job("targeted", 0, 1, RECOVERY_AHEAD_MS, None,
                                                final=False, clean=True)
        if summary is None:
            self._fail("recovery", f"the run reported nothing (exit {code})")
        else:
            self.fired.append("recovery")

    async def lost_answer(self, base):
        c = self._checkout()
        target = base.front.target(c.keys[0], "lose_answer")
        await self._until_arrived(c, base.port, target)
        if not target.fired:
            return self._fail("lost_answer", "the POST never reached the provider")
        self.fired.append("lost_answer")

    async def dropped_send(self, base):
        c = self._checkout()
        target = base.front.target(c.keys[0], "drop")
        await self._until_arrived(c, base.port, target)
        if not target.fired:
            return self._fail("dropped_send", "the POST never came")
        self.fired.append("dropped_send")

    async def held_send(self, base):
        c = self._checkout()
        target = base.front.target(c.keys[0], "hold")
        answer = asyncio.ensure_future(self._until_arrived(c, base.port, target))
        try:
            await asyncio.wait_for(target.arrived.wait(), ARRIVAL_LIMIT_S)
            took = await self._take_over(c)
        except asyncio.TimeoutError:
            took = "the POST never came"
        finally:
            target.release.set()
        await answer
        if took is not True:
            return self._fail("held_send", took)
        self.fired.append("held_send")

    async def _take_over(self, c):
        """`command-journal acquire` on a clock `TAKEOVER_AHEAD_S` ahead, as another
        holder: True once it took the lease over, else why not."""
        request = dict(identity_input(c.uid, c.command_id, c.payload))
        request.pop("operation")
        request["leaseId"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        s = self.soak
        code, out = await s.cli_run(["acquire", "--at", _at(TAKEOVER_AHEAD_S)],
                                    json.dumps(request).encode())
        try:
            lease = json.loads(out)
        except ValueError:
            lease = {}
        if code != 0 or lease.get("outcome") != "lease_acquired" or lease.get("fenceEpoch", 0) < 2:
            return f"the takeover did not take the lease over (exit {code}, {lease.get('outcome')})"
        return True

    async def resend_after_window(self, base, ahead):
        c = self._checkout()
        target = base.front.target(c.keys[0], "lose_answer")
        await self._until_arrived(c, base.port, target)
        if not target.fired:
            return self._fail("resend_after_window", "the first POST never reached the provider")
        self.soak.standin.advance(POST_KEY_WINDOW + 1)
        deadline = time.monotonic() + ARRIVAL_LIMIT_S
        while (c.keys[0] not in self.soak.standin.resent_after_window
               and time.monotonic() < deadline):
            status = await self.population.send_once(c, ahead.port)
            if status in (200, 402):
                break
            await asyncio.sleep(2.0)
        if c.keys[0] not in self.soak.standin.resent_after_window:
            return self._fail("resend_after_window",
                              "no re-send reached the provider after the key window")
        self.fired.append("resend_after_window")

"""The fault schedule: seeded, drawn every tick while the main phase runs.

- Firestore, per instance proxy (rates per second): stalls of 0.2 to 5 s, resets,
  lost answers, partitions of 5 to 15 s; in transaction mode, lost rollbacks (the
  next Rollback request cut before it reaches the emulator, and every other in the
  `LOST_ROLLBACK_WINDOWS` seconds after it).
- The provider's network, per instance: partitions of 3 to 10 s (its per-request
  faults are `proxies.FrontFaults`, the provider's own `standin.Faults`).
- Instances: `kills` SIGKILLs spread over the checkouts (one every `count / kills`
  checkouts started, at a random instance that is up, never the last one up), half
  of them mid-POST (armed on the instance's provider front: killed 0 to 200 ms after
  its next POST reached the provider; at once if none comes within 5 s). A killed
  instance restarts 0.3 to 2 s later, with a clock offset drawn afresh.
- Clocks: each incarnation's offset is drawn from `offsets` (milliseconds); the
  incarnation states the offset it applied, which the soak compares with the draw.

Every fault is drawn in `counts` (a `tally.FaultLog`) when scheduled and fired only
from its effect: a kill when the process died of the SIGKILL, a mid-POST kill when a
POST reached the provider first (else it falls back to a plain kill, counted as such),
a recovery run's kill when it ended the run.
"""

import asyncio

TICK = 0.25
# After a lost rollback, the seconds during which every other Rollback through the
# proxy is lost too: none (the driver's retry gets through), or longer than the
# driver's 1 s of retries (the transaction goes to the reaper).
LOST_ROLLBACK_WINDOWS = (0.0, 1.5)


class Rates:
    """Per-second rates of the scheduled faults, for one proxy."""

    def __init__(self, fs_stall=0.0, fs_reset=0.0, fs_lost_answer=0.0, fs_partition=0.0,
                 provider_partition=0.0, fs_lost_rollback=0.0):
        self.fs_stall = fs_stall
        self.fs_reset = fs_reset
        self.fs_lost_answer = fs_lost_answer
        self.fs_partition = fs_partition
        self.provider_partition = provider_partition
        self.fs_lost_rollback = fs_lost_rollback


class Chaos:
    """Drives the faults over `instances` and the job's proxies."""

    def __init__(self, rng, rates, instances, counts, offsets, kills, count):
        self.rng = rng
        self.rates = rates
        self.instances = instances
        self.counts = counts
        self.offsets = offsets
        self.kill_every = max(1, count // kills) if kills else None
        self.next_kill = self.kill_every
        self.restarts = set()
        self.errors = []
        self.running = True

    def offset(self):
        return self.rng.choice(self.offsets)

    async def network(self, proxies, fronts):
        """The scheduled network faults, until `stop`."""
        r, rng = self.rates, self.rng
        while self.running:
            await asyncio.sleep(TICK)
            for proxy in proxies:
                if rng.random() < r.fs_stall * TICK:
                    seconds = rng.uniform(0.2, 5.0)
                    # Drawn only on a proxy something talks through (a killed
                    # instance's has no connection left), so that it can fire.
                    if proxy.conns:
                        proxy.stall(seconds)
                if rng.random() < r.fs_reset * TICK:
                    proxy.reset()
                if rng.random() < r.fs_lost_answer * TICK:
                    proxy.drop_answer()
                if rng.random() < r.fs_partition * TICK:
                    proxy.partition(rng.uniform(5.0, 15.0))
                # Drawn only where it can fire (transaction mode), so that the other
                # draws of a seed stay as they were.
                if r.fs_lost_rollback and rng.random() < r.fs_lost_rollback * TICK:
                    proxy.lose_rollbacks(rng.choice(LOST_ROLLBACK_WINDOWS))
            for front in fronts:
                if rng.random() < r.provider_partition * TICK:
                    front.partition(rng.uniform(3.0, 10.0))

    def started(self, n):
        """Called as each checkout starts: a kill is due every `kill_every`."""
        if self.kill_every is None or n < self.next_kill:
            return
        self.next_kill += self.kill_every
        up = [i for i in self.instances if i.up]
        if len(up) < 2:
            self.counts.fire("kill_skipped_last_instance")
            return
        victim = self.rng.choice(up)
        if self.rng.random() < 0.5:
            self.counts.draw("instance_kill")
            self._kill(victim, "instance_kill")
        else:
            self.counts.draw("instance_kill_mid_post")
            victim.front.kill_armed = lambda v=victim: self._kill(v, "instance_kill_mid_post")

            def fallback(v=victim):
                if v.front.kill_armed is not None:
                    v.front.kill_armed = None
                    self._kill(v, "instance_kill_mid_post_fallback")
            asyncio.get_running_loop().call_later(5.0, fallback)

    def _kill(self, instance, kind):
        if not instance.up:
            return
        instance.kill()
        task = asyncio.ensure_future(self._restart(instance, kind))
        self.restarts.add(task)
        task.add_done_callback(self.restarts.discard)

    async def _restart(self, instance, kind):
        await instance.wait_dead()
        if instance.killed():
            self.counts.fire(kind)
        await asyncio.sleep(self.rng.uniform(0.3, 2.0))
        if not self.running:
            return
        offset = self.offset()
        for _ in range(5):
            try:
                await instance.start(offset)
                self.counts.fire("instance_restart")
                return
            except RuntimeError as e:
                await instance.wait_dead()
                last = e
                await asyncio.sleep(1.0)
        self.errors.append(str(last))

    async def stop(self):
        self.running = False
        for instance in self.instances:
            instance.front.kill_armed = None
        while self.restarts:
            await asyncio.gather(*list(self.restarts), return_exceptions=True)


class RecoverySchedule:
    """`checkout-service recover` every `every` seconds while the main phase runs:
    as one task or as two (CLOUD_RUN_TASK_INDEX 0 and 1 of CLOUD_RUN_TASK_COUNT 2),
    on a clock offset drawn like an instance's, through the job's own Firestore proxy
    and provider front; sometimes SIGKILLed mid-run (a task timeout, a preemption)."""

    def __init__(self, rng, every, run_job, counts, offsets, kills=0.15):
        self.rng = rng
        self.kills = kills
        self.every = every
        self.run_job = run_job
        self.counts = counts
        self.offsets = offsets
        self.running = True
        self.runs = 0

    async def loop(self):
        while self.running:
            slept = 0.0
            while self.running and slept < self.every:
                await asyncio.sleep(0.5)
                slept += 0.5
            if not self.running:
                return
            tasks = 2 if self.rng.random() < 0.5 else 1
            offset = self.rng.choice(self.offsets)
            kill_after = self.rng.uniform(0.2, 3.0) if self.rng.random() < self.kills else None
            self.counts.fire("recovery_run")
            if tasks == 2:
                self.counts.fire("recovery_run_two_tasks")
            if kill_after is not None:
                self.counts.draw("recovery_killed")
            self.runs += 1
            ran = await asyncio.gather(*(
                self.run_job(self.runs, index, tasks, offset, kill_after, final=False)
                for index in range(tasks)))
            if kill_after is not None and any(code is None for code, _ in ran):
                self.counts.fire("recovery_killed")

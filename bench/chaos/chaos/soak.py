"""The soak: the whole system under faults, held to the provider's ledger.

Phases (bench/chaos/README.md has the whole story):

1. main: `--checkouts` checkouts, `--concurrency` at a time, through the balancer to
   `--instances` service instances, under the fault mix, with the recovery job every
   `--recover-every` seconds; clients stop `--drain` seconds after the last checkout
   started; then every instance is stopped.
2. late: the fleet restarts `LATE_JUMP` seconds later in simulated time (every
   instance's clock and the provider's moved by it: past every attempt's send
   cutoff, within the key's retention), and some clients come back: those that had
   no final answer (with probability `--late-return`) and a few that had their 200.
3. final: a recovery run later still (past every lease and settle window), then the
   oracle (`oracle.py`).

Beside the clients, the main phase runs the targeted injections (`targets.py`), so
that every situation the oracle's coverage requires happens in every run. Every fault
is counted by its effect (`tally.FaultLog`); every service process states the clock
offset it applied (and the plant it planted), compared with the draw. The exit code:
0 the oracle holds, 1 it fails, 3 a harness error (a fault or injection that did not
fire as drawn, an answer the clients never send for, ...), whatever the oracle said.
"""

import argparse
import asyncio
import datetime
import json
import os
import random
import signal
import sys
import tempfile
import time

from . import report
from .deployment import FINAL_EXTRA, LATE_JUMP, LEASE, OFFSETS_MS, PROJECT, RETENTION, SETTLE
from .clients import Behaviour, Population
from .faults import Chaos, Rates, RecoverySchedule
from .fleet import Emulator, Instance, kill_children, run_process
from .identity import identity_input
from .plants import EVENT_PLANTS, PLANTS, in_service
from .proxies import Balancer, FrontFaults, ProviderFront, TcpFaultProxy
from .standin import Faults, StandIn
from .tally import FaultLog, Tally
from .targets import TWIN_AHEAD_MS, Injections
from .webhooks import Webhooks

EXIT_HOLDS, EXIT_FAILS, EXIT_HARNESS = 0, 1, 3
# Lost rollbacks per second per Firestore proxy, in transaction mode.
LOST_ROLLBACKS = 0.05


# The defaults, the short form's (`--short`, .ci/run's unplanted run: about 90 s on 2
# cores with the debug binaries) and the quick form's (`--quick`, .ci/run's plant
# suite: the targeted injections and a handful of checkouts, about 35 s); an option
# given on the command line wins over all of them.
DEFAULTS = {"seed": 1, "checkouts": 400, "concurrency": 48, "drain": 75.0, "recover_every": 30.0,
            "late_seconds": 30.0, "kills": None}
SHORT = {"seed": 7, "checkouts": 200, "concurrency": 64, "drain": 50.0,
         "recover_every": 15.0, "late_seconds": 12.0, "kills": None}
QUICK = {"seed": 7, "checkouts": 24, "concurrency": 24, "drain": 10.0,
         "recover_every": 15.0, "late_seconds": 5.0, "kills": 2}


def parse(argv):
    p = argparse.ArgumentParser(prog="bench/chaos/run.sh", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    form = p.add_mutually_exclusive_group()
    form.add_argument("--short", action="store_true",
                      help="the short form: " + ", ".join(f"{k} {v}" for k, v in SHORT.items()))
    form.add_argument("--quick", action="store_true",
                      help="the quick form (the plant suite's): "
                      + ", ".join(f"{k} {v}" for k, v in QUICK.items()))
    p.add_argument("--seed", type=int)
    p.add_argument("--checkouts", type=int)
    p.add_argument("--instances", type=int, default=3)
    p.add_argument("--concurrency", type=int,
                   help="checkouts in flight at once (closed loop)")
    p.add_argument("--kills", type=int, default=None,
                   help="instance kills over the run (default: checkouts / 80, at least 6)")
    p.add_argument("--drain", type=float,
                   help="seconds the clients go on after the last checkout started")
    p.add_argument("--recover-every", type=float, help="seconds between recovery runs")
    p.add_argument("--late-return", type=float, default=0.5)
    p.add_argument("--late-seconds", type=float)
    p.add_argument("--journal-concurrency", choices=("preconditions", "transaction"),
                   default="preconditions",
                   help="the journal's concurrency mode, given to every service process "
                   "as JOURNAL_CONCURRENCY; transaction adds lost rollbacks to the mix")
    p.add_argument("--no-faults", action="store_true",
                   help="the same workload with no fault at all (the throughput baseline)")
    p.add_argument("--plant", choices=sorted(PLANTS), default=None,
                   help="a planted defect the oracle must catch with its own reason "
                   "(chaos/plants.py); the service's and the journal's need the debug "
                   "binaries of `cargo test --all-features` (feature `plants`)")
    p.add_argument("--events", action="store_true",
                   help="the stand-in sends Stripe's events, signed, to /webhooks/stripe "
                   "under their faults, and rolls stored 500s forward; the service then "
                   "runs on Stripe (PROVIDER_NAME=stripe) against the stand-in's "
                   "PaymentIntents API (chaos/webhooks.py, chaos/stripe_api.py)")
    p.add_argument("--stripe", action="store_true",
                   help="as --events without any event: the service on Stripe, stored 500s "
                   "rolled forward, settled by lookups alone")
    p.add_argument("--search-lag", type=int, default=60,
                   help="with --stripe or --events: seconds before a new intent shows in "
                   "search")
    p.add_argument("--bin", default="target/release",
                   help="the directory of the command-journal and checkout-service binaries")
    p.add_argument("--run-dir", default=None)
    args = p.parse_args(argv)
    for name, value in (SHORT if args.short else QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.plant in EVENT_PLANTS:
        args.events = True
    if args.kills is None:
        args.kills = max(6, args.checkouts // 80)
    if args.no_faults:
        args.kills = 0
    if args.instances < 1 or args.checkouts < 1 or args.concurrency < 1:
        p.error("--instances, --checkouts and --concurrency must be positive")
    return args


def rfc3339(offset_s):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), t.timestamp()


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        # Eight streams as before the injections (a seed draws the same workload),
        # then the injections' own.
        seeds = [self.rng.getrandbits(64) for _ in range(9)]
        self.rngs = [random.Random(s) for s in seeds]
        self.run_dir = args.run_dir or tempfile.mkdtemp(prefix="chaos-")
        self.logs = os.path.join(self.run_dir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.cli = os.path.join(args.bin, "command-journal")
        self.service = os.path.join(args.bin, "checkout-service")
        self.faults = FaultLog()
        self.jobs = []
        self.twins = {}
        self.final_job = None
        self.account = "acct_chaos" + "".join(self.rngs[0].choice("0123456789abcdef")
                                              for _ in range(16))
        self.errors = []
        self.statements = []
        self.instances = []
        self.emulator = None
        self.transactions = args.journal_concurrency == "transaction"
        self.t0 = time.monotonic()
        self.webhooks = None
        self.jumps = []

    # -- set-up ----------------------------------------------------------------

    def base_env(self):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GOOGLE_CLOUD_PROJECT": PROJECT,
            "JOURNAL_ENVIRONMENT": "emulator",
            "FIREBASE_AUTH_EMULATOR_HOST": "127.0.0.1:9099",
            "PROVIDER_NAME": "standin",
            "PROVIDER_ACCOUNT": self.account,
            "PROVIDER_MODE": "test",
            "PROVIDER_API_VERSION": "2026-01-01",
            "PROVIDER_LOOKUP": "key_store",
            "PROVIDER_KEY_RETENTION_SECONDS": str(RETENTION),
            "PROVIDER_LOOKUP_SETTLE_SECONDS": str(SETTLE),
            "PROVIDER_TIMEOUT_MS": "5000",
            "FIRESTORE_DEADLINE_MS": "8000",
            "JOURNAL_CONCURRENCY": self.args.journal_concurrency,
            **({"CHAOS_PLANT": self.args.plant} if in_service(self.args.plant) else {}),
            **(self.webhooks.env() if self.webhooks is not None else {}),
        }
        if self.webhooks is not None:
            # Stripe's client binds its own plan terms (24 h keys, search, 300 s).
            for name in ("PROVIDER_LOOKUP", "PROVIDER_KEY_RETENTION_SECONDS",
                         "PROVIDER_LOOKUP_SETTLE_SECONDS"):
                del env[name]
        return env

    async def cli_run(self, args, stdin):
        """`command-journal ARGS --project P --emulator-host H` with `stdin`, straight
        to the emulator, its output kept by no log: `(exit code, stdout)`."""
        flags = ["--project", PROJECT, "--emulator-host", self.emulator.host]
        return await run_process([self.cli, *args, *flags], {"PATH": os.environ.get("PATH", "")},
                                 None, stdin=stdin, timeout=60)

    def fault_mix(self):
        if self.args.no_faults:
            return Faults(), FrontFaults(), Rates(), [0]
        return (
            Faults(stored_5xx=0.02, stored_5xx_charged=0.5, rate_limited=0.01,
                   lookup_503=0.05, lookup_lag=0.5, lookup_lag_max=15.0,
                   latency=0.1, latency_max=1.0),
            FrontFaults(drop_request=0.01, request_delay=0.05, lose_answer=0.02,
                        slow_answer=0.03, slow_answer_max=8.0),
            Rates(fs_stall=0.03, fs_reset=0.01, fs_lost_answer=0.015, fs_partition=0.003,
                  provider_partition=0.003,
                  fs_lost_rollback=LOST_ROLLBACKS if self.transactions else 0.0),
            OFFSETS_MS,
        )

    async def start(self):
        provider_faults, self.front_faults, self.rates, self.offsets = self.fault_mix()
        stripe = self.args.events or self.args.stripe
        if stripe and not self.args.no_faults:
            # Stripe completes a stored 500's mutation minutes later, or past the
            # settle window (as in the incident of docs/flows/stored-500.md).
            provider_faults.roll_forward = 0.5
            provider_faults.roll_forward_after = (30.0, 600.0)
            # Stripe's listing reads after write; its search lags (`--search-lag`).
            provider_faults.lookup_lag = 0.0
        self.standin = StandIn(self.rngs[1], provider_faults, RETENTION, self.args.plant)
        if stripe:
            self.webhooks = Webhooks(self.standin, random.Random(f"events-{self.args.seed}"),
                                     self.args.no_faults, self.faults, self.args.search_lag,
                                     deliver=self.args.events)
        self.emulator = await Emulator(self.cli, self.logs).start()
        env = self.base_env()
        for slot in range(self.args.instances):
            proxy = await TcpFaultProxy(f"fs{slot}", self.emulator.port, self.faults).start()
            front = await ProviderFront(f"provider{slot}", self.standin, self.rngs[2],
                                        self.front_faults, self.faults).start()
            self.instances.append(Instance(slot, self.service, env, proxy, front, self.logs))
        self.job_proxy = await TcpFaultProxy("fs-job", self.emulator.port, self.faults).start()
        self.job_front = await ProviderFront("provider-job", self.standin, self.rngs[2],
                                             self.front_faults, self.faults).start()
        self.clean_front = await ProviderFront("provider-final", self.standin, self.rngs[2],
                                               FrontFaults(), self.faults).start()
        self.balancer = await Balancer(self.instances, self.faults).start()
        if self.webhooks is not None:
            self.webhooks.start(self.balancer.port)
        starts = [i.start(self.draw_offset()) for i in self.instances]
        if not self.args.no_faults:
            starts += [self.start_twin("base", 0), self.start_twin("ahead", TWIN_AHEAD_MS)]
        await asyncio.gather(*starts)

    async def start_twin(self, name, offset_ms):
        """One of the targeted injections' instances, outside the balancer, with its
        own fault-free Firestore path and provider front. Both wait for Firestore as
        long as a lease allows, twin-base for the provider too (the injections hold
        its POSTs)."""
        proxy = await TcpFaultProxy(f"fs-twin-{name}", self.emulator.port, self.faults).start()
        front = await ProviderFront(f"provider-twin-{name}", self.standin, self.rngs[2],
                                    FrontFaults(), self.faults).start()
        env = dict(self.base_env(), FIRESTORE_DEADLINE_MS="60000",
                   PROVIDER_TIMEOUT_MS="30000" if name == "base" else "5000")
        twin = Instance(f"twin-{name}", self.service, env, proxy, front, self.logs)
        self.twins[name] = twin
        await twin.start(offset_ms)

    def draw_offset(self):
        return self.rngs[3].choice(self.offsets)

    # -- the recovery job -------------------------------------------------------

    async def run_job(self, run, index, tasks, offset_ms, kill_after, final, clean=False,
                      jump_ms=0):
        """One recovery task on a clock `offset_ms` (plus a phase's `jump_ms`) ahead,
        through the job's fault proxy and front, or straight to the emulator and a
        clean front when `final` or `clean`: `(exit code or None when killed, its
        summary or None)`. Its lines are kept in `jobs`: the offset it stated, the
        outcome of each command it handled, its summary."""
        direct = final or clean
        drawn = offset_ms + jump_ms
        env = self.base_env()
        env.update({
            "FIRESTORE_EMULATOR_HOST": self.emulator.host if direct
            else f"127.0.0.1:{self.job_proxy.port}",
            "PROVIDER_URL": f"http://127.0.0.1:{(self.clean_front if direct else self.job_front).port}",
            # Straight to the emulator, a run waits for it as long as a lease allows.
            **({"FIRESTORE_DEADLINE_MS": "60000"} if direct else {}),
            "RECOVERY_CONCURRENCY": "4",
            "RECOVERY_PER_SECOND": "200",
            "CLOUD_RUN_TASK_INDEX": str(index),
            "CLOUD_RUN_TASK_COUNT": str(tasks),
        })
        if env.get("PROVIDER_NAME") == "stripe":
            env["STRIPE_API_BASE"] = env.pop("PROVIDER_URL")
        if drawn:
            env["JOURNAL_CLOCK_OFFSET_MS"] = str(int(drawn))
        name = f"job-{'final' if final else 'run'}-{run}-{index}"
        code, out = await run_process([self.service, "recover"], env,
                                      os.path.join(self.logs, name), timeout=300,
                                      kill_after=kill_after)
        summary, stated, outcomes, commands = None, None, Tally(), []
        for line in out.splitlines():
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            message = parsed.get("message")
            if message == "recovery finished":
                summary = parsed
            elif message == "recovery starting":
                stated = parsed
            elif message == "recovered":
                outcomes.add(parsed.get("outcome", "?"))
                commands.append((parsed.get("commandKeyHash"), parsed.get("outcome")))
        self.statements.append({"process": name, "drawnMs": drawn, "faultMs": offset_ms,
                                "statedMs": (stated or {}).get("clockOffsetMs"),
                                "plant": (stated or {}).get("plant"),
                                # Killed before its statement, it had done nothing
                                # yet: it states it before its first journal call.
                                "silent": code is None and stated is None})
        job = {"run": run, "task": index, "tasks": tasks, "final": final, "exit": code,
               "summary": summary, "outcomes": outcomes, "commands": commands}
        self.jobs.append(job)
        if final:
            self.final_job = job
        return code, summary

    # -- phases -----------------------------------------------------------------

    async def main_phase(self, population):
        a = self.args
        chaos = Chaos(self.rngs[4], self.rates, self.instances, self.faults, self.offsets,
                      a.kills, a.checkouts)
        chaos.offset = self.draw_offset
        recovery = RecoverySchedule(self.rngs[5], a.recover_every, self.run_job,
                                    self.faults, self.offsets, 0.0 if a.no_faults else 0.15)
        proxies = [i.fs_proxy for i in self.instances] + [self.job_proxy]
        fronts = [i.front for i in self.instances] + [self.job_front]
        background = [asyncio.ensure_future(chaos.network(proxies, fronts)),
                      asyncio.ensure_future(recovery.loop()),
                      asyncio.ensure_future(self.progress(population, chaos))]
        started = time.monotonic()
        work = [population.run(a.checkouts, a.concurrency, a.drain, chaos.started)]
        injections = None
        if not a.no_faults:
            injections = Injections(self, population, self.rngs[8])
            work.append(injections.run())
        await asyncio.gather(*work)
        self.main_seconds = time.monotonic() - started
        chaos.running = False
        recovery.running = False
        await chaos.stop()
        await asyncio.gather(*background)
        # The faulted phase ends with its last recovery run: what coverage counts of
        # it, the provider's and the journal's records must show by now.
        self.faulted_until = time.time()
        self.faulted_empty_lookups = set(self.standin.empty_lookups)
        self.errors += chaos.errors
        if injections is not None:
            self.errors += injections.errors
            self.injected = injections.fired
        await asyncio.gather(*(i.stop() for i in self.instances + list(self.twins.values())))

    async def progress(self, population, chaos):
        """A line on stderr every minute while the main phase runs."""
        while chaos.running:
            for _ in range(120):
                if not chaos.running:
                    return
                await asyncio.sleep(0.5)
            done = sum(1 for c in population.checkouts if c.finals)
            kills = sum(n for k, n in self.faults.fired.items() if k.startswith("instance_kill"))
            self.log(f"{len(population.checkouts)} checkouts started, {done} done, "
                     f"{len(self.standin.charges)} charges, {kills} kills, "
                     f"{sum(i.up for i in self.instances)} instances up")

    async def settle_provider(self):
        """Waits until the provider has finished every request and every charge is
        visible to its lookups (at most the lag bound, plus its latency)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            busy = self.standin.in_flight or any(
                i.front.tasks for i in self.instances + list(self.twins.values())
            ) or self.job_front.tasks
            if not busy and time.monotonic() >= self.standin.last_visible:
                return
            await asyncio.sleep(0.25)
        self.errors.append("the provider did not settle within 60 s")

    async def late_phase(self, population):
        """The fleet `LATE_JUMP` s later; some clients come back."""
        self.standin.advance(LATE_JUMP)
        self.jumps.append((time.time(), LATE_JUMP))
        for proxy in [i.fs_proxy for i in self.instances]:
            proxy.release()
        for front in [i.front for i in self.instances]:
            front.release()
        population.phase = "late"
        await asyncio.gather(*(i.start(self.draw_offset(), jump_ms=LATE_JUMP * 1000)
                               for i in self.instances))
        if self.webhooks is not None:
            self.webhooks.jumped()
        rng = self.rngs[6]
        returning = []
        for c in population.checkouts:
            if c.gone:
                continue
            final = {f[1] for f in c.finals}
            if 200 in final:
                if rng.random() < 0.05:
                    returning.append(c)
            elif 402 not in final and rng.random() < self.args.late_return:
                returning.append(c)
        deadline = time.monotonic() + self.args.late_seconds
        sem = asyncio.Semaphore(self.args.concurrency)

        async def one(c):
            async with sem:
                await population.client(c, lambda: deadline, patient=True, late=True)
        await asyncio.gather(*(one(c) for c in returning))
        self.late_clients = len(returning)
        if self.webhooks is not None:
            # Every create done (and its events made) before the last deliveries.
            await self.settle_provider()
        if self.webhooks is not None and not await self.webhooks.stop(60.0):
            self.log("events still undelivered after 60 s")
        await asyncio.gather(*(i.stop() for i in self.instances))

    async def final_phase(self):
        # The provider answers every lookup now: what stays unsettled is the journal's.
        self.standin.faults = Faults(lookup_lag=self.standin.faults.lookup_lag,
                                     lookup_lag_max=self.standin.faults.lookup_lag_max)
        offset = (LATE_JUMP + FINAL_EXTRA) * 1000
        # Its clock when it starts: every absence provable by then, it must record.
        self.final_job_at = time.time() + offset / 1000
        self.jumps.append((time.time(), FINAL_EXTRA))
        await self.run_job(1, 0, 1, 0, None, final=True, jump_ms=offset)
        # Past the leases the final run took itself (a command it recorded absent stays
        # leased by it for a minute): then everything unsettled is listed.
        at_text, self.final_at = rfc3339(offset / 1000 + LEASE + 5)
        flags = ["--project", PROJECT, "--emulator-host", self.emulator.host]
        env = {"PATH": os.environ.get("PATH", "")}
        code, out = await run_process([self.cli, "pending", *flags, "--at", at_text], env,
                                      os.path.join(self.logs, "cli-pending"), timeout=300)
        # A listing the journal's own tool refuses (`journal_corrupt`: an absence
        # recorded outside its window, say) is the oracle's finding, not the harness's.
        self.pending_exit = code
        self.pending = [] if code != 0 else [
            json.loads(line) for line in out.splitlines() if line.strip()]
        code, _ = await run_process([self.cli, "verify", *flags], env,
                                    os.path.join(self.logs, "cli-verify"), timeout=1800)
        self.verify_clean = code == 0

    def fs_proxies(self):
        """Every Firestore fault proxy of the run."""
        return ([i.fs_proxy for i in self.instances + list(self.twins.values())]
                + [self.job_proxy])

    def check_wire(self):
        """The proxies' reading of the gRPC wire: a connection they could not read is
        a harness error (nothing on it was timed or cut), and so, in transaction mode
        with faults, is a run in which no rollback was lost."""
        for proxy in self.fs_proxies():
            self.errors += proxy.wire_errors
        if (self.transactions and not self.args.no_faults
                and not self.faults.fired.get("firestore_lost_rollback")):
            self.errors.append("transaction mode: no rollback was lost (drawn "
                               f"{self.faults.drawn.get('firestore_lost_rollback', 0)} times)")

    def fronts(self):
        """Every provider front of the run."""
        return ([i.front for i in self.instances + list(self.twins.values())]
                + [self.job_front, self.clean_front])

    async def check_fronts(self):
        """Every provider front's books against the stand-in's (`accounting`), once
        no request is in flight (at most 15 s more): a front whose faults did not do
        what they say is a harness error."""
        deadline = time.monotonic() + 15
        while any(f.in_flight for f in self.fronts()) and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        for front in self.fronts():
            self.errors += front.accounting()

    async def check_identities(self, population):
        """`command-journal identity` agrees with identity.py on a sample."""
        sample = population.checkouts[:: max(1, len(population.checkouts) // 10)]
        for c in sample:
            stdin = json.dumps(identity_input(c.uid, c.command_id, c.payload)).encode()
            code, out = await run_process([self.cli, "identity"], {"PATH": ""}, None,
                                          stdin=stdin, timeout=60)
            derived = json.loads(out) if code == 0 else {}
            if (derived.get("commandKeyHash"), derived.get("providerIdempotencyKey")) != (
                    c.hash, c.keys[0]):
                self.errors.append(f"identity of checkout {c.index} disagrees with the CLI")

    async def stop(self):
        everyone = self.instances + list(self.twins.values())
        for i in everyone:
            i.kill()
        for i in everyone:
            await i.wait_dead()
        if self.emulator is not None:
            await self.emulator.stop()
        kill_children()

    # -- the report -------------------------------------------------------------

    def check_statements(self):
        """Every service process's statement against its draw (`compare_statements`);
        its harness errors join the run's. The number of statements."""
        statements = self.statements + [s for i in self.instances + list(self.twins.values())
                                         for s in i.stated]
        plant = self.args.plant if in_service(self.args.plant) else None
        self.errors += report.compare_statements(statements, plant, self.faults)
        return len(statements)

async def soak(args):
    s = Soak(args)
    population = Population(PROJECT, s.rngs[7], Behaviour(),
                            ["u" + "".join(s.rngs[7].choice("0123456789abcdef")
                                           for _ in range(20))
                             for _ in range(max(20, args.checkouts // 20))])
    t0 = time.monotonic()

    def log(text):
        print(f"[chaos +{time.monotonic() - t0:6.1f}s] {text}", file=sys.stderr, flush=True)
    s.log = log
    # A run stopped by a signal (a CI timeout, Ctrl-C) still stops what it started.
    me = asyncio.current_task()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, me.cancel)
    try:
        await s.start()
        population.lb_port = s.balancer.port
        log(f"run directory {s.run_dir}; emulator {s.emulator.host}; "
            f"{args.instances} instances behind 127.0.0.1:{s.balancer.port}")
        await s.main_phase(population)
        log(f"main phase done: {len(population.checkouts)} checkouts in {s.main_seconds:.1f} s")
        await s.settle_provider()
        await s.late_phase(population)
        log(f"late phase done: {s.late_clients} clients came back")
        await s.settle_provider()
        await s.final_phase()
        log("final recovery, pending and verify done")
        await s.check_identities(population)
        await s.check_fronts()
        s.check_wire()
        log("identities checked against the CLI; the provider fronts' books against the provider's")
        result, extra = report.build(s, population)
    finally:
        await s.stop()
    for line in extra["findings"][:20] + extra["logExamples"] + extra["harnessErrors"][:20]:
        log(line)
    log("stats " + json.dumps(extra["stats"]))
    log(f"journal: {extra['auditEvents']} audit events, {extra['commandsTakenOver']} commands "
        f"taken over at least once, {result['staleFenceWrites']} writes under a superseded fence")
    log("coverage " + json.dumps(result["coverage"]) + "; injected "
        + ", ".join(extra["injected"]) + f"; {extra['statements']} stated clock offsets")
    if extra["harnessErrors"]:
        code = EXIT_HARNESS
        log("HARNESS ERROR: the run did not do what it drew; the oracle's verdict stands for nothing")
    elif result["failures"]:
        code = EXIT_FAILS
        log("THE ORACLE FAILS: " + ", ".join(result["failures"]))
    else:
        code = EXIT_HOLDS
        log("the oracle holds")
    if args.plant:
        log(f"plant {args.plant}: " + ("caught by " + PLANTS[args.plant][1] if result["plantCaught"]
                                       else "NOT caught by " + PLANTS[args.plant][1]))
    print(json.dumps(result, separators=(",", ":")))
    return code


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    return asyncio.run(soak(args))

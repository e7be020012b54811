"""The processes: the Firestore emulator, the service instances (killed and restarted
at will, each with its own clock offset), the recovery job's runs and the CLI.

Every process's stdout and stderr go to a file of its own in the run directory; the
oracle scans every line of them for raw values."""

import asyncio
import json
import os
import signal
import socket
import time
import urllib.request


# Every child process this run started and that may still run: killed at the end
# whatever happened (`kill_children`).
CHILDREN = set()


def _track(proc):
    CHILDREN.add(proc)
    return proc


def kill_children():
    """SIGKILLs every child process still running."""
    for proc in list(CHILDREN):
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        CHILDREN.discard(proc)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Emulator:
    """`command-journal emulator --port P`: the JVM with the crate's rules."""

    def __init__(self, cli, logdir):
        self.cli = cli
        self.logdir = logdir
        self.port = free_port()
        self.proc = None
        self.jvm = None

    async def start(self):
        log = open(os.path.join(self.logdir, "emulator.stderr"), "wb")
        self.proc = _track(await asyncio.create_subprocess_exec(
            self.cli, "emulator", "--port", str(self.port),
            stdout=asyncio.subprocess.PIPE, stderr=log))
        line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
        with open(os.path.join(self.logdir, "emulator.stdout"), "wb") as out:
            out.write(line)
        started = json.loads(line)
        self.jvm = started.get("pid")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2) as r:
                    if r.read().strip() == b"Ok":
                        return self
            except OSError:
                pass
            await asyncio.sleep(0.25)
        raise RuntimeError("the emulator did not become ready")

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    async def stop(self):
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 30)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        # The JVM this run started must not outlive it.
        if self.jvm:
            for _ in range(100):
                try:
                    os.kill(self.jvm, 0)
                except ProcessLookupError:
                    return
                await asyncio.sleep(0.1)
            try:
                os.kill(self.jvm, signal.SIGKILL)
            except ProcessLookupError:
                pass


async def _copy_lines(stream, path, on_line=None):
    with open(path, "ab") as out:
        while True:
            line = await stream.readline()
            if not line:
                return
            out.write(line)
            out.flush()
            if on_line is not None:
                on_line(line)


class Instance:
    """One service instance slot: a fixed port, its own Firestore proxy and provider
    front; each (re)start is an incarnation with its own clock offset, which it states
    on its first line (`listening`: `clockOffsetMs`, measured on its journal, and the
    `plant` it planted, if any): `stated` holds what each incarnation drew and
    stated."""

    def __init__(self, slot, binary, env, fs_proxy, front, logdir):
        self.slot = slot
        self.binary = binary
        self.env = env
        self.fs_proxy = fs_proxy
        self.front = front
        self.logdir = logdir
        self.port = free_port()
        self.proc = None
        self.up = False
        self.incarnation = 0
        self.offset_ms = 0
        self.readers = []
        self.stated = []

    async def start(self, offset_ms, jump_ms=0):
        """A new incarnation on a clock `offset_ms` (the fault) plus `jump_ms` (a
        phase's simulated time) ahead of the system's."""
        self.incarnation += 1
        self.offset_ms = offset_ms
        drawn = offset_ms + jump_ms
        env = dict(self.env)
        env.update({
            "PORT": str(self.port),
            "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{self.fs_proxy.port}",
            "PROVIDER_URL": f"http://127.0.0.1:{self.front.port}",
        })
        if env.get("PROVIDER_NAME") == "stripe":
            env["STRIPE_API_BASE"] = env.pop("PROVIDER_URL")
        if drawn:
            env["JOURNAL_CLOCK_OFFSET_MS"] = str(drawn)
        base = os.path.join(self.logdir, f"instance-{self.slot}-{self.incarnation}")
        ready = asyncio.get_running_loop().create_future()

        def on_line(line):
            if not ready.done() and b'"message":"listening"' in line:
                try:
                    fields = json.loads(line)
                except ValueError:
                    fields = {}
                self.stated.append({"process": f"instance-{self.slot}-{self.incarnation}",
                                    "drawnMs": drawn, "faultMs": offset_ms,
                                    "statedMs": fields.get("clockOffsetMs"),
                                    "plant": fields.get("plant"), "silent": False})
                ready.set_result(True)

        self.proc = _track(await asyncio.create_subprocess_exec(
            self.binary, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE))
        self.readers = [
            asyncio.ensure_future(_copy_lines(self.proc.stdout, base + ".stdout", on_line)),
            asyncio.ensure_future(_copy_lines(self.proc.stderr, base + ".stderr")),
        ]
        exited = asyncio.ensure_future(self.proc.wait())
        done, _ = await asyncio.wait({ready, exited}, timeout=60,
                                     return_when=asyncio.FIRST_COMPLETED)
        if ready not in done:
            exited.cancel()
            raise RuntimeError(f"instance {self.slot} did not start (see {base}.stderr)")
        exited.cancel()
        self.up = True

    def killed(self):
        """Whether the last incarnation died of a SIGKILL (once it is dead)."""
        return self.proc is not None and self.proc.returncode == -signal.SIGKILL

    def kill(self):
        """SIGKILL, whatever it is doing."""
        self.up = False
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()

    async def wait_dead(self):
        if self.proc is not None:
            await self.proc.wait()
            await asyncio.gather(*self.readers, return_exceptions=True)

    async def stop(self):
        """SIGTERM (the service drains for up to 9 s), then SIGKILL."""
        self.up = False
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 15)
            except asyncio.TimeoutError:
                self.proc.kill()
        await self.wait_dead()


async def run_process(args, env, log_base, stdin=None, timeout=None, kill_after=None):
    """Runs a process to its end (SIGKILLed after `kill_after` s, or at `timeout`):
    `(exit code or None when killed, stdout bytes)`; both streams are kept in files
    `log_base`.stdout and .stderr (unless it is None)."""
    proc = _track(await asyncio.create_subprocess_exec(
        *args, env=env,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE))
    limit = kill_after if kill_after is not None else timeout
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), limit)
    except asyncio.TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        code = None
    else:
        code = proc.returncode
    if log_base is not None:
        with open(log_base + ".stdout", "ab") as f:
            f.write(out)
        with open(log_base + ".stderr", "ab") as f:
            f.write(err)
    return code, out

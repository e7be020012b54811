"""The network between the parts, and its faults.

- `TcpFaultProxy`: a byte-for-byte TCP proxy in front of the Firestore emulator (one
  per instance, so that faults hit one instance at a time). gRPC runs over
  cleartext HTTP/2, whose header compression state spans a connection, so every
  fault acts on whole connections: a stall holds both directions, a reset aborts
  every connection with RST, a dropped answer forwards the next request and then
  swallows everything the emulator sends back on that connection before cutting it
  (the emulator applied the request; the client never hears), and a partition holds
  every byte, new connections included, then resets them all.
- `ProviderFront`: the network in front of the provider stand-in, one port per
  instance (so it knows whose POST it is). HTTP/1.1 aware: it drops a request before
  the provider sees it, delays it, loses the answer after the provider acted (the
  connection is cut), or delays the answer; a partition holds requests, then cuts
  them. The stand-in runs each request it received to its end whatever becomes of
  the connection. A kill can be armed: the next POST on the port is handed to the
  provider, and then its instance is SIGKILLed mid-request.
- Every fault is counted from its effect (`tally.FaultLog`): a stall or partition
  fires when it holds bytes or a connection, a reset when it cuts a connection, a
  lost answer when a request is forwarded and its answers swallowed. A fault with
  nothing to act on is drawn and never fires.
- A provider front can also take a targeted injection for one idempotency key
  (`ProviderFront.target`): lose the answer after the provider acted, drop the
  request, or hold it until released and then cut it; the stand-in draws no random
  fault for such a key.
- `Balancer`: the round-robin load balancer in front of the instances. One request
  per client connection, sent to the next instance that is up; a connection refused
  moves on to the next; an instance that dies mid-request answers the client 502, as
  Cloud Run's front end would; none up answers 503.
"""

import asyncio
import time

from .httpio import abort, read_message, response_bytes


class _Conn:
    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        self.blackhole = False

    def abort(self):
        abort(self.client)
        abort(self.upstream)


class _Hold:
    """One stall or partition: until when it holds, and whether it held anything."""

    __slots__ = ("until", "kind", "fired")

    def __init__(self, until, kind):
        self.until = until
        self.kind = kind
        self.fired = False


class TcpFaultProxy:
    """A TCP proxy to 127.0.0.1:`upstream_port` with connection-level faults."""

    def __init__(self, name, upstream_port, counts):
        self.name = name
        self.upstream_port = upstream_port
        self.counts = counts
        self.conns = set()
        self.holds = []
        self.drop_next = False
        self.port = None
        self.server = None

    async def start(self):
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def close(self):
        if self.server is not None:
            self.server.close()
        for conn in list(self.conns):
            conn.abort()

    def release(self):
        """Ends every stall and partition now."""
        self.holds = []

    async def _hold(self):
        while True:
            now = time.monotonic()
            self.holds = [h for h in self.holds if h.until > now]
            if not self.holds:
                return
            for hold in self.holds:
                if not hold.fired:
                    hold.fired = True
                    self.counts.fire(hold.kind)
            await asyncio.sleep(max(h.until for h in self.holds) - now)

    async def _accept(self, reader, writer):
        await self._hold()
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            abort(writer)
            return
        conn = _Conn(writer, up_writer)
        self.conns.add(conn)
        try:
            await asyncio.gather(self._pump(reader, up_writer, conn, True),
                                 self._pump(up_reader, writer, conn, False))
        finally:
            self.conns.discard(conn)
            conn.abort()

    async def _pump(self, source, sink, conn, to_server):
        try:
            while True:
                data = await source.read(65536)
                if not data:
                    break
                await self._hold()
                if to_server and self.drop_next:
                    self.drop_next = False
                    self.counts.fire("firestore_lost_answer")
                    conn.blackhole = True
                    asyncio.get_running_loop().call_later(1.0, conn.abort)
                elif not to_server and conn.blackhole:
                    continue
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except (ConnectionError, OSError, RuntimeError):
            conn.abort()

    def stall(self, seconds):
        """Holds every byte, both ways, for `seconds` (fired once it holds some)."""
        self.counts.draw("firestore_stall")
        self.holds.append(_Hold(time.monotonic() + seconds, "firestore_stall"))

    def reset(self):
        """Aborts every open connection with RST (fired when it cut one)."""
        self.counts.draw("firestore_reset")
        conns = list(self.conns)
        if conns:
            self.counts.fire("firestore_reset")
            self.counts.fire("firestore_connections_reset", len(conns))
        for conn in conns:
            conn.abort()

    def drop_answer(self):
        """The next request reaches the emulator; its connection's answers never
        come back, and the connection is cut a second later (fired when that
        request is forwarded; a second draw before it replaces the first)."""
        self.counts.draw("firestore_lost_answer")
        self.drop_next = True

    def partition(self, seconds):
        """Nothing passes for `seconds`; then every connection is reset (fired when
        it held bytes or cut a connection)."""
        self.counts.draw("firestore_partition")
        hold = _Hold(time.monotonic() + seconds, "firestore_partition")
        self.holds.append(hold)

        def cut(conns=list(self.conns)):
            alive = [c for c in conns if c in self.conns]
            if alive:
                self.counts.fire("firestore_partition_connections_cut", len(alive))
                if not hold.fired:
                    hold.fired = True
                    self.counts.fire("firestore_partition")
            for conn in alive:
                conn.abort()
        asyncio.get_running_loop().call_later(seconds, cut)


class FrontFaults:
    """Per-request probabilities of the provider's network faults."""

    def __init__(self, drop_request=0.0, request_delay=0.0, lose_answer=0.0,
                 slow_answer=0.0, slow_answer_max=8.0):
        self.drop_request = drop_request
        self.request_delay = request_delay
        self.lose_answer = lose_answer
        self.slow_answer = slow_answer
        self.slow_answer_max = slow_answer_max


class Target:
    """A targeted injection on one idempotency key's next POST: `lose_answer` (the
    provider acts, the answer is cut), `drop` (cut before the provider sees it) or
    `hold` (kept until `release` is set, then cut unseen). `arrived` is set when the
    POST comes, `fired` once the action is done."""

    ACTIONS = ("lose_answer", "drop", "hold")

    def __init__(self, action):
        assert action in self.ACTIONS, action
        self.action = action
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.fired = False


class ProviderFront:
    """The stand-in's HTTP front for one instance, with the network's faults."""

    HOLD = 2.0
    TARGET_HOLD_LIMIT = 120.0

    def __init__(self, name, standin, rng, faults, counts):
        self.name = name
        self.standin = standin
        self.rng = rng
        self.faults = faults
        self.counts = counts
        self.partition_hold = None
        self.kill_armed = None
        self.port = None
        self.server = None
        self.writers = set()
        self.tasks = set()
        self.targets = {}

    def target(self, key, action):
        """Arms `action` for the next POST under `key`; the stand-in draws no random
        fault for the key from now on. The `Target`."""
        self.standin.exempt.add(key)
        target = self.targets[key] = Target(action)
        return target

    @property
    def partitioned_until(self):
        hold = self.partition_hold
        return hold.until if hold is not None else 0.0

    async def start(self):
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def close(self):
        if self.server is not None:
            self.server.close()
        for writer in list(self.writers):
            abort(writer)

    def partition(self, seconds):
        """Holds every request for `seconds` (fired once it holds one)."""
        self.counts.draw("provider_partition")
        until = max(self.partitioned_until, time.monotonic() + seconds)
        self.partition_hold = _Hold(until, "provider_partition")

    def release(self):
        """Ends a partition now."""
        self.partition_hold = None

    async def _accept(self, reader, writer):
        self.writers.add(writer)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.writers.discard(writer)
            abort(writer)

    async def _one(self, reader, writer):
        request = await read_message(reader)
        if request is None:
            return False
        method, target = request.first[0], request.first[1]
        if method == "POST":
            targeted = self.targets.pop(request.headers.get("idempotency-key"), None)
            if targeted is not None:
                return await self._targeted(targeted, request)
        f, rng = self.faults, self.rng
        hold = self.partition_hold
        if hold is not None and hold.until > time.monotonic():
            if not hold.fired:
                hold.fired = True
                self.counts.fire("provider_partition")
            await asyncio.sleep(min(hold.until - time.monotonic(), self.HOLD))
            if self.partitioned_until > time.monotonic():
                self.counts.fire("provider_partition_requests_cut")
                return False
        if rng.random() < f.drop_request:
            self.counts.both("provider_dropped_request")
            return False
        if rng.random() < f.request_delay:
            self.counts.both("provider_request_delay")
            await asyncio.sleep(rng.uniform(0, 1.0))
        work = self._forward(request)
        if method == "POST" and self.kill_armed is not None:
            kill, self.kill_armed = self.kill_armed, None
            asyncio.get_running_loop().call_later(rng.uniform(0, 0.2), kill)
        status, headers, body = await asyncio.shield(work)
        if rng.random() < f.lose_answer:
            self.counts.both("provider_lost_answer")
            await asyncio.sleep(rng.uniform(0, 3.0))
            return False
        if rng.random() < f.slow_answer:
            self.counts.both("provider_slow_answer")
            await asyncio.sleep(rng.uniform(1.0, f.slow_answer_max))
        writer.write(response_bytes(status, body, headers))
        await writer.drain()
        return True

    def _forward(self, request):
        """Hands `request` to the stand-in, which runs it to its end whatever
        becomes of the connection: its task."""
        method, target = request.first[0], request.first[1]
        work = asyncio.ensure_future(
            self.standin.handle(method, target, request.headers, request.body))
        self.tasks.add(work)
        work.add_done_callback(self.tasks.discard)
        return work

    async def _targeted(self, targeted, request):
        """Does what `targeted` asks with its POST; the connection is then cut."""
        targeted.arrived.set()
        if targeted.action == "hold":
            try:
                await asyncio.wait_for(targeted.release.wait(), self.TARGET_HOLD_LIMIT)
            except asyncio.TimeoutError:
                pass
        elif targeted.action == "lose_answer":
            await asyncio.shield(self._forward(request))
        targeted.fired = True
        self.counts.fire("injected_" + targeted.action)
        return False


class Balancer:
    """Round robin over `instances` (objects with `port` and `up`)."""

    def __init__(self, instances, counts):
        self.instances = instances
        self.counts = counts
        self.next = 0
        self.port = None
        self.server = None

    async def start(self):
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0, backlog=1024)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    def close(self):
        if self.server is not None:
            self.server.close()

    async def _accept(self, reader, writer):
        try:
            request = await read_message(reader)
            if request is None:
                return
            writer.write(await self._forward(request))
            await writer.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _forward(self, request):
        n = len(self.instances)
        for i in range(n):
            instance = self.instances[(self.next + i) % n]
            if not instance.up:
                continue
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", instance.port), 2.0)
            except (OSError, asyncio.TimeoutError):
                continue
            self.next = (self.next + i + 1) % n
            try:
                up_writer.write(request.raw)
                await up_writer.drain()
                answer = await asyncio.wait_for(read_message(up_reader), 120.0)
                if answer is None:
                    raise ConnectionError("closed")
                return answer.raw
            except (ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                self.counts.fire("balancer_502")
                return response_bytes(502, {"error": "bad_gateway"}, close=True)
            finally:
                up_writer.close()
        self.counts.fire("balancer_503")
        return response_bytes(503, {"error": "no_instance"}, close=True)

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


class TcpFaultProxy:
    """A TCP proxy to 127.0.0.1:`upstream_port` with connection-level faults."""

    def __init__(self, name, upstream_port, counts):
        self.name = name
        self.upstream_port = upstream_port
        self.counts = counts
        self.conns = set()
        self.held_until = 0.0
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

    async def _hold(self):
        while True:
            wait = self.held_until - time.monotonic()
            if wait <= 0:
                return
            await asyncio.sleep(wait)

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
        """Holds every byte, both ways, for `seconds`."""
        self.counts.add("firestore_stall")
        self.held_until = max(self.held_until, time.monotonic() + seconds)

    def reset(self):
        """Aborts every open connection with RST."""
        self.counts.add("firestore_reset")
        for conn in list(self.conns):
            conn.abort()

    def drop_answer(self):
        """The next request reaches the emulator; its connection's answers never
        come back, and the connection is cut a second later."""
        self.counts.add("firestore_lost_answer")
        self.drop_next = True

    def partition(self, seconds):
        """Nothing passes for `seconds`; then every connection is reset."""
        self.counts.add("firestore_partition")
        self.held_until = max(self.held_until, time.monotonic() + seconds)
        for conn in list(self.conns):
            asyncio.get_running_loop().call_later(seconds, conn.abort)


class FrontFaults:
    """Per-request probabilities of the provider's network faults."""

    def __init__(self, drop_request=0.0, request_delay=0.0, lose_answer=0.0,
                 slow_answer=0.0, slow_answer_max=8.0):
        self.drop_request = drop_request
        self.request_delay = request_delay
        self.lose_answer = lose_answer
        self.slow_answer = slow_answer
        self.slow_answer_max = slow_answer_max


class ProviderFront:
    """The stand-in's HTTP front for one instance, with the network's faults."""

    HOLD = 2.0

    def __init__(self, name, standin, rng, faults, counts):
        self.name = name
        self.standin = standin
        self.rng = rng
        self.faults = faults
        self.counts = counts
        self.partitioned_until = 0.0
        self.kill_armed = None
        self.port = None
        self.server = None
        self.writers = set()
        self.tasks = set()

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
        self.counts.add("provider_partition")
        self.partitioned_until = max(self.partitioned_until, time.monotonic() + seconds)

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
        f, rng = self.faults, self.rng
        wait = self.partitioned_until - time.monotonic()
        if wait > 0:
            await asyncio.sleep(min(wait, self.HOLD))
            if self.partitioned_until > time.monotonic():
                return False
        if rng.random() < f.drop_request:
            self.counts.add("provider_dropped_request")
            return False
        if rng.random() < f.request_delay:
            self.counts.add("provider_request_delay")
            await asyncio.sleep(rng.uniform(0, 1.0))
        method, target = request.first[0], request.first[1]
        work = asyncio.ensure_future(
            self.standin.handle(method, target, request.headers, request.body))
        self.tasks.add(work)
        work.add_done_callback(self.tasks.discard)
        if method == "POST" and self.kill_armed is not None:
            kill, self.kill_armed = self.kill_armed, None
            asyncio.get_running_loop().call_later(rng.uniform(0, 0.2), kill)
        status, headers, body = await asyncio.shield(work)
        if rng.random() < f.lose_answer:
            self.counts.add("provider_lost_answer")
            await asyncio.sleep(rng.uniform(0, 3.0))
            return False
        if rng.random() < f.slow_answer:
            self.counts.add("provider_slow_answer")
            await asyncio.sleep(rng.uniform(1.0, f.slow_answer_max))
        writer.write(response_bytes(status, body, headers))
        await writer.drain()
        return True


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
                self.counts.add("balancer_502")
                return response_bytes(502, {"error": "bad_gateway"}, close=True)
            finally:
                up_writer.close()
        self.counts.add("balancer_503")
        return response_bytes(503, {"error": "no_instance"}, close=True)

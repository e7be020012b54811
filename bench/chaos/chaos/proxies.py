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
  lost answer when the first answer bytes are swallowed. A fault with nothing to act
  on is drawn and never fires. A provider front also keeps books
  (`ProviderFront.accounting`): each request it reads has exactly one fate (dropped,
  cut by a partition, an injection's, its answer lost, unheard or answered), and the
  requests it forwarded are those the stand-in says it received from it; a front
  whose books disagree counted a fault that did not do what it says.
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

from . import h2wire
from .httpio import abort, read_message, response_bytes
from .tally import RpcTimes, Tally


class _Conn:
    def __init__(self, client, upstream):
        self.client = client
        self.upstream = upstream
        self.blackhole = False
        self.swallowed = False
        # The gRPC wire, each way (`h2wire`).
        self.requests = h2wire.Half(client=True)
        self.answers = h2wire.Half(client=False)
        # Stream -> (method, when its headers reached the emulator or None once its
        # answer began, stalls and partitions begun by then, whether one held).
        self.timing = {}

    def abort(self):
        abort(self.client)
        abort(self.upstream)


class _Hold:
    """One stall or partition: until when it holds, and whether it held anything. A
    stall drawn while no bytes pass is armed (`until` None, `seconds` its length): its
    window begins with the next bytes, so that it holds some and fires however idle
    the proxy was when it was drawn."""

    __slots__ = ("until", "kind", "fired", "seconds")

    def __init__(self, until, kind, seconds=None):
        self.until = until
        self.kind = kind
        self.fired = False
        self.seconds = seconds


class TcpFaultProxy:
    """A TCP proxy to 127.0.0.1:`upstream_port` with connection-level faults."""

    # Seconds from the request whose answers are swallowed to its connection's cut.
    LOST_ANSWER_CUT = 1.0

    def __init__(self, name, upstream_port, counts):
        self.name = name
        self.upstream_port = upstream_port
        self.counts = counts
        self.conns = set()
        self.holds = []
        self.drop_next = False
        # A lost rollback armed (`lose_rollbacks`): the window after the next one.
        self.rollback_window = None
        self.rollbacks_cut_until = 0.0
        # Stalls and partitions begun so far: an RPC timed across one is not the
        # emulator's time alone.
        self.holds_begun = 0
        self.rpcs = RpcTimes()
        self.wire_errors = []
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

    def _units(self, conn, half, data):
        """`data` as wire units (`h2wire.Half.feed`). Once they could not be read,
        every byte not yet handed out, and all that follow, go through as they are,
        unread (the error is kept: a harness error, since the proxy then neither
        times nor cuts anything on the connection)."""
        wire = getattr(conn, half)
        if wire is None:
            return [(data, 0, None)]
        try:
            return wire.feed(data)
        except h2wire.WireError as e:
            self.wire_errors.append(f"{self.name}: {half}: {e}")
            setattr(conn, half, None)
            return [(bytes(wire.pending), 0, None)]

    def _cuts_rollback(self):
        """Whether a Rollback request arriving now is lost (fired, counted)."""
        now = time.monotonic()
        if self.rollback_window is not None:
            self.counts.fire("firestore_lost_rollback")
            self.rollbacks_cut_until = now + self.rollback_window
            self.rollback_window = None
        elif now >= self.rollbacks_cut_until:
            return False
        self.counts.fire("firestore_rollbacks_cut")
        return True

    async def _forward_requests(self, conn, sink, data):
        """Forwards the client's `data` unit by unit: False when a lost rollback cut
        the connection (everything before the Rollback's headers forwarded, nothing
        of them)."""
        for raw, stream, headers in self._units(conn, "requests", data):
            called = h2wire.method(headers)
            if called == "Rollback" and self._cuts_rollback():
                await sink.drain()
                conn.abort()
                return False
            sink.write(raw)
            if called is not None:
                await sink.drain()
                conn.timing[stream] = (called, time.monotonic(), self.holds_begun,
                                       bool(self.holds))
        return True

    def _answer_began(self, conn, data):
        """Times each RPC from its request's headers reaching the emulator to the
        emulator's first header block for it (read as it arrives, before any hold),
        and books the gRPC status its answer ends with."""
        now = time.monotonic()
        for _, stream, headers in self._units(conn, "answers", data):
            timed = conn.timing.get(stream) if headers is not None else None
            if timed is None:
                continue
            called, since, holds, held = timed
            if since is not None:
                self.rpcs.answered(called, now - since, not held and holds == self.holds_begun)
                conn.timing[stream] = (called, None, 0, False)
            status = headers.get(b"grpc-status")
            if status is not None:
                del conn.timing[stream]
                self.rpcs.status(called, status.decode("ascii", "replace"))

    async def _hold(self):
        while True:
            now = time.monotonic()
            for hold in self.holds:
                if hold.until is None:
                    hold.until = now + hold.seconds
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
                if not to_server:
                    self._answer_began(conn, data)
                await self._hold()
                if to_server and self.drop_next:
                    self.drop_next = False
                    conn.blackhole = True
                    asyncio.get_running_loop().call_later(self.LOST_ANSWER_CUT, conn.abort)
                elif not to_server and conn.blackhole:
                    # Fired by its effect: the first answer bytes swallowed.
                    if not conn.swallowed:
                        conn.swallowed = True
                        self.counts.fire("firestore_lost_answer")
                    continue
                if not to_server:
                    sink.write(data)
                elif not await self._forward_requests(conn, sink, data):
                    return
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except (ConnectionError, OSError, RuntimeError):
            conn.abort()

    def stall(self, seconds):
        """Holds every byte, both ways, for `seconds` from the next bytes that pass
        (fired once it holds some)."""
        self.counts.draw("firestore_stall")
        self.holds_begun += 1
        self.holds.append(_Hold(None, "firestore_stall", seconds))

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
        come back, and the connection is cut a second later (fired when the first
        answer bytes are swallowed; a second draw before the request replaces the
        first)."""
        self.counts.draw("firestore_lost_answer")
        self.drop_next = True

    def lose_rollbacks(self, window):
        """The next Rollback request, and every one in the `window` seconds after it,
        never reaches the emulator: the connection is cut before its first byte is
        forwarded (fired when the first is cut; a second draw before it replaces the
        first)."""
        self.counts.draw("firestore_lost_rollback")
        self.rollback_window = window

    def partition(self, seconds):
        """Nothing passes for `seconds`; then every connection is reset (fired when
        it held bytes or cut a connection)."""
        self.counts.draw("firestore_partition")
        hold = _Hold(time.monotonic() + seconds, "firestore_partition")
        self.holds_begun += 1
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
    # The fates of requests handed to the provider.
    FORWARDING = ("answered", "unheard", "lost_answer", "injected_lose_answer")

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
        # The books: requests read, those handed to the provider, and each request's
        # one fate (`_settle`).
        self.read = 0
        self.forwarded = 0
        self.fates = Tally()
        self.misaccounted = []

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
        self.read += 1
        fates = []
        try:
            return await self._serve(request, writer, fates)
        finally:
            self._settle(fates)

    def _settle(self, fates):
        """Books one request's fates: exactly one, else the front did two things (or
        none) with it and says so in `misaccounted`."""
        if len(fates) == 1:
            self.fates.add(fates[0])
        else:
            self.fates.add("misaccounted")
            self.misaccounted.append(f"{self.name}: a request ended "
                                     + (" and ".join(fates) or "with no fate"))

    async def _serve(self, request, writer, fates):
        """One request's fate, appended to `fates` where it happens: whether to read
        the next request on the connection."""
        method, target = request.first[0], request.first[1]
        if method == "POST":
            targeted = self.targets.pop(request.headers.get("idempotency-key"), None)
            if targeted is not None:
                return await self._targeted(targeted, request, fates)
        f, rng = self.faults, self.rng
        hold = self.partition_hold
        if hold is not None and hold.until > time.monotonic():
            if not hold.fired:
                hold.fired = True
                self.counts.fire("provider_partition")
            await asyncio.sleep(min(hold.until - time.monotonic(), self.HOLD))
            if self.partitioned_until > time.monotonic():
                self.counts.fire("provider_partition_requests_cut")
                fates.append("partition_cut")
                return False
        if rng.random() < f.drop_request:
            self.counts.both("provider_dropped_request")
            fates.append("dropped")
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
            fates.append("lost_answer")
            await asyncio.sleep(rng.uniform(0, 3.0))
            return False
        if rng.random() < f.slow_answer:
            self.counts.both("provider_slow_answer")
            await asyncio.sleep(rng.uniform(1.0, f.slow_answer_max))
        try:
            writer.write(response_bytes(status, body, headers))
            await writer.drain()
        except (ConnectionError, OSError):
            fates.append("unheard")
            raise
        fates.append("answered")
        return True

    def _forward(self, request):
        """Hands `request` to the stand-in, which runs it to its end whatever
        becomes of the connection: its task."""
        method, target = request.first[0], request.first[1]
        self.forwarded += 1
        work = asyncio.ensure_future(
            self.standin.handle(method, target, request.headers, request.body, via=self.name))
        self.tasks.add(work)
        work.add_done_callback(self.tasks.discard)
        return work

    async def _targeted(self, targeted, request, fates):
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
        fates.append("injected_" + targeted.action)
        return False

    def accounting(self):
        """The front's books against the provider's (`standin.received`, what the
        stand-in itself took in from this front): a request that had no fate or two
        (dropped and forwarded, an answer lost and written), a count of requests
        forwarded that differs from what the stand-in received or from the fates
        that forward, requests read that no fate accounts for. Empty when every fault
        the front counts did what it says; checked once no request is in flight."""
        errors = list(self.misaccounted)
        received = self.standin.received.get(self.name, 0)
        if received != self.forwarded:
            errors.append(f"{self.name}: forwarded {self.forwarded} requests, the provider "
                          f"received {received}")
        forwarding = sum(self.fates.get(k, 0) for k in self.FORWARDING)
        if forwarding != self.forwarded and not self.misaccounted:
            errors.append(f"{self.name}: forwarded {self.forwarded} requests, its fates "
                          f"say {forwarding}")
        if sum(self.fates.values()) != self.read:
            errors.append(f"{self.name}: read {self.read} requests, {sum(self.fates.values())} "
                          "have a fate")
        return errors

    @property
    def in_flight(self):
        """Requests read that have no fate yet."""
        return self.read - sum(self.fates.values())


class ClientGone(Exception):
    """The balancer's client left before its answer."""


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
            answer = await self._forward(request, reader)
            if answer is not None:
                writer.write(answer)
                await writer.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, up_reader, client):
        """The instance's answer (None: it closed without one); `ClientGone` when the
        client left first (its connection ended before the answer came): the
        instance's connection is then cut, as a front end cuts a request whose client
        is gone, and the instance's handler is dropped mid-call (`client_disconnect`,
        fired here, where it happens)."""
        answer = asyncio.ensure_future(asyncio.wait_for(read_message(up_reader), 120.0))
        gone = asyncio.ensure_future(client.read(1))
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not answer.done():
                self.counts.fire("client_disconnect")
                raise ClientGone()
            return answer.result()
        finally:
            for task in (answer, gone):
                task.cancel()
            await asyncio.gather(answer, gone, return_exceptions=True)

    async def _forward(self, request, client):
        """The answer for `request` to hand the client, or None when it left."""
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
                try:
                    answer = await self._answer(up_reader, client)
                except ClientGone:
                    abort(up_writer)
                    return None
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

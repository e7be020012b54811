"""The client population: users who check out, retry on their own schedule, and
sometimes never come back.

Each checkout is one user's command id and payload. Its client sends it through the
balancer and goes on until a final answer (200 or 402): on 503, 409, 202, a 5xx
(500, 502, 504) or a lost connection it retries, patient clients after the
`Retry-After` the service asked for, eager ones on their own backoff (0.5 s
doubling to 8 s, jittered), and after every such answer it gives up for good with
probability `give_up`. A client may also abandon a request right after sending it
(a closed tab: it never reads the answer and never returns). Some checkouts have a
twin (a second client with the same command id, 0 to 3 s later, while the first may
still wait: a double click, a second tab, a browser's own retry), and some clients that got their 200 ask once more later and must get the
same bytes. Any other answer (400, 401, 422, ...) is a harness error: the clients
send only valid, authenticated, consistent checkouts.
"""

import asyncio
import json
import time

from .httpio import abort, read_message
from .identity import attempt_key, command_key_hash, unsigned_token

RETRIED = {202, 409, 500, 502, 503, 504, 0}
FINAL = {200, 402}


class Behaviour:
    """Probabilities of the clients' habits."""

    def __init__(self, give_up=0.08, abandon=0.02, twin=0.08, replay=0.1, patient=0.6):
        self.give_up = give_up
        self.abandon = abandon
        self.twin = twin
        self.replay = replay
        self.patient = patient


class Checkout:
    """One command: the raw values only clients hold, and every answer it got."""

    def __init__(self, index, uid, command_id, payload):
        self.index = index
        self.uid = uid
        self.command_id = command_id
        self.payload = payload
        self.hash = command_key_hash(uid, command_id)
        self.keys = [attempt_key(self.hash, n) for n in range(1, 6)]
        self.answers = []
        self.finals = []
        # A targeted injection's checkout, whose client never comes back on its own.
        self.gone = False

    def body(self):
        return {"commandId": self.command_id, "payload": self.payload}


class Answer:
    """One answer a client got: its monotonic send and answer times, and `heard`, the
    system clock's time when it was heard (made as it is heard), which the oracle
    holds against the journal's commit times."""

    __slots__ = ("client", "sent", "answered", "status", "text", "retry_after", "phase",
                 "heard")

    def __init__(self, client, sent, answered, status, text, retry_after, phase, heard=None):
        self.heard = time.time() if heard is None else heard
        self.client = client
        self.sent = sent
        self.answered = answered
        self.status = status
        self.text = text
        self.retry_after = retry_after
        self.phase = phase


class Population:
    """The users, their tokens and every client's record."""

    def __init__(self, project, rng, behaviour, users):
        self.project = project
        self.rng = rng
        self.behaviour = behaviour
        self.users = users
        self.tokens = {}
        self.checkouts = []
        self.clients = 0
        self.tasks = set()
        self.harness_errors = []
        self.phase = "main"
        self.lb_port = None

    def token(self, uid):
        made, token = self.tokens.get(uid, (0, None))
        if time.time() - made > 1800:
            made, token = time.time(), unsigned_token(self.project, uid)
            self.tokens[uid] = (made, token)
        return token

    def new_checkout(self, rng=None, amount=None):
        """A new checkout, drawn from `rng` (the population's own by default), of
        `amount` when given."""
        rng = rng or self.rng
        uid = rng.choice(self.users)
        bits = rng.getrandbits(128)
        bits = (bits & ~(0xF << 76)) | (0x4 << 76)
        bits = (bits & ~(0x3 << 62)) | (0x2 << 62)
        h = f"{bits:032x}"
        command_id = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        payload = {
            "amount": amount if amount is not None else rng.randrange(100, 100_000),
            "currency": rng.choice(["eur", "usd", "EUR"]),
            "ref": "pv" + "".join(rng.choice("0123456789abcdef") for _ in range(20)),
        }
        checkout = Checkout(len(self.checkouts), uid, command_id, payload)
        self.checkouts.append(checkout)
        return checkout

    async def send_once(self, checkout, port, client="targeted"):
        """One POST straight to the instance at `port` (a targeted injection's
        request), recorded among the checkout's answers: its status."""
        sent = time.monotonic()
        status, text, retry_after = await self._send(checkout, False, port)
        checkout.answers.append(Answer(client, sent, time.monotonic(), status, text,
                                       retry_after, self.phase))
        return status

    async def _send(self, checkout, abandon, port=None):
        """One POST through the balancer (or to `port`): `(status, text,
        retry_after)`; status 0 for a connection lost without an answer."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port or self.lb_port), 10)
        except (OSError, asyncio.TimeoutError):
            return 0, "", None
        try:
            body = json.dumps(checkout.body(), separators=(",", ":")).encode()
            head = (f"POST /v1/checkouts HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    f"Authorization: Bearer {self.token(checkout.uid)}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")
            writer.write(head.encode() + body)
            await writer.drain()
            if abandon:
                abort(writer)
                return None, "", None
            answer = await asyncio.wait_for(read_message(reader), 180)
            if answer is None:
                return 0, "", None
            retry_after = answer.headers.get("retry-after")
            return (answer.status, answer.body.decode("utf-8", "replace"),
                    int(retry_after) if retry_after and retry_after.isdigit() else None)
        except (ConnectionError, OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                ValueError):
            return 0, "", None
        finally:
            writer.close()

    async def client(self, checkout, deadline, patient=None, late=False):
        """One client of `checkout`, until a final answer, giving up, or the time
        `deadline()` returns (it may move: no deadline until the last checkout
        started)."""
        b, rng = self.behaviour, self.rng
        self.clients += 1
        me = self.clients
        patient = rng.random() < b.patient if patient is None else patient
        first = time.monotonic()
        tries = 0
        while True:
            if time.monotonic() >= deadline():
                checkout.finals.append((me, "unfinished", first, time.monotonic(), self.phase))
                return
            tries += 1
            abandon = not late and rng.random() < b.abandon
            sent = time.monotonic()
            status, text, retry_after = await self._send(checkout, abandon)
            if status is None:
                checkout.finals.append((me, "abandoned", first, time.monotonic(), self.phase))
                return
            now = time.monotonic()
            checkout.answers.append(Answer(me, sent, now, status, text, retry_after, self.phase))
            if status in FINAL:
                checkout.finals.append((me, status, first, now, self.phase))
                if status == 200 and not late and rng.random() < b.replay:
                    await asyncio.sleep(rng.uniform(0, 5))
                    s, t, r = await self._send(checkout, False)
                    checkout.answers.append(
                        Answer(me, now, time.monotonic(), s, t, r, self.phase))
                return
            if status not in RETRIED:
                self.harness_errors.append(f"checkout {checkout.index} answered {status}")
                checkout.finals.append((me, f"refused_{status}", first, now, self.phase))
                return
            if not late and rng.random() < b.give_up:
                checkout.finals.append((me, "gave_up", first, now, self.phase))
                return
            if patient and retry_after is not None:
                wait = retry_after * rng.uniform(1.0, 1.3)
            else:
                wait = min(8.0, 0.5 * 2 ** (tries - 1)) * rng.uniform(0.5, 1.5)
            while wait > 0 and time.monotonic() < deadline():
                step = min(wait, 1.0)
                await asyncio.sleep(step)
                wait -= step

    def spawn(self, coro):
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def run(self, count, concurrency, drain, on_start):
        """`count` new checkouts, `concurrency` at a time (a slot starts its next
        checkout when its client is done); every client stops `drain` seconds after
        the last checkout started."""
        started = 0
        state = {"deadline": float("inf")}

        async def slot():
            nonlocal started
            while started < count:
                started += 1
                checkout = self.new_checkout()
                on_start(started)
                if started == count:
                    state["deadline"] = time.monotonic() + drain
                if self.rng.random() < self.behaviour.twin:
                    delay = self.rng.uniform(0, 3.0)

                    async def twin(c=checkout, d=delay):
                        await asyncio.sleep(d)
                        await self.client(c, lambda: state["deadline"])
                    self.spawn(twin())
                await self.client(checkout, lambda: state["deadline"])

        await asyncio.gather(*(slot() for _ in range(concurrency)))
        while self.tasks:
            await asyncio.gather(*list(self.tasks), return_exceptions=True)


"""Just enough HTTP/1.1 over asyncio streams for the harness's own servers and
clients: a request or response head, a Content-Length body (every peer here sends
one: reqwest's JSON bodies, the service's answers, the harness's own requests)."""

import asyncio
import json

REASONS = {
    200: "OK", 202: "Accepted", 400: "Bad Request", 402: "Payment Required",
    404: "Not Found", 409: "Conflict", 429: "Too Many Requests",
    500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
}
MAX_HEAD = 64 * 1024


class Message:
    """A parsed request or response: its first line's parts, lower-cased headers,
    the body bytes and the exact bytes read (to forward unchanged)."""

    def __init__(self, first, headers, body, raw):
        self.first = first
        self.headers = headers
        self.body = body
        self.raw = raw

    @property
    def status(self):
        return int(self.first[1])

    def json(self):
        return json.loads(self.body) if self.body else None


async def read_message(reader):
    """One message, or None at a clean end of stream before its first byte."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise ConnectionError("truncated head") from e
    except asyncio.LimitOverrunError as e:
        raise ConnectionError("head too long") from e
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Message(first, headers, body, head + body)


def response_bytes(status, body, headers=None, close=False):
    """A response with a JSON (or bytes) body and a Content-Length."""
    if not isinstance(body, bytes):
        body = json.dumps(body, separators=(",", ":")).encode()
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
             "Content-Type: application/json", f"Content-Length: {len(body)}"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def request_bytes(method, path, body=None, headers=None):
    """A request with `Connection: close` and, for a body, its Content-Length."""
    data = b""
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(data)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


async def call(port, method, path, body=None, headers=None, timeout=30.0):
    """One request on a fresh connection to 127.0.0.1:`port`; the response."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        writer.write(request_bytes(method, path, body, headers))
        await writer.drain()
        response = await asyncio.wait_for(read_message(reader), timeout)
        if response is None:
            raise ConnectionError("no answer")
        return response
    finally:
        writer.close()


def abort(writer):
    """Closes a connection with a reset (SO_LINGER 0), as a crash or a middlebox does."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        try:
            import socket
            import struct
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
    writer.transport.abort()

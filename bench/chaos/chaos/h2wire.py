"""Just enough HTTP/2 and HPACK (RFC 9113, RFC 7541) to see which gRPC method each
request on a Firestore connection calls, and when its answer begins.

The fault proxy (`proxies.TcpFaultProxy`) splits each direction of a connection into
frames (`Frames`) and decodes every header block with that direction's own HPACK
decoder (`Decoder`: the dynamic table spans the connection, so every block must be
decoded, in order, for the next to be read right). The client's direction comes out
as units (`Upstream.feed`): a frame, or a whole header block (HEADERS and its
CONTINUATIONs) with the request's `:path`, so that the proxy can forward everything
before a `Rollback` request and cut the connection before that request's first byte
reaches the emulator. Nothing is re-encoded: the bytes forwarded are the client's.
"""

from .hpack_tables import HUFFMAN_CODES, HUFFMAN_LENGTHS, STATIC_TABLE

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SERVICE = b"/google.firestore.v1.Firestore/"
DATA, HEADERS, PUSH_PROMISE, CONTINUATION = 0x0, 0x1, 0x5, 0x9
END_HEADERS, PADDED, PRIORITY = 0x4, 0x8, 0x20

_HUFFMAN = {(HUFFMAN_LENGTHS[s], HUFFMAN_CODES[s]): s for s in range(256)}


class WireError(ValueError):
    """Bytes that are not the HTTP/2 or HPACK they should be."""


def huffman_decode(data):
    """The octets a Huffman-coded string (RFC 7541 5.2, Appendix B) stands for."""
    out = bytearray()
    code = length = 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = (code << 1) | ((byte >> shift) & 1)
            length += 1
            symbol = _HUFFMAN.get((length, code))
            if symbol is not None:
                out.append(symbol)
                code = length = 0
            elif length > 30:
                raise WireError("no Huffman code matches")
    # The padding: fewer than 8 bits, all ones (a prefix of the end-of-string code).
    if length > 7 or code != (1 << length) - 1:
        raise WireError("bad Huffman padding")
    return bytes(out)


class Decoder:
    """One direction's HPACK decoder: its dynamic table, newest entry first."""

    def __init__(self, max_size=4096):
        self.max_size = max_size
        self.table = []
        self.size = 0

    def _int(self, block, i, prefix):
        value = block[i] & ((1 << prefix) - 1)
        i += 1
        if value < (1 << prefix) - 1:
            return value, i
        shift = 0
        while True:
            if i >= len(block):
                raise WireError("integer runs past the block")
            byte = block[i]
            i += 1
            value += (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value, i

    def _string(self, block, i):
        if i >= len(block):
            raise WireError("string runs past the block")
        huffman = block[i] & 0x80
        length, i = self._int(block, i, 7)
        if i + length > len(block):
            raise WireError("string runs past the block")
        raw = bytes(block[i:i + length])
        return (huffman_decode(raw) if huffman else raw), i + length

    def _entry(self, index):
        if 1 <= index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        if 0 <= index - len(STATIC_TABLE) - 1 < len(self.table):
            return self.table[index - len(STATIC_TABLE) - 1]
        raise WireError(f"header index {index} is in no table")

    def _evict(self):
        while self.size > self.max_size and self.table:
            name, value = self.table.pop()
            self.size -= len(name) + len(value) + 32

    def _add(self, name, value):
        self.table.insert(0, (name, value))
        self.size += len(name) + len(value) + 32
        self._evict()

    def decode(self, block):
        """The headers of one whole header block, as `(name, value)` octets."""
        headers, i = [], 0
        while i < len(block):
            byte = block[i]
            if byte & 0x80:
                index, i = self._int(block, i, 7)
                headers.append(self._entry(index))
                continue
            if byte & 0xE0 == 0x20:
                self.max_size, i = self._int(block, i, 5)
                self._evict()
                continue
            prefix = 6 if byte & 0x40 else 4
            index, i = self._int(block, i, prefix)
            if index:
                name = self._entry(index)[0]
            else:
                name, i = self._string(block, i)
            value, i = self._string(block, i)
            if prefix == 6:
                self._add(name, value)
            headers.append((name, value))
        return headers


def _fragment(kind, flags, payload):
    """The header block fragment in a HEADERS, PUSH_PROMISE or CONTINUATION payload."""
    start, end = 0, len(payload)
    if kind in (HEADERS, PUSH_PROMISE) and flags & PADDED:
        if not payload:
            raise WireError("padded frame without its pad length")
        start, end = 1, len(payload) - payload[0]
    if kind == HEADERS and flags & PRIORITY:
        start += 5
    if kind == PUSH_PROMISE:
        start += 4
    if start > end:
        raise WireError("padding longer than the frame")
    return payload[start:end]


class Frames:
    """Splits one direction's byte stream into whole frames; the client's starts with
    the connection preface."""

    def __init__(self, preface):
        self.buf = bytearray()
        self.preface = preface

    def feed(self, data):
        """The whole frames `data` completes, as `(type, flags, stream, payload,
        raw)`; the rest waits for more bytes."""
        self.buf += data
        frames = []
        if self.preface:
            if len(self.buf) < len(PREFACE):
                if not PREFACE.startswith(bytes(self.buf)):
                    raise WireError("not the HTTP/2 connection preface")
                return frames
            if bytes(self.buf[:len(PREFACE)]) != PREFACE:
                raise WireError("not the HTTP/2 connection preface")
            frames.append((None, 0, 0, b"", bytes(self.buf[:len(PREFACE)])))
            del self.buf[:len(PREFACE)]
            self.preface = False
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[0:3], "big")
            if len(self.buf) < 9 + length:
                break
            raw = bytes(self.buf[:9 + length])
            del self.buf[:9 + length]
            stream = int.from_bytes(raw[5:9], "big") & 0x7FFFFFFF
            frames.append((raw[3], raw[4], stream, raw[9:], raw))
        return frames


class Half:
    """One direction of a connection: its frames and its header blocks, decoded."""

    def __init__(self, client):
        self.frames = Frames(preface=client)
        self.decoder = Decoder()
        self.block = None
        # Bytes fed and not yet handed out in a unit: all of them, in order, are
        # what a reader that gives up must still forward.
        self.pending = bytearray()

    def feed(self, data):
        """Units of `data`: `(raw, stream, headers)`, where `headers` is a dict of a
        whole header block (the raw bytes of all its frames) or None (any other
        frame). A header block not yet whole is held until it is."""
        self.pending += data
        units = []
        for kind, flags, stream, payload, raw in self.frames.feed(data):
            if kind in (HEADERS, PUSH_PROMISE):
                if self.block is not None:
                    raise WireError("a header block inside another")
                self.block = [stream, bytearray(), []]
            elif kind == CONTINUATION:
                if self.block is None or self.block[0] != stream:
                    raise WireError("a CONTINUATION out of its block")
            else:
                if self.block is not None:
                    raise WireError("a frame inside a header block")
                units.append((raw, stream, None))
                continue
            self.block[1] += _fragment(kind, flags, payload)
            self.block[2].append(raw)
            if flags & END_HEADERS:
                stream, fragment, raws = self.block
                self.block = None
                headers = dict(self.decoder.decode(bytes(fragment)))
                units.append((b"".join(raws), stream, headers))
        del self.pending[:sum(len(raw) for raw, _, _ in units)]
        return units


def method(headers):
    """The Firestore method a request's headers call (`Commit`, `Rollback`, ...), or
    None."""
    path = (headers or {}).get(b":path", b"")
    return path[len(SERVICE):].decode("ascii", "replace") if path.startswith(SERVICE) else None

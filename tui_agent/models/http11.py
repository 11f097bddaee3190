"""The direct model path's HTTP/1.1: an ``httpx.AsyncBaseTransport`` with a keep-alive pool, on
``asyncio_backend``'s connections.

Why our own: the direct path talks to one kind of server (OpenAI-compatible, HTTP/1.1, a JSON
``POST`` answered by an event stream), and under it httpcore's pool (anyio locks, traces) and
h11's state machine cost ~0.27 ms of Python per request on a kept-alive connection, beside
~0.06 ms for this module (``benchmarks/bench_signal_speed.py`` prints the HTTP wake beside raw
httpx and a bare socket), and they ran again for every read of a streamed answer. A woken
run's first delta waited on all of it (issue 22). httpx stays the interface: requests and
responses are ``httpx``'s, errors are httpx's (``ConnectError``, ``ReadTimeout``,
``RemoteProtocolError``…, what ``openai_http`` retries and reports), and the client's
timeouts (``request.extensions["timeout"]``) hold.

What it speaks: HTTP/1.1 over TCP or TLS, one request at a time per connection (no
pipelining), the whole request in one write; a response framed by ``Content-Length``, by
``Transfer-Encoding: chunked`` or by the connection's close (RFC 9112 section 6.3), interim
1xx answers skipped. A chunked body is decoded a read at a time: every chunk one read brought
is handed on as one piece (chunk boundaries carry no meaning in HTTP/1.1), so a coalesced
read of four events climbs the stream once. What it does not understand (a status line that
is not HTTP/1.x, a malformed header, a transfer coding other than ``chunked``, conflicting
lengths, a head over 64 KiB) is a ``RemoteProtocolError`` naming it, and that connection is
closed. A connection is kept for the next request when its answer was read to the end and
neither side said ``Connection: close``; an idle one the server closed (or sent anything on)
is not reused. Tested in ``tests/test_http11.py`` and by every direct-path test.
"""

from __future__ import annotations

import asyncio
import math
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tui_agent.models.asyncio_backend import AsyncioBackend, AsyncioStream

_READ_SIZE = 64 * 1024
_LONGEST_HEAD = 64 * 1024  # a response head longer than this is refused
_LONGEST_LINE = 4096  # a chunk-size or trailer line longer than this is refused
_DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]  # scheme, host, port

# How a response body ends (RFC 9112 section 6.3).
_EMPTY, _LENGTH, _CHUNKED, _UNTIL_CLOSE = "empty", "length", "chunked", "until close"


class Http11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 requests on a pool of kept-alive connections (``limits``: at most
    ``max_connections`` open, ``max_keepalive_connections`` of them idle, each idle for at most
    ``keepalive_expiry`` seconds). ``https`` is verified with ``ssl_context``."""

    def __init__(self, limits: httpx.Limits, ssl_context: ssl.SSLContext,
                 backend: AsyncioBackend | None = None) -> None:
        self._ssl = ssl_context
        self._backend = backend or AsyncioBackend()
        self._most_open = limits.max_connections or math.inf
        self._most_idle = (math.inf if limits.max_keepalive_connections is None
                           else limits.max_keepalive_connections)
        self._expiry = math.inf if limits.keepalive_expiry is None else limits.keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}
        self._every: set[_Connection] = set()  # every connection open, idle or in use
        self._waiting: deque[asyncio.Future[None]] = deque()  # for a connection slot
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        connection = await self._connection(_origin(request.url), timeouts)
        try:
            head = await connection.exchange(request, timeouts)
        except BaseException:
            self._drop(connection)
            raise
        body = _Body(self, connection, request, head)
        return httpx.Response(head.status, headers=head.headers, stream=body, request=request,
                              extensions={"http_version": head.version,
                                          "reason_phrase": head.reason})

    async def aclose(self) -> None:
        """Close every connection, idle or in use (a response still streaming ends with a
        ``ReadError``), as httpcore's pool does."""
        self._closed = True
        self._idle.clear()
        for connection in list(self._every):
            self._drop(connection)

    # -- the pool ------------------------------------------------------------------------------
    async def _connection(self, origin: Origin, timeouts: dict[str, float | None]
                          ) -> _Connection:
        """An idle connection to ``origin`` still good to use, else a new one once the pool
        has room for it (``PoolTimeout`` past the pool timeout)."""
        loop = asyncio.get_running_loop()
        while True:
            if self._closed:  # before, or while this request waited for room
                raise RuntimeError("the HTTP transport was closed")
            idle = self._idle.get(origin)
            while idle:
                connection = idle.pop()  # the most recently used: the least likely stale
                if connection.usable(loop.time() - self._expiry):
                    return connection
                self._drop(connection)
            if len(self._every) < self._most_open or self._close_oldest_idle():
                break
            await self._wait_for_room(timeouts.get("pool"))
        opening = _Connection(origin)
        self._every.add(opening)  # its place in the pool, taken while it connects
        try:
            await self._connect(opening, timeouts.get("connect"))
        except BaseException:
            self._drop(opening)
            raise
        return opening

    async def _connect(self, connection: _Connection, timeout: float | None) -> None:
        scheme, host, port = connection.origin
        stream = await self._backend.connect_tcp(host, port, timeout=timeout)
        connection.connected(stream)  # closed with the connection from now on
        if scheme == "https":
            connection.connected(await stream.start_tls(self._ssl, server_hostname=host,
                                                        timeout=timeout))

    async def _wait_for_room(self, timeout: float | None) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await waiter
        except TimeoutError:
            if waiter.done() and not waiter.cancelled():  # room came as time ran out: pass it on
                self._make_room()
            raise httpx.PoolTimeout(
                f"no connection free within {timeout:g} s ({len(self._every)} open)") from None
        finally:
            if waiter in self._waiting:
                self._waiting.remove(waiter)

    def _make_room(self) -> None:
        """A connection was closed or went idle: the first request waiting looks again."""
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _close_oldest_idle(self) -> bool:
        oldest: _Connection | None = None
        for connections in self._idle.values():
            for connection in connections:
                if oldest is None or connection.idle_since < oldest.idle_since:
                    oldest = connection
        if oldest is None:
            return False
        self._idle[oldest.origin].remove(oldest)
        self._drop(oldest)
        return True

    def release(self, connection: _Connection, reusable: bool) -> None:
        """A response ended: its connection goes back to the pool if it may carry another
        request, else it is closed."""
        idle = sum(len(connections) for connections in self._idle.values())
        if reusable and not self._closed and idle < self._most_idle:
            connection.idle_since = asyncio.get_running_loop().time()
            self._idle.setdefault(connection.origin, []).append(connection)
            self._make_room()
            return
        self._drop(connection)

    def _drop(self, connection: _Connection) -> None:
        """Close ``connection`` (a read waiting on it ends) and free its place in the pool."""
        if connection.closed:
            return
        connection.closed = True
        self._every.discard(connection)
        connection.close()
        self._make_room()


class _Head:
    """A response's status line and headers."""

    __slots__ = ("headers", "keep_alive", "reason", "status", "version")

    def __init__(self, version: bytes, status: int, reason: bytes,
                 headers: list[tuple[bytes, bytes]]) -> None:
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
        self.keep_alive = version == b"HTTP/1.1" and not _says_close(headers)


class _Connection:
    """One connection of the pool: a request's exchange on it, and what was read past the head
    (the start of the body)."""

    __slots__ = ("_stream", "closed", "idle_since", "origin", "rest")

    def __init__(self, origin: Origin) -> None:
        self.origin = origin
        self._stream: AsyncioStream | None = None  # once connected
        self.rest = b""
        self.idle_since = 0.0
        self.closed = False

    @property
    def stream(self) -> AsyncioStream:
        assert self._stream is not None, "not connected"
        return self._stream

    def connected(self, stream: AsyncioStream) -> None:
        self._stream = stream

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()

    def usable(self, idle_after: float) -> bool:
        """Idle since ``idle_after`` or later, and the server has neither closed it nor sent
        anything on it since."""
        return self.idle_since >= idle_after and not self.stream.is_readable()

    async def exchange(self, request: httpx.Request, timeouts: dict[str, float | None]
                       ) -> _Head:
        """Send ``request`` whole, and read the head of its answer."""
        try:
            content = request.content
        except httpx.RequestNotRead:
            content = await request.aread()
        await self.stream.write(_request_head(request) + content, timeouts.get("write"))
        data = b""
        while True:
            end = data.find(b"\r\n\r\n")
            if end < 0:
                if len(data) > _LONGEST_HEAD:
                    raise httpx.RemoteProtocolError("the response head is over 64 KiB",
                                                    request=request)
                more = await self.stream.read(_READ_SIZE, timeouts.get("read"))
                if not more:
                    raise httpx.RemoteProtocolError(
                        "Server disconnected without sending a response.", request=request)
                data += more
                continue
            head = _parse_head(data[:end], request)
            data = data[end + 4:]
            if 100 <= head.status < 200:  # an interim answer: the real one follows
                if head.status == 101:
                    raise httpx.RemoteProtocolError("the server switched protocols (101)",
                                                    request=request)
                continue
            self.rest = data
            return head


class _Body(httpx.AsyncByteStream):
    """A response's body as it comes, framed by its head; the connection goes back to the pool
    (or is closed) when the body has been read to the end, or is closed with the response."""

    def __init__(self, transport: Http11Transport, connection: _Connection,
                 request: httpx.Request, head: _Head) -> None:
        self._transport = transport
        self._connection = connection
        self._request = request
        self._framing, self._length = _framing(request.method, head, request)
        self._keep_alive = head.keep_alive and not _says_close(request.headers.raw)
        self._ended = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._framing == _EMPTY:
            self._end(reusable=not self._connection.rest)
            return
        pieces = (self._decoded(ChunkedDecoder(self._request)) if self._framing == _CHUNKED
                  else self._decoded(_SizedBody(self._length)) if self._framing == _LENGTH
                  else self._until_close())
        try:
            async for piece in pieces:
                yield piece
        except BaseException:
            await self.aclose()
            raise

    async def _decoded(self, decoder: ChunkedDecoder | _SizedBody) -> AsyncIterator[bytes]:
        """The body through ``decoder`` (by chunks or by length), read until it is done."""
        data = self._connection.rest
        self._connection.rest = b""
        while True:
            piece = decoder.feed(data) if data else b""
            if decoder.done:
                self._end(reusable=not decoder.extra)
                if piece:
                    yield piece
                return
            if piece:
                yield piece
            data = await self._read()
            if not data:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body: "
                    + decoder.short(), request=self._request)

    async def _until_close(self) -> AsyncIterator[bytes]:
        data = self._connection.rest
        self._connection.rest = b""
        while data:
            yield data
            data = await self._read()
        self._end(reusable=False)

    async def _read(self) -> bytes:
        # Read each time: the model's watchdog lifts the read timeout once the answer started.
        timeout = self._request.extensions.get("timeout", {}).get("read")
        return await self._connection.stream.read(_READ_SIZE, timeout)

    def _end(self, reusable: bool) -> None:
        if not self._ended:
            self._ended = True
            self._transport.release(self._connection, reusable and self._keep_alive)

    async def aclose(self) -> None:
        """Closed before its end (an abort, an error, a reader that stopped): the connection
        cannot carry another request."""
        if not self._ended:
            self._ended = True
            self._transport.release(self._connection, reusable=False)  # closes it


class ChunkedDecoder:
    """A chunked body (RFC 9112 section 7.1) decoded as it comes: :meth:`feed` returns the data
    of every chunk (or part of one) the bytes given carry, as one piece. ``done`` once the last
    chunk and the trailers have come; ``extra`` holds what came after them."""

    __slots__ = ("_left", "_line", "_request", "_state", "done", "extra")

    _SIZE, _DATA, _DATA_END, _TRAILER = range(4)

    def __init__(self, request: httpx.Request | None = None) -> None:
        self._request = request
        self._state = self._SIZE
        self._line = b""  # the start of a line whose end has not come
        self._left = 0  # bytes of the current chunk still to come
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        pieces: list[bytes] = []
        pos, size = 0, len(data)
        while pos < size and not self.done:
            if self._state == self._DATA:
                end = min(size, pos + self._left)
                pieces.append(data[pos:end])
                self._left -= end - pos
                pos = end
                if not self._left:
                    self._state = self._DATA_END
                continue
            newline = data.find(b"\n", pos)
            if newline < 0:
                self._line += data[pos:]
                if len(self._line) > _LONGEST_LINE:
                    raise self._error("a chunk line is over 4 KiB")
                break
            line = self._line + data[pos:newline + 1]
            self._line = b""
            pos = newline + 1
            self._on_line(line)
        if self.done:
            self.extra = data[pos:]
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _on_line(self, line: bytes) -> None:
        if not line.endswith(b"\r\n"):
            raise self._error(f"a chunk line does not end with CRLF: {line[:40]!r}")
        if self._state == self._DATA_END:
            if line != b"\r\n":
                raise self._error("a chunk's data is longer than its size")
            self._state = self._SIZE
        elif self._state == self._SIZE:
            digits = line[:-2].partition(b";")[0].strip(b" \t")
            if not 0 < len(digits) <= 16 or digits.strip(b"0123456789abcdefABCDEF"):
                raise self._error(f"not a chunk size: {line[:40]!r}")
            self._left = int(digits, 16)
            self._state = self._DATA if self._left else self._TRAILER
        elif line == b"\r\n":  # the blank line after the trailers: the body's end
            self.done = True

    def _error(self, what: str) -> httpx.RemoteProtocolError:
        return httpx.RemoteProtocolError(f"bad chunked body: {what}", request=self._request)

    def short(self) -> str:
        """What is missing, once the connection closed before the body's end."""
        return "incomplete chunked read"


class _SizedBody:
    """A body of ``length`` bytes (``Content-Length``) as it comes, as :class:`ChunkedDecoder`
    gives one: :meth:`feed` returns the body's part of the bytes given; ``done`` once all
    came, ``extra`` what came after."""

    __slots__ = ("_left", "_length", "done", "extra")

    def __init__(self, length: int) -> None:
        self._length = self._left = length
        self.done = False
        self.extra = b""

    def feed(self, data: bytes) -> bytes:
        piece = data[:self._left]
        self._left -= len(piece)
        if not self._left:
            self.done = True
            self.extra = data[len(piece):]
        return piece

    def short(self) -> str:
        return f"received {self._length - self._left} bytes, expected {self._length}"


def _origin(url: httpx.URL) -> Origin:
    scheme = url.scheme
    if scheme not in _DEFAULT_PORTS:
        raise httpx.UnsupportedProtocol(f"the direct model path speaks http and https, not "
                                        f"{scheme!r}: {url}")
    return scheme, url.host, url.port or _DEFAULT_PORTS[scheme]


def _request_head(request: httpx.Request) -> bytes:
    lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if b"\n" in value or b"\r" in value or b"\n" in name or b"\r" in name:
            raise httpx.LocalProtocolError(
                f"the header {name.decode('latin-1')!r} holds a line break", request=request)
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


def _parse_head(head: bytes, request: httpx.Request) -> _Head:
    status_line, *lines = head.split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    code, _, reason = rest.partition(b" ")
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise httpx.RemoteProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}",
                                        request=request)
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip(b" \t"):
            raise httpx.RemoteProtocolError(f"a malformed header line: {line[:80]!r}",
                                            request=request)
        headers.append((name, value.strip(b" \t")))
    return _Head(version, int(code), reason, headers)


def _says_close(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() == b"connection" and b"close" in value.lower()
               for name, value in headers)


def _framing(method: str, head: _Head, request: httpx.Request) -> tuple[str, int]:
    """How the body of ``head``, the answer to a ``method`` request, ends (RFC 9112 6.3)."""
    if method == "HEAD" or head.status in (204, 304):
        return _EMPTY, 0
    codings = [value for name, value in head.headers if name.lower() == b"transfer-encoding"]
    if codings:
        named = [coding.strip().lower() for coding in b",".join(codings).split(b",")]
        if named != [b"chunked"]:
            raise httpx.RemoteProtocolError(
                f"unsupported Transfer-Encoding {b', '.join(named).decode('latin-1')!r}",
                request=request)
        return _CHUNKED, 0
    lengths = [value for name, value in head.headers if name.lower() == b"content-length"]
    if lengths:
        given = {length.strip() for length in b",".join(lengths).split(b",")}
        value = given.pop() if len(given) == 1 else b""
        if not value.isdigit():
            raise httpx.RemoteProtocolError(
                f"a bad Content-Length: {b', '.join(lengths).decode('latin-1')!r}",
                request=request)
        return (_LENGTH, int(value)) if int(value) else (_EMPTY, 0)
    return _UNTIL_CLOSE, 0


def transport(limits: httpx.Limits, ssl_context: ssl.SSLContext | None = None) -> Any:
    """The direct path's transport: ``Http11Transport`` on ``asyncio_backend``, verifying TLS
    with httpx's default context (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``) unless one is
    given."""
    return Http11Transport(limits, ssl_context or httpx.create_ssl_context())

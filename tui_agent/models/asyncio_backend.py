"""An httpcore network backend on an asyncio ``Protocol``, with read coalescing, under the shared
``httpx.AsyncClient`` of the direct model path (``http_client``; TLS, HTTP/1.1, the pool and
keep-alive stay httpx's and httpcore's).

Why: a provider streaming 500 tokens a second sends 500 small TCP segments a second. Through
httpcore's default backend each costs a read through anyio (a cancel scope, and a
``pause_reading``/``resume_reading`` pair: two ``epoll_ctl`` calls) and a wake of the reading
task, then the whole httpx/h11/SSE stack for that one event. Four such streams took a third of
a core before anything was painted.

Read coalescing: each time bytes arrive, the socket *rests* (is not read) for
:data:`COALESCE_S`; what the server sends meanwhile waits in the kernel and is read, parsed and
handed on in one piece when the rest ends. The first bytes after a quiet spell (a response's
headers, the first token, a chunk after a pause) are read at once, and a new request ends a rest
at once, so only a fast stream is slowed: each delta is seen at most :data:`COALESCE_S` (25 ms,
a frame and a half at 60 fps, a third of the app's focused-pane tick) after it arrived: 8 ms
read a 500 tokens/s stream every event or two, 25 ms every three or four, and four such panes
took 68% of a core in the app at 8 ms, 60% at 25 ms (``benchmarks/bench_app_hours.py``).
``benchmarks/bench_direct_stream.py`` prints how late deltas were seen beside the CPU, with and
without coalescing. Over TLS the socket's own transport rests under the TLS one, so the records
wait in the kernel too.

The text deltas of one read are handed on as one (``openai_http``): each delta would climb
the run, its subscribers and the app on its own.

Chunk joining: a provider sends each SSE event as its own HTTP/1.1 chunk, and h11 yields one
``Data`` event per chunk, each climbing httpcore's and httpx's stream layers on its own, although
a coalesced read carried four or five. The stream joins the chunks of a chunked answer that one
read brought into one chunk before h11 sees them (:class:`_ChunkJoiner`: the same body bytes;
chunk boundaries carry no meaning in HTTP/1.1), so h11 and the layers run once per read.

It keeps httpcore's contract: ``read`` returns ``b""`` at the end of the stream and at most
``max_bytes``, raises ``httpcore.ReadError`` once the stream was closed (an abort closing the
response while a read waits) or the connection broke, ``ReadTimeout``/``WriteTimeout``/
``ConnectTimeout`` past a given timeout, ``ConnectError`` when no connection could be made;
``is_readable`` (how httpcore sees that the server closed a kept-alive connection) is true once
the server sent or closed anything. Tested in ``tests/test_asyncio_backend.py`` and by every
direct-path test (``tests/test_openai_http.py`` and the suites parametrised by ``route``).
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

COALESCE_S = 0.025  # the longest a waiting reader is kept from bytes that have arrived
_SEND_AT_ONCE = 64 * 1024  # unsent request bytes past this go out without waiting for more
SUSTAINED_S = 0.05  # an answer streams this long before its reads coalesce
_HIGH_WATER = 256 * 1024  # buffered bytes at which the socket stops being read
_HAPPY_EYEBALLS_S = 0.25  # as anyio's connect_tcp: try the next address after this


class _ReadBuffer(asyncio.Protocol):
    """What the event loop has read from one connection, and the reader waiting for it.

    Coalescing: each time bytes arrive the socket rests (is not read) for ``coalesce_s``; what
    the server sends meanwhile waits in the kernel and is read in one piece when the rest ends.
    The first bytes after a quiet spell are delivered at once. Over TLS it is the socket's own
    transport that rests, under the TLS one: the records wait in the kernel too, and are
    decrypted in one pass."""

    def __init__(self, loop: asyncio.AbstractEventLoop, coalesce_s: float) -> None:
        self.loop = loop
        self.coalesce_s = coalesce_s
        self.transport: Any = None  # what is written to and closed (the TLS one over TLS)
        self.socket_transport: Any = None  # what rests: the socket's own transport
        self.chunks: list[bytes] = []
        self.size = 0
        self.eof = False
        self.lost = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._resting: asyncio.TimerHandle | None = None  # the socket rests until this fires
        self._coalesce_from = float("inf")  # when this answer's reads start to coalesce
        self._full = False  # the buffer is at its high-water mark
        self._reading = True
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = self.socket_transport = transport

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        if self.size >= _HIGH_WATER:
            self._full = True
        if self.coalesce_s and self._resting is None:
            now = self.loop.time()
            if self._coalesce_from == float("inf"):  # the answer's first bytes
                self._coalesce_from = now + SUSTAINED_S
            elif now >= self._coalesce_from:
                self._resting = self.loop.call_at(now + self.coalesce_s, self._rested)
        self._set_reading()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def eof_received(self) -> None:
        self.eof = True
        self.wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.error = exc
        self.stop_resting()
        self.wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = self.loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    # -- reading on and off ------------------------------------------------------------------
    def _rested(self) -> None:
        self._resting = None
        self._set_reading()

    def new_request(self) -> None:
        """A request is sent on this connection: its answer is read as it comes, and coalesced
        only once it has streamed for SUSTAINED_S."""
        self._coalesce_from = float("inf")
        self.stop_resting()

    def stop_resting(self) -> None:
        """Read the socket again now."""
        if self._resting is not None:
            self._resting.cancel()
            self._resting = None
            self._set_reading()

    def closing(self) -> None:
        """The stream is being closed: no more resting (a TLS close reads the server's answer to
        it), and a waiting read ends now."""
        if self._resting is not None:
            self._resting.cancel()
            self._resting = None
        self._full = False
        self._set_reading()
        self.lost = True
        self.wake()

    def _set_reading(self) -> None:
        reading = self._resting is None and not self._full
        if reading != self._reading and not self.lost:
            self._reading = reading
            if reading:
                self.socket_transport.resume_reading()
            else:
                self.socket_transport.pause_reading()

    # -- for the stream ----------------------------------------------------------------------
    def wake(self) -> None:
        """Wake the waiting reader (bytes, the end, a break or a close)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self, max_bytes: int) -> bytes:
        chunks = self.chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        if len(data) > max_bytes:
            self.chunks = [data[max_bytes:]]
            data = data[:max_bytes]
        else:
            self.chunks = []
        self.size -= len(data)
        if self._full and self.size < _HIGH_WATER // 4:
            self._full = False
            self._set_reading()
        return data

    async def wait(self, timeout: float | None) -> None:
        """Until bytes arrive, the stream ends or breaks, or ``timeout`` (ReadTimeout)."""
        waiter = self._waiter = self.loop.create_future()
        timer = (self.loop.call_later(timeout, _expire, waiter) if timeout is not None
                 else None)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    async def drain(self, timeout: float | None) -> None:
        if self._drained is None:
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(self._drained)
        except TimeoutError:
            raise httpcore.WriteTimeout("timed out sending the request") from None


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(httpcore.ReadTimeout("timed out waiting for the response"))


# The joiner's states: not joining, in a response's head, in a chunked body.
_PASS, _HEAD, _BODY = 0, 1, 2
_LONGEST_HEAD = 64 * 1024  # a response head longer than this is passed on unread
_LONGEST_CHUNK_LINE = 4096  # a chunk-size line longer than this is passed on unread


class _ChunkJoiner:
    """Rejoins the chunks of a chunked HTTP/1.1 response body that one read brought into one
    chunk: same body bytes, fewer chunks.

    Why: a provider sends each SSE event as its own HTTP chunk, and h11 yields one ``Data``
    event per chunk, each climbing httpcore's and httpx's stream layers on its own, although a
    coalesced read carried four or five of them. Chunk boundaries carry no meaning in HTTP/1.1
    (any intermediary may re-chunk a body, RFC 9112 section 7.1); h11 (which still checks the
    framing it is given) sees one chunk per read instead. Nothing is held back but the start of a
    chunk-size line split between reads: the bytes of a chunk that has not all arrived are passed
    on at once, under a size line that covers the whole of that chunk.

    It joins only what it understands: the answer to an HTTP/1.1 request it saw written (not
    ``HEAD`` or ``CONNECT``), with a ``Transfer-Encoding`` ending in ``chunked``, a status not
    1xx, 204 or 304, and well-formed size lines. Anything else (and everything after a framing
    it does not understand, and after the body's last chunk) is passed on as it came, so h11
    sees and reports it as before."""

    __slots__ = ("_crlf", "_head", "_held", "_method", "_open", "_state")

    def __init__(self) -> None:
        self._state = _PASS
        self._method = b""
        self._head = b""  # the response head read so far (_HEAD)
        self._held = b""  # the start of a chunk-size line whose end has not come (_BODY)
        self._open = 0  # bytes of the current chunk still to come (_BODY)
        self._crlf = 0  # bytes of the CRLF after the current chunk still to come (_BODY)

    def request(self, data: bytes) -> None:
        """A request starts with ``data`` (its first write): its answer's body may be joined."""
        line, _, _ = data.partition(b"\r\n")
        method, _, rest = line.partition(b" ")
        joinable = rest.endswith(b" HTTP/1.1") and method not in (b"HEAD", b"CONNECT")
        self._state = _HEAD if joinable else _PASS
        self._method = method
        self._head = b""
        self._held = b""
        self._open = self._crlf = 0

    def held(self) -> bytes:
        """What is held back (the stream ended): passed on as it is, and nothing joined after."""
        held, self._held = self._held, b""
        self._state = _PASS
        return held

    def feed(self, data: bytes) -> bytes:
        """``data`` as read, its chunks joined: never longer than ``data`` plus what was held."""
        if self._state == _BODY:
            return self._body(data)
        if self._state == _HEAD:
            return self._head_of(data)
        return data

    def _head_of(self, data: bytes) -> bytes:
        seen = len(self._head)
        head = self._head + data
        end = head.find(b"\r\n\r\n")
        if end < 0:
            self._head = head if len(head) < _LONGEST_HEAD else b""
            if not self._head:
                self._state = _PASS
            return data
        end += 4
        self._head = b""
        status = head[9:12]
        if not head.startswith(b"HTTP/1.1 ") or not status.isdigit():
            self._state = _PASS
            return data
        code = int(status)
        split = end - seen  # where the head ends in data
        if 100 <= code < 200 and code != 101:  # an interim answer: the real head follows
            return data[:split] + self._head_of(data[split:])
        if code in (101, 204, 304) or not _is_chunked(head[:end]):  # 101: another protocol
            self._state = _PASS
            return data
        self._state = _BODY
        return data[:split] + self._body(data[split:]) if split < len(data) else data

    def _body(self, data: bytes) -> bytes:
        buf = self._held + data if self._held else data
        self._held = b""
        size = len(buf)
        out: list[bytes] = []
        pos = 0
        if self._open:  # the rest of a chunk that started in an earlier read, as it comes
            pos = min(self._open, size)
            out.append(buf[:pos])
            self._open -= pos
            if self._open:
                return buf
            self._crlf = 2
        if self._crlf:
            n = min(self._crlf, size - pos)
            out.append(buf[pos:pos + n])
            pos += n
            self._crlf -= n
            if self._crlf:
                return b"".join(out)
        payloads: list[bytes] = []
        declared = 0  # the joined chunk's size: its chunks', the last one whole
        rest = b""  # what follows the joined chunk, as it came
        while pos < size:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                if size - pos > _LONGEST_CHUNK_LINE:
                    self._state, rest = _PASS, buf[pos:]
                else:
                    self._held = buf[pos:]
                break
            length = _chunk_size(buf[pos:line_end])
            if length is None or length == 0:  # not understood, or the body's last chunk
                self._state, rest = _PASS, buf[pos:]
                break
            start = line_end + 2
            end = start + length
            if end + 2 <= size:
                if buf[end:end + 2] != b"\r\n":
                    self._state, rest = _PASS, buf[pos:]
                    break
                payloads.append(buf[start:end])
                declared += length
                pos = end + 2
                continue
            payloads.append(buf[start:end])  # the last chunk has not all come: it stays open
            declared += length
            if end <= size:
                self._crlf = end + 2 - size
                rest = buf[end:]  # the start of its CRLF
            else:
                self._open = end - size
            pos = size
            break
        if payloads:
            out.append(b"%x\r\n" % declared)
            out.extend(payloads)
            if not (self._open or self._crlf):
                out.append(b"\r\n")
        out.append(rest)
        return b"".join(out)


def _chunk_size(line: bytes) -> int | None:
    """The size a chunk-size line gives (its extensions are dropped), or None if it is not one
    (h11 then reports it)."""
    digits = line.partition(b";")[0].rstrip(b" \t")
    if not 0 < len(digits) <= 20 or digits.strip(b"0123456789abcdefABCDEF"):
        return None
    return int(digits, 16)


def _is_chunked(head: bytes) -> bool:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"transfer-encoding":
            return value.strip().lower().endswith(b"chunked")
    return False


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection: reads come from its :class:`_ReadBuffer`, writes go to the transport."""

    def __init__(self, transport: Any, buffer: _ReadBuffer) -> None:
        self._transport = transport
        self._buffer = buffer
        self._closed = False
        # A request's small writes (httpcore writes its headers, then its body), sent as one:
        # one segment and one wake of the server instead of two. Sent before the next read,
        # or on the loop's next turn, whichever comes first.
        self._unsent: list[bytes] = []
        self._send_soon: asyncio.Handle | None = None
        # The chunks of a chunked answer that one read brought are joined into one chunk.
        self._chunks = _ChunkJoiner()
        self._request_next = True  # the next write starts a request
        self._ready = b""  # joined bytes past a read's max_bytes, for the next read

    def _send_unsent(self) -> None:
        if self._send_soon is not None:
            self._send_soon.cancel()
            self._send_soon = None
        if self._unsent and not self._closed and not self._transport.is_closing():
            data = self._unsent[0] if len(self._unsent) == 1 else b"".join(self._unsent)
            self._transport.write(data)
        self._unsent = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._unsent:
            self._send_unsent()
        if self._ready:
            return self._give(b"", max_bytes)
        buffer = self._buffer
        while True:
            if not buffer.chunks:
                if not (buffer.eof or buffer.lost or self._closed):
                    await buffer.wait(timeout)
                if self._closed:
                    raise httpcore.ReadError("the connection was closed")
                if not buffer.chunks:
                    held = self._chunks.held()  # the stream ended inside a chunk-size line
                    if held:
                        return self._give(held, max_bytes)
                    if buffer.error is not None:
                        raise httpcore.ReadError(str(buffer.error) or type(buffer.error).__name__)
                    return b""  # the end of the stream
            data = self._chunks.feed(buffer.take(max_bytes))
            if data:  # else all it brought was the start of a chunk-size line: read on
                return self._give(data, max_bytes)

    def _give(self, data: bytes, max_bytes: int) -> bytes:
        """``data`` after what was ready, at most ``max_bytes`` of it (the rest is ready)."""
        self._request_next = True  # the answer is being read: a write starts the next request
        if self._ready:
            data = self._ready + data
        if len(data) > max_bytes:
            self._ready = data[max_bytes:]
            return data[:max_bytes]
        self._ready = b""
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._closed or self._buffer.lost or self._transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        self._buffer.new_request()
        if self._request_next:
            self._request_next = False
            self._chunks.request(buffer)
        self._unsent.append(buffer)
        if sum(len(part) for part in self._unsent) >= _SEND_AT_ONCE:
            self._send_unsent()  # a large body: sent now, with what waited before it
        elif self._send_soon is None:
            self._send_soon = self._buffer.loop.call_soon(self._send_unsent)
        await self._buffer.drain(timeout)
        if self._buffer.lost and self._buffer.error is not None:
            raise httpcore.WriteError(str(self._buffer.error))

    async def aclose(self) -> None:
        if not self._closed:
            self._send_unsent()
            self._closed = True
            self._buffer.closing()  # a read waiting on it raises ReadError now
            self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = self._buffer.loop
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(self._transport, self._buffer, ssl_context,
                                           server_hostname=server_hostname)
        except TimeoutError:
            await self.aclose()
            raise httpcore.ConnectTimeout("timed out in the TLS handshake") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpcore.ConnectError(str(exc)) from exc
        if tls is None:
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        self._buffer.transport = tls
        return AsyncioStream(tls, self._buffer)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return self._is_readable()
        names = {"ssl_object": "ssl_object", "client_addr": "sockname",
                 "server_addr": "peername", "socket": "socket"}
        return self._transport.get_extra_info(names[info]) if info in names else None

    def _is_readable(self) -> bool:
        """True if the server sent something or closed: an idle connection not to reuse. The
        loop may not have seen a close yet, so an idle socket is polled once."""
        buffer = self._buffer
        if self._ready or buffer.chunks or buffer.eof or buffer.lost or self._closed:
            return True
        sock = self._transport.get_extra_info("socket")
        if sock is None or sock.fileno() < 0:
            return True
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Opens :class:`AsyncioStream` connections on the running loop."""

    def __init__(self, coalesce_s: float | None = None) -> None:
        self.coalesce_s = COALESCE_S if coalesce_s is None else coalesce_s

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        return await self._connect(
            loop.create_connection(self._buffer_factory(loop), host, port, local_addr=local,
                                   happy_eyeballs_delay=_HAPPY_EYEBALLS_S),
            timeout, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        return await self._connect(loop.create_unix_connection(self._buffer_factory(loop), path),
                                   timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def _buffer_factory(self, loop: asyncio.AbstractEventLoop) -> Any:
        return lambda: _ReadBuffer(loop, self.coalesce_s)

    async def _connect(self, opening: Any, timeout: float | None,
                       socket_options: Iterable[Any] | None) -> AsyncioStream:
        try:
            async with asyncio.timeout(timeout):
                transport, buffer = await opening
        except TimeoutError:
            raise httpcore.ConnectTimeout("timed out connecting") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock: socket.socket | None = transport.get_extra_info("socket")
        for option in socket_options or ():
            if sock is not None:
                sock.setsockopt(*option)
        return AsyncioStream(transport, buffer)


def asyncio_transport(limits: Any, ssl_context: ssl.SSLContext | None = None) -> Any:
    """An ``httpx.AsyncHTTPTransport`` whose connection pool runs on :class:`AsyncioBackend`;
    TLS, HTTP/1.1, keep-alive and the pool are httpx's and httpcore's as before. The SSL context
    is httpx's default (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``) unless one is given."""
    import httpx

    context = ssl_context or httpx.create_ssl_context()

    class AsyncioTransport(httpx.AsyncHTTPTransport):
        def __init__(self) -> None:
            super().__init__(verify=context, limits=limits)
            self._pool = httpcore.AsyncConnectionPool(
                ssl_context=context,
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=AsyncioBackend(),
            )

    return AsyncioTransport()

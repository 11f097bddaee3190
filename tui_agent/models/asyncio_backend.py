"""The direct model path's connections: an asyncio ``Protocol`` with read coalescing, under its
HTTP/1.1 transport (``http11``; the pool, keep-alive and the HTTP framing are there).

Why: a provider streaming 500 tokens a second sends 500 small TCP segments a second. Through
httpx's default stack each cost a read through anyio (a cancel scope, and a
``pause_reading``/``resume_reading`` pair: two ``epoll_ctl`` calls) and a wake of the reading
task, then the whole httpx/httpcore/h11/SSE stack for that one event. Four such streams took a
third of a core before anything was painted.

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

A stream's contract (what ``http11`` relies on): ``read`` returns ``b""`` at the end of the
stream and at most ``max_bytes``, raises ``httpx.ReadError`` once the stream was closed (an
abort closing the response while a read waits) or the connection broke, ``ReadTimeout``/
``WriteTimeout``/``ConnectTimeout`` past a given timeout, ``ConnectError`` when no connection
could be made; ``is_readable`` (how the pool sees that the server closed a kept-alive
connection) is true once the server sent or closed anything. Tested in
``tests/test_asyncio_backend.py`` and by every direct-path test (``tests/test_openai_http.py``
and the suites parametrised by ``route``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpx

COALESCE_S = 0.025  # the longest a waiting reader is kept from bytes that have arrived
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
            raise httpx.WriteTimeout("timed out sending the request") from None


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout("timed out waiting for the response"))


class AsyncioStream:
    """One connection: reads come from its :class:`_ReadBuffer`, writes go to the transport."""

    def __init__(self, transport: Any, buffer: _ReadBuffer) -> None:
        self._transport = transport
        self._buffer = buffer
        self._closed = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        buffer = self._buffer
        if not buffer.chunks:
            if not (buffer.eof or buffer.lost or self._closed):
                await buffer.wait(timeout)
            if self._closed:
                raise httpx.ReadError("the connection was closed")
            if not buffer.chunks:
                if buffer.error is not None:
                    raise httpx.ReadError(str(buffer.error) or type(buffer.error).__name__)
                return b""  # the end of the stream
        return buffer.take(max_bytes)

    async def write(self, data: bytes, timeout: float | None = None) -> None:
        """Send ``data`` (a whole request: one segment, one wake of the server)."""
        if not data:
            return
        if self._closed or self._buffer.lost or self._transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self._buffer.new_request()
        self._transport.write(data)
        await self._buffer.drain(timeout)
        if self._buffer.lost and self._buffer.error is not None:
            raise httpx.WriteError(str(self._buffer.error))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._buffer.closing()  # a read waiting on it raises ReadError now
            self._transport.close()

    async def aclose(self) -> None:
        self.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> AsyncioStream:
        loop = self._buffer.loop
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(self._transport, self._buffer, ssl_context,
                                           server_hostname=server_hostname)
        except TimeoutError:
            await self.aclose()
            raise httpx.ConnectTimeout("timed out in the TLS handshake") from None
        except (OSError, ssl.SSLError) as exc:
            await self.aclose()
            raise httpx.ConnectError(str(exc)) from exc
        if tls is None:
            raise httpx.ConnectError("the connection closed during the TLS handshake")
        self._buffer.transport = tls
        return AsyncioStream(tls, self._buffer)

    def get_extra_info(self, name: str) -> Any:
        """The transport's ``get_extra_info`` (``peername``, ``sockname``, ``ssl_object``…)."""
        return self._transport.get_extra_info(name)

    def is_readable(self) -> bool:
        """True if the server sent something or closed: an idle connection not to reuse. The
        loop may not have seen a close yet, so an idle socket is polled once."""
        buffer = self._buffer
        if buffer.chunks or buffer.eof or buffer.lost or self._closed:
            return True
        sock = self._transport.get_extra_info("socket")
        if sock is None or sock.fileno() < 0:
            return True
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)


class AsyncioBackend:
    """Opens :class:`AsyncioStream` connections on the running loop."""

    def __init__(self, coalesce_s: float | None = None) -> None:
        self.coalesce_s = COALESCE_S if coalesce_s is None else coalesce_s

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[tuple[int, int, int]] | None = None,
    ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        # An address has one way to reach it: no race of attempts. (asyncio's race, for a
        # name, cancels its attempts without waiting for them: after a timeout they end a few
        # passes of the loop later.)
        race = None if _is_address(host) else _HAPPY_EYEBALLS_S
        opening = loop.create_connection(
            lambda: _ReadBuffer(loop, self.coalesce_s), host, port, local_addr=local,
            happy_eyeballs_delay=race)
        try:
            async with asyncio.timeout(timeout):
                transport, buffer = await opening
        except TimeoutError:
            raise httpx.ConnectTimeout("timed out connecting") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        sock: socket.socket | None = transport.get_extra_info("socket")
        for option in socket_options or ():
            if sock is not None:
                sock.setsockopt(*option)
        return AsyncioStream(transport, buffer)


def _is_address(host: str) -> bool:
    """An IPv4 or IPv6 address rather than a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True

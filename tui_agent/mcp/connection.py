"""One MCP server's connection: started on first use, restarted on the call after it was lost,
every wait bounded.

The SDK's transports and session are anyio contexts that must be entered and left by one task,
so each connection has an *owner* task that opens them, hands the session over and holds them
open until the connection is closed; calls are made from any task of the same event loop.
Starting is bounded by ``connect_timeout``, each call by ``timeout``; a server that does not
start, exits or does not answer in time is an :class:`MCPServerError` naming it (and the tool),
never a wait without end. A stdio server's stderr goes to a file of its own (never the
terminal, where the app draws); its last line is quoted when the server fails. Tested by
tests/test_mcp.py.

The SDK (``mcp``) is imported here, when a connection starts, and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from tui_agent.mcp.errors import MCPServerError
from tui_agent.settings_mcp import MCPServerSettings

#: How long closing waits for the SDK to stop a server (it kills the process after 2 s).
CLOSE_S = 5.0
#: Our own bound on a call is the server's ``timeout`` plus this (the SDK's comes first).
GRACE_S = 1.0
#: A session unused this long is pinged before a call (a server may have exited meanwhile) …
IDLE_S = 1.0
#: … and the ping waits at most this long.
PING_S = 5.0


class ServerConnection:
    """The session of one server (``name``) given by ``config``."""

    def __init__(
        self, name: str, config: MCPServerSettings, *, timeout: float, connect_timeout: float
    ) -> None:
        self.name = name
        self.config = config
        self.timeout = config.timeout or timeout
        self.connect_timeout = config.connect_timeout or connect_timeout
        self._session: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stderr: Path | None = None
        self._used = 0.0  # when the session last answered (monotonic)

    @property
    def connected(self) -> bool:
        return self._session is not None and self._owner is not None and not self._owner.done()

    # -- using it ------------------------------------------------------------------------------

    async def list_tools(self) -> list[Any]:
        """The server's tools (``mcp.types.Tool``), every page of them."""
        session = await self.session()
        tools: list[Any] = []
        cursor: str | None = None
        for _ in range(100):  # a server whose pages never end cannot hold us
            params = None
            if cursor is not None:
                from mcp.types import PaginatedRequestParams

                params = PaginatedRequestParams(cursor=cursor)
            page = await self._bounded(
                session, session.list_tools(params=params), "listing its tools"
            )
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's ``CallToolResult`` for one call; an :class:`MCPServerError` naming the
        server and the tool if it cannot be had in time."""
        session = await self.session()
        call = session.call_tool(tool, arguments, read_timeout_seconds=self.timeout)
        return await self._bounded(session, call, f"the call to tool {tool!r}")

    async def _bounded(self, session: Any, request: Any, what: str) -> Any:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        since = self._stderr_size()  # what the server says about this request comes after
        try:
            async with asyncio.timeout(self.timeout + GRACE_S):
                result = await request
            self._used = time.monotonic()
            return result
        except TimeoutError:
            raise self._late(what) from None
        except MCPError as error:
            if error.code == REQUEST_TIMEOUT:
                raise self._late(what) from None
            if error.code == CONNECTION_CLOSED:
                tail = self._stderr_tail(since)
                await self._lost(session)  # the next call starts it again
                raise MCPServerError(
                    f"MCP server {self.name!r} went away during {what} (it "
                    f"exited or closed the connection){tail}"
                ) from None
            raise MCPServerError(
                f"MCP server {self.name!r}: {what} failed: {error.message}"
            ) from None
        except Exception as error:  # the transport's own (a refused connection, a bad reply)
            await self._lost(session)
            raise MCPServerError(
                f"MCP server {self.name!r}: {what} failed: {describe(error)}"
            ) from None

    async def _lost(self, session: Any) -> None:
        """Close the connection if ``session`` is still its session (not a newer one)."""
        if self._session is session:
            await self.close()

    def _late(self, what: str) -> MCPServerError:
        return MCPServerError(
            f"MCP server {self.name!r} did not answer {what} within "
            f"{self.timeout:g} s (its timeout)"
        )

    # -- starting and stopping -----------------------------------------------------------------

    async def session(self) -> Any:
        """The live session, started (or restarted) first if need be."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a new event loop: what the old one held is gone with it
            self._forget()
            self._loop, self._lock = loop, asyncio.Lock()
        assert self._lock is not None
        async with self._lock:
            if self.connected and not await self._still_there():
                await self.close()  # it went away while idle: start it again, unasked
            if not self.connected:
                await self.close()
                await self._start()
            self._used = time.monotonic()
            return self._session

    async def _still_there(self) -> bool:
        """After ``IDLE_S`` unused, a ping: False only if the connection is gone (a server that
        exited between calls), so that the next call does not fail for it. A ping that is not
        answered in time says nothing (a busy server): the call goes ahead."""
        if time.monotonic() - self._used < IDLE_S:
            return True
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED

        try:
            async with asyncio.timeout(min(self.timeout, PING_S)):
                await self._session.send_ping()
        except MCPError as error:
            return error.code != CONNECTION_CLOSED
        except Exception:  # a timeout, or the transport's own: let the call tell
            return True
        return True

    async def _start(self) -> None:
        ready: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(_retrieved)  # a failure after we stopped waiting is moot
        closing = self._closing = asyncio.Event()
        self._owner = asyncio.create_task(self._own(ready, closing), name=f"mcp server {self.name}")
        try:
            async with asyncio.timeout(self.connect_timeout):
                self._session = await asyncio.shield(ready)
        except TimeoutError:
            tail = self._stderr_tail()
            await self.close()
            raise MCPServerError(
                f"MCP server {self.name!r} {self._not_started} within "
                f"{self.connect_timeout:g} s (its connect_timeout){tail}"
            ) from None
        except Exception as error:
            tail = self._stderr_tail()
            await self.close()
            raise MCPServerError(
                f"MCP server {self.name!r} {self._not_started}: {describe(error)}{tail}"
            ) from None

    @property
    def _not_started(self) -> str:
        return "could not be reached" if self.config.url is not None else "did not start"

    async def _own(self, ready: asyncio.Future[Any], closing: asyncio.Event) -> None:
        """Open the transport and the session, hand the session over, hold both until
        ``closing`` is set (or this task is cancelled), then leave them in this same task."""
        try:
            _quiet_sdk_logs()
            from mcp import ClientSession

            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(read, write, read_timeout_seconds=self.connect_timeout)
                )
                await session.initialize()
                ready.set_result(session)
                await closing.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as error:  # handed to the starter (moot once it stopped waiting)
            if not ready.done():
                ready.set_exception(
                    error if isinstance(error, Exception) else RuntimeError(describe(error))
                )

    def _transport(self) -> Any:
        config = self.config
        if config.url is not None:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(config.url)
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=config.command or "",
            args=list(config.args),
            env=dict(config.env) or None,
            cwd=config.cwd,
        )
        return _StdioWithLog(self, params, stdio_client)

    def open_stderr(self) -> Any:
        """A fresh file for the server's stderr (append mode: the server's writes and our reads
        never move each other's place)."""
        self._drop_stderr()
        handle, name = tempfile.mkstemp(prefix=f"tui-agent-mcp-{self.name}-", suffix=".log")
        os.close(handle)
        self._stderr = Path(name)
        return self._stderr.open("a", encoding="utf-8", errors="replace")

    def _stderr_size(self) -> int:
        try:
            return self._stderr.stat().st_size if self._stderr is not None else 0
        except OSError:
            return 0

    def _stderr_tail(self, since: int = 0) -> str:
        """``" (stderr: <its last line>)"`` of what the server wrote there after byte
        ``since``, or ""."""
        if self._stderr is None:
            return ""
        try:
            with self._stderr.open("rb") as file:
                file.seek(since)
                lines = file.read().decode("utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        last = next((line.strip() for line in reversed(lines) if line.strip()), "")
        return f" (stderr: {last[:300]})" if last else ""

    def _drop_stderr(self) -> None:
        if self._stderr is not None:
            self._stderr.unlink(missing_ok=True)
            self._stderr = None

    async def close(self) -> None:
        """Stop the server (or leave it, for a URL), waiting at most ``CLOSE_S``; the next use
        starts it again."""
        owner, closing, session = self._owner, self._closing, self._session
        self._session = self._owner = self._closing = None
        if owner is not None and closing is not None and not owner.done():
            closing.set()  # it leaves the session and the transport; still starting, it is
            if session is None:  # cancelled (the SDK still stops the process, bounded)
                owner.cancel()
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(owner), CLOSE_S)
            if not owner.done():
                owner.cancel()
                with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(owner), CLOSE_S)
        self._drop_stderr()

    def _forget(self) -> None:
        """Drop what another (closed) event loop held, without waiting on it."""
        self._session = self._owner = self._closing = None
        self._drop_stderr()


class _StdioWithLog:
    """``stdio_client(params, errlog=<the connection's stderr file>)``, the file closed after."""

    def __init__(self, connection: ServerConnection, params: Any, stdio_client: Any) -> None:
        self._connection = connection
        self._params = params
        self._stdio_client = stdio_client
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> Any:
        errlog = self._stack.enter_context(self._connection.open_stderr())
        try:
            return await self._stack.enter_async_context(
                self._stdio_client(self._params, errlog=errlog)
            )
        except BaseException:
            await self._stack.aclose()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        return await self._stack.__aexit__(kind, error, trace)


def _quiet_sdk_logs() -> None:
    """The SDK logs its own troubles (a session it could not end); with no logging set up they
    would reach stderr, under the app's screen. A NullHandler keeps them from Python's
    last-resort handler; a program that configures logging still gets them."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def describe(error: BaseException) -> str:
    """One line for an error: the first leaf of an exception group, as ``Type: message``."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip()
    if isinstance(error, OSError) and error.strerror:
        text = f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

"""The one ``httpx.AsyncClient`` the direct model path shares, per process and event loop.

Every direct request goes through it, so connections to a provider are reused (HTTP keep-alive)
instead of opened per call. An httpx client belongs to the event loop it first ran on, so there is
one per running loop (a program has one; each test has its own). ``close_shared_client`` closes
the running loop's client once no stream is open on it (``Agent.close`` calls it); the next
request opens a new one. httpx is imported on first use only. Tested in
``tests/test_openai_http.py`` (``test_requests_share_one_keep_alive_connection``,
``test_agent_close_closes_the_idle_client``).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
_open_streams: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
    weakref.WeakKeyDictionary())


def shared_client() -> Any:
    """The running loop's client (an ``httpx.AsyncClient``), opened on first use."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        import httpx

        # Timeouts are set per request (see openai_http.Timeouts); these limits keep enough
        # idle connections for several panes streaming from one provider at once.
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20,
                              keepalive_expiry=30.0)
        client = httpx.AsyncClient(transport=_asyncio_transport(limits), limits=limits,
                                   follow_redirects=False)
        _clients[loop] = client
    return client


def _asyncio_transport(limits: Any) -> Any:
    """httpx's transport with its connection pool on our asyncio backend (``asyncio_backend``:
    a fraction of the CPU per read of a fast stream); TLS, HTTP/1.1 and the pool are httpx's."""
    import httpcore
    import httpx

    from tui_agent.models.asyncio_backend import AsyncioBackend

    class AsyncioTransport(httpx.AsyncHTTPTransport):
        def __init__(self) -> None:
            ssl_context = httpx.create_ssl_context()
            super().__init__(verify=ssl_context, limits=limits)
            self._pool = httpcore.AsyncConnectionPool(
                ssl_context=ssl_context,
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=AsyncioBackend(),
            )

    return AsyncioTransport()


def stream_opened() -> None:
    loop = asyncio.get_running_loop()
    _open_streams[loop] = _open_streams.get(loop, 0) + 1


def stream_closed() -> None:
    loop = asyncio.get_running_loop()
    _open_streams[loop] = max(0, _open_streams.get(loop, 0) - 1)


async def close_shared_client(*, force: bool = False) -> bool:
    """Close the running loop's client if no stream is open on it (or ``force``); True if a
    client was closed. A later request opens a new one."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or (_open_streams.get(loop, 0) and not force):
        return False
    del _clients[loop]
    await client.aclose()
    return True

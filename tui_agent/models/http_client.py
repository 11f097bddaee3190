"""The one ``httpx.AsyncClient`` the direct model path shares, per process and event loop.

Every direct request goes through it, so connections to a provider are reused (HTTP keep-alive)
instead of opened per call. An httpx client belongs to the event loop it first ran on, so there is
one per running loop (a program has one; each test has its own). ``close_shared_client`` closes
the running loop's client once no stream is open on it (``Agent.close`` calls it); the next
request opens a new one. Its connection pool runs on ``asyncio_backend`` (an asyncio protocol with
read coalescing: a fraction of the CPU of httpx's default backend for a fast stream). httpx is
imported on first use only. Tested in
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

        from tui_agent.models.asyncio_backend import asyncio_transport

        # Timeouts are set per request (see openai_http.Timeouts); these limits keep enough
        # idle connections for several panes streaming from one provider at once.
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20,
                              keepalive_expiry=30.0)
        client = httpx.AsyncClient(transport=asyncio_transport(limits), limits=limits,
                                   follow_redirects=False)
        _clients[loop] = client
    return client


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

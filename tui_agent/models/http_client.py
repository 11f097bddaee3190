"""The one ``httpx.AsyncClient`` the direct model path shares, per process and event loop.

Every direct request goes through it, so connections to a provider are reused (HTTP keep-alive)
instead of opened per call. An httpx client belongs to the event loop it first ran on, so there is
one per running loop (a program has one; each test has its own). ``close_shared_client`` closes
the running loop's client once no stream is open on it (``Agent.close`` calls it); the next
request opens a new one. Its transport is the direct path's own HTTP/1.1 (``http11``: a
keep-alive pool on ``asyncio_backend``'s connections, an asyncio protocol with read coalescing),
a fraction of the CPU of httpx's default stack per request and per read. httpx is imported on
first use only. Tested in
``tests/test_openai_http.py`` (``test_requests_share_one_keep_alive_connection``,
``test_agent_close_closes_the_idle_client``).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
# The transport under each loop's client, and the headers the client adds to a request.
_transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[Any, dict[str, str]]] = (
    weakref.WeakKeyDictionary())
_open_streams: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
    weakref.WeakKeyDictionary())


def shared_client() -> Any:
    """The running loop's client (an ``httpx.AsyncClient``), opened on first use."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        import httpx

        from tui_agent.models.http11 import transport as http11_transport

        # Timeouts are set per request (see openai_http.Timeouts); these limits keep enough
        # idle connections for several panes streaming from one provider at once.
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20,
                              keepalive_expiry=30.0)
        transport = http11_transport(limits)
        client = httpx.AsyncClient(transport=transport, limits=limits, follow_redirects=False)
        _clients[loop] = client
        _transports[loop] = (transport, dict(client.headers))
    return client


async def send_streaming(method: str, url: Any, *, content: bytes, headers: dict[str, str],
                         timeout: Any) -> Any:
    """A request on the running loop's shared connections, its response streaming (the caller
    reads it, then closes it), as ``client.send(client.build_request(...), stream=True)`` sends
    it — the client's default headers under ``headers``, ``timeout`` an ``httpx.Timeout`` — but
    straight to the client's transport: ``AsyncClient.send``'s layers (auth, redirects, cookies,
    event hooks; the direct path uses none of them) cost a third of a request's client-side
    time on a kept-alive connection (issue 22, ``benchmarks/bench_signal_speed.py``). Errors
    are the transport's (``httpx.TransportError`` and its kinds), as through the client."""
    import httpx

    client = shared_client()
    transport, defaults = _transports[asyncio.get_running_loop()]
    request = httpx.Request(method, url, content=content, headers={**defaults, **headers},
                            extensions={"timeout": timeout.as_dict()})
    if client.is_closed:
        raise RuntimeError("the shared HTTP client was closed")
    response = await transport.handle_async_request(request)
    response.request = request
    return response


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
    _transports.pop(loop, None)
    await client.aclose()
    return True

"""Shared fixtures. Every test runs offline (loopback only), with no real provider keys and with
its store and data directory under tmp_path."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest
from helpers.common import AgentFactory, Seen, StoreFactory
from openai_server import FakeOpenAIServer

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.store import Store
from tui_agent.store import open_store as tui_open_store

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "0:0:0:0:0:0:0:1", "", None}
_PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENERATIVE_AI_API_KEY",
    "GEMINI_API_KEY",
)


def _host_of(address: Any) -> Any:
    if isinstance(address, tuple) and address:
        return address[0]
    return None


def _is_loopback(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    return host in _LOOPBACK or (isinstance(host, str) and host.startswith("127."))


# -- isolation (autouse) ---------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection to a host other than loopback (or a unix socket) raises at once."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family == getattr(socket, "AF_UNIX", None):
            return
        host = _host_of(address)
        if not _is_loopback(host):
            raise ConnectionRefusedError(f"tests are offline: connection to {host!r} blocked")

    def connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(host):
            raise socket.gaierror(f"tests are offline: lookup of {host!r} blocked")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No real provider keys, no user settings file; the store, data and config dirs live in
    tmp_path."""
    for name in _PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TUI_AGENT_DB", str(tmp_path / "tui-agent.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))  # no user settings
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# -- PostgreSQL (tests/pg_server.py) ---------------------------------------------------------
@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """A PostgreSQL URL whose user may create databases; skips (fails under CI=1) if none."""
    reason = None
    try:
        import asyncpg  # noqa: F401
    except ImportError:
        reason = "asyncpg is not installed (pip install -e '.[test]')"
    if reason is None:
        try:
            with pg_server.admin_url() as url:
                yield url
                return
        except pg_server.Unavailable as error:
            reason = str(error)
    pg_server.unavailable(reason)


@pytest.fixture
async def pg_database(pg_admin_url: str) -> AsyncIterator[str]:
    """The URL of a fresh, empty database of this test's own, dropped after it."""
    async with pg_server.fresh_database(pg_admin_url) as url:
        yield url


# -- fake OpenAI server ----------------------------------------------------------------------
@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Serve], Awaitable[int]]]:
    """Start a raw TCP server on 127.0.0.1 with the given connection handler; returns its port
    (tests of the direct path's connections and HTTP/1.1, which need a server misbehaving on
    purpose)."""
    servers: list[asyncio.Server] = []

    async def start(handler: Serve) -> int:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        return server.sockets[0].getsockname()[1]

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port on 127.0.0.1 whose listener never accepts, its backlog full: a connection attempt
    to it hangs (until its connect timeout)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        try:
            yield port
        finally:
            for filler in fillers:
                filler.close()


@pytest.fixture
def openai_server(
    _openai_server_session: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> FakeOpenAIServer:
    """A fake OpenAI server on 127.0.0.1; OPENAI_BASE_URL points at it, OPENAI_API_KEY is a dummy.
    Script replies with ``openai_server.script(...)``; read ``openai_server.requests``."""
    server = _openai_server_session
    server.reset()
    server.handler = None
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    return server


# -- stores and agents, closed after the test ------------------------------------------------
# How long a fixture waits for what a test left going. pytest-timeout stops its clock once a
# test has failed, so a teardown that waited without limit (for a run the failed test still
# holds at a gate) would hang the whole session: each wait is bounded and reports what was left.
CLOSE_S = 10.0


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which store ``stores`` opens: "sqlite", or "postgres" in a module marked
    ``pytest.mark.both_stores`` (its tests run once on each; see ``pytest_generate_tests``)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
async def stores(
    tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> AsyncIterator[StoreFactory]:
    """``stores(path=None)`` opens a store (default: ``tmp_path/store.sqlite``): a SqliteStore
    on that file, or under ``store_kind == "postgres"`` a PostgresStore on a database of this
    test's own per path (one path, one database: two stores on one path share it, as two
    processes share a file). Every store opened is closed after the test, after the agents of
    ``agents``."""
    opened: list[Store] = []
    admin = request.getfixturevalue("pg_admin_url") if store_kind == "postgres" else None
    databases: dict[str, str] = {}

    def open_store(path: str | Path | None = None) -> Any:
        where = str(path or tmp_path / "store.sqlite")
        if admin is None:
            opened.append(SqliteStore(where))
        else:
            if where not in databases:
                databases[where] = pg_server.new_database_name()
                pg_server.create_database_sync(admin, databases[where])
            opened.append(tui_open_store(pg_server.database_url(admin, databases[where])))
        return opened[-1]

    yield open_store
    stuck = []
    for store in opened:
        try:
            await asyncio.wait_for(store.close(), CLOSE_S)
        except TimeoutError:
            stuck.append(store.location)
    for name in databases.values():
        assert admin is not None
        await pg_server.drop_database(admin, name)
    if stuck:
        pytest.fail(f"store(s) {stuck} did not close within {CLOSE_S}s")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``both_stores`` that uses ``stores`` runs on SQLite and on PostgreSQL;
    ``sqlite_only`` keeps one of them on SQLite (it looks at the file or at SQLite's SQL)."""
    definition = metafunc.definition
    if (
        "store_kind" in metafunc.fixturenames
        and definition.get_closest_marker("both_stores") is not None
        and definition.get_closest_marker("sqlite_only") is None
    ):
        metafunc.parametrize("store_kind", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def store(stores: StoreFactory) -> Any:
    return stores()


@pytest.fixture
def memory(store: Store) -> Memory:
    return Memory(store=store)


@pytest.fixture
def seen() -> Seen:
    return Seen()


@pytest.fixture
async def agents(stores: StoreFactory) -> AsyncIterator[AgentFactory]:
    """``agents(**options)`` builds an Agent, ``agents(SubClass, **options)`` a subclass (name
    "test" and instructions "Be brief." unless given); each is closed after the test: its
    dispatcher stopped, its runs ended (a run still going after ``CLOSE_S`` is aborted and the
    teardown fails naming it). Depends on ``stores`` so that agents close before their stores
    do."""
    made: list[Agent] = []

    def make(cls: type[Agent] = Agent, /, **options: Any) -> Agent:
        made.append(cls(**{"name": "test", "instructions": "Be brief.", **options}))
        return made[-1]

    yield make
    aborted = []
    for agent in reversed(made):
        left = await agent.close(timeout=CLOSE_S)
        if left:
            aborted.append(f"agent {agent.name!r}: runs {left}")
    if aborted:
        pytest.fail(f"runs still going {CLOSE_S}s after the test, aborted: {aborted}")


# -- leak guards (autouse) -------------------------------------------------------------------
@pytest.fixture(autouse=True)
async def _direct_http_client_closed() -> AsyncIterator[None]:
    """The direct model path keeps one httpx client per event loop; each test has its own loop,
    so the client is closed while that loop still runs."""
    yield
    http_client = sys.modules.get("tui_agent.models.http_client")
    if http_client is not None:
        await http_client.close_shared_client(force=True)


@pytest.fixture(autouse=True)
async def _litellm_connections_closed() -> AsyncIterator[None]:
    """litellm keeps HTTP clients process-wide, but each test has its own loop: a connection
    kept past its test is collected later as an unclosed socket (a ResourceWarning in some other
    test). So, while the test's loop still runs: the cached OpenAI clients are closed and dropped,
    and the aiohttp sessions under litellm's shared handlers are closed (litellm opens a new one
    on the next call; the handlers themselves stay, other litellm objects hold them)."""
    yield
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return
    cache = litellm.in_memory_llm_clients_cache
    handlers = [getattr(litellm, "module_level_aclient", None)]
    for key, client in list(cache.cache_dict.items()):
        if type(client).__module__.startswith("openai"):
            cache.delete_cache(key)
            await client.close()
        else:
            handlers.append(client)
    for handler in handlers:
        transport = getattr(getattr(handler, "client", None), "_transport", None)
        session = getattr(transport, "client", None)
        if session is not None and getattr(session, "closed", True) is False:
            await session.close()


# A store left open keeps an aiosqlite worker thread; when its connection is collected after
# the test's loop closed, the thread fails with "Event loop is closed" in some later test.
def _sqlite_workers() -> set[threading.Thread]:
    return {
        thread for thread in threading.enumerate()
        if getattr(getattr(thread, "_target", None), "__name__", "") == "_connection_worker_thread"
    }


@pytest.fixture(autouse=True)
def _no_open_connections() -> Iterator[None]:
    before = _sqlite_workers()
    yield
    new = _sqlite_workers() - before
    for thread in new:
        thread.join(1.0)  # a closed connection's thread ends right after close() returns
    left = [thread for thread in new if thread.is_alive()]
    assert not left, f"{len(left)} SqliteStore connection(s) left open: close the store"


def _is_asyncgen_cleanup(task: asyncio.Task[Any]) -> bool:
    # The loop's own aclose() of a library's collected async generator (httpx, openai streams).
    return "async_generator_athrow" in repr(task.get_coro())


@pytest.fixture(autouse=True)
async def _no_running_tasks() -> AsyncIterator[None]:
    yield
    here = asyncio.current_task()
    left = [
        task.get_name() for task in asyncio.all_tasks()
        if task is not here and not task.done() and not _is_asyncgen_cleanup(task)
    ]
    assert not left, f"tasks still running after the test: {left} (close the agent)"

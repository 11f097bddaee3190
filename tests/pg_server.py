"""A PostgreSQL server for the tests: ``$TUI_AGENT_TEST_PG`` (a URL whose user may create
databases) if set, else a throwaway server started here with ``initdb``/``pg_ctl`` (as the
``postgres`` system user when run as root: initdb refuses root), in a temp dir, on a free port
of 127.0.0.1, with its unix socket in that dir; stopped and deleted at exit. Each test gets a
database of its own (``fresh_database``).

When neither is possible the tests that need PostgreSQL skip, saying why, except under
``CI=1``: there they fail (CI never skips them silently).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")

START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
SERVER_SETTINGS = (
    # A test server: durability is not what is tested (every commit is still a commit).
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
    " -c full_page_writes=off -c max_connections=400 -c shared_buffers=32MB"
)


class Unavailable(RuntimeError):
    """No PostgreSQL for the tests (the message says why)."""


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        for version_dir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
            if (version_dir / name).exists():
                return str(version_dir / name)
        raise Unavailable(f"{name} not found (install PostgreSQL, or set TUI_AGENT_TEST_PG)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> list[str]:
    """initdb and postgres refuse to run as root: run them as ``postgres`` then."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError as error:
        raise Unavailable("running as root and there is no 'postgres' user") from error
    runuser = shutil.which("runuser")
    if runuser is None:
        raise Unavailable("running as root and runuser is missing")
    return [runuser, "-u", "postgres", "--"]


def _run(command: list[str], timeout: float) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise Unavailable(f"{' '.join(command[-3:])} failed: {done.stderr.strip()[-500:]}")


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a server, yield its admin URL, stop and delete it."""
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    prefix = _as_server_user()
    # /tmp: short enough for the unix socket's path, and reachable by the postgres user.
    base = Path(tempfile.mkdtemp(prefix="tui-agent-pg-", dir="/tmp" if Path("/tmp").is_dir()
                                 else None))
    data, port = base / "data", _free_port()
    if prefix:
        entry = pwd.getpwnam("postgres")
        os.chown(base, entry.pw_uid, entry.pw_gid)
    try:
        _run([*prefix, initdb, "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
              "--no-sync", "--no-instructions"], START_TIMEOUT_S)
        options = f"-p {port} -k {base} {SERVER_SETTINGS}"
        log = base / "server.log"
        try:
            _run([*prefix, pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "-t",
                  str(START_TIMEOUT_S), "start"], START_TIMEOUT_S + 10)
        except Unavailable as error:
            told = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise Unavailable(f"{error}; server log: {told}") from error
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "-t",
                            str(STOP_TIMEOUT_S), "stop"], capture_output=True,
                           timeout=STOP_TIMEOUT_S + 10, check=False)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def admin_url() -> Iterator[str]:
    given = os.environ.get("TUI_AGENT_TEST_PG")
    if given:
        yield given
        return
    with throwaway_server() as url:
        yield url


def unavailable(reason: str) -> None:
    """Skip locally; fail under CI=1."""
    message = f"PostgreSQL is not available for the tests: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI=1: the PostgreSQL tests must run)", pytrace=False)
    pytest.skip(message)


def database_url(admin: str, name: str) -> str:
    """``admin`` with its database replaced by ``name``."""
    base, _, _db = admin.rpartition("/")
    query = ""
    if "?" in _db:
        query = "?" + _db.split("?", 1)[1]
    return f"{base}/{name}{query}"


def new_database_name() -> str:
    return "t_" + uuid.uuid4().hex[:16]


async def create_database(admin: str, name: str) -> str:
    import asyncpg

    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return database_url(admin, name)


async def drop_database(admin: str, name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def fresh_database(admin: str) -> AsyncIterator[str]:
    """A new, empty database's URL; dropped (connections and all) on exit."""
    name = new_database_name()
    url = await create_database(admin, name)
    try:
        yield url
    finally:
        await drop_database(admin, name)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from plain code, even with an event loop running (in a
    thread of its own with its own loop)."""
    result: list[T] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            result.append(asyncio.run(coroutine))
        except BaseException as error:
            errors.append(error)

    worker = threading.Thread(target=work, name="pg-test-helper")
    worker.start()
    worker.join(START_TIMEOUT_S)
    if errors:
        raise errors[0]
    return result[0]


def create_database_sync(admin: str, name: str) -> None:
    run_sync(create_database(admin, name))


def drop_database_sync(admin: str, name: str) -> None:
    run_sync(drop_database(admin, name))


async def fetch(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of one query on a connection of its own, as tuples."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [tuple(row) for row in await conn.fetch(sql, *params)]
    finally:
        await conn.close()

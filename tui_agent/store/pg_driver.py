"""What the PostgreSQL store uses of ``asyncpg``, typed: asyncpg ships no type information, so
these Protocols state the part of its API the store relies on (and nothing else), and
:func:`require_asyncpg` loads it lazily (it is an optional extra: ``import tui_agent`` never
loads it). Checked by ``tests/test_postgres_store.py`` and the contract suite on PostgreSQL.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, cast

from tui_agent.errors import ConfigError

INSTALL_HINT = "pip install 'tui-agent[postgres]'"

# A result record: read by position (or column name), each value whatever the server sent.
PgRecord = Sequence[Any]


class PgConnection(Protocol):
    """An ``asyncpg.Connection``."""

    async def execute(self, query: str, *args: object, timeout: float | None = None) -> str: ...

    async def executemany(self, command: str, args: Sequence[Sequence[object]]) -> None: ...

    async def copy_records_to_table(
        self, table_name: str, *, records: Sequence[Sequence[object]], columns: Sequence[str]
    ) -> str: ...

    async def fetch(self, query: str, *args: object) -> list[PgRecord]: ...

    async def fetchrow(self, query: str, *args: object) -> PgRecord | None: ...

    async def fetchval(self, query: str, *args: object, timeout: float | None = None) -> Any: ...

    def transaction(self) -> AbstractAsyncContextManager[object]: ...

    async def add_listener(
        self, channel: str, callback: Callable[[object, int, str, str], None]
    ) -> None: ...

    def add_termination_listener(self, callback: Callable[[object], None]) -> None: ...

    def is_closed(self) -> bool: ...

    def get_server_pid(self) -> int: ...

    async def close(self) -> None: ...


class PgPool(Protocol):
    """An ``asyncpg.Pool``."""

    def acquire(self) -> AbstractAsyncContextManager[PgConnection]: ...

    async def fetch(self, query: str, *args: object) -> list[PgRecord]: ...

    async def fetchrow(self, query: str, *args: object) -> PgRecord | None: ...

    async def fetchval(self, query: str, *args: object) -> Any: ...

    async def close(self) -> None: ...


class Asyncpg(Protocol):
    """The ``asyncpg`` module: connecting, and the errors the store tells apart."""

    PostgresError: type[Exception]
    InterfaceError: type[Exception]
    DiskFullError: type[Exception]
    UndefinedTableError: type[Exception]

    async def connect(self, dsn: str, *, timeout: float) -> PgConnection: ...

    async def create_pool(
        self, dsn: str, *, min_size: int, max_size: int, timeout: float,
        init: Callable[[PgConnection], Awaitable[None]] | None = None,
    ) -> PgPool: ...


def require_asyncpg() -> Asyncpg:
    """The asyncpg module, or one ``ConfigError`` saying what to install."""
    try:
        module = importlib.import_module("asyncpg")
    except ImportError as error:
        raise ConfigError(
            f"a postgresql:// store needs the asyncpg driver: {INSTALL_HINT}"
        ) from error
    return cast(Asyncpg, module)

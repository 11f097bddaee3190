"""What the shared role objects run on, and how a store exposes them.

The roles written once for both stores (``reads.py``, ``lanes.py``, ``inbox.py``) take a
:class:`Database`: reads, and a write transaction whose :class:`Session` runs statements.
Each store gives its own (``SqliteDatabase`` in ``sqlite.py``, ``PostgresDatabase`` in
``postgres.py``); the statements are in the dialect's spelling (``dialect.py``), rendered here.

A store composes its role objects and exposes their methods under the contract's names with
:class:`Door`: ``store.list_notifications(...)`` *is* ``store.inbox.list_notifications(...)``,
typed as that method (``tests/test_store_contract.py`` calls every one through the store).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from tui_agent.store.dialect import Dialect

P = ParamSpec("P")
R = TypeVar("R")

# A result row as the driver gives it: a column's value is whatever the engine stored
# (text, number, boolean or NULL), read by position.
Row = Sequence[Any]
Args = Sequence[object]


class Session(Protocol):
    """Statements inside one open write transaction (already in the dialect's spelling)."""

    async def rows(self, sql: str, args: Args = ()) -> list[Row]: ...

    async def run(self, sql: str, args: Args = ()) -> int:
        """Run one statement; how many rows it touched."""
        ...

    async def run_many(self, sql: str, rows: Sequence[Args]) -> None: ...


class Database(Protocol):
    """A store's connection, as the shared roles use it."""

    @property
    def dialect(self) -> Dialect: ...

    async def rows(self, sql: str, args: Args = ()) -> list[Row]:
        """A read of ``sql`` (a dialect-neutral statement, see ``dialect.py``)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Session]:
        """One write transaction, committed when the block ends (rolled back if it raises);
        statements given to its session are in the dialect's spelling already."""
        ...

    async def index_trailing_messages(self) -> None:
        """Index for search the messages stored and not indexed yet (``store/search.py``):
        nothing to do where the index is kept in the transaction that stores a message."""
        ...


async def first(database: Database, sql: str, args: Args = ()) -> Row | None:
    """The first row of a read, or None."""
    found = await database.rows(sql, args)
    return found[0] if found else None


class Door(Generic[P, R]):
    """A store's method that is one of its role objects': declared in the store's class as
    ``name = Door("role", RoleClass.name)``, ``store.name`` is ``store.role.name``, with that
    method's signature for the type checker. The first read binds it on the store (an instance
    attribute), so a call costs what a plain method call does."""

    def __init__(self, role: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.role = role
        self.name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.name:
            raise TypeError(f"{owner.__name__}.{name} opens onto {self.role}.{self.name}")

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:  # for the type checker only
        raise TypeError(f"{self.name} is read from a store, not from its class")

    @overload
    def __get__(self, store: None, owner: type) -> Door[P, R]: ...

    @overload
    def __get__(self, store: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, store: object | None, owner: type) -> Door[P, R] | Callable[P, R]:
        if store is None:
            return self
        bound: Callable[P, R] = getattr(getattr(store, self.role), self.name)
        setattr(store, self.name, bound)  # later reads find it on the instance
        return bound

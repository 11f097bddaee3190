"""What a store transaction is made of, for both stores: the statements it yields
(:class:`Statement`, in its dialect's spelling: ``dialect.py``) and the thread lock it takes
first where the engine needs one. A transaction (:data:`Txn`) is a generator: it yields each
statement and is sent back its result, so one decision logic runs on SQLite's connection
thread (``txn.py``) and on PostgreSQL's pooled connections (``postgres_txn.py``). The
transactions themselves: ``writes.py``, ``signal_writes.py``, ``approvals.py``, ``lanes.py``,
``inbox.py``, ``compound.py``.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from tui_agent.store.dialect import Dialect
from tui_agent.store.roles import Args

T = TypeVar("T")


@dataclass(slots=True)
class Statement:
    """One statement a transaction runs: ``rows`` sends back its rows; ``many`` runs it once
    per argument row (sends back None); else it sends back how many rows it touched."""

    sql: str
    args: Args | Sequence[Args] = ()
    rows: bool = False
    many: bool = False
    #: A ``many`` statement that only inserts its rows into (table, columns): an engine with a
    #: bulk load may load them so (PostgreSQL's COPY: a burst's rows in one message each way).
    copy_into: tuple[str, tuple[str, ...]] | None = None


# What a transaction yields, what it is sent back (rows, a count, or None), what it returns.
Txn = Generator[Statement, Any, T]


def query(d: Dialect, sql: str, *args: object) -> Statement:
    """``sql`` in ``d``'s spelling: the transaction is sent back its rows."""
    return Statement(d.sql(sql), args, rows=True)


def execute(d: Dialect, sql: str, *args: object) -> Statement:
    """``sql`` in ``d``'s spelling: the transaction is sent back how many rows it touched."""
    return Statement(d.sql(sql), args)


def lock(d: Dialect, key: str) -> Txn[None] | tuple[()]:
    """Serialise this transaction with every other one locking ``key``, until it ends (only
    where the engine needs it: SQLite's write transaction already excludes other writers, and
    gets nothing to run, not even a generator; ``yield from`` it)."""
    return () if d.lock_key is None else _lock(d, d.lock_key, key)


def _lock(d: Dialect, statement: str, key: str) -> Txn[None]:
    yield Statement(d.sql(statement), (key,), rows=True)

"""The three places the SQLite store reaches into aiosqlite's private members, and why they stay.

aiosqlite has no public way to (1) run a whole function on its connection's worker thread, with
the raw ``sqlite3.Connection`` — the store's write transactions run that way (``txn.py`` drives
the ``writes.py`` transaction there), one round trip from the event loop per transaction instead
of one per statement —, (2) make that worker a daemon thread, so a program that never closes
its store does not hang at exit (Python joins non-daemon threads before any ``atexit`` hook
could close it), or (3) reach that raw connection from the event loop's thread, where a write
that can begin at once runs while the worker has nothing to do (``sqlite_turns.py``).

What (1) buys, measured by ``benchmarks/bench_aiosqlite_private.py`` (the same transactions,
the same statements, on one file and connection, in the same run; median per transaction, on
the shared 2-core machine): with the event loop idle, appending a message 65 µs beside 158 µs
through the public ``execute``/``executemany`` (2.4x), delivering a signal into a live run
87 µs beside 155 µs (1.8x), a run's start and finish 214 µs beside 573 µs (2.7x); with a second
task keeping the loop busy (each hop then waits for a loop turn, as in a streaming app) 4.2x,
4.3x and 9.3x. A transaction that hops per statement also holds SQLite's write lock across those
hops, so other processes' writers wait longer.

Both internals were checked on the versions pinned in ``pyproject.toml``;
``tests/test_aiosqlite_private.py`` fails loudly, naming the version, if they change. The way
out of the pin, if aiosqlite changes them, is a worker thread of the store's own (a
``sqlite3.Connection``, a queue and ``call_soon_threadsafe``: what aiosqlite does), not the
per-statement public API.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple, cast

if TYPE_CHECKING:
    import aiosqlite

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def run_with_connection(
    db: aiosqlite.Connection, fn: Callable[[sqlite3.Connection, *Ts], T], *args: *Ts
) -> T:
    """``fn(raw sqlite3 connection, *args)`` on ``db``'s worker thread (the only thread that
    ever touches the raw connection), awaited."""
    execute = cast(
        "Callable[..., Awaitable[T]]",
        db._execute,  # noqa: SLF001 # pyright: ignore[reportPrivateUsage, reportUnknownMemberType]
    )
    return await execute(fn, db._conn, *args)  # noqa: SLF001 # pyright: ignore[reportPrivateUsage]


def raw_connection(db: aiosqlite.Connection) -> sqlite3.Connection:
    """``db``'s raw connection, for the event loop's thread to use while the worker thread has
    nothing in flight (``sqlite_turns.py``; ``db`` is opened with ``check_same_thread=False``)."""
    return db._conn  # noqa: SLF001 # pyright: ignore[reportPrivateUsage]


def make_worker_daemon(connection: aiosqlite.Connection) -> None:
    """Mark a not yet started aiosqlite connection's worker thread a daemon. Every write is
    awaited to its COMMIT, so nothing is lost when the process exits without closing."""
    worker = connection._thread  # noqa: SLF001 # pyright: ignore[reportPrivateUsage]
    worker.daemon = True

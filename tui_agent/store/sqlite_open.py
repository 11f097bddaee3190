"""Opening a :class:`~tui_agent.store.sqlite.SqliteStore`'s connection: a private file (0700
directory, 0600 file, whatever the umask), WAL mode, the schema migrated to this version in one
``BEGIN IMMEDIATE`` transaction, and the ``data_version`` it opened at (the change feed's first
look). A file it cannot use (not a database, a newer schema) is one clear ``StoreError`` and
leaves no connection (or thread) open. Tests: ``tests/test_store.py``,
``tests/test_store_files.py``.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import TYPE_CHECKING

from tui_agent.errors import StoreError
from tui_agent.store.aiosqlite_private import make_worker_daemon
from tui_agent.store.files import prepare_store_file, tighten_sidecars, unusable_store_error
from tui_agent.store.location import MEMORY
from tui_agent.store.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    import aiosqlite  # loaded on first use: ``import tui_agent`` stays fast

BUSY_TIMEOUT_MS = 30_000


async def open_connection(path: str, target: str, uri: bool) -> tuple[aiosqlite.Connection, int]:
    """The connection to the store at ``path`` (``target``: what sqlite3 opens, a URI when
    ``uri``), ready for use, and its ``PRAGMA data_version`` as it opened."""
    import aiosqlite

    if path != MEMORY:
        prepare_store_file(path)  # private (0700 dir, 0600 file) whatever the umask
    connection = aiosqlite.connect(  # used by the loop's thread too (sqlite_turns.py)
        target, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000, uri=uri,
        check_same_thread=False,
    )
    # aiosqlite's worker thread is not a daemon: a program that never closes its store
    # would hang at exit.
    make_worker_daemon(connection)
    try:
        db = await connection
    except sqlite3.DatabaseError as error:
        raise unusable_store_error(path, error) or error from None
    try:
        await db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        await _enable_wal(db)
        await db.execute("PRAGMA synchronous=NORMAL")
        await db.execute("PRAGMA foreign_keys=ON")
        await db.execute("PRAGMA wal_autocheckpoint=0")  # the worker's, in turns (see there)
        await _migrate(db, path)
        found = await db.execute_fetchall("PRAGMA data_version")
        opened_version = int(next(iter(found))[0])
    except BaseException as error:
        await db.close()  # a file we cannot use (e.g. newer schema) must not leak a thread
        raise unusable_store_error(path, error) or error from None
    if path != MEMORY:
        tighten_sidecars(path)
    return db, opened_version


async def _migrate(db: aiosqlite.Connection, path: str) -> None:
    await db.execute("BEGIN IMMEDIATE")
    try:
        found = await db.execute_fetchall("PRAGMA user_version")
        version = int(next(iter(found))[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path} has schema version {version}, newer than this tui-agent "
                f"({SCHEMA_VERSION}); upgrade tui-agent"
            )
        for number in range(version, SCHEMA_VERSION):
            await _run_script(db, MIGRATIONS[number])
        if version != SCHEMA_VERSION:
            await db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise


async def _enable_wal(db: aiosqlite.Connection) -> None:
    """Switching a new file to WAL needs an exclusive lock that SQLite does not wait for
    (busy_timeout does not apply): processes opening a fresh store at the same moment could
    fail with "database is locked". Retry until the busy timeout instead."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            await db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.005)


async def _run_script(db: aiosqlite.Connection, script: str) -> None:
    """Run a migration's statements one by one inside the open transaction
    (``executescript`` would COMMIT first). A statement ends at the ``;`` that completes it,
    so a trigger's body (``BEGIN …; END``) stays whole."""
    statement = ""
    for part in script.split(";"):
        statement += part + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                await db.execute(statement)
            statement = ""

"""Change detection for the PostgreSQL store: one ``LISTEN tui_agent`` connection per store
object (a process has one store: shared by all its subscribers), no polling of tables.

Every commit that changes the store sends ``NOTIFY tui_agent`` from a trigger (payload: the
thread's id, or empty). Each notification from another process bumps
:attr:`ChangeListener.version` (what the store's ``data_version()`` returns: reading it costs
no query) and sets the listeners of that thread, so a subscriber in any process wakes as soon
as the commit is delivered.

A notification sent by one of this store's own pooled connections (told apart by the server
process that sent it: :meth:`ChangeListener.own`) is this process's own commit, as on SQLite:
its listeners were woken when it committed, so it neither sets them again nor moves
``data_version()``; it only wakes the change feed's ``local`` watches. Taken for another
process's, such a notice arrived after a subscriber had read the commit and called it behind
again (tests/test_postgres_store.py).

A dropped connection is noticed by asyncpg's termination callback: the version is bumped and
every listener set (so subscribers read on from their cursor: nothing lost, nothing repeated,
as they read by ``seq``), and the next ``data_version()`` reconnects, bumping once more once
listening again. Checked by ``tests/test_postgres_store.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial

from tui_agent.store.pg_driver import PgConnection
from tui_agent.store.postgres_schema import CHANNEL

RETRY_S = 0.5  # how often a lost listening connection is retried (not on every poll)


class ChangeListener:
    """The LISTEN connection and the per-thread asyncio events it sets."""

    def __init__(self, connect: Callable[[], Awaitable[PgConnection]]) -> None:
        self._connect = connect
        self._conn: PgConnection | None = None
        self._lock: asyncio.Lock | None = None
        self._next_try = 0.0
        self.version = 0
        self.listeners: dict[str, set[asyncio.Event]] = {}
        #: The server processes of this store's open pooled connections (see :meth:`own`).
        self.own_pids: set[int] = set()
        #: Called (on the event loop) after every notification, with whether another process
        #: sent it: the store's change feed wakes its watchers from it, so nothing has to poll
        #: for what the server pushes.
        self.on_change: Callable[[bool], None] | None = None

    def own(self, conn: PgConnection) -> None:
        """``conn`` is one of this store's pooled connections: what it commits is this
        process's own, until it closes (the server may then give its process id to another
        client's connection, whose notifications are another process's again)."""
        pid = conn.get_server_pid()
        self.own_pids.add(pid)
        conn.add_termination_listener(partial(_forget_pid, self.own_pids, pid))

    def set_thread(self, thread_id: str) -> None:
        for event in self.listeners.get(thread_id, ()):
            event.set()

    def _wake_all(self) -> None:
        self.version += 1
        for events in self.listeners.values():
            for event in events:
                event.set()
        self._changed(foreign=True)

    def _on_notify(self, _conn: object, pid: int, _channel: str, payload: str) -> None:
        if pid in self.own_pids:  # this process's commit: its listeners heard of it then
            self._changed(foreign=False)
            return
        self.version += 1
        if payload:
            self.set_thread(payload)
        self._changed(foreign=True)

    def _changed(self, *, foreign: bool) -> None:
        if self.on_change is not None:
            self.on_change(foreign)

    def _on_terminated(self, conn: object) -> None:
        if conn is self._conn:
            self._conn = None
            self._wake_all()  # whatever was sent while we were away: read on from the cursor

    @property
    def listening(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def ensure(self) -> None:
        """Listen, if not already (a failure is retried after ``RETRY_S``, never raised)."""
        if self.listening or time.monotonic() < self._next_try:
            return
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.listening:
                return
            was_connected = self.version > 0 or self._conn is not None
            try:
                conn = await self._connect()
                await conn.add_listener(CHANNEL, self._on_notify)
            except Exception:  # unreachable server, refused, ...: retried after RETRY_S
                self._next_try = time.monotonic() + RETRY_S
                return
            conn.add_termination_listener(self._on_terminated)
            self._conn = conn
            if was_connected:
                self._wake_all()  # commits made before LISTEN took effect: look once more

    async def close(self) -> None:
        self._lock, self._next_try = None, 0.0
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            await conn.close()

    def backend_pid(self) -> int | None:
        """The listening connection's server process (tests terminate it to drop it)."""
        conn = self._conn
        return conn.get_server_pid() if conn is not None and not conn.is_closed() else None


def _forget_pid(pids: set[int], pid: int, _conn: object) -> None:
    pids.discard(pid)

"""The run's log writer: the chunks a run with memory emits land in its thread's event log.

Text deltas are written in small batches (consecutive ones merged into one row), flushed on a
tick shared by every run of the process, so their flushes fall due in the same loop iteration
and share one group commit (tests/test_group_commit.py). Every write is fenced by the run's
lease; a write that fails calls ``on_error`` (the run stops and ends failed with it:
tests/test_fencing.py, tests/test_write_failures.py).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence

from tui_agent.agent.ports import RunStore
from tui_agent.events import TEXT_DELTA
from tui_agent.store.records import EventIn, MessageIn

LOG_FLUSH_S = 0.05  # text deltas reach the log (and other processes) at most this late


class RunLog:
    """The events a run has emitted and not written yet, and the writes that take them."""

    __slots__ = (
        "_events", "_flush_waiting", "_flusher", "_on_error", "_store", "resource_id",
        "run_id", "thread_id",
    )

    def __init__(
        self,
        store: RunStore,
        thread_id: str,
        resource_id: str,
        run_id: str,
        on_error: Callable[[Exception], None],
    ) -> None:
        self._store = store
        self.thread_id, self.resource_id, self.run_id = thread_id, resource_id, run_id
        self._on_error = on_error
        self._events: list[EventIn] = []
        self._flusher: asyncio.Task[None] | None = None
        self._flush_waiting = False

    def add(self, event: EventIn) -> None:
        """Log an event; it is written at the next shared tick (or by an earlier write)."""
        self._events.append(event)
        if self._flusher is None or self._flusher.done():
            self._flush_waiting = True
            self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    @property
    def pending(self) -> bool:
        """Events are logged and not written yet."""
        return bool(self._events)

    def take(self) -> list[EventIn]:
        """The events not written yet (text deltas merged), for a write of the caller's."""
        events, self._events = _merge_text_deltas(self._events), []
        return events

    def put_back(self, events: Sequence[EventIn]) -> None:
        """A write that took these was refused (the run goes on): they are written later."""
        self._events[:0] = events

    async def write(self, messages: Sequence[MessageIn] = (), *, grouped: bool = False) -> None:
        """Write ``messages`` and the pending events, fenced by the run's lease (``grouped``:
        queued into the store's next group commit, as a tick's flush)."""
        events = self.take()
        if events or messages:
            store = self._store
            append = store.append_soon if grouped else store.append
            await append(self.thread_id, self.resource_id, messages=messages, events=events,
                         fence=self.run_id)

    async def settle(self) -> None:
        """At the end of a run: a flush still waiting is dropped (the run's last write takes
        the log), one already writing is awaited so no write outlives the run."""
        flusher = self._flusher
        if flusher is None or flusher.done():
            return
        if self._flush_waiting:
            flusher.cancel()
        await asyncio.gather(flusher, return_exceptions=True)

    async def _flush_later(self) -> None:
        # On a clock shared by every run in the process: their flushes fall due in the same
        # loop iteration and share one group commit (see SqliteStore.write).
        await _until(_next_flush_tick(asyncio.get_running_loop().time()))
        self._flush_waiting = False  # from here on it writes: let it finish, never cancel
        try:
            await self.write(grouped=True)
        except Exception as error:
            self._on_error(error)


def _next_flush_tick(now: float) -> float:
    """The next multiple of LOG_FLUSH_S on the loop's clock: the same float for every run."""
    return (math.floor(now / LOG_FLUSH_S) + 1) * LOG_FLUSH_S


async def _until(when: float) -> None:
    """Sleep until loop time ``when`` exactly (``asyncio.sleep`` re-reads the clock, so runs
    aiming at one tick would each get their own timer)."""
    loop = asyncio.get_running_loop()
    due: asyncio.Future[None] = loop.create_future()
    timer = loop.call_at(when, _resolve, due)
    try:
        await due
    finally:
        timer.cancel()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _merge_text_deltas(events: list[EventIn]) -> list[EventIn]:
    """Consecutive text deltas of a batch become one event (fewer rows, same text)."""
    merged: list[EventIn] = []
    for event in events:
        last = merged[-1] if merged else None
        if last is not None and last.type == event.type == TEXT_DELTA:
            last.payload = {"text": last.payload["text"] + event.payload["text"]}
        else:
            merged.append(EventIn(  # a copy: merging must not change the caller's
                event.type, event.payload, event.run_id, event.source, event.signal_id,
                event.message_id))
    return merged

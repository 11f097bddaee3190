"""The awaited writes of the thread log, runs and leases, on either store: each runs one
transaction of ``writes.py`` through the store's :class:`Writer` and tells the store's
listeners of the thread what changed.

How a transaction runs is the store's own (its :class:`Writer`): SQLite's writer shares one
``BEGIN IMMEDIATE`` among writes that arrive together (group commit, ``sqlite.py``); PostgreSQL
runs writes to one thread in this process's call order, each its own transaction
(``postgres.py``). The queued forms (``append_soon``, ``route_signal_soon``/``_then``) and
signal routing differ more (group commit's batch form; PostgreSQL's one-statement delivery)
and stay with each store. Checked by the contract suite on both stores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar, TypeVarTuple

import tui_agent.store.signal_writes as signal_writes
import tui_agent.store.writes as writes
from tui_agent.store.dialect import Dialect
from tui_agent.store.reads import LogReads, RunReads
from tui_agent.store.records import (
    EventIn,
    FinishOutcome,
    MessageIn,
    MessageRecord,
    ThreadRecord,
    WakeStart,
    message_record,
    wake_start_of,
)
from tui_agent.store.statements import Txn

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


class Writer(Protocol):
    """How a store runs one write transaction, and tells its listeners of a thread."""

    async def run_write(
        self, thread_id: str | None, write: Callable[[Dialect, *Ts], Txn[T]], *args: *Ts
    ) -> T:
        """Run ``write(dialect, *args)`` as one transaction; ``thread_id``: it writes that
        thread's log, lease or signals (None: it touches no thread's order)."""
        ...

    def notify(self, thread_id: str) -> None:
        """Wake this store's listeners of the thread."""
        ...


class LogWrites:
    """Threads, the log, runs and leases, written (see the module docstring)."""

    def __init__(self, writer: Writer, log: LogReads, runs: RunReads) -> None:
        self.writer = writer
        self.log = log
        self.runs = runs

    async def ensure_thread(
        self, thread_id: str, resource_id: str, *, title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ThreadRecord:
        """Create the thread, or update the title/metadata given. A thread belongs to one
        resource: asking for it under another is an error."""
        await self.writer.run_write(
            None, writes.ensure_thread, thread_id, resource_id, title, metadata
        )
        return await self._thread(thread_id)

    async def update_thread(
        self,
        thread_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        unset: Iterable[str] = (),
    ) -> ThreadRecord:
        """Set the title given, merge ``metadata`` into the thread's, drop the keys ``unset``
        (see the contract)."""
        await self.writer.run_write(
            None, writes.update_thread, thread_id, title, metadata, tuple(unset)
        )
        return await self._thread(thread_id)

    async def _thread(self, thread_id: str) -> ThreadRecord:
        thread = await self.log.get_thread(thread_id)
        assert thread is not None  # just written
        return thread

    async def append(
        self, thread_id: str, resource_id: str, *, messages: Iterable[MessageIn] = (),
        events: Iterable[EventIn] = (), fence: str | None = None,
    ) -> None:
        """Append messages and events to a thread in one transaction (refused with
        ``LeaseLostError`` unless run ``fence``, if given, holds the thread's lease)."""
        await self.writer.run_write(
            thread_id, writes.append_as_run, thread_id, resource_id, list(messages),
            list(events), fence,
        )
        self.writer.notify(thread_id)

    async def append_events(self, thread_id: str, events: Iterable[EventIn]) -> None:
        await self.append(thread_id, "", events=events)

    async def supersede_messages(
        self, thread_id: str, message_ids: Sequence[str], *, by: str
    ) -> list[str]:
        """Mark messages of the thread superseded, with a ``data-superseded`` event (see the
        contract). The ids marked."""
        marked = await self.writer.run_write(
            thread_id, writes.supersede_messages, thread_id, list(message_ids), by
        )
        if marked:
            self.writer.notify(thread_id)
        return marked

    async def start_run(
        self, thread_id: str, resource_id: str, run_id: str, *, owner: str, ttl_s: float,
        agent_id: str | None = None, title: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> bool:
        """Take the thread's lease for a new run (False if another live run holds it)."""
        started = await self.writer.run_write(
            thread_id, writes.start_run, thread_id, resource_id, run_id, owner, ttl_s, agent_id,
            title, metadata,
        )
        self.writer.notify(thread_id)
        return started

    async def renew_lease(
        self, thread_id: str, run_id: str, owner: str, ttl_s: float
    ) -> tuple[bool, bool]:
        """Extend our lease. Returns (still ours, abort requested)."""
        return await self.writer.run_write(
            None, writes.renew_lease, thread_id, run_id, owner, ttl_s
        )

    async def reap_expired_lease(self, thread_id: str) -> bool:
        """End a run whose owner died. True if one was interrupted."""
        if not await self.runs.lease_expired(thread_id):
            return False
        reaped = await self.writer.run_write(thread_id, writes.reap_expired, thread_id)
        if reaped:
            self.writer.notify(thread_id)
        return reaped

    async def finish_run(
        self, thread_id: str, resource_id: str, run_id: str, *, owner: str, status: str,
        finish_reason: str | None, error: str | None = None,
        messages: Sequence[MessageIn] = (), events: Sequence[EventIn] = (), force: bool = False,
        keep_pending: bool = False, resume: bool = False,
    ) -> FinishOutcome:
        """End the run and release the lease, atomically with its last messages and events,
        unless signals arrived for it meanwhile (see the contract). Fenced."""
        outcome = await self.writer.run_write(
            thread_id, writes.finish_run, thread_id, resource_id, run_id, owner, status,
            finish_reason, error, list(messages), list(events), force, keep_pending, resume,
        )
        if outcome.finished:
            self.writer.notify(thread_id)
        return outcome

    async def rescue_stranded(
        self, thread_id: str, *, owner: str, ttl_s: float, agent_id: str | None = None
    ) -> tuple[str, str] | None:
        """Take over a thread whose signals wait with no live run (see the contract)."""
        rescued = await self.writer.run_write(
            thread_id, writes.rescue_stranded, thread_id, owner, ttl_s, agent_id
        )
        if rescued is not None:
            self.writer.notify(thread_id)
        return rescued

    async def claim_with_history(
        self, thread_id: str, resource_id: str, run_id: str, *, last_messages: int,
    ) -> tuple[list[MessageRecord], list[dict[str, Any]]]:
        """A run's start in one transaction: the thread's last ``last_messages`` messages
        (oldest first, as ``list_messages``), then every pending signal taken into ``run_id``
        (as ``claim_signals``). Fenced."""
        rows, taken = await self.writer.run_write(
            thread_id, signal_writes.claim_with_history, thread_id, resource_id, run_id,
            last_messages)
        if taken:
            self.writer.notify(thread_id)
        return [message_record(row) for row in reversed(rows)], taken

    async def claim_wake(
        self, thread_id: str, resource_id: str, run_id: str, *, last_messages: int,
        agent_id: str | None = None,
    ) -> WakeStart:
        """A woken run's start in one transaction: :meth:`claim_with_history`, with the thread's
        chosen model and ``agent_id``'s stored editor overrides read in it too. Fenced."""
        rows = await self.writer.run_write(
            thread_id, signal_writes.claim_wake, thread_id, resource_id, run_id, last_messages,
            agent_id)
        if rows[1]:
            self.writer.notify(thread_id)
        return wake_start_of(rows)

    async def claim_signals(
        self, thread_id: str, resource_id: str, run_id: str, *,
        messages_before: Sequence[MessageIn] = (), events_before: Sequence[EventIn] = (),
    ) -> list[dict[str, Any]]:
        """Take every pending signal of the thread (arrival order) into run ``run_id``, after
        the run's output so far (``messages_before``, ``events_before``). Fenced."""
        taken = await self.writer.run_write(
            thread_id, signal_writes.claim_signals, thread_id, resource_id, run_id,
            list(messages_before), list(events_before),
        )
        if taken or messages_before or events_before:
            self.writer.notify(thread_id)
        return taken

"""subscribe_to_thread: a cursor on a thread's event log.

In this process, appends wake the subscriber at once; appends by other processes are noticed by
polling SQLite's ``data_version`` (no table read unless something changed). A subscriber that
joins mid-run starts at that run's ``start`` event; finished runs are not replayed.

It lives above the agent: ``abort()`` finds a run of this process through the agent's
:class:`~tui_agent.agent.runtime.ThreadRuntime`. Tested by tests/test_signals_routing.py and
tests/test_run_end.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tui_agent.errors import ConfigError, StoreError
from tui_agent.events import END_TYPES, START
from tui_agent.signals.data import parse_target

if TYPE_CHECKING:
    from tui_agent.agent.agent import Agent

POLL_S = 0.01  # cross-process: how often data_version is checked
REAP_EVERY_S = 1.0  # how often a dead owner's lease is looked for while a run seems live


class ThreadSubscription:
    def __init__(
        self, agent: Agent, resource_id: str, thread_id: str, cursor: int, active_run_id: str | None
    ) -> None:
        assert agent.memory is not None
        self.agent = agent
        self.resource_id = resource_id
        self.thread_id = thread_id
        self._store = agent.memory.store
        self._cursor = cursor
        self._active_run_id = active_run_id
        self._closed = False
        self._wake = self._store.add_listener(thread_id)
        self.stream: AsyncIterator[dict[str, Any]] = self._events()

    def active_run_id(self) -> str | None:
        """The run live on the thread as of the last event this subscriber read."""
        return self._active_run_id

    def abort(self) -> bool:
        """Abort the thread's live run, in whichever process it runs. True if one was."""
        local = self.agent.runtime.run_on(self.thread_id)
        if local is not None:
            local.abort_event.set()
        flagged = self._store.request_abort_sync(self.thread_id)
        return local is not None or flagged is not None

    def unsubscribe(self) -> None:
        """End this subscriber's stream (the run goes on)."""
        self._closed = True
        self._wake.set()

    async def _events(self) -> AsyncIterator[dict[str, Any]]:
        try:
            last_version = await self._store.data_version()
            last_reap = time.monotonic()
            while not self._closed:
                self._wake.clear()
                events = await self._store.read_events(self.thread_id, self._cursor)
                for event in events:
                    self._cursor = event["seq"]
                    self._track(event)
                    yield event
                    if self._closed:
                        return
                if events:
                    continue
                last_version = await self._wait(last_version)
                if self._active_run_id and time.monotonic() - last_reap > REAP_EVERY_S:
                    last_reap = time.monotonic()
                    await self._store.reap_expired_lease(self.thread_id)
        finally:
            self._store.remove_listener(self.thread_id, self._wake)

    async def _wait(self, last_version: int) -> int:
        """Until this process appends, another process commits, or unsubscribe()."""
        while not self._closed:
            try:
                await asyncio.wait_for(self._wake.wait(), POLL_S)
                return last_version
            except TimeoutError:
                version = await self._store.data_version()
                if version != last_version:
                    return version
                if self._active_run_id:
                    return version  # let the caller look for a dead owner now and then
        return last_version

    def _track(self, event: dict[str, Any]) -> None:
        if event["type"] == START:
            self._active_run_id = event["run_id"]
        elif event["type"] in END_TYPES and event["run_id"] == self._active_run_id:
            self._active_run_id = None


async def check_thread_owner(store: Any, resource_id: str, thread_id: str) -> None:
    """A thread is reached only through the resource that owns it, as ``send_*`` are: a
    subscriber naming another resource is refused (StoreError), and sees nothing."""
    thread = await store.get_thread(thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise StoreError(
            f"thread {thread_id!r} belongs to resource {thread.resource_id!r}, not {resource_id!r}"
        )


async def subscribe(agent: Agent, *, resource_id: str, thread_id: str) -> ThreadSubscription:
    parse_target(resource_id=resource_id, thread_id=thread_id)
    if agent.memory is None:
        raise ConfigError("subscribe_to_thread needs memory: Agent(memory=Memory(...))")
    store = agent.memory.store
    await check_thread_owner(store, resource_id, thread_id)
    await store.reap_expired_lease(thread_id)
    active = await store.active_run(thread_id)
    if active is not None and active.start_seq is not None:
        cursor = active.start_seq - 1
    else:
        cursor = await store.last_event_seq(thread_id)
    agent.runtime.ensure_dispatcher()
    return ThreadSubscription(
        agent, resource_id, thread_id, cursor, active.run_id if active else None
    )

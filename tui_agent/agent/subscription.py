"""subscribe_to_thread: a cursor on a thread's event log.

In this process, appends wake the subscriber at once (the store's listeners); commits by other
processes are noticed by the store's one shared poller (:class:`~tui_agent.store.changes.
ChangeFeed`, one per store object however many subscribe), after which each subscriber reads only
its own thread past its cursor. A subscriber that joins mid-run starts at that run's ``start``
event; finished runs are not replayed.

It takes the agent as :class:`~tui_agent.agent.ports.AgentCore`: ``abort()`` finds a run of this
process through the agent's runtime. ``sub.stream`` is a :class:`SubscriptionStream`, which a
cancelled read (a ``wait_for`` that timed out) leaves usable. Tested by
tests/test_signals_routing.py, tests/test_run_end.py and tests/test_subscription_stream.py; the
shared poller by tests/test_change_feed.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import Any

from tui_agent.agent.ports import AgentCore
from tui_agent.errors import ConfigError, StoreError
from tui_agent.events import END_TYPES, START
from tui_agent.signals.data import parse_target
from tui_agent.store.changes import ChangeFeed, ChangeWatch

REAP_EVERY_S = 1.0  # how often a dead owner's lease is looked for while a run seems live
LIVE_CHECK_S = 0.2  # at most this often, on another process's commit: which run is live
REMEMBERED_RUNS = 16  # run ids (this process's, and ends read) a subscriber keeps


class ThreadSubscription:
    def __init__(
        self,
        agent: AgentCore,
        resource_id: str | None,
        thread_id: str,
        cursor: int,
        active_run_id: str | None,
        ours: bool = False,
    ) -> None:
        assert agent.memory is not None
        self.agent = agent
        self.resource_id = resource_id
        self.thread_id = thread_id
        self._store = agent.memory.store
        self._cursor = cursor
        self._active_run_id = active_run_id
        #: Runs known to be this agent's in this process: their end is known without reading.
        self._ours: dict[str, None] = {active_run_id: None} if ours and active_run_id else {}
        self._closed = False
        self._wake = asyncio.Event()  # the reader waits on it: set by either of these two
        #: Set by the store on its appends to the thread (PostgreSQL: on any process's): events
        #: are known to wait.
        self._appended = self._store.add_listener(thread_id, _Forwarding(self._wake))
        #: The change feed's watch: another process committed, maybe to this thread (SQLite
        #: cannot say): a hint to read again, which does not make the subscriber ``behind``.
        self._changes: ChangeWatch | None = None
        #: The live run as the store says, kept current on other processes' commits (so
        #: ``active_run_id`` knows their runs before anyone reads the stream).
        self._stored_run_id = active_run_id
        self._live_task: asyncio.Task[None] | None = None
        self._live_watch: ChangeWatch | None = None
        self._ended: dict[str, None] = {}  # runs whose end this subscriber has read
        self._unread: deque[dict[str, Any]] = deque()  # read from the log, not handed out yet
        self._reading = False  # a read of the log is under way
        self._last_reap = time.monotonic()
        #: The thread's events from the cursor on, as they come (``async for``); a read that
        #: times out (``asyncio.wait_for(anext(sub.stream), t)``) leaves it usable.
        self.stream: SubscriptionStream = SubscriptionStream(self)

    def follow_live_run(self) -> None:
        """Keep :meth:`active_run_id` current with runs of other processes, stream read or not
        (a task of the running loop, ended by :meth:`unsubscribe`). It wakes on other
        processes' commits, and on this process's only while the store names a run of this
        process that this agent does not know as its own: its own are known without the
        store."""
        if self._live_task is None:
            self._live_watch = ChangeFeed.of(self._store).watch(local=False)
            self._live_task = asyncio.get_running_loop().create_task(
                self._track_live_run(self._live_watch), name=f"live run of {self.thread_id}")

    def active_run_id(self) -> str | None:
        """The thread's live run, read or not: this agent's run on the thread in this process,
        else the run live as of the last event this subscriber read (another process's)."""
        local = self.agent.runtime.run_on(self.thread_id)
        if local is not None and not local.output.done():
            _remember(self._ours, local.run_id, self._kept())
            return local.run_id
        tracked = self._active_run_id
        if tracked in self._ours:
            return None  # ours, and no longer live here: it ended (its end not read yet)
        stored = self._stored_run_id
        if tracked is None and stored not in self._ours and stored not in self._ended:
            return stored  # another process's, its start not read yet
        return tracked

    @property
    def behind(self) -> bool:
        """Events are known to wait for this subscriber: read and not handed out yet, being read,
        or appended to the thread since its last read (by this process; on PostgreSQL by any,
        whose notices name the thread). A hint — the change feed's wake for a commit of another
        process to a SQLite store, which names no thread, or its first look — makes the reader
        read again but is not counted until that read finds something. An app that shows the
        stream is caught up only when this is False (tests/test_subscription_stream.py::
        test_behind_holds_until_every_event_of_a_finished_run_is_handed_out)."""
        return bool(self._unread) or self._reading or (
            self._appended.is_set() and not self._closed)

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
        self._release()  # the stream may never be read again: stop the poller now
        if self._live_task is not None:
            self._live_task.cancel()
        if self._live_watch is not None:
            self._live_watch.close()  # now, not when the task gets round to its cancellation

    async def _track_live_run(self, changes: ChangeWatch) -> None:
        with changes:
            read_again = False
            while not self._closed:
                if not read_again:
                    await changes.wait()
                read_again = await self._read_live_run(changes)
                if not read_again:
                    await asyncio.sleep(LIVE_CHECK_S)  # a streaming run commits often

    async def _read_live_run(self, changes: ChangeWatch) -> bool:
        """Read the thread's live run from the store; True: read it again at once.

        A run of this process not known here as this agent's (another agent's, or one of ours
        that started or ended around the read) ends with one of this process's commits, which
        wake the watch only while it is ``local``: so it is while the store names such a run.
        Once switched, the store is read again (the end may have committed before the switch)
        (tests/test_conformance.py::
        test_a_subscriber_sees_the_end_of_another_agent_s_run_in_this_process)."""
        runtime = self.agent.runtime
        before = runtime.run_on(self.thread_id)  # a run of ours the read may name
        active = await self._store.active_run(self.thread_id)
        stored = self._stored_run_id = active.run_id if active is not None else None
        ours = stored is not None and (
            (before is not None and before.run_id == stored) or runtime.run(stored) is not None)
        if ours and stored is not None:  # this agent's own: its end is known here
            _remember(self._ours, stored, self._kept())
        self._ended.clear()  # the store's answer is newer than the ends read so far
        was_local = changes.local
        changes.local = active is not None and not ours and active.owner == runtime.owner
        return changes.local and not was_local

    async def next_event(self) -> dict[str, Any]:
        """The next event of the thread's log past this subscriber's cursor, waiting for one;
        ``StopAsyncIteration`` once unsubscribed. A cancelled call (``asyncio.wait_for`` timing
        out) changes nothing: the cursor moves only as an event is handed out, so the next call
        goes on from there (tests/test_subscription_stream.py)."""
        if self._changes is None:  # the first read: a commit after this wakes the subscriber
            self._changes = ChangeFeed.of(self._store).watch(self._wake, local=False)
        while not self._closed:
            if self._unread:
                event = self._unread.popleft()
                self._cursor = event["seq"]
                self._track(event)
                return event
            self._wake.clear()
            self._appended.clear()
            self._reading = True
            try:
                events = await self._store.read_events(self.thread_id, self._cursor)
            finally:
                self._reading = False
            if events:
                self._unread.extend(events)
                continue
            await self._wait()
            if self._active_run_id and time.monotonic() - self._last_reap > REAP_EVERY_S:
                self._last_reap = time.monotonic()
                await self._store.reap_expired_lease(self.thread_id)
        self._release()
        raise StopAsyncIteration

    def _release(self) -> None:
        """Stop the wakes of this subscriber's stream (idempotent)."""
        if self._changes is not None:
            self._changes.close()
        self._store.remove_listener(self.thread_id, self._appended)

    async def _wait(self) -> None:
        """Until this process appends, another process commits, or unsubscribe(); while a run
        seems live, at most ``REAP_EVERY_S`` (the caller looks for a dead owner)."""
        timeout = REAP_EVERY_S if self._active_run_id else None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # not wait_for: see agent/rescuer.py's _wait
                await self._wake.wait()

    def _kept(self) -> tuple[str | None, ...]:
        return (self._active_run_id, self._stored_run_id)

    def _track(self, event: dict[str, Any]) -> None:
        if event["type"] == START:
            self._active_run_id = event["run_id"]
        elif event["type"] in END_TYPES:
            _remember(self._ended, event["run_id"], self._kept())
            if event["run_id"] == self._active_run_id:
                self._active_run_id = None


def _remember(runs: dict[str, None], run_id: str, keep: tuple[str | None, ...]) -> None:
    """Add ``run_id`` to ``runs`` (an ordered set), forgetting the oldest past
    ``REMEMBERED_RUNS`` but those in ``keep`` (the runs the subscriber still reasons about: the
    one it last saw start, the one the store last named live), so a subscriber that reads for
    hours holds no id per run it saw
    (tests/test_subscription_stream.py::test_a_long_subscription_keeps_no_id_per_run)."""
    runs[run_id] = None
    while len(runs) > REMEMBERED_RUNS:
        oldest = next(iter(runs))
        del runs[oldest]
        if oldest in keep:
            runs[oldest] = None  # kept: now the newest


class SubscriptionStream:
    """``sub.stream``: an async iterator over the thread's events that outlives a cancelled
    read (an async generator would be closed by one), so a ``wait_for`` that times out leaves
    the stream usable. ``aclose()`` unsubscribes."""

    __slots__ = ("_subscription",)

    def __init__(self, subscription: ThreadSubscription) -> None:
        self._subscription = subscription

    def __aiter__(self) -> SubscriptionStream:
        return self

    async def __anext__(self) -> dict[str, Any]:
        return await self._subscription.next_event()

    async def aclose(self) -> None:
        self._subscription.unsubscribe()


async def check_thread_owner(store: Any, resource_id: str, thread_id: str) -> None:
    """A thread is reached only through the resource that owns it, as ``send_*`` are: a
    subscriber naming another resource is refused (StoreError), and sees nothing."""
    thread = await store.get_thread(thread_id)
    if thread is not None and thread.resource_id != resource_id:
        raise StoreError(
            f"thread {thread_id!r} belongs to resource {thread.resource_id!r}, not {resource_id!r}"
        )


async def subscribe(
    agent: AgentCore, *, resource_id: str | None = None, thread_id: str
) -> ThreadSubscription:
    """``resource_id`` is optional, as in the reference: without it, the thread's own (or None
    for a thread that does not exist yet)."""
    if resource_id is not None:
        parse_target(resource_id=resource_id, thread_id=thread_id)
    elif not isinstance(thread_id, str) or not thread_id:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError("subscribe_to_thread needs thread_id (a non-empty string)")
    if agent.memory is None:
        raise ConfigError("subscribe_to_thread needs memory: Agent(memory=Memory(...))")
    store = agent.memory.store
    if resource_id is None:
        thread = await store.get_thread(thread_id)
        resource_id = thread.resource_id if thread is not None else None
    else:
        await check_thread_owner(store, resource_id, thread_id)
    await store.reap_expired_lease(thread_id)
    active = await store.active_run(thread_id)
    if active is not None and active.start_seq is not None:
        cursor = active.start_seq - 1
    else:
        cursor = await store.last_event_seq(thread_id)
    agent.runtime.ensure_dispatcher()
    ours = active is not None and active.owner == agent.runtime.owner
    sub = ThreadSubscription(
        agent, resource_id, thread_id, cursor, active.run_id if active else None, ours=ours
    )
    sub.follow_live_run()
    return sub


class _Forwarding(asyncio.Event):
    """An event that sets ``target`` too: the store's listener of a subscription, which wakes
    its reader (waiting on ``target``) and stays set itself until that reader reads."""

    def __init__(self, target: asyncio.Event) -> None:
        super().__init__()
        self.target = target

    def set(self) -> None:
        super().set()
        self.target.set()

"""The dispatcher: sends scheduled digests and deferred or held deliveries once they are due.

It runs as an asyncio task in every process that uses an agent with memory. Several may run on
one store at once: each pass first *claims* the due records in one store transaction
(``claimed_by``, ``claim_expires_at``), and every outcome is written only where its claim stands,
so no record is delivered twice. A claim left by a process that died expires.
A pass with nothing due only reads: it takes no write lock and commits nothing, so idle
processes do not wake each other's change pollers (tests/test_dispatcher.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import defaultdict
from datetime import datetime

from tui_agent.errors import ConfigError
from tui_agent.notifications import delivery
from tui_agent.notifications.policy import agent_config
from tui_agent.notifications.ports import NotifyingAgent
from tui_agent.notifications.records import NotificationRecord
from tui_agent.store.changes import ChangeFeed, ChangeWatch
from tui_agent.store.codec import new_id
from tui_agent.store.contract import Store

log = logging.getLogger("tui_agent.notifications")
CLAIM_BATCH = 500
SETTLE_S = 0.025  # after a commit of another process, before the pass it calls for

def _timestamp(now: float | datetime | None) -> float:
    if now is None:
        return time.time()
    return now.timestamp() if isinstance(now, datetime) else float(now)


def _due(moment: datetime | None, now: float) -> bool:
    return moment is not None and moment.timestamp() <= now


async def _claim(store: Store, token: str, now: float) -> list[NotificationRecord]:
    """Claim what is due at ``now``; a claim and a lease's liveness go by the real clock. A
    record summarised (or awaiting its digest) with ``deliver_at`` waits for an idle thread:
    "a summary now, the full notification once idle"."""
    real_now = time.time()
    return await store.claim_due_notifications(
        token, due_at=now, now=real_now, expires_at=real_now + delivery.CLAIM_TTL_S,
        limit=CLAIM_BATCH,
    )


async def _deliver(
    agent: NotifyingAgent, store: Store, records: list[NotificationRecord], token: str, now: float,
    report: dict[str, int],
) -> set[str]:
    """Full deliveries of the records whose ``deliver_at`` is due. Returns the ids handled."""
    handled: set[str] = set()
    active = await store.active_run(records[0].thread_id) is not None
    for rec in records:
        if not _due(rec.deliver_at, now):
            continue
        if active and (rec.summary_at is not None or rec.summarized_at is not None):
            continue  # held for an idle thread (the claim saw it idle; it is busy again)
        handled.add(rec.id)
        try:
            await delivery.route(agent, delivery.full_signal(rec), rec,
                                 resource_id=rec.resource_id, thread_id=rec.thread_id,
                                 behavior="deliver", if_idle=None)
        except Exception as exc:
            report["failures"] += 1
            await delivery.mark_failed_attempt(store, [rec.id], token, exc, now, digest=False)
            continue
        report["delivered"] += 1
        await delivery.mark_delivered(store, [rec.id], token, time.time())
    return handled


async def _digest(
    agent: NotifyingAgent, store: Store, thread_id: str, records: list[NotificationRecord],
    token: str, now: float, report: dict[str, int],
) -> None:
    """One digest for the thread, covering every due summary of this pass."""
    due = [rec for rec in records if _due(rec.summary_at, now)]
    if not due:
        return
    ids = [rec.id for rec in due]
    try:
        signal = await delivery.build_digest(store, thread_id)
        if signal is None:  # all of them were seen or dismissed meanwhile
            return
        await delivery.route(agent, signal, None, resource_id=due[0].resource_id,
                             thread_id=thread_id,
                             behavior=delivery.digest_behavior([r.priority for r in due]),
                             if_idle=None)
    except Exception as exc:
        report["failures"] += 1
        await delivery.mark_failed_attempt(store, ids, token, exc, now, digest=True)
        return
    report["digests"] += 1
    await delivery.mark_summarized(store, ids, token, time.time())


async def dispatch_due(
    agent: NotifyingAgent, now: float | datetime | None = None, *, claimant: str | None = None
) -> dict[str, int]:
    """One pass: claim what is due at ``now`` (default: the clock) and send it — full
    deliveries first, then one digest per thread for the remaining due summaries. Returns
    counts: ``claimed``, ``delivered``, ``digests``, ``failures``."""
    memory = agent.memory
    if memory is None:
        raise ConfigError(f"agent {agent.id!r} has no memory: its inbox lives on memory threads")
    store = memory.store
    at = _timestamp(now)
    token = claimant or f"dispatch:{os.getpid()}:{new_id()}"
    report = {"claimed": 0, "delivered": 0, "digests": 0, "failures": 0}
    records = await _claim(store, token, at)
    if not records:
        return report  # an idle pass only read: nothing to release, nothing committed
    report["claimed"] = len(records)
    by_thread: dict[str, list[NotificationRecord]] = defaultdict(list)
    for rec in records:
        by_thread[rec.thread_id].append(rec)
    try:
        for thread_id, recs in by_thread.items():
            handled = await _deliver(agent, store, recs, token, at, report)
            rest = [rec for rec in recs if rec.id not in handled]
            await _digest(agent, store, thread_id, rest, token, at, report)
    finally:
        await delivery.release(store, [rec.id for rec in records], token)
    return report


class NotificationDispatcher:
    """Runs ``dispatch_due`` every ``interval_s`` in this process's event loop."""

    def __init__(self, agent: NotifyingAgent, interval_s: float | None = None) -> None:
        self.agent = agent
        config = agent_config(agent)
        self.interval_s = interval_s or config.dispatch_interval_s
        self.on_change = config.dispatch_on_change
        self.claimant = f"dispatch:{os.getpid()}:{new_id()}"
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._told = asyncio.Event()  # a pass now: another process committed, or poke()

    def poke(self) -> None:
        """Pass now, not at the next interval (a host that just opened the store sends what
        waits at once); not with ``dispatch_on_change=False`` (passes by the clock only)."""
        if self.on_change:
            self._told.set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def running_in(self, loop: asyncio.AbstractEventLoop) -> bool:
        return self.running and self._loop is loop

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(self._run(), name="tui-agent-notification-dispatcher")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def stop_and_wait(self) -> None:
        """Stop, and wait for the current pass to end (when it runs in this loop)."""
        task = self._task
        self.stop()
        if task is not None and task.get_loop() is asyncio.get_running_loop():
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        memory = self.agent.memory
        assert memory is not None  # ensure_dispatcher starts none without memory
        told = self._told
        watch: ChangeWatch | None = None
        try:
            while True:
                # What a call sends at once needs no pass; another process's commit may have
                # left records due (tui-agent notify): pass then, else every interval_s.
                # asyncio.timeout, not wait_for: on 3.11 wait_for loses a cancellation that
                # comes as the event is set, and stop_and_wait then waited forever.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval_s):
                        await told.wait()
                if told.is_set():  # commits come in bursts: one pass once it has settled
                    await asyncio.sleep(SETTLE_S)
                told.clear()
                if watch is None and self.on_change:
                    # From the first pass on (a host's comes at once: poke), another process's
                    # commit calls for one; taken before the pass reads, so none is missed.
                    watch = ChangeFeed.of(memory.store).watch(told, local=False, passive=True)
                try:
                    await dispatch_due(self.agent, claimant=self.claimant)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bad pass must not end the dispatcher; the next retries
                    log.exception("notification dispatch pass failed")
        finally:
            if watch is not None:
                watch.close()


def ensure_dispatcher(agent: NotifyingAgent) -> NotificationDispatcher | None:
    """Start the agent's dispatcher in the running loop (idempotent). None without memory or
    outside a running loop. The handle lives on the agent's runtime (``agent.runtime``)."""
    if getattr(agent, "memory", None) is None:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    runtime = agent.runtime
    current = runtime.dispatcher
    if isinstance(current, NotificationDispatcher) and current.running_in(loop):
        return current
    dispatcher = NotificationDispatcher(agent)
    dispatcher.start()
    runtime.dispatcher = dispatcher
    return dispatcher


async def stop_dispatcher(agent: NotifyingAgent) -> None:
    """Stop the agent's dispatcher, if it runs, and wait for its current pass to end."""
    dispatcher = agent.runtime.dispatcher
    if dispatcher is not None:
        await dispatcher.stop_and_wait()

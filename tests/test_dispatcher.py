"""The dispatcher: digests per due window, held and deferred deliveries, retries, and several
dispatchers (stores, processes) on one file delivering each record once."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.common import AgentFactory, Seen, StoreFactory
from helpers.sql import rows as store_rows

from tui_agent import Agent, Memory
from tui_agent.notifications.dispatcher import dispatch_due, ensure_dispatcher
from tui_agent.store import open_store
from tui_agent.store.records import stored_message
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "user-1", "thread-1"
# Agents whose own background dispatcher never gets to a pass: these tests call dispatch_due.
MANUAL = {"dispatch_interval_s": 3600, "dispatch_on_change": False}


class BrokenAgent(Agent):
    """An agent whose signal routing fails (as a misconfigured agent's would)."""

    def send_signal(self, signal: Any, **target: Any) -> Any:
        raise RuntimeError("routing is down")


@pytest.fixture
def agent(agents: AgentFactory, memory: Any, seen: Seen) -> Any:
    return agents(name="inbox", instructions="triage", model=ScriptedModel(handler=seen),
                  memory=memory, notifications=MANUAL)


async def make_active(memory: Any, thread_id: str = T) -> str:
    run_id = f"run-{thread_id}"
    assert await memory.store.start_run(thread_id, R, run_id, owner="other-process", ttl_s=60)
    return run_id


async def end_run(memory: Any, run_id: str, thread_id: str = T) -> None:
    await memory.store.finish_run(thread_id, R, run_id, owner="other-process",
                                  status="finished", finish_reason="stop", force=True)


async def routed(memory: Any, thread_id: str = T) -> list[dict[str, Any]]:
    """Every signal routed to the thread: its model message and its data."""
    rows = await store_rows(
        memory.store, "SELECT message, data FROM signals WHERE thread_id=? ORDER BY seq", thread_id
    )
    # A routed signal's model message is rendered from its data when read (stored once).
    return [{"content": stored_message(m, json.loads(d))["content"], **json.loads(d)}
            for m, d in rows]


def note(source: str = "github", priority: str = "medium", **extra: Any) -> dict[str, Any]:
    return {"source": source, "kind": "event", "summary": f"{source} says hi",
            "priority": priority, **extra}


async def test_a_pass_with_nothing_due_commits_nothing(agent: Any, memory: Any) -> None:
    """An idle pass only reads: no write lock, no commit for other processes' change pollers
    (nor this one's watchers of any commit) to wake on, every second in every process."""
    await make_active(memory)
    await agent.send_notification_signal(note("slack"), resource_id=R, thread_id=T)
    assert (await dispatch_due(agent))["digests"] == 1
    commits, version = memory.store.local_commits, await memory.store.data_version()
    assert await dispatch_due(agent) == {"claimed": 0, "delivered": 0, "digests": 0,
                                         "failures": 0}
    assert memory.store.local_commits == commits
    assert await memory.store.data_version() == version


async def test_one_digest_per_thread_per_due_window(agent: Any, memory: Any) -> None:
    await make_active(memory)
    await make_active(memory, "thread-2")
    for source in ("slack", "github", "github"):
        await agent.send_notification_signal(note(source), resource_id=R, thread_id=T)
    await agent.send_notification_signal(note("email"), resource_id=R, thread_id="thread-2")
    report = await dispatch_due(agent)
    assert report["digests"] == 2
    assert [s["content"] for s in await routed(memory)] == [
        '<notification-summary pending="3" priority="medium">github: 2, slack: 1'
        "</notification-summary>"
    ]
    assert len(await routed(memory, "thread-2")) == 1
    records = await memory.list_notifications(T)
    assert all(r.status == "pending" and r.summarized_at and r.summary_at is None
               for r in records)
    assert (await dispatch_due(agent))["digests"] == 0  # nothing new is due
    await agent.send_notification_signal(note("slack"), resource_id=R, thread_id=T)
    assert (await dispatch_due(agent))["digests"] == 1
    assert (await routed(memory))[-1]["content"].startswith('<notification-summary pending="4"')


async def test_low_digest_reaches_subscribers_without_waking(
    agent: Any, memory: Any, seen: Seen
) -> None:
    await agent.send_notification_signal(note(priority="low"), resource_id=R, thread_id=T)
    before = await memory.store.last_event_seq(T)
    assert (await dispatch_due(agent))["digests"] == 1
    events = await memory.store.read_events(T, before)
    echoes = [e for e in events if e["type"] == "data-signal"]
    assert [e["payload"]["tag_name"] for e in echoes] == ["notification-summary"]
    assert seen.calls == []
    assert await memory.store.active_run(T) is None
    history = await memory.store.list_messages(T)
    assert history[-1].content == (
        '<notification-summary pending="1" priority="low">github: 1</notification-summary>'
    )


async def test_a_digest_of_more_than_lows_wakes_the_model(
    agent: Any, memory: Any, seen: Seen
) -> None:
    run_id = await make_active(memory)
    await agent.send_notification_signal(note("github"), resource_id=R, thread_id=T)  # medium
    await end_run(memory, run_id)
    await agent.send_notification_signal(note("slack", priority="low"), resource_id=R,
                                         thread_id=T)
    assert (await dispatch_due(agent))["digests"] == 1  # both in one digest, on an idle thread
    await agent.wait_for_local_runs()
    assert seen.user_texts() == [
        '<notification-summary pending="2" priority="medium">github: 1, slack: 1'
        "</notification-summary>"
    ]


async def test_a_digest_counts_only_what_is_still_pending(agent: Any, memory: Any) -> None:
    run_id = await make_active(memory)
    kept = (await agent.send_notification_signal(note("slack"), resource_id=R,
                                                 thread_id=T))["record"]
    gone = (await agent.send_notification_signal(note("github"), resource_id=R,
                                                 thread_id=T))["record"]
    await memory.dismiss_notification(gone.id)  # the user dealt with it before the digest
    assert (await dispatch_due(agent))["digests"] == 1
    assert [s["content"] for s in await routed(memory)] == [
        '<notification-summary pending="1" priority="medium">slack: 1</notification-summary>'
    ]
    assert (await memory.get_notification(kept.id)).summarized_at is not None
    await end_run(memory, run_id)


async def test_high_held_while_active_is_delivered_once_idle(
    agent: Any, memory: Any, seen: Seen
) -> None:
    run_id = await make_active(memory)
    result = await agent.send_notification_signal(note(priority="high"), resource_id=R,
                                                  thread_id=T)
    record = result["record"]
    assert result["signal"].tag_name == "notification-summary"
    assert (await dispatch_due(agent))["delivered"] == 0  # still active: held
    await end_run(memory, run_id)
    assert (await dispatch_due(agent))["delivered"] == 1
    await agent.close()  # waits for the woken run
    assert seen.user_texts()[-1] == (
        f'<notification id="{record.id}" source="github" kind="event" priority="high">'
        "github says hi</notification>"
    )
    stored = await memory.get_notification(record.id)
    assert stored.status == "delivered" and stored.delivered_at is not None
    assert (await dispatch_due(agent))["delivered"] == 0


async def test_deferred_delivery_waits_for_its_time(
    agents: AgentFactory, memory: Any, seen: Seen
) -> None:
    agent = agents(name="d", instructions="x", model=ScriptedModel(handler=seen), memory=memory,
                   notifications={**MANUAL, "delivery_policy": {"sources": {"rss": {
                       "action": "defer", "deliver_at": time.time() + 3600}}}})
    run_id = await make_active(memory)
    result = await agent.send_notification_signal(note("rss"), resource_id=R, thread_id=T)
    assert result["record"].deliver_at is not None
    assert (await dispatch_due(agent))["claimed"] == 0
    report = await dispatch_due(agent, now=time.time() + 7200)
    assert report["delivered"] == 1
    assert [s["content"] for s in await routed(memory)] == [
        f'<notification id="{result["record"].id}" source="rss" kind="event" priority="medium">'
        "rss says hi</notification>"
    ]
    assert (await memory.get_notification(result["record"].id)).status == "delivered"
    await end_run(memory, run_id)


async def test_a_delivery_that_keeps_failing_ends_as_failed(
    agents: AgentFactory, memory: Any, seen: Seen
) -> None:
    agent = agents(BrokenAgent, name="b", instructions="x", model=ScriptedModel(handler=seen),
                   memory=memory, notifications=MANUAL)
    result = await agent.send_notification_signal(note(priority="urgent"), resource_id=R,
                                                  thread_id=T)
    assert "routing is down" in result["delivery_error"]
    record_id = result["record"].id
    assert result["record"].status == "pending" and result["record"].delivery_attempts == 1
    now = time.time()
    for _ in range(10):  # far more passes than attempts allowed
        now += 120
        await dispatch_due(agent, now=now)
    record = await memory.get_notification(record_id)
    assert record.status == "failed"
    assert record.delivery_attempts == 5
    assert record.failed_at is not None
    assert record.last_delivery_error == "RuntimeError: routing is down"


async def test_a_failed_delivery_is_retried_after_1_2_4_8_seconds(
    agents: AgentFactory, memory: Any, seen: Seen
) -> None:
    agent = agents(BrokenAgent, name="b", instructions="x", model=ScriptedModel(handler=seen),
                   memory=memory, notifications=MANUAL)
    result = await agent.send_notification_signal(note(priority="urgent"), resource_id=R,
                                                  thread_id=T)
    record_id = result["record"].id  # its first try failed at once
    waits = []
    for _ in range(4):
        record = await memory.get_notification(record_id)
        due = record.deliver_at.timestamp()  # read back to the microsecond: +/- 1 µs
        waits.append(round(due - record.updated_at.timestamp(), 3))  # after the failure
        assert (await dispatch_due(agent, now=due - 0.01))["claimed"] == 0, "not before its time"
        assert (await dispatch_due(agent, now=due + 0.001))["failures"] == 1
    assert waits == [1, 2, 4, 8]
    record = await memory.get_notification(record_id)
    assert (record.status, record.delivery_attempts) == ("failed", 5)


async def test_a_digest_that_keeps_failing_ends_as_failed(
    agents: AgentFactory, memory: Any, seen: Seen
) -> None:
    agent = agents(BrokenAgent, name="b", instructions="x", model=ScriptedModel(handler=seen),
                   memory=memory, notifications=MANUAL)
    record = (await agent.send_notification_signal(note(priority="low"), resource_id=R,
                                                   thread_id=T))["record"]
    now = time.time()
    reports = []
    for _ in range(8):
        reports.append(await dispatch_due(agent, now=now))
        now += 120
    assert sum(r["failures"] for r in reports) == 5
    failed = await memory.get_notification(record.id)
    assert (failed.status, failed.delivery_attempts) == ("failed", 5)


async def test_two_stores_on_one_file_deliver_each_record_once(
    agents: AgentFactory, stores: StoreFactory, tmp_path: Path, seen: Seen
) -> None:
    path = tmp_path / "shared.sqlite"
    peers = [agents(name=f"p{i}", instructions="x", model=ScriptedModel(handler=seen),
                    memory=Memory(store=stores(path)),
                    notifications={**MANUAL, "delivery_policy": {"default": {
                        "action": "defer", "deliver_at": time.time() + 60}}})
             for i in range(3)]
    run_id = await make_active(peers[0].memory)
    batch = [note(f"s{i % 5}", summary=f"n{i}") for i in range(150)]
    await peers[0].send_notification_signal(batch, resource_id=R, thread_id=T)
    later = time.time() + 120
    reports = await asyncio.gather(*(dispatch_due(a, now=later) for a in peers))
    assert sum(r["delivered"] for r in reports) == 150
    delivered = Counter(s["metadata"]["notification_id"] for s in await routed(peers[0].memory))
    assert len(delivered) == 150 and set(delivered.values()) == {1}
    await end_run(peers[0].memory, run_id)


def _child_dispatch(path: str, later: float) -> None:
    async def main() -> None:
        memory = Memory(store=open_store(path))  # a file, or a postgresql:// URL
        agent = Agent(name="child", instructions="x", model=ScriptedModel(replies=[]),
                      memory=memory, notifications=MANUAL)
        while (await dispatch_due(agent, now=later))["claimed"]:
            pass
        await memory.store.close()

    asyncio.run(main())


async def test_processes_dispatching_at_once_deliver_each_record_once(
    agents: AgentFactory, stores: StoreFactory, tmp_path: Path, seen: Seen
) -> None:
    path = str(tmp_path / "procs.sqlite")
    memory = Memory(store=stores(path))
    agent = agents(name="parent", instructions="x", model=ScriptedModel(handler=seen),
                   memory=memory, notifications={**MANUAL, "delivery_policy": {"default": {
                       "action": "defer", "deliver_at": time.time() + 60}}})
    run_id = await make_active(memory)
    await agent.send_notification_signal([note(f"s{i % 5}", summary=f"n{i}") for i in range(300)],
                                         resource_id=R, thread_id=T)
    later = time.time() + 120
    ctx = multiprocessing.get_context("spawn")
    where = memory.store.location  # the file, or the database's URL
    procs = [ctx.Process(target=_child_dispatch, args=(where, later)) for _ in range(3)]
    for p in procs:
        p.start()
    await asyncio.get_running_loop().run_in_executor(None, lambda: [p.join(60) for p in procs])
    assert [p.exitcode for p in procs] == [0, 0, 0]
    delivered = Counter(s["metadata"]["notification_id"] for s in await routed(memory))
    assert len(delivered) == 300 and set(delivered.values()) == {1}
    assert await memory.list_notifications(status="pending") == []
    await end_run(memory, run_id)


async def test_the_background_dispatcher_sends_what_is_due(
    agents: AgentFactory, memory: Any, seen: Seen
) -> None:
    agent = agents(name="bg", instructions="x", model=ScriptedModel(handler=seen), memory=memory,
                   notifications={"dispatch_interval_s": 0.05})
    dispatcher = ensure_dispatcher(agent)
    assert dispatcher is not None and dispatcher.interval_s == 0.05
    assert ensure_dispatcher(agent) is dispatcher  # idempotent
    await make_active(memory)
    await agent.send_notification_signal(note(), resource_id=R, thread_id=T)
    deadline = time.monotonic() + 10
    while not await routed(memory) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)  # waiting for the background task's pass, not a race fix
    assert [s["tag_name"] for s in await routed(memory)] == ["notification-summary"]
    await agent.close()
    assert not dispatcher.running


def test_no_dispatcher_without_memory_or_loop(memory: Any) -> None:
    bare = Agent(name="bare", instructions="x", model=ScriptedModel(replies=["ok"]))
    assert ensure_dispatcher(bare) is None
    with_memory = Agent(name="m", instructions="x", model=ScriptedModel(replies=["ok"]),
                        memory=memory)
    assert ensure_dispatcher(with_memory) is None  # no running loop here

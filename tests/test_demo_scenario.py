"""The live demo feed (``tui_agent.demo``): on a tiny pace it fills the demo thread with person
messages, browser lane versions and notifications, and stops promptly when asked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from helpers.common import AgentFactory

from tui_agent import Agent, Memory
from tui_agent.demo import DEMO_RESOURCE, DEMO_THREAD, DemoFeed
from tui_agent.errors import SignalError
from tui_agent.testing import ScriptedModel

PACE = 0.01  # person every ~0.25 s, lane change every ~0.1 s, notification every ~0.12 s
Missing = Callable[[], Awaitable[list[str]]]


def _agent(agents: AgentFactory, memory: Memory, cls: type[Agent] = Agent) -> Agent:
    return agents(cls, model=ScriptedModel(handler=lambda messages, tools: "ok"), memory=memory)


async def _until(missing: Missing, timeout: float = 10.0) -> None:
    """Poll ``missing()`` every 20 ms until it is empty; fail naming what is still missing."""
    deadline = time.monotonic() + timeout
    left = await missing()
    while left and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        left = await missing()
    assert not left, f"after {timeout} s the demo feed still had not produced: {left}"


async def _people(memory: Memory) -> dict[str, str]:
    """name → source of every person message stored on the demo thread."""
    found = {}
    for message in await memory.list_messages(DEMO_THREAD, limit=500):
        attributes = message.metadata.get("signal", {}).get("attributes", {})
        if message.role == "user" and "name" in attributes:
            found[attributes["name"]] = attributes.get("from")
    return found


def _everything(memory: Memory) -> Missing:
    async def missing() -> list[str]:
        left = []
        people = await _people(memory)
        expected = {"Ana": "slack", "Devin": "github", "Mei": "terminal"}
        if people != expected:
            left.append(f"person messages {expected} (have {people})")
        if len(await memory.state_lane_history(DEMO_THREAD, "browser")) < 2:
            left.append("two browser lane versions")
        notes = await memory.list_notifications(DEMO_THREAD, limit=200)
        if len({n.priority for n in notes}) < 2 or len({n.source for n in notes}) < 2:
            left.append(f"notifications of 2 priorities and 2 sources (have {len(notes)})")
        return left

    return missing


async def _run_then_stop(feed: DemoFeed, done: Missing) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(feed.run(stop))
    try:
        await _until(done)
    finally:
        stop.set()
        await asyncio.wait_for(task, timeout=1.0)  # run() returns promptly once stopped


async def test_feed_fills_the_demo_thread(agents: AgentFactory, memory: Memory) -> None:
    notices: list[str] = []
    agent = _agent(agents, memory)
    feed = DemoFeed(agent, pace=PACE, seed=7, say=notices.append)
    await _run_then_stop(feed, _everything(memory))
    thread = await memory.get_thread(DEMO_THREAD)
    assert thread is not None and thread.resource_id == DEMO_RESOURCE
    assert thread.title == "Demo: release day"
    lane = await memory.get_state_lane(DEMO_THREAD, "browser")
    assert lane is not None and lane.value["active"] in lane.value["tabs"]
    assert notices == []


async def test_stop_returns_promptly(agents: AgentFactory, memory: Memory) -> None:
    agent = _agent(agents, memory)
    stop = asyncio.Event()
    stop.set()
    await asyncio.wait_for(DemoFeed(agent, seed=1).run(stop), timeout=0.5)
    stop = asyncio.Event()
    task = asyncio.create_task(DemoFeed(agent, seed=1).run(stop))  # pace 1: long waits ahead
    await asyncio.sleep(0.05)
    started = time.monotonic()
    stop.set()
    await asyncio.wait_for(task, timeout=1.0)
    assert time.monotonic() - started < 0.5


class _NoInbox(Agent):
    """An agent whose every notification fails as a bad signal would."""

    async def send_notification_signal(self, notification: Any, **target: Any) -> Any:
        raise SignalError("inbox is down")


async def test_a_failing_send_is_reported_and_the_feed_goes_on(
    agents: AgentFactory, memory: Memory
) -> None:
    notices: list[str] = []
    agent = _agent(agents, memory, _NoInbox)
    feed = DemoFeed(agent, pace=PACE, seed=3, say=notices.append)

    async def missing() -> list[str]:
        left = [] if len(notices) >= 2 else ["two failure notices"]
        return left + ([] if len(await _people(memory)) == 3 else ["all three people"])

    await _run_then_stop(feed, missing)
    assert all("inbox is down" in notice for notice in notices), notices

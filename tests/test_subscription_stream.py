"""Issue 21, point 5: a read of a subscription's stream that times out (``asyncio.wait_for``)
leaves the stream usable — the next read goes on from where it was, missing nothing — and
``aclose()`` (or ``unsubscribe()``) ends it. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory, Held, StoreFactory, until

from tui_agent import Memory
from tui_agent.store import Store
from tui_agent.store.changes import ChangeFeed
from tui_agent.store.records import EventIn
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "res-s", "thread-s"
GUARD_S = 10.0  # failure guard only
SHORT_S = 0.05  # a read meant to time out: nothing is written meanwhile


async def read_run(stream: Any) -> list[str]:
    """The types of the chunks up to the end of a run."""
    types: list[str] = []
    while not types or types[-1] != "finish":
        types.append((await asyncio.wait_for(anext(stream), GUARD_S))["type"])
    return types


async def test_a_read_that_times_out_leaves_the_stream_usable(
    agents: AgentFactory, store: Store
) -> None:
    agent = agents(model=ScriptedModel(["one", "two"]), memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    for _ in range(3):  # the thread is idle: each read times out, and changes nothing
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(sub.stream), SHORT_S)
    await agent.generate("first", memory={"resource": R, "thread": T})
    assert (await read_run(sub.stream))[:2] == ["start", "data-user-message"]
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(sub.stream), SHORT_S)
    await agent.generate("second", memory={"resource": R, "thread": T})
    second = await read_run(sub.stream)
    assert second[0] == "start" and second.count("start") == 1  # the run once, whole
    sub.unsubscribe()
    with pytest.raises(StopAsyncIteration):
        await anext(sub.stream)


async def test_a_read_that_times_out_mid_run_misses_nothing(
    agents: AgentFactory, store: Store
) -> None:
    held = Held("held answer")
    agent = agents(model=ScriptedModel(handler=held), memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    output = await agent.stream("wait", memory={"resource": R, "thread": T})
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    seen = [(await asyncio.wait_for(anext(sub.stream), GUARD_S))["type"] for _ in range(3)]
    assert seen == ["start", "data-user-message", "step-start"]
    with pytest.raises(TimeoutError):  # the model is held: nothing comes
        await asyncio.wait_for(anext(sub.stream), SHORT_S)
    held.gate.set()
    rest = await read_run(sub.stream)
    await output.consume_stream()
    assert rest[0] == "text-delta" and rest[-2:] == ["step-finish", "finish"]
    await sub.stream.aclose()
    with pytest.raises(StopAsyncIteration):
        await anext(sub.stream)


async def test_a_long_subscription_keeps_no_id_per_run(agents: AgentFactory, store: Store) -> None:
    """Fifty runs of this process read through one subscription: it knows the thread is idle
    after each, and remembers only the last few (a pane open for hours holds no id per run)."""
    from tui_agent.agent.subscription import REMEMBERED_RUNS

    agent = agents(model=ScriptedModel(["ok"] * 50), memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    for i in range(50):
        output = await agent.stream(f"run {i}", memory={"resource": R, "thread": T})
        assert sub.active_run_id() == output.run_id
        await output.consume_stream()
        assert (await read_run(sub.stream))[0] == "start"
        assert sub.active_run_id() is None
    sub.unsubscribe()
    assert len(sub._ours) <= REMEMBERED_RUNS  # pyright: ignore[reportPrivateUsage]
    assert len(sub._ended) <= REMEMBERED_RUNS  # pyright: ignore[reportPrivateUsage]


async def test_behind_holds_until_every_event_of_a_finished_run_is_handed_out(
    agents: AgentFactory, store: Store
) -> None:
    """A run of this process ended before its subscriber read a word of it: no run is live,
    yet the subscriber is behind until the run's last event is handed out (what an app checks
    before it calls its view caught up)."""
    agent = agents(model=ScriptedModel(["the answer"]), memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert not sub.behind  # an idle thread, nothing written
    await agent.generate("go", memory={"resource": R, "thread": T})
    # On PostgreSQL the store's notice of the run's own commits may name it live a moment
    # longer (active_run_id follows the store for runs it did not see start here).
    await until(lambda: sub.active_run_id() is None, "the run ended")
    assert sub.behind  # ended, and not read
    types: list[str] = []
    while not types or types[-1] != "finish":
        assert sub.behind, f"caught up after {types} only"
        types.append((await asyncio.wait_for(anext(sub.stream), GUARD_S))["type"])
    assert not sub.behind
    sub.unsubscribe()


async def test_a_hint_of_another_process_s_commit_does_not_make_a_subscriber_behind(
    agents: AgentFactory, store: Store, stores: StoreFactory, store_kind: str
) -> None:
    """The change feed's wake for another process's commit is a hint: the subscriber reads
    again, but is behind only for what is known to wait — a commit to another thread never
    (an app would show every pane catching up on every commit anywhere), one to its thread on
    PostgreSQL, whose notice names it (SQLite's marker names no thread: the read finds it)."""
    agent = agents(model=ScriptedModel(["-"]), memory=Memory(store=store))
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    with pytest.raises(TimeoutError):  # caught up: its reader waits, watching the store
        await asyncio.wait_for(anext(sub.stream), SHORT_S)
    await store.data_version()  # PostgreSQL: listening from here on
    feed, elsewhere = ChangeFeed.of(store), stores()
    woken = feed.wakes
    await elsewhere.ensure_thread("another-thread", R)
    await until(lambda: feed.wakes > woken, "the feed's wake for the other thread")
    assert not sub.behind
    woken = feed.wakes
    await elsewhere.ensure_thread(T, R)
    await elsewhere.append_events(T, [EventIn("from-elsewhere")])
    await until(lambda: feed.wakes > woken, "the feed's wake for this thread")
    if store_kind == "postgres":
        await until(lambda: sub.behind, "its notice naming this thread")
    else:
        assert not sub.behind
    event = await asyncio.wait_for(anext(sub.stream), GUARD_S)
    assert event["type"] == "from-elsewhere" and not sub.behind
    sub.unsubscribe()

"""What happens to signals still pending when a run ends early (abort, failure): they are kept
in the thread's history as persisted — accepted as ``deliver``, so never dropped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory, Held

from tui_agent import Memory, SqliteStore
from tui_agent.testing import ScriptedModel

R, T = "res-1", "thread-1"
GUARD_S = 10.0  # failure guard only


async def test_signals_pending_at_abort_are_kept_as_history(
    store: SqliteStore, agents: AgentFactory
) -> None:
    held = Held("never")  # never released: the run is aborted while the model "thinks"
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=held),
                   memory=Memory(store=store))
    first = await agent.send_message("start", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    late = await agent.send_message("one more thing", resource_id=R, thread_id=T).accepted
    assert late == {"action": "deliver", "run_id": first["run_id"]}

    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert sub.abort() is True
    result = await asyncio.wait_for(first["output"].result(), GUARD_S)
    assert result.finish_reason == "abort"

    stored = await agent.memory.recall(T, last_messages=10)
    assert [(m.role, m.content) for m in stored] == [("user", "start"), ("user", "one more thing")]
    assert not await store.has_pending_signals(T)
    types = []
    async for chunk in sub.stream:
        types.append(chunk["type"])
        if chunk["type"] == "abort":
            break
    # The late message is echoed before the run's abort, so watchers see it on the thread.
    assert types[-2:] == ["data-user-message", "abort"]
    sub.unsubscribe()


class FirstCallHeld:
    """A model handler whose first call waits at ``gate`` and then ``ends`` (returns "first"
    or raises); later calls answer "second answer" at once."""

    def __init__(self, ends: str) -> None:
        self.ends, self.calls = ends, 0
        self.entered, self.gate = asyncio.Event(), asyncio.Event()

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls += 1
        if self.calls > 1:
            return "second answer"
        self.entered.set()
        await self.gate.wait()
        if self.ends == "raise":
            raise RuntimeError("the model broke")
        return "first"


@pytest.mark.parametrize("end", ["abort", "failure"])
async def test_a_message_queued_behind_a_run_that_ends_early_still_runs(
    end: str, store: SqliteStore, agents: AgentFactory
) -> None:
    model = FirstCallHeld("raise" if end == "failure" else "return")
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=model),
                   memory=Memory(store=store))
    first = await agent.send_message("first", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(model.entered.wait(), GUARD_S)
    queued = await agent.queue_message("after it", resource_id=R, thread_id=T).accepted
    if end == "abort":
        assert first["output"].abort() is True
    else:
        model.gate.set()
    ended = await asyncio.gather(first["output"].result(), return_exceptions=True)
    assert (ended[0].finish_reason == "abort") if end == "abort" else isinstance(
        ended[0], RuntimeError)

    await asyncio.wait_for(agent.wait_for_local_runs(), GUARD_S)  # the queued run, started here
    second = await store.get_run(queued["run_id"])
    assert second is not None and second.status == "finished"
    assert model.calls == 2 and await store.active_run(T) is None
    stored = await agent.memory.recall(T, last_messages=10)
    assert [m.content for m in stored][-2:] == ["after it", "second answer"]


# -- Agent.close(timeout=...) ------------------------------------------------------------------


async def test_close_with_a_timeout_aborts_a_run_still_going_and_names_it(
    store: SqliteStore, agents: AgentFactory
) -> None:
    held = Held("never")  # never released: only close() can end the run
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=held),
                   memory=Memory(store=store))
    output = await agent.stream("start", memory={"resource": R, "thread": T})
    await asyncio.wait_for(held.entered.wait(), GUARD_S)

    assert await agent.close(timeout=0.2) == [output.run_id]
    assert agent.local_runs() == []
    assert (await output.result()).finish_reason == "abort"
    run = await store.get_run(output.run_id)
    assert run is not None and run.status == "aborted"
    assert await store.active_run(T) is None, "the thread is free for the next run"
    assert [m.content for m in await agent.memory.recall(T, last_messages=5)] == ["start"]


async def test_close_with_a_timeout_waits_for_a_run_that_ends_in_time(
    store: SqliteStore, agents: AgentFactory
) -> None:
    held = Held("done")
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=held),
                   memory=Memory(store=store))
    output = await agent.stream("start", memory={"resource": R, "thread": T})
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    held.gate.set()  # the run can end now: close() waits for it and aborts nothing

    assert await agent.close(timeout=GUARD_S) == []
    result = await output.result()
    assert (result.finish_reason, result.text) == ("stop", "done")
    run = await store.get_run(output.run_id)
    assert run is not None and run.status == "finished"


async def test_close_with_a_timeout_also_aborts_the_queued_run_that_starts_meanwhile(
    store: SqliteStore, agents: AgentFactory
) -> None:
    held = Held("never")
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=held),
                   memory=Memory(store=store))
    first = await agent.send_message("first", resource_id=R, thread_id=T).accepted
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    queued = await agent.queue_message("after it", resource_id=R, thread_id=T).accepted
    assert queued["action"] == "deliver" and queued["run_id"] != first["run_id"]  # its own run

    aborted = await agent.close(timeout=0.2)
    assert aborted[0] == first["run_id"]
    assert agent.local_runs() == [] and await store.active_run(T) is None
    statuses = {run.id: run.status for run in await store.list_runs(T)}
    assert statuses[first["run_id"]] == "aborted"
    assert "running" not in statuses.values(), statuses

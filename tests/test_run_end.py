"""What happens to signals still pending when a run ends early (abort, failure): they are kept
in the thread's history as persisted — accepted as ``deliver``, so never dropped."""

from __future__ import annotations

import asyncio

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

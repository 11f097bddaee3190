"""Each agent has its own thread runtime: an editor's copy (``apply_editor_overrides``) runs
with its own instructions, its runs are its own, and closing it leaves the original's runs and
notification dispatcher going."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.common import AgentFactory, Held, Seen

from tui_agent.notifications.dispatcher import ensure_dispatcher
from tui_agent.testing import ScriptedModel

WAIT_S = 10.0


async def test_closing_an_edited_copy_leaves_the_original_dispatcher_running(
    agents: AgentFactory, memory: Any
) -> None:
    original = agents(model=ScriptedModel(replies=["ok"]), memory=memory,
                      notifications={"dispatch_interval_s": 3600, "dispatch_on_change": False})
    dispatcher = ensure_dispatcher(original)
    assert dispatcher is not None and dispatcher.running
    edited = original.apply_editor_overrides({"instructions": "Be terse."})
    assert await edited.close() == []
    assert dispatcher.running  # the copy stopped nothing of the original's
    assert ensure_dispatcher(original) is dispatcher
    await original.close()
    assert not dispatcher.running


async def test_an_edited_copy_runs_apart_from_the_original(agents: AgentFactory) -> None:
    held = Held("from the copy")
    original = agents(instructions="Be brief.", model=ScriptedModel(handler=held))
    edited = original.apply_editor_overrides({"instructions": "Be terse."})
    output = await edited.stream("hi")
    await asyncio.wait_for(held.entered.wait(), WAIT_S)
    assert [o.run_id for o in edited.local_runs()] == [output.run_id]
    assert original.local_runs() == []  # the copy's run is not the original's to close
    held.gate.set()
    assert (await output.result()).text == "from the copy"
    await edited.close()


async def test_an_edited_copy_plans_with_its_own_instructions(agents: AgentFactory) -> None:
    seen = Seen()
    original = agents(instructions="Be brief.", model=ScriptedModel(handler=seen))
    edited = original.apply_editor_overrides({"instructions": "Be terse."})
    await edited.generate("one")
    await original.generate("two")
    systems = [[m["content"] for m in call if m["role"] == "system"] for call in seen.calls]
    assert systems == [["Be terse."], ["Be brief."]]
    await edited.close()

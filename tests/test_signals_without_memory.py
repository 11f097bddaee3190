"""Signals to an agent without memory: only a live run of this process, by run id, can take
them (there is no thread to wake, persist to, or share across processes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tui_agent import Agent
from tui_agent.errors import ConfigError, SignalError
from tui_agent.testing import ScriptedModel

GUARD_S = 10.0  # failure guard only


class HeldModel:
    """A scripted model whose first call waits at a gate, so the run is surely mid-step."""

    def __init__(self) -> None:
        self.entered, self.gate = asyncio.Event(), asyncio.Event()
        self.calls: list[list[str]] = []
        self.model = ScriptedModel(handler=self._reply)

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls.append([m["content"] for m in messages if m["role"] == "user"])
        if len(self.calls) == 1:
            self.entered.set()
            await self.gate.wait()
        return f"answer {len(self.calls)}"


async def started(held: HeldModel) -> tuple[Agent, Any]:
    agent = Agent(name="plain", instructions="Be brief.", model=held.model)
    output = await agent.stream("first")
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    return agent, output


async def test_a_message_by_run_id_reaches_the_next_step_of_a_memoryless_run() -> None:
    held = HeldModel()
    agent, output = await started(held)
    receipt = agent.send_message(
        {"contents": "second", "attributes": {"name": "Devin"}}, run_id=output.run_id
    )
    assert await receipt.accepted == {"action": "deliver", "run_id": output.run_id}
    held.gate.set()
    chunks = [chunk async for chunk in output]
    result = await output.result()
    assert held.calls == [["first"], ["first", '<user name="Devin">second</user>']]
    assert result.text == "answer 2" and result.steps[0].signals == [receipt.signal.id]
    echo = next(c for c in chunks if c["type"] == "data-user-message")
    assert echo["run_id"] == output.run_id and echo["payload"]["contents"] == "second"


async def test_discard_reaches_no_prompt() -> None:
    held = HeldModel()
    agent, output = await started(held)
    receipt = agent.send_message("ignored", run_id=output.run_id, if_active={"behavior": "discard"})
    assert await receipt.accepted == {"action": "discard"}
    held.gate.set()
    await output.result()
    assert held.calls == [["first"]]


async def test_what_needs_memory_is_a_clear_error() -> None:
    held = HeldModel()
    agent, output = await started(held)
    with pytest.raises(ConfigError, match="memory"):
        agent.send_message("x", resource_id="r", thread_id="t")
    with pytest.raises(ConfigError, match="queue_message needs memory"):
        agent.queue_message("x", run_id=output.run_id)
    with pytest.raises(ConfigError, match="persist needs memory"):
        agent.send_message("x", run_id=output.run_id, if_active={"behavior": "persist"})
    held.gate.set()
    await output.result()
    with pytest.raises(SignalError, match="no live run"):
        agent.send_message("too late", run_id=output.run_id)
    with pytest.raises(SignalError, match="no live run"):
        agent.send_message("x", run_id="no-such-run")

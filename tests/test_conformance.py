"""Issue 12: the reference's Agent options that used to be accepted and ignored (or wrong),
the request-context forms of every constructor option, ``hooks.transform``, and the options
that are refused with a clear error (``voice``, ``mastra``, the legacy variants).

Runs are held open with gates (a model call that waits for an asyncio.Event), never sleeps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.common import AgentFactory

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.errors import ConfigError
from tui_agent.testing import ScriptedModel

R, T = "res-1", "thread-1"
GUARD_S = 10.0  # failure guard only: every wait below ends on an event


def echo_tool(tool_id: str = "echo") -> Any:
    return create_tool(
        id=tool_id,
        description=f"Tool {tool_id}",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=lambda tool_input: f"{tool_id}:{tool_input['text']}",
    )


def system_texts(model: ScriptedModel, call: int = 0) -> list[str]:
    return [m["content"] for m in model.requests[call].messages if m["role"] == "system"]


def tool_names(model: ScriptedModel, call: int = 0) -> list[str]:
    return [spec["function"]["name"] for spec in model.requests[call].tools]


class Gate:
    """A scripted model whose first call waits at a gate (the run stays live meanwhile)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0
        self.model = ScriptedModel(handler=self._reply)

    async def _reply(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            await self.gate.wait()
        return f"answer {self.calls}"

    async def wait_entered(self) -> None:
        await asyncio.wait_for(self.entered.wait(), GUARD_S)


# -- generate()/stream() options: instructions= and tools_override= --------------------------


async def test_instructions_option_replaces_the_agents_for_that_call(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one", "two"])
    agent = agents(instructions="Agent's own.", model=model)
    await agent.generate("hi", instructions=["Call's own.", {"role": "system", "content": "B"}])
    await agent.generate("hi")
    assert system_texts(model, 0) == ["Call's own.", "B"]
    assert system_texts(model, 1) == ["Agent's own."]


async def test_instructions_option_may_be_a_function_of_the_request_context(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one"])
    agent = agents(model=model)
    await agent.generate(
        "hi", instructions=lambda ctx: f"Tier {ctx.get('tier')}.", request_context={"tier": "pro"}
    )
    assert system_texts(model) == ["Tier pro."]


async def test_bad_instructions_option_raises_before_the_model_is_called(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(["one"])
    with pytest.raises(ConfigError, match="instructions"):
        await agents(model=model).generate("hi", instructions=42)
    assert model.requests == []


async def test_tools_override_replaces_the_agents_tools_for_that_call(
    agents: AgentFactory,
) -> None:
    model = ScriptedModel(
        [{"tool_calls": [{"name": "other", "args": {"text": "x"}}]}, "done", "plain"]
    )
    agent = agents(model=model, tools={"echo": echo_tool()})
    result = await agent.generate("hi", tools_override={"other": echo_tool("other")})
    assert tool_names(model, 0) == ["other"]
    assert result.tool_results[0].result == "other:x"
    await agent.generate("hi")
    assert tool_names(model, 2) == ["echo"]


async def test_bad_tools_override_is_refused(agents: AgentFactory) -> None:
    with pytest.raises(ConfigError, match="tools_override"):
        await agents(model=ScriptedModel(["x"])).generate("hi", tools_override=["not", "a dict"])


# -- signals ---------------------------------------------------------------------------------


def memory_agent(agents: AgentFactory, store: SqliteStore, model: Any, **kw: Any) -> Agent:
    return agents(name="conform", model=model, memory=Memory(store=store), **kw)


async def live_run(agent: Agent, gate: Gate) -> Any:
    """Start a run on (R, T) that stays live until ``gate.gate`` is set."""
    output = await agent.stream("start", memory={"resource": R, "thread": T})
    await gate.wait_entered()
    return output


@pytest.mark.parametrize("behavior", ["persist", "discard"])
async def test_queue_message_honours_if_active_behavior(
    agents: AgentFactory, store: SqliteStore, behavior: str
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    output = await live_run(agent, gate)
    receipt = agent.queue_message(
        "later", resource_id=R, thread_id=T, if_active={"behavior": behavior}
    )
    assert (await asyncio.wait_for(receipt.accepted, GUARD_S)) == {"action": behavior}
    gate.gate.set()
    await output.consume_stream()
    await agent.wait_for_local_runs()
    assert gate.calls == 1  # no run was queued behind the live one
    stored = [m.content for m in await agent.memory.recall(T, last_messages=20)]
    assert ("later" in str(stored)) is (behavior == "persist")


async def test_receipt_persisted_exists_only_for_a_persist_action(
    agents: AgentFactory, store: SqliteStore
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    output = await live_run(agent, gate)
    delivered = agent.send_message("x", resource_id=R, thread_id=T, if_idle={"behavior": "persist"})
    assert (await asyncio.wait_for(delivered.accepted, GUARD_S))["action"] == "deliver"
    assert delivered.persisted is None
    persisted = agent.send_message(
        "y", resource_id=R, thread_id=T, if_active={"behavior": "persist"}
    )
    assert persisted.persisted is not None
    await asyncio.wait_for(persisted.persisted, GUARD_S)
    gate.gate.set()
    await output.consume_stream()


async def test_active_run_id_is_the_live_run_before_the_stream_is_read(
    agents: AgentFactory, store: SqliteStore
) -> None:
    gate = Gate()
    agent = memory_agent(agents, store, gate.model)
    sub = await agent.subscribe_to_thread(resource_id=R, thread_id=T)
    assert sub.active_run_id() is None
    output = await live_run(agent, gate)
    assert sub.active_run_id() == output.run_id  # nobody has read sub.stream yet
    gate.gate.set()
    await output.consume_stream()
    assert sub.active_run_id() is None
    sub.unsubscribe()


async def test_subscribe_to_thread_without_resource_id(
    agents: AgentFactory, store: SqliteStore
) -> None:
    agent = memory_agent(agents, store, ScriptedModel(["hello"]))
    sub = await agent.subscribe_to_thread(thread_id=T)
    output = await agent.stream("hi", memory={"resource": R, "thread": T})
    await output.consume_stream()
    seen = []
    async for chunk in sub.stream:
        seen.append(chunk["type"])
        if chunk["type"] == "finish":
            break
    sub.unsubscribe()
    assert seen[0] == "start" and "text-delta" in seen

"""An MCP server's tool that requires approval (issue 24: ``require_approval`` per server in
``MCPClient``'s config) waits for a person like any other tool: the run parks on the call, the
server is not called until it is approved, and the server's answer is what the model then
reads; declined, the server is never called. A real stdio server written with the SDK
(tests/helpers/mcp_server.py), on both stores."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tui_agent import Memory, ScriptedModel
from tui_agent.mcp import MCPClient

pytestmark = pytest.mark.both_stores

SERVER = str(Path(__file__).parent / "helpers" / "mcp_server.py")
TIMEOUT_S = 20.0
THREAD = {"resource": "ann", "thread": "calc"}


@pytest.fixture
async def guarded() -> AsyncIterator[MCPClient]:
    client = MCPClient(
        servers={"calc": {"command": sys.executable, "args": [SERVER], "require_approval": True}},
        timeout=TIMEOUT_S,
        connect_timeout=TIMEOUT_S,
    )
    yield client
    await client.disconnect()


async def waiting_call(output: Any) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async for chunk in output:
            if chunk["type"] == "tool-call-approval":
                return chunk
        raise AssertionError("the run did not wait for approval")

    return await asyncio.wait_for(read(), TIMEOUT_S)


async def test_an_mcp_tool_that_requires_approval_runs_on_the_server_once_approved(
    agents: Any, memory: Memory, guarded: MCPClient
) -> None:
    tools = await guarded.get_tools()
    assert tools["calc_add"].require_approval
    model = ScriptedModel(
        [{"tool_calls": [{"name": "calc_add", "args": {"a": 2, "b": 3}}]}, "It is 5."]
    )
    agent = agents(model=model, tools=tools, memory=memory)
    output = await agent.stream("2 + 3?", memory=THREAD)
    chunk = await waiting_call(output)
    assert chunk["payload"]["tool_name"] == "calc_add"
    await agent.approve_tool_call(
        run_id=chunk["run_id"],
        tool_call_id=chunk["payload"]["tool_call_id"],
        args={"a": 20, "b": 3},
    )
    result = await asyncio.wait_for(output.result(), TIMEOUT_S)
    assert result.text == "It is 5."
    (seen,) = [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]
    assert "23" in seen  # the server added the edited input


async def test_a_declined_mcp_call_never_reaches_the_server(
    agents: Any, memory: Memory, guarded: MCPClient
) -> None:
    tools = await guarded.get_tools()
    model = ScriptedModel([{"tool_calls": [{"name": "calc_crash", "args": {}}]}, "Fine."])
    agent = agents(model=model, tools=tools, memory=memory)
    output = await agent.stream("crash it", memory=THREAD)
    chunk = await waiting_call(output)
    await agent.decline_tool_call(
        run_id=chunk["run_id"],
        tool_call_id=chunk["payload"]["tool_call_id"],
        reason="no crashing today",
    )
    result = await asyncio.wait_for(output.result(), TIMEOUT_S)
    assert result.text == "Fine."
    (seen,) = [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]
    assert "no crashing today" in seen and "calc" not in seen  # not the server's error

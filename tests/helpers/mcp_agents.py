"""An agent for the CLI tests of MCP tools (tests/test_mcp_settings.py), loaded with
``--agent tests/helpers/mcp_agents.py:calling``: its scripted model calls ``calc_echo`` with the
user's text, then says what the tool answered."""

from __future__ import annotations

from typing import Any

from tui_agent import Agent
from tui_agent.testing import ScriptedModel


def _call_then_tell(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return f"the server said {last['content']}"
    names = sorted(tool["function"]["name"] for tool in tools)
    if "calc_echo" not in names:
        return f"no calc_echo among {names}"
    return {"tool_calls": [{"name": "calc_echo", "args": {"text": str(last["content"])}}]}


def calling() -> Agent:
    return Agent(
        id="calling",
        name="calling",
        instructions="Call the tool.",
        model=ScriptedModel(handler=_call_then_tell),
    )

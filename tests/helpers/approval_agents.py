"""An agent for the approval tests across processes (tests/test_approvals_cli.py), loaded with
``--agent tests/helpers/approval_agents.py:deployer``: ScriptedModel, no network.

"deploy ENV" makes the model call ``deploy`` (which needs approval) with ``{"env": ENV}``; after
the tool's result it says ``the tool said <result>``, then ``also heard: <text>`` for any user
message that arrived after the tool ran; anything else is echoed.
"""

from __future__ import annotations

from typing import Any

from tui_agent import Agent, create_tool
from tui_agent.testing import ScriptedModel


def _reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    last = messages[-1]
    if last["role"] == "tool":
        return f"the tool said {last['content']}"
    text = str(last.get("content") or "")
    if last["role"] == "user" and text.startswith("deploy "):
        return {"tool_calls": [{"name": "deploy", "args": {"env": text.split()[1]}}]}
    if any(m["role"] == "tool" for m in messages[-3:]):
        return f"also heard: {text}"
    return f"echo: {text}"


def _deploy(tool_input: dict[str, Any]) -> str:
    return f"deployed to {tool_input['env']} x{tool_input.get('replicas', 1)}"


def deployer() -> Agent:
    return Agent(
        id="deployer",
        name="deployer",
        instructions="Deploy when asked.",
        model=ScriptedModel(handler=_reply, chunk_size=64),
        tools={
            "deploy": create_tool(
                id="deploy",
                description="Deploy the app.",
                input_schema={
                    "type": "object",
                    "properties": {"env": {"type": "string"}, "replicas": {"type": "integer"}},
                    "required": ["env"],
                },
                execute=_deploy,
                require_approval=True,
            )
        },
    )

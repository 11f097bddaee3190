"""Agents for the CLI tests, loaded with ``--agent tests/helpers/cli_agents.py:NAME``.

They run on ScriptedModel (no model, no network). ``scripted`` answers ``echo: <last user
message>``; its pace comes from ``CLI_TEST_DELAY_S`` (seconds between 4-character chunks), and
with ``CLI_TEST_GATE=<path>`` each model call waits until that file exists, so a test can hold
a run live, for sure, while another process sends into it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from tui_agent import Agent, create_tool
from tui_agent.testing import ScriptedModel


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            return str(message["content"])
    return ""


def _echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    text = _last_user_text(messages)
    if "use the tool" in text and messages[-1]["role"] == "user":
        return {"tool_calls": [{"name": "shout", "args": {"text": "hi"}}]}
    if messages[-1]["role"] == "tool":
        return f"the tool said {messages[-1]['content']}"
    return f"echo: {text}"


async def _gated_echo(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    gate = os.environ.get("CLI_TEST_GATE")
    while gate and not Path(gate).exists():
        await asyncio.sleep(0.02)  # waiting for the test to open the gate (a file it creates)
    return _echo(messages, tools)


def _shout(tool_input: dict[str, Any]) -> str:
    return str(tool_input["text"]).upper()


def scripted() -> Agent:
    delay = float(os.environ.get("CLI_TEST_DELAY_S", "0"))
    return Agent(
        id="scripted",
        name="scripted",
        instructions="Echo the user.",
        model=ScriptedModel(handler=_gated_echo, chunk_size=4, delay_s=delay),
        tools={
            "shout": create_tool(
                id="shout",
                description="Upper-case a text.",
                input_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
                execute=_shout,
            )
        },
    )


pair = [
    Agent(id="first", name="first", instructions="x", model=ScriptedModel(replies=["one"])),
    Agent(id="second", name="second", instructions="x", model=ScriptedModel(replies=["two"])),
]

"""Sync tools and sync hooks run in a worker thread, off the event loop: while one blocks, the
loop goes on (lease renewal, subscriptions, the app). The demo calculator refuses, quickly,
computations that would take seconds."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

from tui_agent import Agent, create_tool
from tui_agent.cli.demo import calculate, demo_tools
from tui_agent.testing import ScriptedModel

BLOCK_GUARD_S = 5.0  # a blocked loop shows as the callback giving up after this long


class Empty(BaseModel):
    pass


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


class Gate:
    """A sync callback enters, then waits for the event loop to let it go: it can only be let
    go if the loop still runs while the callback blocks."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def block(self) -> str:
        self.entered.set()
        return "released" if self.released.wait(BLOCK_GUARD_S) else "the loop was blocked"

    async def release_from_the_loop(self) -> None:
        deadline = time.monotonic() + BLOCK_GUARD_S * 2
        while not self.entered.is_set():  # a loop task: it runs only if the loop is free
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)
        self.released.set()


async def test_a_blocking_sync_tool_does_not_stall_the_event_loop() -> None:
    gate = Gate()
    tool = create_tool(id="slow", input_schema=Empty, execute=lambda _input: gate.block())
    agent = Agent(name="a", instructions="x", model=ScriptedModel([call("slow"), "ok"]),
                  tools={"slow": tool})
    releaser = asyncio.create_task(gate.release_from_the_loop())
    result = await agent.generate("go")
    await releaser
    assert result.tool_results[0].result == "released"


@pytest.mark.parametrize("hook", ["before_tool_call", "after_tool_call"])
async def test_a_blocking_sync_hook_does_not_stall_the_event_loop(hook: str) -> None:
    gate = Gate()
    seen: list[str] = []
    tool = create_tool(id="t", input_schema=Empty, execute=lambda _input: "done")
    agent = Agent(name="a", instructions="x", model=ScriptedModel([call("t"), "ok"]),
                  tools={"t": tool}, hooks={hook: lambda _info: seen.append(gate.block())})
    releaser = asyncio.create_task(gate.release_from_the_loop())
    await agent.generate("go")
    await releaser
    assert seen == ["released"]


@pytest.mark.parametrize(
    "expression", ["((9**1000)**1000)**1000", "*".join(["10**1000"] * 50), "*".join(["9**999"] * 5)]
)
def test_the_calculator_refuses_huge_computations_quickly(expression: str) -> None:
    started = time.perf_counter()
    with pytest.raises(ValueError, match="more than 4000 digits"):
        calculate(expression)
    assert time.perf_counter() - started < 0.5


async def test_a_huge_computation_is_a_tool_error_and_the_run_goes_on() -> None:
    model = ScriptedModel([call("calculator", expression="((9**1000)**1000)**1000"), "too big"])
    agent = Agent(name="a", instructions="x", model=model, tools=demo_tools())
    result = await agent.generate("go")
    assert result.tool_results[0].is_error and result.text == "too big"
    assert calculate("2**10 * 3") == 3072

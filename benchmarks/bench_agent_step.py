"""Framework overhead per step: ``Agent.generate`` with the in-process ``ScriptedModel`` doing a
tool call then a final answer (two steps), reported per step. Goal <= 1 ms per step.

Printed in the same run:
- the floor: the scripted model's own streams consumed directly (no agent);
- with memory: the same run on a thread in a temporary SQLite file;
- the anchor: pydantic-ai's ``TestModel`` agent doing the same (a tool call + a final answer),
  if ``pydantic_ai`` is importable (``.venv/bin/pip install pydantic-ai-slim``).

    .venv/bin/python benchmarks/bench_agent_step.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.models.base import ModelRequest
from tui_agent.testing import ScriptedModel

STEPS = 2  # a tool-call step + a final-answer step
QUESTION = "What is 1 + 2?"
CALL = {"tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}
ANSWER = "The answer is 3."
Row = tuple[str, str, str, str, str]


def reply(messages: list[dict[str, Any]], tools: Any) -> Any:
    """Call the tool first; answer once its result is in."""
    return ANSWER if messages[-1]["role"] == "tool" else CALL


def add(tool_input: dict[str, int]) -> int:
    return tool_input["a"] + tool_input["b"]


ADD = create_tool(
    id="add",
    description="Add two integers.",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    execute=add,
)


async def per_run(fn: Callable[[int], Awaitable[object]], runs: int, rounds: int = 5) -> float:
    """Best of ``rounds`` medians-of-blocks: seconds per call of ``fn``."""
    for i in range(min(200, runs)):  # warm up: imports, caches
        await fn(i)
    blocks = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(runs // rounds):
            await fn(i)
        blocks.append((time.perf_counter() - start) / (runs // rounds))
    return statistics.median(blocks)


async def bench_floor(runs: int) -> float:
    model = ScriptedModel(handler=reply)
    first = ModelRequest(messages=[{"role": "user", "content": QUESTION}], tools=[ADD.spec()])
    second = ModelRequest(messages=[{"role": "tool", "content": "3"}], tools=[ADD.spec()])

    async def run(_: int) -> None:
        for request in (first, second):
            async for _event in model.stream(request):
                pass
        model.requests.clear()

    return await per_run(run, runs)


async def bench_agent(runs: int) -> float:
    model = ScriptedModel(handler=reply)
    agent = Agent(name="bench", instructions="You add numbers.", model=model,
                  tools={"add": ADD})
    result = await agent.generate(QUESTION)
    assert result.text == ANSWER and len(result.steps) == STEPS, result

    async def run(_: int) -> None:
        await agent.generate(QUESTION)
        model.requests.clear()

    seconds = await per_run(run, runs)
    await agent.close()
    return seconds


async def bench_agent_memory(runs: int, tmp: Path) -> float:
    model = ScriptedModel(handler=reply)
    memory = Memory(store=SqliteStore(tmp / "bench.sqlite"))
    agent = Agent(name="bench", instructions="You add numbers.", model=model,
                  tools={"add": ADD}, memory=memory)

    async def run(i: int) -> None:
        # a fresh thread each time: the history sent does not grow with the run count
        await agent.generate(QUESTION, memory={"resource": "bench", "thread": f"t{i % 50}"},
                             max_steps=3)
        model.requests.clear()

    seconds = await per_run(run, runs)
    await agent.close()
    await memory.store.close()
    return seconds


async def bench_pydantic_ai(runs: int) -> float | None:
    try:
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai.models.test import TestModel
    except ImportError:
        return None
    agent = PydanticAgent(TestModel(), instructions="You add numbers.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    result = await agent.run(QUESTION)
    requests = sum(1 for m in result.all_messages() if m.kind == "request")
    assert requests == STEPS, result.all_messages()  # a tool call + a final answer

    async def run(_: int) -> None:
        await agent.run(QUESTION)

    return await per_run(run, runs)


def print_table(rows: list[Row]) -> None:
    header = ("figure", "goal", "per step", "anchor (same run)", "ratio")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


async def main(runs: int) -> None:
    floor = await bench_floor(runs) / STEPS
    ours = await bench_agent(runs) / STEPS
    with tempfile.TemporaryDirectory() as tmp:
        with_memory = await bench_agent_memory(max(runs // 4, 250), Path(tmp)) / STEPS
    anchor = await bench_pydantic_ai(runs)
    ms = 1e3
    if anchor is None:
        anchor_cell, ratio = "pydantic-ai not installed", "-"
        note = "anchor: .venv/bin/pip install pydantic-ai-slim, then run again"
    else:
        anchor_cell = f"{anchor / STEPS * ms:.3f} ms (pydantic-ai TestModel)"
        ratio = f"{ours / (anchor / STEPS):.2f}x"
        note = ""
    print_table([
        ("generate, no memory", "<= 1 ms", f"{ours * ms:.3f} ms", anchor_cell, ratio),
        ("generate, SQLite memory", "-", f"{with_memory * ms:.3f} ms", anchor_cell,
         "-" if anchor is None else f"{with_memory / (anchor / STEPS):.2f}x"),
        ("floor: ScriptedModel alone", "-", f"{floor * ms:.3f} ms", "-", "-"),
    ])
    print(f"(per step = per run / {STEPS}; a run is a tool call + a final answer)")
    if note:
        print(note)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    asyncio.run(main(parser.parse_args().runs))

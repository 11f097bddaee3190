"""``agent.generate()`` through litellm to a local OpenAI-compatible server, beside a bare
``litellm.acompletion(stream=True)`` consumed fully: same server, same messages, same reply.
Goal: ratio <= 1.2. Calls are interleaved (agent, bare, agent, ...) so drift hits both alike.

The server is the fake one of ``tests/openai_server.py`` on 127.0.0.1, streaming the reply in
small chunks, in its own process like a real local server (``--in-process``: a thread here, as in
the tests). Each call starts on an idle loop: litellm finishes its logging in tasks and threads
after a stream ends, and that leftover must not be charged to whichever call comes next. Pairs
alternate which call goes first.

    .venv/bin/python benchmarks/bench_litellm_generate.py [--calls 100] [--in-process]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price list

from openai_server import FakeOpenAIServer  # noqa: E402

from tui_agent import Agent  # noqa: E402

INSTRUCTIONS = "You are a terse assistant."
QUESTION = "Say hello in a dozen words."
REPLY = "Hello there! This is a short reply of about a dozen words, streamed."


async def bare_call(litellm: Any) -> str:
    response = await litellm.acompletion(
        model="openai/bench",
        messages=[
            {"role": "system", "content": INSTRUCTIONS},
            {"role": "user", "content": QUESTION},
        ],
        stream=True,
        stream_options={"include_usage": True},  # the adapter asks for usage too
    )
    parts = []
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts)


async def agent_call(agent: Agent) -> str:
    return (await agent.generate(QUESTION)).text


SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
from openai_server import FakeOpenAIServer
with FakeOpenAIServer(default_reply={REPLY!r}) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()  # until the benchmark closes our stdin
"""


@contextmanager
def server_url(in_process: bool) -> Iterator[str]:
    if in_process:
        with FakeOpenAIServer(default_reply=REPLY) as server:
            yield server.base_url
        return
    child = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        yield child.stdout.readline().strip()
    finally:
        child.stdin.close()
        child.wait(10)


async def timed(call: Any) -> float:
    await asyncio.sleep(0.005)  # settle: the previous call's deferred logging runs untimed
    start = time.perf_counter()
    text = await call
    seconds = time.perf_counter() - start
    assert text == REPLY, text
    return seconds


async def main(calls: int, in_process: bool) -> None:
    import litellm

    with server_url(in_process) as base_url:
        os.environ["OPENAI_BASE_URL"] = base_url
        os.environ["OPENAI_API_KEY"] = "sk-bench-dummy"
        # route="litellm": openai/ models go over the direct path by default (issue 14); this
        # benchmark measures the litellm path (the direct one: bench_direct_stream.py).
        agent = Agent(name="bench", instructions=INSTRUCTIONS,
                      model={"id": "openai/bench", "route": "litellm"})
        for _ in range(10):  # warm up: litellm's lazy imports, the HTTP client pool
            assert await agent_call(agent) == REPLY
            assert await bare_call(litellm) == REPLY
        ours, bare = [], []
        for i in range(calls):
            if i % 2:
                ours.append(await timed(agent_call(agent)))
                bare.append(await timed(bare_call(litellm)))
            else:
                bare.append(await timed(bare_call(litellm)))
                ours.append(await timed(agent_call(agent)))
        await agent.close()
    chunks = len(REPLY) // FakeOpenAIServer().chunk_size + 1
    ratio = statistics.median(ours) / statistics.median(bare)
    rows = [
        ("figure", "goal", "agent.generate", "anchor (same run)", "ratio"),
        ("generate via litellm", "<= 1.2x", f"{statistics.median(ours) * 1e3:.2f} ms",
         f"{statistics.median(bare) * 1e3:.2f} ms (bare litellm.acompletion)", f"{ratio:.2f}x"),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    rows.insert(1, tuple("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    where = "a thread of this process" if in_process else "its own process"
    print(f"(server in {where}; median of {calls} interleaved calls each; ~{chunks} chunks; "
          f"p90 agent {sorted(ours)[int(0.9 * calls)] * 1e3:.2f} ms, "
          f"bare {sorted(bare)[int(0.9 * calls)] * 1e3:.2f} ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.in_process))

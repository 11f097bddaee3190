"""Tools from MCP servers (issue 24), each figure beside its anchor from the same run:

- a call of an MCP tool through ``MCPClient``'s Tool (``tool.execute``), stdio and streamable
  HTTP, beside the same call on the SDK's bare ``ClientSession.call_tool`` to the same server
  (what tui_agent adds: the bounds, the result mapping);
- an Agent step calling an MCP tool (``generate`` with ScriptedModel: a tool call, an answer)
  beside the same step with an in-process tool;
- starting a stdio server (spawn, handshake, listing, stop) beside the same on the bare SDK.

    .venv/bin/python benchmarks/bench_mcp.py [--calls 300] [--runs 50]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "helpers" / "mcp_server.py")


def ms(samples: list[float]) -> str:
    median, mean = statistics.median(samples) * 1e3, statistics.fmean(samples) * 1e3
    return f"p50 {median:.2f} ms, mean {mean:.2f} ms"


async def timed(n: int, call: Any) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def calls(kind: str, server: dict[str, Any], transport: Any, n: int) -> None:
    """Interleaved: one call through our Tool, one on a bare SDK session (each on its own
    server process or connection), so that both see the same machine load."""
    from mcp import ClientSession

    from tui_agent.mcp import MCPClient

    ours: list[float] = []
    bare: list[float] = []
    async with MCPClient(servers={"calc": server}) as client:
        tool = (await client.get_tools())["calc_add"]
        async with transport as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(n):
                ours += await timed(1, lambda: tool.execute({"a": 1, "b": 2}))
                bare += await timed(1, lambda: session.call_tool("add", {"a": 1, "b": 2}))
    print(f"{kind:<6} MCPClient tool call  {ms(ours)}")
    print(f"{kind:<6} bare SDK call_tool   {ms(bare)}   (anchor)")


async def agent_steps(runs: int) -> None:
    from tui_agent import Agent, create_tool
    from tui_agent.mcp import MCPClient
    from tui_agent.testing import ScriptedModel

    def replies(name: str) -> list[Any]:
        return [{"tool_calls": [{"name": name, "args": {"a": 1, "b": 2}}]}, "3"]

    local = create_tool(
        id="add", input_schema={"type": "object"}, execute=lambda i: i["a"] + i["b"]
    )
    async with MCPClient(servers={"calc": {"command": sys.executable, "args": [SERVER]}}) as c:
        tools = await c.get_tools()
        agent = Agent(name="b", instructions="x", model=ScriptedModel(["x"]), tools=tools)
        await agent.generate("warm", tools_override=None)
        mcp_runs, local_runs = [], []
        for _ in range(runs):
            agent.model = ScriptedModel(replies("calc_add"))
            started = time.perf_counter()
            await agent.generate("add")
            mcp_runs.append(time.perf_counter() - started)
            other = Agent(
                name="l",
                instructions="x",
                model=ScriptedModel(replies("add")),
                tools={"add": local},
            )
            started = time.perf_counter()
            await other.generate("add")
            local_runs.append(time.perf_counter() - started)
    print(f"agent  generate, MCP tool         {ms(mcp_runs)}")
    print(f"agent  generate, in-process tool  {ms(local_runs)}   (anchor)")


async def starts(runs: int) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tui_agent.mcp import MCPClient

    ours, bare = [], []
    stdio = {"command": sys.executable, "args": [SERVER]}
    for _ in range(runs):
        started = time.perf_counter()
        async with MCPClient(servers={"calc": stdio}) as c:
            await c.get_tools()
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        with open("/dev/null", "w") as devnull:
            transport = stdio_client(StdioServerParameters(**stdio), errlog=devnull)
            async with transport as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
        bare.append(time.perf_counter() - started)
    print(f"start  stdio server, tools listed, stopped  {ms(ours)}")
    print(f"start  the same on the bare SDK             {ms(bare)}   (anchor)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    stdio = {"command": sys.executable, "args": [SERVER]}
    with open("/dev/null", "w") as devnull:
        await calls(
            "stdio", stdio, stdio_client(StdioServerParameters(**stdio), errlog=devnull), args.calls
        )
    port = free_port()
    http = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/mcp"
        await calls("http", {"url": url}, streamable_http_client(url), args.calls)
    finally:
        http.kill()
        http.wait(10)
    await agent_steps(args.runs)
    await starts(args.starts)


if __name__ == "__main__":
    asyncio.run(main())

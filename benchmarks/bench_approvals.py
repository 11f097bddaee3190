"""How soon a waiting run goes on once its tool call is approved (issue 24), beside how soon
the store's change feed wakes a watcher for any commit (the floor of a cross-connection wake).

Two store objects on one SQLite file stand for two processes (each commit of one is another
connection's to the other, heard by its change feed: inotify on the file on Linux). Figures,
median and max over ``--rounds``:

- approve → the tool runs, from the other store object (what ``tui-agent approve`` costs the
  waiting run, minus the approving process's start);
- approve → the tool runs, in the run's own process (told at once, no feed);
- the anchor: a plain commit on one store object → a change watch on the other wakes.

    .venv/bin/python benchmarks/bench_approvals.py [--rounds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tui_agent import Agent, Memory, ScriptedModel, SqliteStore, create_tool
from tui_agent.store.changes import ChangeFeed
from tui_agent.store.records import EventIn

THREAD = {"resource": "bench", "thread": "approvals"}


def agent_on(store: SqliteStore, ran: list[float]) -> Agent:
    def deploy(tool_input: dict[str, Any]) -> str:
        ran.append(time.perf_counter())
        return "ok"

    def reply(messages: list[dict[str, Any]], tools: Any) -> Any:
        if messages[-1]["role"] == "tool":
            return "done"
        return {"tool_calls": [{"name": "deploy", "args": {}}]}

    tool = create_tool(id="deploy", description="d", execute=deploy, require_approval=True)
    return Agent(
        name="bench",
        instructions="x",
        model=ScriptedModel(handler=reply),
        tools={"deploy": tool},
        memory=Memory(store=store),
    )


async def approve_latency(owner: Agent, approver: Agent, ran: list[float]) -> float:
    output = await owner.stream("go", memory=THREAD)
    async for chunk in output:
        if chunk["type"] == "tool-call-approval":
            break
    else:
        raise AssertionError("the run did not wait")
    started = time.perf_counter()
    await approver.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
    )
    await output.consume_stream()
    await output.result()
    return ran[-1] - started


async def feed_latency(watched: SqliteStore, writer: SqliteStore) -> float:
    with ChangeFeed.of(watched).watch(local=False) as watch:
        await asyncio.sleep(0.05)  # the poller up and quiet
        watch.event.clear()
        started = time.perf_counter()
        await writer.append_events("anchor", [EventIn("data-signal", {}, None)])
        await watch.event.wait()
        return time.perf_counter() - started


def line(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"{name:<52} median {statistics.median(ms):7.2f} ms   max {max(ms):7.2f} ms"


async def main(rounds: int) -> None:
    path = Path(tempfile.mkdtemp()) / "bench.db"
    one, two = SqliteStore(path), SqliteStore(path)
    ran: list[float] = []
    owner, other = agent_on(one, ran), agent_on(two, ran)
    await one.ensure_thread("anchor", "bench")
    across, here, anchor = [], [], []
    try:
        for _ in range(rounds):  # interleaved: the machine's load falls on all three alike
            across.append(await approve_latency(owner, other, ran))
            here.append(await approve_latency(owner, owner, ran))
            anchor.append(await feed_latency(one, two))
    finally:
        await owner.close()
        await other.close()
        await one.close()
        await two.close()
    print(line("approve from another connection -> the tool runs", across))
    print(line("approve in the run's own process -> the tool runs", here))
    print(line("anchor: a commit -> another connection's watch wakes", anchor))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    asyncio.run(main(parser.parse_args().rounds))

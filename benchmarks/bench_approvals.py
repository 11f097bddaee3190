"""How soon a waiting run goes on once its tool call is approved (issue 24), beside how soon
the store's change feed wakes a watcher for any commit (the floor of a cross-connection wake).

Two store objects on one SQLite file stand for two processes (each commit of one is another
connection's to the other, heard by its change feed: inotify on the file on Linux). Figures,
median and max over ``--rounds``:

- approve → the tool runs, from the other store object (what ``tui-agent approve`` costs the
  waiting run, minus the approving process's start);
- approve → the tool runs, in the run's own process (told at once, no feed);
- the anchor: a plain commit on one store object → a change watch on the other wakes;
- store queries a second of a run that waits for approval (its lease watch rests: renewals
  only), beside a run that waits as long in a model call (the anchor: its watch looks for an
  abort every 0.1 s).

    .venv/bin/python benchmarks/bench_approvals.py [--rounds 20] [--idle-s 5]
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


def counting(store: SqliteStore) -> list[str]:
    """Count the store queries a run's waiting makes (its lease watch's and its own)."""
    made: list[str] = []
    for name in ("abort_requested", "renew_lease", "list_approvals", "take_answers"):
        real = getattr(store, name)

        async def counted(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
            made.append(_name)
            return await _real(*args, **kw)

        setattr(store, name, counted)
    return made


async def queries_while(seconds: float, *, parked: bool) -> float:
    """Store queries a second made by one run that waits ``seconds``: for approval (parked),
    or (the anchor) in a model call that takes that long."""
    store = SqliteStore(Path(tempfile.mkdtemp()) / "idle.db")
    made = counting(store)
    hold = asyncio.Event()

    async def slow(messages: list[dict[str, Any]], tools: Any) -> Any:
        await hold.wait()
        return "done"

    ran: list[float] = []
    agent = (
        agent_on(store, ran)
        if parked
        else Agent(
            name="bench",
            instructions="x",
            model=ScriptedModel(handler=slow),
            memory=Memory(store=store),
        )
    )
    output = await agent.stream("go", memory=THREAD)
    if parked:
        async for chunk in output:
            if chunk["type"] == "tool-call-approval":
                break
    else:
        await asyncio.sleep(0.2)  # the run is in its model call
    before = len(made)
    await asyncio.sleep(seconds)
    per_s = (len(made) - before) / seconds
    hold.set()
    output.abort()
    await output.consume_stream()
    await agent.close()
    await store.close()
    return per_s


def line(name: str, samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return f"{name:<52} median {statistics.median(ms):7.2f} ms   max {max(ms):7.2f} ms"


async def main(rounds: int, idle_s: float) -> None:
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
    waiting = await queries_while(idle_s, parked=True)
    running = await queries_while(idle_s, parked=False)
    print(f"{'store queries/s of a run waiting for approval':<52} {waiting:7.1f}")
    print(f"{'anchor: of a run in a long model call':<52} {running:7.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--idle-s", type=float, default=5.0)
    given = parser.parse_args()
    asyncio.run(main(given.rounds, given.idle_s))

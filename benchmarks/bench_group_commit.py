"""Group commit: bursts of signals, concurrent streaming runs, and the first delta — each figure
beside an anchor measured in the same run on the same machine.

- Burst: 200 concurrent ``send_message`` into one active run (its model call is held open):
  accepted/s (median of the rounds), store transactions per burst, every message read back
  through a second connection once its ``accepted`` resolved, and all of them in the run's next
  model input, in order. Beside: the same with group commit off (one transaction per signal),
  and a bare sqlite3 ``executemany`` of 200 rows in one transaction on the same file.
- Streaming: 4 runs in one process stream 500 deltas/s each: store transactions per second and
  process CPU, with group commit beside one transaction per flush (``group_commit=False``).
- First delta: ms from calling ``stream()`` to the first text delta of a 20,000-delta scripted
  reply (without and with memory), beside the bare ScriptedModel's first delta, and how many
  deltas the model had produced by then.

    .venv/bin/python benchmarks/bench_group_commit.py [--burst 200] [--rounds 20] \
        [--stream-seconds 5] [--deltas 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.models.base import ModelRequest
from tui_agent.testing import ScriptedModel

R = "bench-user"
Row = tuple[str, str, str]


# -- burst ---------------------------------------------------------------------------------------


async def burst(path: Path, count: int, rounds: int, group_commit: bool) -> dict[str, Any]:
    """Median accepted/s of ``rounds`` bursts of ``count`` sends into one live run."""
    store = SqliteStore(path, group_commit=group_commit)
    entered, gate = asyncio.Event(), asyncio.Event()
    calls: list[list[dict[str, Any]]] = []

    async def reply(messages: list[dict[str, Any]], tools: Any) -> str:
        calls.append(messages)
        if len(calls) == 1:
            entered.set()
            await gate.wait()  # the run stays inside its first step while we send
        return "ok"

    agent = Agent(name="bench", instructions="x", model=ScriptedModel(handler=reply),
                  memory=Memory(store=store))
    woken = await agent.send_message("start", resource_id=R, thread_id="t").accepted
    await entered.wait()
    rates, calls_us, commits, durable, sent = [], [], [], True, ["start"]
    reader = sqlite3.connect(path)
    for r in range(rounds):
        texts = [f"r{r}-m{i}" for i in range(count)]
        before = store.local_commits
        start = time.perf_counter()
        receipts = [agent.send_message(text, resource_id=R, thread_id="t") for text in texts]
        called = time.perf_counter()
        decisions = await asyncio.gather(*(receipt.accepted for receipt in receipts))
        rates.append(count / (time.perf_counter() - start))
        calls_us.append((called - start) / count * 1e6)
        commits.append(store.local_commits - before)
        assert {d["run_id"] for d in decisions} == {woken["run_id"]}
        ids = [receipt.signal.id for receipt in receipts]
        stored = reader.execute(
            f"SELECT COUNT(*) FROM signals WHERE id IN ({','.join('?' * len(ids))})", ids
        ).fetchone()[0]
        durable &= stored == count
        sent += texts
    reader.close()
    gate.set()
    await woken["output"].result()
    users = [m["content"] for m in calls[1] if m["role"] == "user"]
    await agent.close()
    await store.close()
    return {"rate": statistics.median(rates), "call_us": statistics.median(calls_us),
            "commits": statistics.median(commits),
            "durable": durable, "in_order": users == sent}


def executemany_anchor(path: Path, count: int, rounds: int) -> float:
    """Rows/s of a bare sqlite3 executemany of ``count`` rows in one transaction (median)."""
    row = ("anchor", None, "x", "AGENT", '{"text":"anchor"}', 0.0)
    rates = []
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("PRAGMA synchronous=NORMAL")
        for _ in range(rounds):
            start = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.executemany(
                "INSERT INTO events(thread_id, run_id, type, source, payload, created_at)"
                " VALUES (?,?,?,?,?,?)",
                [row] * count,
            )
            db.execute("COMMIT")
            rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)


async def burst_rows(tmp: Path, count: int, rounds: int) -> list[Row]:
    grouped = await burst(tmp / "burst.db", count, rounds, group_commit=True)
    alone = await burst(tmp / "burst-off.db", count, rounds, group_commit=False)
    bare = executemany_anchor(tmp / "burst.db", count, rounds)
    checks = f"durable when accepted: {grouped['durable']}; in order: {grouped['in_order']}"
    per_message = 1e6 / grouped["rate"]
    split = (f"{grouped['call_us']:.1f} us in the send_message call, "
             f"{per_message - grouped['call_us']:.1f} us committing and settling")
    return [
        (f"burst of {count} send_message (accepted)", f"{grouped['rate']:,.0f} /s",
         f"goal >= 50,000/s; {grouped['commits']:.0f} transactions per burst; {checks}"),
        ("  per message", f"{per_message:.1f} us", split),
        ("  beside: group commit off", f"{alone['rate']:,.0f} /s",
         f"{alone['commits']:.0f} transactions per burst; in order: {alone['in_order']}"),
        (f"  anchor: bare executemany of {count} rows", f"{bare:,.0f} /s",
         "sqlite3, one BEGIN IMMEDIATE transaction, same file"),
    ]


# -- concurrent streaming ------------------------------------------------------------------------


async def streaming(path: Path, runs: int, rate: int, seconds: float, group_commit: bool
                    ) -> tuple[float, float, float]:
    """(store transactions/s, process CPU % of one core, deltas/s) while ``runs`` runs stream
    ``rate`` deltas/s each for ``seconds``."""
    store = SqliteStore(path, group_commit=group_commit)
    reply = "x" * int(rate * seconds)
    model = ScriptedModel(replies=[reply] * runs, chunk_size=1, delay_s=1 / rate)
    agent = Agent(name="bench", instructions="x", model=model, memory=Memory(store=store))
    await store.ensure_thread("warm", R)  # open the file before the clock starts
    deltas = 0

    async def one(i: int) -> None:
        nonlocal deltas
        output = await agent.stream("go", memory={"resource": R, "thread": f"s{i}"})
        async for _ in output.text_stream:
            deltas += 1

    commits, cpu, start = store.local_commits, time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    elapsed = time.perf_counter() - start
    per_s = (store.local_commits - commits) / elapsed
    cpu_pct = (time.process_time() - cpu) / elapsed * 100
    await agent.close()
    await store.close()
    return per_s, cpu_pct, deltas / elapsed


async def streaming_rows(tmp: Path, seconds: float) -> list[Row]:
    runs, rate = 4, 500
    on = await streaming(tmp / "stream.db", runs, rate, seconds, group_commit=True)
    off = await streaming(tmp / "stream-off.db", runs, rate, seconds, group_commit=False)
    label = f"{runs} runs streaming, {rate} deltas/s each"
    return [
        (f"{label}: transactions", f"{on[0]:,.1f} /s",
         f"group commit; CPU {on[1]:.0f}% of a core; {on[2]:,.0f} deltas/s in all"),
        ("  beside: one transaction per flush", f"{off[0]:,.1f} /s",
         f"group commit off; CPU {off[1]:.0f}% of a core; {off[2]:,.0f} deltas/s in all"),
    ]


# -- first delta ---------------------------------------------------------------------------------


class CountingModel(ScriptedModel):
    """A ScriptedModel that counts the deltas it has produced (to show how far ahead it ran)."""

    produced = 0

    async def _chunks(self, text: str, request: ModelRequest) -> Any:
        async for piece in super()._chunks(text, request):
            self.produced += 1
            yield piece


async def first_delta(path: Path | None, deltas: int) -> tuple[float, int, float]:
    """(ms from stream() to the first text delta, deltas produced by then, total ms)."""
    model = CountingModel(replies=["x" * deltas], chunk_size=1)
    store = SqliteStore(path) if path else None
    agent = Agent(name="bench", instructions="x", model=model,
                  memory=Memory(store=store) if store else None)
    options: dict[str, Any] = {"memory": {"resource": R, "thread": "first"}} if store else {}
    if store is not None:
        await store.ensure_thread("warm", R)  # the file is open, as in a running app
    start = time.perf_counter()
    output = await agent.stream("go", **options)
    first_ms, produced = 0.0, 0
    async for _ in output.text_stream:
        if not produced:
            first_ms, produced = (time.perf_counter() - start) * 1000, model.produced
    total_ms = (time.perf_counter() - start) * 1000
    await agent.close()
    if store is not None:
        await store.close()
    return first_ms, produced, total_ms


async def bare_model_first_delta(deltas: int) -> float:
    model = ScriptedModel(replies=["x" * deltas], chunk_size=1)
    start = time.perf_counter()
    async for _ in model.stream(ModelRequest(messages=[{"role": "user", "content": "go"}])):
        return (time.perf_counter() - start) * 1000
    return float("nan")


async def first_delta_rows(tmp: Path, deltas: int) -> list[Row]:
    rows = []
    for label, path in (("no memory", None), ("SQLite memory", tmp / "first.db")):
        samples = [await first_delta(path, deltas) for _ in range(5)]
        first, produced, total = (statistics.median(s[i] for s in samples) for i in range(3))
        rows.append((f"first delta of {deltas:,} ({label})", f"{first:.1f} ms",
                     f"goal <= 5 ms; model had produced {produced:.0f} of {deltas:,}; whole "
                     f"stream {total:.0f} ms"))
    bare = statistics.median([await bare_model_first_delta(deltas) for _ in range(5)])
    rows.append(("  anchor: ScriptedModel alone, first delta", f"{bare:.2f} ms",
                 "model.stream() with no agent"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--stream-seconds", type=float, default=5.0)
    parser.add_argument("--deltas", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        rows = asyncio.run(burst_rows(tmp, args.burst, args.rounds))
        rows += asyncio.run(streaming_rows(tmp, args.stream_seconds))
        rows += asyncio.run(first_delta_rows(tmp, args.deltas))
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    print(f"{'figure':<{width}}  {'value':<{value_width}}  notes")
    for label, value, note in rows:
        print(f"{label:<{width}}  {value:<{value_width}}  {note}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

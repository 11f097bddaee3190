"""A state lane with 10,000 deltas: reading its current value must stay <= 5 ms.

The value is materialised on every write, so a read is one row whatever the history. Prints the
read time (median and p95 of ``Memory.get_state_lane``) beside a bare ``SELECT`` of that row in
the same file as the anchor, plus the time per state signal sent.

    .venv/bin/python benchmarks/bench_state_lanes.py [--deltas 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

R, T, LANE = "bench-user", "bench-thread", "editor"
KEYS = 100
READS = 1000


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(fn: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()  # type: ignore[operator]
        out.append(time.perf_counter() - start)
    return out


async def main(deltas: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.sqlite")
        memory = Memory(store=store)
        await store.ensure_thread(T, R)
        agent = Agent(name="bench", instructions="x", model=ScriptedModel(replies=["ok"]),
                      memory=memory)
        quiet = {"if_idle": {"behavior": "discard"}}  # measure the lane, not model runs
        snapshot = {f"k{i}": {"n": 0, "text": f"value {i}"} for i in range(KEYS)}
        await agent.send_state_signal({"id": LANE, "cache_key": "s", "value": snapshot},
                                      resource_id=R, thread_id=T, **quiet)
        start = time.perf_counter()
        for i in range(deltas):
            delta = {f"k{i % KEYS}": {"n": i}}
            await agent.send_state_signal(
                {"id": LANE, "cache_key": f"d{i}", "mode": "delta", "delta": delta},
                resource_id=R, thread_id=T, **quiet,
            )
        per_send = (time.perf_counter() - start) / deltas
        lane = await memory.get_state_lane(T, LANE)
        assert lane is not None and lane.version == deltas + 1

        async def read_lane() -> None:
            await memory.get_state_lane(T, LANE)

        async def bare_select() -> None:
            await store.fetchone("SELECT value FROM state_lanes WHERE thread_id=? AND lane_id=?",
                                 (T, LANE))

        async def history() -> None:
            await memory.state_lane_history(T, LANE, limit=50)

        reads = await timed(read_lane, READS)
        anchor = await timed(bare_select, READS)
        hist = await timed(history, 100)
        await agent.close()
        await store.close()
    ms = 1e3
    print(f"lane versions:                  {deltas + 1} (1 snapshot + {deltas} deltas, "
          f"{KEYS}-key value)")
    print(f"get_state_lane:                 median {statistics.median(reads) * ms:.3f} ms, "
          f"p95 {percentile(reads, 0.95) * ms:.3f} ms  (goal <= 5 ms)")
    print(f"anchor: bare SELECT of the row: median {statistics.median(anchor) * ms:.3f} ms, "
          f"p95 {percentile(anchor, 0.95) * ms:.3f} ms")
    print(f"state_lane_history(limit=50):   median {statistics.median(hist) * ms:.3f} ms")
    print(f"send_state_signal (delta):      {per_send * ms:.3f} ms each")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    asyncio.run(main(parser.parse_args().deltas))

"""10,000 notifications from 5 sources into one active thread.

Prints the records left after coalescing, the time per notification (beside a bare INSERT into
the same SQLite file, one transaction each, as the anchor), and the digests sent by the running
dispatcher: one per due window, not one per notification.

    .venv/bin/python benchmarks/bench_notifications.py [--count 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import tempfile
import time
from pathlib import Path

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.notifications.dispatcher import dispatch_due, ensure_dispatcher
from tui_agent.testing import ScriptedModel

SOURCES = ("github", "slack", "email", "jira", "pagerduty")
R, T = "bench-user", "bench-thread"


def notification(i: int) -> dict[str, object]:
    """7 in 10 carry a coalesce key (200 distinct: a PR, a channel...), the rest are one-offs;
    1 in 4 is low priority, the rest medium."""
    source = SOURCES[i % len(SOURCES)]
    n: dict[str, object] = {"source": source, "kind": "event", "summary": f"{source} event {i}",
                            "priority": "low" if i % 4 == 0 else "medium"}
    if i % 10 < 7:
        n["coalesce_key"] = f"{source}:{i % 200}"
    return n


async def anchor_inserts(store: SqliteStore, count: int) -> float:
    """Seconds per bare INSERT of a notification-sized row, one transaction each."""
    start = time.perf_counter()
    for i in range(count):
        async with store.transaction() as db:
            await db.execute(
                "INSERT INTO notifications(id, thread_id, resource_id, source, kind, priority,"
                " status, summary, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (f"anchor-{i}", "anchor-thread", R, "github", "event", "medium", "archived",
                 f"anchor {i}", time.time(), time.time()),
            )
    return (time.perf_counter() - start) / count


async def main(count: int, interval: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.sqlite")
        memory = Memory(store=store)
        agent = Agent(name="bench", instructions="x", model=ScriptedModel(replies=["ok"]),
                      memory=memory, notifications={"dispatch_interval_s": interval})
        await store.start_run(T, R, "bench-run", owner="another-process", ttl_s=3600)
        ensure_dispatcher(agent)
        start = time.perf_counter()
        marks = [start]
        for i in range(count):
            await agent.send_notification_signal(notification(i), resource_id=R, thread_id=T)
            if (i + 1) % 1000 == 0:
                marks.append(time.perf_counter())
        elapsed = time.perf_counter() - start
        await dispatch_due(agent)  # the last window
        await agent.close()
        records = await store.fetchone("SELECT COUNT(*) FROM notifications WHERE thread_id=?",
                                       (T,))
        digests = await store.fetchone(
            "SELECT COUNT(*) FROM signals WHERE thread_id=? AND data LIKE"
            " '%\"tag_name\":\"notification-summary\"%'", (T,))
        windows = math.ceil(elapsed / interval) + 1
        per_anchor = await anchor_inserts(store, min(count, 2000))
        await store.close()
    per = elapsed / count
    print(f"notifications sent:            {count} from {len(SOURCES)} sources, thread active")
    print(f"records after coalescing:      {records[0]}")
    print(f"time per notification:         {per * 1e3:.3f} ms  ({elapsed:.2f} s total)")
    if len(marks) > 2:
        first, last = marks[1] - marks[0], marks[-1] - marks[-2]
        print(f"  first 1,000: {first:.3f} ms each, last 1,000: {last:.3f} ms each")
    print(f"anchor: bare INSERT + COMMIT:  {per_anchor * 1e3:.3f} ms  "
          f"(ratio {per / per_anchor:.1f}x)")
    print(f"digests sent:                  {digests[0]} over ~{windows} due windows of "
          f"{interval:g} s (not {count})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(main(args.count, args.interval))

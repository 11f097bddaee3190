"""A notification sent by ``tui-agent notify`` in another process → visible in the sidebar.

The app runs in this process (headless, the inbox shown); each send is a real ``tui-agent
notify`` process on the same store. Latency is from the record's ``created_at`` (written by the
sending process) to the moment its summary is in the sidebar's rendered lines. Anchor, same run:
a bare reader in a thread polling the same SQLite file every 5 ms for the row.

    .venv/bin/python benchmarks/bench_inbox_live.py [--sends 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def bare_reader(db: str, summaries: dict[str, float], stop: threading.Event) -> None:
    """The floor: how soon a plain SQLite poll sees each row (wall time, by summary)."""
    conn = sqlite3.connect(db)
    while not stop.is_set():
        try:
            rows = conn.execute("SELECT summary FROM notifications").fetchall()
        except sqlite3.Error:
            rows = []
        now = time.time()
        for (summary,) in rows:
            summaries.setdefault(summary, now)
        time.sleep(0.005)
    conn.close()


def sidebar_text(app: Any) -> str:
    from tui_agent.app.widgets.inbox_list import InboxList

    listing = app.query_one(InboxList)
    return "\n".join(listing.render_line(y).text for y in range(listing.size.height))


async def run(sends: int) -> None:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.testing import ScriptedModel

    folder = Path(tempfile.mkdtemp(prefix="bench_inbox_live_"))
    db = str(folder / "store.sqlite")
    store = SqliteStore(db)
    agent = Agent(name="bench", instructions="-", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=store))
    await agent.memory.create_thread("t1", resource_id="bench")
    app = TuiAgentApp(AppConfig(agent=agent, threads=[("bench", "t1")], identity=Identity("b"),
                                agent_label="bench", model_label="scripted",
                                default_resource="bench", warm_model=False))
    seen_bare: dict[str, float] = {}
    stop = threading.Event()
    reader = threading.Thread(target=bare_reader, args=(db, seen_bare, stop), daemon=True)
    app_ms: list[float] = []
    bare_ms: list[float] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_toggle_inbox()
        reader.start()
        for n in range(sends):
            summary = f"bench-{n:03d}"
            done = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "tui_agent", "--db", db, "notify", "-r", "bench",
                "-t", "t1", "--source", "ci", "--kind", "build", "--priority", "low", summary,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            out, _ = await asyncio.wait_for(done.communicate(), 60)
            created = _created(out)
            deadline = time.monotonic() + 10
            while summary not in sidebar_text(app):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{summary} not in the sidebar after 10 s")
                await pilot.pause(0.005)
            app_ms.append((time.time() - created) * 1e3)
            if summary in seen_bare:
                bare_ms.append((seen_bare[summary] - created) * 1e3)
    stop.set()
    reader.join(2)
    await agent.close()
    await store.close()
    _report(sends, app_ms, bare_ms)


def _created(out: bytes) -> float:
    from datetime import datetime

    record = json.loads(out)["record"]
    return datetime.fromisoformat(record["created_at"].replace("Z", "+00:00")).timestamp()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _report(sends: int, app_ms: list[float], bare_ms: list[float]) -> None:
    print(f"{sends} sends by `tui-agent notify` in another process (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'figure':<40} {'measured':>10}   anchor (bare SQLite poll, 5 ms)   goal")
    for label, q in (("notify → visible in the sidebar, p50", 0.5),
                     ("notify → visible in the sidebar, p95", 0.95)):
        anchor = f"{_pct(bare_ms, q):.0f} ms" if bare_ms else "n/a"
        print(f"{label:<40} {_pct(app_ms, q):>7.0f} ms   {anchor:<32}  <= 1000 ms")
    print(f"(mean {statistics.mean(app_ms):.0f} ms, max {max(app_ms):.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=100)
    asyncio.run(run(parser.parse_args().sends))


if __name__ == "__main__":
    main()

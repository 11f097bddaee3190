"""220 ``tui-agent notify`` processes into a thread the app has open (issue 21, point 7).

A CI script calls ``tui-agent notify`` once per event, each a new process: what counts is the
cost of one process, Python's start-up included. The app runs in a process of its own
(headless, the thread open in a pane, a ScriptedModel answering), so it hosts the store; this
script then runs
N separate ``tui-agent notify`` processes one after another (the console script, as a CI script
would), and waits until the app has answered or digested every one. Beside it, measured in the
same run: ``python -c pass`` × N (the anchor: Python's own start-up), and the ``--wait`` path
(the old behaviour: the notify process runs the wake itself) per call.

Goals: ≤ 68 ms per ``notify`` process; all N answered or digested by the app within 15 s.

    .venv/bin/python benchmarks/bench_notify_cli.py [--count 220] [--wait-calls 10]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"
TUI_AGENT = str(Path(sys.executable).with_name("tui-agent"))


HOST = """
import asyncio, sys, threading
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets.composer import Identity
from tui_agent.testing import ScriptedModel

async def main(db):
    store = SqliteStore(db)
    agent = Agent(id="scripted", name="bench", instructions="-", memory=Memory(store=store),
                  model=ScriptedModel(handler=lambda messages, tools: "ok"))
    await agent.memory.create_thread("t1", resource_id="bench")
    app = TuiAgentApp(AppConfig(agent=agent, threads=[("bench", "t1")], identity=Identity("b"),
                                agent_label="bench", model_label="scripted",
                                default_resource="bench", warm_model=False))
    closed = asyncio.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(closed.set)),
                     daemon=True).start()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        print("ready", flush=True)
        await closed.wait()  # the app runs on meanwhile, as it does in a terminal
    await agent.close()
    await store.close()

asyncio.run(main(sys.argv[1]))
"""


def timed(*command: str) -> float:
    """One process's wall time, start to exit, in seconds."""
    started = time.perf_counter()
    # No timeout=: with one, Popen.wait polls with sleeps doubling up to 50 ms, and a process
    # that ended at 36 ms was seen to end at 63.
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def answered(db: str) -> tuple[int, int]:
    """(records, records the app delivered or digested)."""
    with sqlite3.connect(db) as connection:
        total, done = connection.execute(
            "SELECT COUNT(*), SUM(status='delivered' OR summarized_at IS NOT NULL)"
            " FROM notifications").fetchone()
    return int(total), int(done or 0)


def run(count: int, wait_calls: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench_notify_cli_"))
    db = str(folder / "store.sqlite")
    host = subprocess.Popen([sys.executable, "-c", HOST, db], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None and host.stdout.readline().strip() == "ready"
        notify = [TUI_AGENT, "--db", db, "-r", "bench", "-t", "t1", "notify", "--source",
                  "ci", "--kind", "build"]
        anchor = [timed(sys.executable, "-c", "pass") for _ in range(count)]
        alone = _no_host(folder, count)
        started = time.perf_counter()
        each = [timed(*notify, f"build {n} failed") for n in range(count)]
        sent = time.perf_counter() - started
        deadline = time.monotonic() + 60
        while answered(db)[1] < count and time.monotonic() < deadline:
            time.sleep(0.01)
        all_done = time.perf_counter() - started
        total, done = answered(db)
        waited = [timed(*notify, "--wait", "--agent", SCRIPTED, f"waited {n}")
                  for n in range(wait_calls)]
    finally:
        assert host.stdin is not None
        host.stdin.close()  # the host closes its app and exits
        host.wait(30)
    _report(count, anchor, each, sent, all_done, total, done, waited, alone)


def _no_host(folder: Path, count: int) -> list[float]:
    """notify's own cost: the same processes into a store nobody hosts (nothing answers)."""
    db = str(folder / "alone.sqlite")
    timed(TUI_AGENT, "--db", db, "-r", "bench", "-t", "t1", "--agent", SCRIPTED, "notify",
          "--new", "--source", "ci", "--kind", "build", "first")  # the store and the thread
    notify = [TUI_AGENT, "--db", db, "-r", "bench", "-t", "t1", "notify", "--source", "ci",
              "--kind", "build"]
    return [timed(*notify, f"build {n} failed") for n in range(count)]


def _ms(values: list[float]) -> str:
    ordered = sorted(values)
    mean = sum(values) / len(values) * 1e3
    return f"mean {mean:5.1f} ms, p50 {ordered[len(ordered) // 2] * 1e3:5.1f}, " \
           f"p95 {ordered[int(0.95 * (len(ordered) - 1))] * 1e3:5.1f}"


def _report(count: int, anchor: list[float], each: list[float], sent: float, all_done: float,
            total: int, done: int, waited: list[float], alone: list[float]) -> None:
    print(f"{count} `tui-agent notify` processes into a thread the app hosts (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  anchor  python -c pass × {count}:        {sum(anchor):6.2f} s   {_ms(anchor)}")
    print(f"  notify  (returns at once) × {count}:     {sent:6.2f} s   {_ms(each)}"
          "   goal ≤ 68 ms each")
    print(f"          per process beyond the anchor:          "
          f"{(sum(each) - sum(anchor)) / count * 1e3:5.1f} ms (the host's work shares the CPU)")
    print(f"  notify  into a store nobody hosts × {count}: {sum(alone):6.2f} s   {_ms(alone)}"
          f"   beyond the anchor {(sum(alone) - sum(anchor)) / count * 1e3:5.1f} ms")
    print(f"  all {total} answered or digested by the app: {done}/{total} after "
          f"{all_done:6.2f} s (from the first notify)   goal ≤ 15 s")
    print(f"  notify --wait (runs the wake itself) × {len(waited)}: {_ms(waited)} per call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=220)
    parser.add_argument("--wait-calls", type=int, default=10)
    options = parser.parse_args()
    run(options.count, options.wait_calls)


if __name__ == "__main__":
    main()

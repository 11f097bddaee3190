"""Watchers cost little: idle CPU of thread watchers, and cross-process latency, beside anchors.

Idle CPU (% of one core over ``--seconds``, after a settling second), each beside ``sleep``:
one ``tui-agent watch`` process, ``--watchers`` of them (total and per watcher), and one process
holding ``--watchers`` subscriptions (with the number of change polls it made: one shared poller).
Goal (issue: reliability, "Watchers cost little"): ≤ 0.5% of a core per idle watcher.

The idle app (headless, 4 panes and the inbox sidebar): store queries and commits a second
(every query through ``SqliteStore.fetchall``, so ``data_version`` polls through the store
count; the change feed's own probe connection does not: see the polls/s above).

Cross-process latency: this process appends an event to a thread through its own store; a
``tui-agent watch --json`` process prints it; the figure is commit → line read (p50/p99), for
isolated sends (the watcher's poller has backed off to idle) and for a burst (it polls fast).
Goal p50 ≤ 50 ms. The anchor: a bare sqlite3 reader polling ``data_version`` every 10 ms.

``--compare REF`` runs every measurement again with the code at git ``REF`` (``git archive`` into a
temporary directory, first on ``PYTHONPATH``), e.g. ``--compare 1da68f6`` for the per-subscriber
10 ms polling this replaced. The machine is shared: compare figures within one run only.

    .venv/bin/python benchmarks/bench_watchers.py [--seconds 10] [--watchers 20] [--compare REF]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
R = "bench"
SETTLE_S = 1.0

# Every child starts with this: BENCH_NO_INOTIFY=1 makes the change feed poll (no inotify).
PRELUDE = """
import os, sys
if os.environ.get("BENCH_NO_INOTIFY"):
    try:
        from tui_agent.store import wal_watch
        wal_watch.WalWatch.open = classmethod(lambda cls, path: None)
    except ImportError:
        pass
"""

WATCH = PRELUDE + """
from tui_agent.main import main
sys.exit(main(sys.argv[1:]))
"""

SUBSCRIBER = PRELUDE + """
import asyncio
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

async def main(db, count):
    agent = Agent(name="w", instructions=".", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(SqliteStore(db)))
    subs = [await agent.subscribe_to_thread(resource_id="bench", thread_id=f"t{i}")
            for i in range(count)]
    async def drain(sub):
        async for _ in sub.stream:
            pass
    tasks = [asyncio.create_task(drain(sub)) for sub in subs]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    try:
        from tui_agent.store.changes import ChangeFeed
        print(ChangeFeed.of(agent.memory.store).polls, flush=True)
    except ImportError:
        print(-1, flush=True)
    for sub in subs:
        sub.unsubscribe()
    await asyncio.gather(*tasks)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""

# The app headless with 4 panes and the inbox sidebar, idle: store queries and commits a second.
APP = PRELUDE + """
import asyncio, time
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets.composer import Identity
from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
from tui_agent.testing import ScriptedModel

queries = [0]
fetchall = SqliteStore.fetchall

async def counting(self, sql, params=()):
    queries[0] += 1
    return await fetchall(self, sql, params)

SqliteStore.fetchall = counting

async def main(db, seconds):
    store = SqliteStore(db)
    agent = Agent(name="demo", instructions=".", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store))
    app = TuiAgentApp(AppConfig(
        agent=agent, threads=[("bench", t) for t in "abcd"], identity=Identity("me", {}),
        agent_label="demo", model_label="scripted", default_resource="bench", warm_model=False))
    async with app.run_test(size=(160, 48)) as pilot:
        deadline = time.monotonic() + 30
        while not (len(app.panes) == 4 and all(p.feed.attached for p in app.panes)
                   and app.query_one(InboxSidebar).feed.loaded):
            assert time.monotonic() < deadline, "the app did not open"
            await pilot.pause()
        await asyncio.sleep(1.0)
        start, before, commits = time.monotonic(), queries[0], store.local_commits
        await asyncio.sleep(seconds)
        took = time.monotonic() - start
        print(f"{(queries[0] - before) / took:.1f} {(store.local_commits - commits) / took:.1f}")
    await agent.close()
    await store.close()

asyncio.run(main(sys.argv[1], float(sys.argv[2])))
"""

BARE_READER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
version, last = None, int(sys.argv[2])
print("ready", flush=True)
while True:
    v = db.execute("PRAGMA data_version").fetchone()[0]
    if v != version:
        version = v
        for (seq,) in db.execute("SELECT seq FROM events WHERE seq > ?", (last,)).fetchall():
            last = seq
            print(seq, flush=True)
    time.sleep(0.01)
"""


# -- processes -----------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU time of every thread of ``pid`` so far (ns precision, from schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
    return total / 1e9


def idle_cpu(pids: list[int], seconds: float) -> float:
    """% of one core the processes used together over ``seconds``."""
    before = sum(cpu_seconds(pid) for pid in pids)
    start = time.monotonic()
    time.sleep(seconds)
    used = sum(cpu_seconds(pid) for pid in pids) - before
    return 100 * used / (time.monotonic() - start)


class Variant(NamedTuple):
    tag: str  # printed after each figure
    tree: Path | None  # the package's code (None: this checkout)
    hear: bool  # the change feed may use inotify


def child(variant: Variant) -> dict[str, Any]:
    """Popen arguments for a child that runs ``variant``'s code. It runs in a temporary
    directory: ``-c`` puts the working directory first on ``sys.path``, where this checkout
    would win over ``PYTHONPATH``."""
    env = dict(os.environ)
    if variant.tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(variant.tree), env.get("PYTHONPATH", "")])
    if not variant.hear:
        env["BENCH_NO_INOTIFY"] = "1"
    env["XDG_CONFIG_HOME"] = str(Path(tempfile.gettempdir()) / "bench-watchers-config")
    return {"env": env, "cwd": tempfile.gettempdir()}


def watch_cmd(db: str, thread: str, variant: Variant) -> list[str]:
    # Threads not made yet: --wait for them (issue 21; code before it waited without asking).
    wait = ["--wait"] if variant.tree is None else []
    return [sys.executable, "-c", WATCH, "watch", "--db", db, "-r", R, "-t", thread,
            "--json", "--no-tools", "-m", "local/smollm2", *wait]


@contextmanager
def watchers(db: str, count: int, variant: Variant) -> Iterator[list[subprocess.Popen[str]]]:
    procs = [subprocess.Popen(watch_cmd(db, f"idle-{i}", variant), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **child(variant))
             for i in range(count)]
    try:
        for proc in procs:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            if "watching" not in line:
                raise RuntimeError(f"watch did not start: {line}{proc.stderr.read()}")
        time.sleep(SETTLE_S)
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


# -- idle CPU ------------------------------------------------------------------------------------


def idle_rows(tmp: Path, seconds: float, count: int, variant: Variant) -> list[str]:
    tag = variant.tag
    db = str(tmp / f"idle{len(tag)}.db")
    rows = []
    with watchers(db, 1, variant) as procs:
        one = idle_cpu([p.pid for p in procs], seconds)
    rows.append(f"1 `tui-agent watch` process{tag}: {one:.2f}% of a core")
    with watchers(db, count, variant) as procs:
        many = idle_cpu([p.pid for p in procs], seconds)
    rows.append(f"{count} `tui-agent watch` processes{tag}: {many:.2f}% total, "
                f"{many / count:.2f}% each")
    sub = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, db, str(count)], text=True,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, **child(variant))
    assert sub.stdout is not None and sub.stdin is not None
    assert sub.stdout.readline().strip() == "ready"
    time.sleep(SETTLE_S)
    shared = idle_cpu([sub.pid], seconds)
    sub.stdin.write("\n")
    sub.stdin.flush()
    polls = int(sub.stdout.readline())
    sub.wait(10)
    per_s = f", {polls / (seconds + SETTLE_S):.0f} change polls/s" if polls >= 0 else ""
    rows.append(f"{count} subscriptions in 1 process{tag}: {shared:.2f}%{per_s}")
    return rows


def idle_app(tmp: Path, seconds: float, variant: Variant) -> str:
    db = str(tmp / f"app{len(variant.tag)}.db")
    done = subprocess.run([sys.executable, "-c", APP, db, str(seconds)], capture_output=True,
                          text=True, timeout=seconds + 90, **child(variant))
    if done.returncode != 0:
        return f"failed: {done.stderr.strip().splitlines()[-1:]}"
    queries, commits = done.stdout.split()[-2:]
    return f"{queries} store queries/s, {commits} commits/s"


def sleep_anchor(seconds: float) -> float:
    proc = subprocess.Popen(["sleep", str(seconds + 5)])
    try:
        return idle_cpu([proc.pid], seconds)
    finally:
        proc.kill()
        proc.wait()


# -- latency -------------------------------------------------------------------------------------


def reader_queue(stream: object) -> Queue[tuple[float, str]]:
    """Lines of ``stream`` with the moment each was read, from a thread."""
    lines: Queue[tuple[float, str]] = Queue()

    def pump() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put((time.perf_counter(), line))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def next_line(lines: Queue[tuple[float, str]], needle: str) -> float:
    while True:
        try:
            moment, line = lines.get(timeout=10)
        except Empty:
            raise RuntimeError(f"no line with {needle!r} within 10 s") from None
        if needle in line:
            return moment


async def latency(db: str, variant: Variant, idle_rounds: int, burst_rounds: int) -> str:
    from tui_agent.store.sqlite import EventIn, SqliteStore

    store = SqliteStore(db)
    proc = subprocess.Popen(watch_cmd(db, "lat", variant), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE,
                            text=True, **child(variant))
    try:
        assert proc.stderr is not None and proc.stdout is not None
        assert "watching" in proc.stderr.readline()
        lines = reader_queue(proc.stdout)
        await store.ensure_thread("lat", R)
        figures = []
        for mode, rounds, gap in (("isolated", idle_rounds, (1.3, 1.6)),
                                  ("burst", burst_rounds, (0.0, 0.05))):
            samples = []
            for i in range(rounds):
                await asyncio.sleep(random.uniform(*gap))
                tag = f"{mode}-{i}-{random.random()}"
                await store.append_events("lat", [EventIn("data-bench", {"tag": tag})])
                sent = time.perf_counter()
                arrived = await asyncio.to_thread(next_line, lines, tag)
                samples.append((arrived - sent) * 1000)
            figures.append(f"{mode} p50 {pct(samples, 0.5):.1f} / p99 {pct(samples, 0.99):.1f} ms"
                           f" ({rounds})")
        return "; ".join(figures)
    finally:
        proc.terminate()
        proc.wait(10)
        await store.close()


def bare_latency(tmp: Path, rounds: int) -> str:
    import sqlite3

    path = tmp / "bare.db"
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE events(seq INTEGER PRIMARY KEY)")
        reader = subprocess.Popen([sys.executable, "-c", BARE_READER, str(path), "0"],
                                  stdout=subprocess.PIPE, text=True)
        assert reader.stdout is not None
        reader.stdout.readline()
        lines = reader_queue(reader.stdout)
        samples = []
        for seq in range(1, rounds + 1):
            time.sleep(random.uniform(0, 0.05))
            db.execute("INSERT INTO events VALUES (?)", (seq,))
            sent = time.perf_counter()
            samples.append((next_line(lines, str(seq)) - sent) * 1000)
        reader.kill()
        reader.wait()
    return f"p50 {pct(samples, 0.5):.1f} / p99 {pct(samples, 0.99):.1f} ms ({rounds})"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- main ----------------------------------------------------------------------------------------


def extract(ref: str, into: Path) -> Path:
    """The package at git ``ref``, unpacked under ``into``."""
    tree = into / "tree"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "tui_agent", "themes"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--idle-rounds", type=int, default=15)
    parser.add_argument("--burst-rounds", type=int, default=60)
    parser.add_argument("--compare", metavar="REF", help="also measure the code at git REF")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        variants = [Variant("", None, True), Variant(" [polling only: no inotify]", None, False)]
        if args.compare:
            variants.append(Variant(f" [{args.compare}]", extract(args.compare, tmp), True))
        print(f"load average at start: {os.getloadavg()[0]:.2f} (2 shared cores: noisy)")
        print(f"anchor: `sleep`: {sleep_anchor(args.seconds):.2f}% of a core "
              f"(each figure over {args.seconds:.0f} s)")
        for variant in variants:
            for row in idle_rows(tmp, args.seconds, args.watchers, variant):
                print(row + "   (goal ≤ 0.5% per watcher)")
        for variant in variants:
            print(f"idle app, 4 panes + inbox (headless){variant.tag}: "
                  f"{idle_app(tmp, args.seconds, variant)}")
        print(f"anchor: bare sqlite3 reader polling data_version every 10 ms: "
              f"{bare_latency(tmp, args.burst_rounds)}")
        for index, variant in enumerate(variants):
            figure = asyncio.run(latency(str(tmp / f"lat{index}.db"), variant,
                                         args.idle_rounds, args.burst_rounds))
            print(f"cross-process latency, append → `watch --json` line{variant.tag}: {figure}"
                  "   (goal p50 ≤ 50 ms)")

if __name__ == "__main__":
    main()

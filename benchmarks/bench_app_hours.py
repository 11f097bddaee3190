"""Hours, not seconds: the app over a long session on the real model path.

Four panes (headless, 200×50) stream answers back to back from a local OpenAI-compatible fake
(``tests/openai_server.py``, in its own process) at ``--rate`` tokens/s each, through the
agent's HTTP path, while a second process sends bursts of signals, state updates and
notifications into the same threads (every ``--burst-every`` seconds) and a typist presses a
key a second in the focused composer. Each minute it measures the app process: CPU (% of one
core), RSS, event-loop lag p95 (a 10 ms sleeper's overshoot) and key → paint p95 (a key
press to the first screen update made while the composer holds it). At the end it prints
minutes 1, 10 and 30 (or the last) side by side, against the goals: RSS grows at most 10% from
minute 1, lag p95 at most 50 ms, CPU at most 40% of a core.

    .venv/bin/python benchmarks/bench_app_hours.py [--minutes 30] [--rate 500]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app_idle import Frames  # noqa: E402
from bench_app_runner import answer, sample_lag  # noqa: E402
from bench_app_soak import rss_mib  # noqa: E402
from openai_server import FakeOpenAIServerProcess  # noqa: E402
from textual import events  # noqa: E402

from tui_agent.app.gc_policy import SWEEPER  # noqa: E402

RESOURCE = "hours"
ANSWER_SECONDS = 8.0

SENDER = """
import asyncio, random, sys, time
from tui_agent import Agent, Memory, SqliteStore
from tui_agent.testing import ScriptedModel

async def main(path, every, until):
    agent = Agent(name="sender", instructions="-", model=ScriptedModel(replies=["-"]),
                  memory=Memory(store=SqliteStore(path)))
    rng, n = random.Random(7), 0
    while time.time() < until:
        await asyncio.sleep(every)
        for thread in ("t1", "t2", "t3", "t4"):
            target = {{"resource_id": "{resource}", "thread_id": thread}}
            for _ in range(5):
                n += 1
                await agent.send_state_signal(
                    {{"id": "browser", "mode": "snapshot", "cache_key": str(n),
                      "value": {{"tab": n, "title": f"page {{n}}"}}}},
                    if_idle={{"behavior": "persist"}}, **target)
                await agent.send_notification_signal(
                    {{"source": "ci", "kind": "build", "priority": "low",
                      "summary": f"build {{n}} passed", "coalesce_key": f"ci:{{n % 3}}"}},
                    **target)
                await agent.send_signal({{"type": "reactive", "contents": f"tick {{n}}"}},
                                        if_idle={{"behavior": "persist"}}, **target).accepted
    await agent.close(timeout=5)
    await agent.memory.store.close()

asyncio.run(main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])))
"""


class Minute:
    def __init__(self) -> None:
        self.lag: list[float] = []
        self.paint: list[float] = []
        self.cpu0, self.wall0 = time.process_time(), time.monotonic()
        self.frames0, self.layouts0 = Frames.count, Frames.layouts
        self.sweeps0 = SWEEPER.sweeps

    def row(self, answers: int, widgets: int = 0) -> dict[str, float]:
        wall = time.monotonic() - self.wall0
        lag, paint = sorted(self.lag) or [0.0], sorted(self.paint) or [0.0]
        return {"cpu": (time.process_time() - self.cpu0) / wall * 100,
                "lag_p95": lag[int(0.95 * (len(lag) - 1))] * 1e3,
                "paint_p95": paint[int(0.95 * (len(paint) - 1))] * 1e3,
                "rss": rss_mib(), "answers": float(answers),
                "fps": (Frames.count - self.frames0) / wall,
                "layouts": (Frames.layouts - self.layouts0) / wall, "widgets": float(widgets),
                "sweeps": float(SWEEPER.sweeps - self.sweeps0),
                "sweep_ms": SWEEPER.longest_pause_s * 1e3}


async def soak(args: argparse.Namespace, base_url: str) -> list[dict[str, float]]:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.gc_policy import settle_garbage_collector
    from tui_agent.app.widgets.composer import Identity

    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = "sk-bench-dummy"
    path = Path(tempfile.mkdtemp(prefix="bench_hours_")) / "store.sqlite"
    agent = Agent(name="hours", instructions="Answer.", model="openai/hours",
                  memory=Memory(store=SqliteStore(path)))
    threads = [f"t{i + 1}" for i in range(4)]
    for thread in threads:
        await agent.memory.create_thread(thread, resource_id=RESOURCE)
    app = TuiAgentApp(AppConfig(
        agent=agent, threads=[(RESOURCE, t) for t in threads],
        identity=Identity("zoe", {"from": "cli"}), agent_label="hours",
        model_label="openai/hours", default_resource=RESOURCE, warm_model=True,
        show_inbox=True, show_state=True))
    Frames.install()
    minute = Minute()
    answers = 0
    rows: list[dict[str, float]] = []
    until = time.monotonic() + args.minutes * 60

    async def keep_streaming(thread: str) -> None:
        nonlocal answers
        while time.monotonic() < until:
            await agent.generate("go on", memory={"resource": RESOURCE, "thread": thread})
            answers += 1

    def typed() -> str:
        return str(getattr(app.focused, "value", ""))

    async def type_keys(pilot: Any) -> None:
        """A key as the terminal sends it (an event on the app's queue, not Pilot's press,
        which waits for the app to go idle: it never does while four panes stream); the
        time until the first screen update made while the composer held it (each update
        notes the composer's text: a poll after the key would miss an update made before
        it woke, and time the next one)."""
        count = 0
        Frames.watch = typed
        while time.monotonic() < until:
            await asyncio.sleep(1.0)
            count += 1
            key, char = ("x", "x") if count % 40 else ("ctrl+u", None)
            before, pressed = typed(), time.monotonic()
            Frames.watched = before
            app.post_message(events.Key(key, char))
            deadline = pressed + 5
            while Frames.watched == before and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            minute.paint.append(Frames.watched_at - pressed)

    settle_garbage_collector()
    sender = subprocess.Popen([sys.executable, "-c", SENDER.format(resource=RESOURCE),
                               str(path), str(args.burst_every),
                               str(time.time() + args.minutes * 60)], cwd=ROOT)
    try:
        async with app.run_test(size=(200, 50)) as pilot:
            deadline = time.monotonic() + 30
            while not all(p.feed.attached for p in app.panes):
                if time.monotonic() > deadline:
                    raise TimeoutError("the panes did not open in 30 s")
                await asyncio.sleep(0.05)
            lag = asyncio.create_task(sample_lag(lambda started, s: minute.lag.append(s)))
            work = [asyncio.create_task(keep_streaming(t)) for t in threads]
            work.append(asyncio.create_task(type_keys(pilot)))
            minute = Minute()
            while time.monotonic() < until:
                await asyncio.sleep(min(60.0, until - time.monotonic()))
                for task in work:
                    if task.done() and task.exception() is not None:
                        raise RuntimeError("a driver failed") from task.exception()
                row = minute.row(answers, sum(1 for _ in app.screen.walk_children()))
                minute = Minute()
                rows.append(row)
                print(f"  min {len(rows):3}: CPU {row['cpu']:4.0f}%, lag p95 "
                      f"{row['lag_p95']:4.0f} ms, key→paint p95 {row['paint_p95']:4.0f} ms, "
                      f"RSS {row['rss']:6.1f} MiB, {row['answers']:.0f} answers, "
                      f"{row['fps']:.1f} frames/s ({row['layouts'] * 60:.0f} layouts/min), "
                      f"{row['widgets']:.0f} widgets, {row['sweeps']:.0f} sweeps (longest "
                      f"{row['sweep_ms']:.0f} ms)", flush=True)
            await asyncio.wait_for(asyncio.gather(*work), 60)
            lag.cancel()
    finally:
        sender.wait(60)
        await agent.close(timeout=5)
        await agent.memory.store.close()
    return rows


def report(rows: list[dict[str, float]]) -> None:
    if not rows:
        print("no minute measured")
        return
    picks = sorted({1, 10, 30, len(rows)} & set(range(1, len(rows) + 1)))
    print(f"\n{'minute':>6}  {'CPU':>6}  {'lag p95':>8}  {'key→paint p95':>14}  {'RSS':>10}")
    for minute in picks:
        row = rows[minute - 1]
        print(f"{minute:6}  {row['cpu']:5.0f}%  {row['lag_p95']:6.0f} ms  "
              f"{row['paint_p95']:11.0f} ms  {row['rss']:6.1f} MiB")
    first, last = rows[0], rows[-1]
    growth = (last["rss"] / first["rss"] - 1) * 100
    cpu = max(r["cpu"] for r in rows)
    lag = max(r["lag_p95"] for r in rows)
    print(f"\nRSS growth minute 1 → {len(rows)}: {growth:+.1f}% (goal <= 10%) "
          f"{'pass' if growth <= 10 else 'FAIL'}")
    print(f"lag p95, worst minute: {lag:.0f} ms (goal <= 50 ms) {'pass' if lag <= 50 else 'FAIL'}")
    print(f"CPU, worst minute: {cpu:.0f}% of a core (goal <= 40%) "
          f"{'pass' if cpu <= 40 else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=500.0, help="tokens/s per pane")
    parser.add_argument("--burst-every", type=float, default=20.0,
                        help="seconds between the second process's bursts")
    args = parser.parse_args()
    text = answer(0, int(args.rate * 4 * ANSWER_SECONDS))
    print(f"four panes over HTTP at {args.rate:g} tokens/s each for {args.minutes:g} min, "
          f"bursts every {args.burst_every:g} s from a second process, a key a second:")
    reply = {"text": text, "rate": args.rate}  # every request's, paced at --rate chunks/s
    with FakeOpenAIServerProcess(chunk_size=4, default_reply=reply) as server:
        report(asyncio.run(soak(args, server.base_url)))


if __name__ == "__main__":
    main()

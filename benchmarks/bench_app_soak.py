"""The app over a long session: does it stay as fast as it starts?

Four panes (headless, 200×50) stream Markdown answers back to back at ``--rate`` tokens/s each
(the scripted model, 4-character tokens) for ``--minutes``, while a typist puts one key a
second into the focused composer. Every ``--every`` seconds it prints, for that interval: the
process's CPU (% of one core), event-loop lag p95 / max (a 10 ms sleeper's overshoot), the
garbage collector's longest pause, RSS, widgets mounted in the app and answers streamed so far.
The anchor is the first interval of the same run: the last interval is printed beside it, and
the verdict is whether CPU, lag and RSS stayed within bounds of it (no creep: CPU and lag p95
within 1.5×, lag max ≤ 150 ms, RSS growth ≤ 50 MiB after the first interval, widgets bounded).

    .venv/bin/python benchmarks/bench_app_soak.py [--minutes 10] [--every 60] [--rate 500]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app_runner import answer, paced, sample_lag, watch_gc

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.gc_policy import settle_garbage_collector
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.models.base import ModelRequest
from tui_agent.testing import ScriptedModel

RESOURCE = "soak"
ANSWER_SECONDS = 8.0  # each answer streams for about this long


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class Interval:
    """What one interval measured (lag samples, GC pauses, CPU)."""

    def __init__(self) -> None:
        self.lag: list[float] = []
        self.gc_pauses: list[float] = []
        self.cpu0 = time.process_time()
        self.wall0 = time.monotonic()

    def row(self, app: TuiAgentApp, answers: int) -> dict[str, float]:
        wall = time.monotonic() - self.wall0
        lag = sorted(self.lag) or [0.0]
        return {
            "cpu": (time.process_time() - self.cpu0) / wall * 100,
            "lag_p95": lag[int(0.95 * (len(lag) - 1))] * 1e3,
            "lag_max": lag[-1] * 1e3,
            "gc_max": max(self.gc_pauses, default=0.0) * 1e3,
            "rss": rss_mib(),
            "widgets": float(len(list(app.query("*")))),
            "answers": float(answers),
        }


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.interval = Interval()
        self.answers = 0
        watch_gc(lambda generation, started, seconds: self.interval.gc_pauses.append(seconds))

    async def sample_lag(self) -> None:
        await sample_lag(lambda started, lag: self.interval.lag.append(lag))

    def model(self) -> ScriptedModel:
        chars = int(self.args.rate * 4 * ANSWER_SECONDS)
        texts = [answer(i, chars) for i in range(4)]
        soak = self

        class Paced(ScriptedModel):
            async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
                async for event in paced(super().stream(request), 1 / soak.args.rate):
                    yield event
                soak.answers += 1
                # The scripted model records every request (with its history) for tests'
                # assertions; a real model keeps nothing, and neither may the soak.
                self.requests.clear()

        def handler(messages: list[dict[str, Any]], tools: Any) -> str:
            return texts[int(str(messages[-1]["content"]).rsplit(" ", 1)[-1])]

        return Paced(handler=handler, chunk_size=4, delay_s=0.0)

    async def keep_streaming(self, agent: Agent, pane: int, thread: str, until: float) -> None:
        while time.monotonic() < until:  # one answer after another, as a busy thread has
            await agent.generate(f"go {pane}", memory={"resource": RESOURCE, "thread": thread})

    async def type_keys(self, app: TuiAgentApp, until: float) -> None:
        count = 0
        while time.monotonic() < until:
            await asyncio.sleep(1.0)
            focused = app.focused
            if isinstance(focused, Composer):
                count += 1
                focused.value = "" if count % 40 == 0 else focused.value + "x"

    async def run(self) -> list[dict[str, float]]:
        directory = Path(tempfile.mkdtemp(prefix="bench_soak_"))
        agent = Agent(name="soak", instructions="Answer.", model=self.model(),
                      memory=Memory(store=SqliteStore(directory / "store.sqlite")))
        threads = [(RESOURCE, f"t{i + 1}") for i in range(4)]
        app = TuiAgentApp(AppConfig(
            agent=agent, threads=threads, identity=Identity("zoe", {"from": "cli"}),
            agent_label="soak", model_label="scripted", default_resource=RESOURCE,
            warm_model=False))
        rows: list[dict[str, float]] = []
        settle_garbage_collector()  # as ``tui-agent`` does
        async with app.run_test(size=(200, 50)):
            deadline = time.monotonic() + 30
            while not all(p.feed.attached for p in app.panes):
                if time.monotonic() > deadline:
                    raise TimeoutError("the panes did not open in 30 s")
                await asyncio.sleep(0.05)
            lag = asyncio.get_running_loop().create_task(self.sample_lag())
            until = time.monotonic() + self.args.minutes * 60
            work = [asyncio.create_task(self.keep_streaming(agent, i, t, until))
                    for i, (_, t) in enumerate(threads)]
            work.append(asyncio.create_task(self.type_keys(app, until)))
            self.interval = Interval()
            while time.monotonic() < until:
                await asyncio.sleep(min(self.args.every, until - time.monotonic()))
                for task in work:  # a failed driver would leave the panes idle: say so now
                    if task.done() and task.exception() is not None:
                        raise RuntimeError("a soak driver failed") from task.exception()
                row = self.interval.row(app, self.answers)
                self.interval = Interval()
                rows.append(row)
                print(f"  {len(rows) * self.args.every / 60:5.1f} min: CPU {row['cpu']:4.0f}%, "
                      f"lag p95 {row['lag_p95']:4.0f} ms max {row['lag_max']:4.0f} ms, GC max "
                      f"{row['gc_max']:4.0f} ms, RSS {row['rss']:6.1f} MiB, "
                      f"{row['widgets']:.0f} widgets, {row['answers']:.0f} answers", flush=True)
            await asyncio.wait_for(asyncio.gather(*work), 60)  # raises what a task raised
            lag.cancel()
        await agent.close()
        await agent.memory.store.close()
        return rows


def verdict(rows: list[dict[str, float]]) -> None:
    if len(rows) < 2:
        print("too short to compare: run --minutes at least 2 intervals")
        return
    first, last = rows[0], rows[-1]
    peak_lag = max(r["lag_max"] for r in rows)
    checks = [
        ("CPU, % of one core", f"{last['cpu']:.0f}%", f"{first['cpu']:.0f}%",
         "<= 1.5x the first", last["cpu"] <= 1.5 * first["cpu"]),
        ("event-loop lag p95", f"{last['lag_p95']:.0f} ms", f"{first['lag_p95']:.0f} ms",
         "<= 1.5x the first (or <= 50 ms)",
         last["lag_p95"] <= max(50.0, 1.5 * first["lag_p95"])),
        ("event-loop lag max (whole run)", f"{peak_lag:.0f} ms", f"{first['lag_max']:.0f} ms",
         "<= 150 ms", peak_lag <= 150),
        ("RSS", f"{last['rss']:.0f} MiB", f"{first['rss']:.0f} MiB", "<= first + 50 MiB",
         last["rss"] <= first["rss"] + 50),
        ("widgets mounted", f"{last['widgets']:.0f}", f"{first['widgets']:.0f}",
         "<= first + 50", last["widgets"] <= first["widgets"] + 50),
    ]
    print(f"\n{'figure':32}  {'last interval':>13}  {'first (anchor)':>14}  goal")
    for name, measured, anchor, goal, ok in checks:
        print(f"{name:32}  {measured:>13}  {anchor:>14}  {goal}  {'pass' if ok else 'FAIL'}")
    print(f"({statistics.fmean(r['answers'] for r in rows[-1:]):.0f} answers streamed; a shared "
          "machine: compare with the first interval of this run)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--every", type=float, default=60.0, help="seconds per interval")
    parser.add_argument("--rate", type=float, default=500.0, help="tokens/s per pane")
    args = parser.parse_args()
    print(f"four panes streaming at {args.rate:g} tokens/s each for {args.minutes:g} min, "
          f"one key a second; every {args.every:g} s:")
    verdict(asyncio.run(Soak(args).run()))


if __name__ == "__main__":
    main()

"""Idle is idle: the app with four panes open, the inbox and the state panels shown, and
nothing streaming, beside a bare Textual app idling in the same run.

Each side runs headless (200×50) in its own process. Once it has settled (every pane synced,
answers rendered, ``--settle`` seconds), it measures for ``--seconds``: the CPU the process
used (% of one core), the screen updates it made (each a repaint a terminal would be sent),
how many of them changed nothing on screen (each update's screenshot beside the one before;
the screenshots' own CPU is left out), and whether two screenshots a second apart are
identical. Goal: CPU at most 1% of a core, no update that changes nothing, identical
screenshots. An update that changes what is shown is the screen being right, not idle work:
the app's ages ("3 min ago") turn over once a minute, the bare app's input cursor blinks.

    .venv/bin/python benchmarks/bench_app_idle.py [--seconds 60] [--settle 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Footer, Header, Input, Static

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESOURCE = "idle"
SIZE = (200, 50)
ANSWER = ("Here is the plan:\n\n- build it\n- ship it\n  - tag the release\n\n"
          "```python\nprint('v2.4')\n```\n\n| step | owner |\n|---|---|\n| ship | ana |\n")


class Frames:
    """Counts the screen updates the app made (each one a repaint that a terminal would have
    been sent; headless, Textual computes them and writes nothing)."""

    count = 0
    at = 0.0  # when the last one was made (monotonic)
    layouts = 0  # how many of the screen's updates arranged every widget anew (a reflow)
    compare = False  # take a screenshot at each update to tell whether it changed anything
    shown: str | None = None  # the screenshot after the last update
    unchanged = 0  # updates after which the screen was the same as before
    compare_cpu = 0.0  # process time the screenshots took (left out of the CPU figure)
    watch: Callable[[], object] | None = None  # read at each update (e.g. the composer's text)
    watched: object = None  # what ``watch`` gave at the last update
    watched_at = 0.0  # when an update first painted it (monotonic)

    @classmethod
    def install(cls) -> None:
        from textual._compositor import Compositor

        original = App._display
        reflow = Compositor.reflow

        def counted_reflow(self: Compositor, parent: Any, size: Any) -> Any:
            cls.layouts += 1
            return reflow(self, parent, size)

        def display(self: App[Any], screen: Any, renderable: Any) -> None:
            if renderable is not None:
                cls.count += 1
                cls.at = time.monotonic()
                if cls.watch is not None and (seen := cls.watch()) != cls.watched:
                    cls.watched, cls.watched_at = seen, cls.at
            original(self, screen, renderable)
            if renderable is not None and cls.compare:
                cls.check_changed(self)

        App._display = display  # type: ignore[method-assign]
        Compositor.reflow = counted_reflow  # type: ignore[method-assign]

    @classmethod
    def check_changed(cls, app: App[Any]) -> None:
        start = time.process_time()
        shot = app.export_screenshot()
        if shot == cls.shown:
            cls.unchanged += 1
        cls.shown = shot
        cls.compare_cpu += time.process_time() - start


async def measure(app: App[Any], seconds: float) -> dict[str, Any]:
    before = app.export_screenshot()
    await asyncio.sleep(1.0)
    after = app.export_screenshot()
    Frames.shown, Frames.compare = after, True
    frames0, unchanged0 = Frames.count, Frames.unchanged
    cpu0, compare0, wall0 = time.process_time(), Frames.compare_cpu, time.monotonic()
    await asyncio.sleep(max(0.0, seconds - 1.0))
    wall = time.monotonic() - wall0
    cpu = time.process_time() - cpu0 - (Frames.compare_cpu - compare0)
    return {"cpu": cpu / wall * 100, "frames": Frames.count - frames0,
            "unchanged": Frames.unchanged - unchanged0, "identical": before == after}


class BareApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("a bare Textual app: a header, a text, an input and a footer")
        yield Input(placeholder="type here")
        yield Footer()


async def run_bare(args: argparse.Namespace) -> dict[str, Any]:
    app = BareApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await asyncio.sleep(args.settle)
        return await measure(app, args.seconds)


async def seed(agent: Any, threads: list[str]) -> None:
    """A few exchanges on each thread, a state lane and inbox notifications."""
    from tui_agent.state.lanes import state_update

    for index, thread in enumerate(threads):
        target = {"resource_id": RESOURCE, "thread_id": thread}
        await agent.generate(f"hello {index}", memory={"resource": RESOURCE, "thread": thread})
        await agent.send_state_signal(state_update("browser", {"tabs": ["a", "b"]}),
                                      if_idle={"behavior": "persist"}, **target)
        await agent.send_notification_signal(
            {"source": "ci", "kind": "build_failed", "summary": f"Build {index} failed",
             "priority": "high"}, **target)


async def run_app(args: argparse.Namespace) -> dict[str, Any]:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.gc_policy import settle_garbage_collector
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.testing import ScriptedModel

    directory = Path(tempfile.mkdtemp(prefix="bench_idle_"))
    agent = Agent(name="idle", instructions="Answer.",
                  model=ScriptedModel(handler=lambda messages, tools: ANSWER),
                  memory=Memory(store=SqliteStore(directory / "store.sqlite")))
    threads = [f"t{i + 1}" for i in range(4)]
    await seed(agent, threads)
    app = TuiAgentApp(AppConfig(
        agent=agent, threads=[(RESOURCE, t) for t in threads],
        identity=Identity("zoe", {"from": "cli"}), agent_label="idle",
        model_label="scripted", default_resource=RESOURCE, warm_model=False))
    settle_garbage_collector()
    try:
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + 30
            while not all(p.drained for p in app.panes):
                if time.monotonic() > deadline:
                    raise TimeoutError("the panes did not settle in 30 s")
                await pilot.pause()
            await pilot.press("f2")  # the inbox shown
            for pane in app.panes:
                pane.action_toggle_state()  # each pane's state panel shown
            await pilot.pause()
            await asyncio.sleep(args.settle)
            return await measure(app, args.seconds)
    finally:
        await agent.close()
        await agent.memory.store.close()


def child(args: argparse.Namespace) -> None:
    Frames.install()
    runner = run_app if args.child == "app" else run_bare
    print(json.dumps(asyncio.run(runner(args))))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--child", choices=["app", "bare"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    results = {}
    for side in ("bare", "app"):
        done = subprocess.run([sys.executable, __file__, "--child", side, "--seconds",
                               str(args.seconds), "--settle", str(args.settle)],
                              capture_output=True, text=True, timeout=args.seconds + 120)
        if done.returncode:
            sys.exit(f"{side} failed:\n{done.stderr[-3000:]}")
        results[side] = json.loads(done.stdout.strip().splitlines()[-1])
    app, bare = results["app"], results["bare"]
    print(f"idle for {args.seconds:g} s, headless {SIZE[0]}×{SIZE[1]}:")
    print(f"{'figure':36}  {'tui-agent':>10}  {'bare Textual':>12}  goal")
    ok_cpu = app["cpu"] <= 1.0
    print(f"{'CPU, % of one core':36}  {app['cpu']:9.2f}%  {bare['cpu']:11.2f}%  <= 1%  "
          f"{'pass' if ok_cpu else 'FAIL'}")
    print(f"{'screen updates (repaints)':36}  {app['frames']:10,}  {bare['frames']:12,}  "
          "—")
    print(f"{'  of them changing nothing on screen':36}  {app['unchanged']:10,}  "
          f"{bare['unchanged']:12,}  0  {'pass' if app['unchanged'] == 0 else 'FAIL'}")
    print(f"{'two screenshots 1 s apart identical':36}  {app['identical']!s:>10}  "
          f"{bare['identical']!s:>12}  True  {'pass' if app['identical'] else 'FAIL'}")


if __name__ == "__main__":
    main()

"""The in-terminal side of ``bench_app.py``'s streaming figure: run inside tmux, never alone.

Builds one of two apps in-process, four panes each streaming a long Markdown answer at a steady
token rate, and instruments it:

- ``--mode app``: ``TuiAgentApp`` on four threads of one agent whose model is a
  ``ScriptedModel`` (4-character chunks) paced to ``--rate`` tokens/s per stream;
- ``--mode anchor``: a minimal Textual app, four panes of Textual's own ``Markdown`` widget fed
  through ``Markdown.get_stream`` at the same pace, each with a one-line ``TextArea`` (what the
  composer is built on).

Both record, on the monotonic clock (the same clock as ``bench_app.py``, another process):
event-loop lag (a task sleeping 10 ms, its overshoot), CPU time of the process over the window
(``time.process_time``: every thread), and when each keystroke changed the focused input's
text (``TextArea.Changed``, stamped when the message was made). Handshake with ``bench_app.py``
through files in ``--dir``: ``mounted.json`` (focus is in the composer), then the bench types
``--prefix``; once the value holds it the streams start and ``ready.json`` is written; at the
end ``report.json``. The process exits by itself after ``--max-s`` at the latest.

    (inside tmux) .venv/bin/python benchmarks/bench_app_runner.py --mode app --dir DIR
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.containers import Grid, Vertical, VerticalScroll
from textual.widgets import Markdown, TextArea

MARKERS = ("endmarkalpha", "endmarkbravo", "endmarkcharlie", "endmarkdelta")
LAG_TICK_S = 0.010
RESOURCE = "bench"


def answer(pane: int, chars: int) -> str:
    """Mixed Markdown of about ``chars`` characters; its last words are ``MARKERS[pane]``."""
    parts: list[str] = []
    size = 0
    k = 0
    while size < chars - 200:
        k += 1
        part = (
            f"## Step {k} on pane {pane + 1}: check the service\n\n"
            f"The deploy of build {k} reached **staging** after the migration; the health "
            f"check on `/api/v{k}/status` answered in {k * 7 % 300} ms and the error budget "
            "is intact. We keep the canary at ten percent until the latency graph is flat.\n\n"
            f"- restart the worker pool (pool {k})\n"
            "- drain the queue before the switch\n"
            "- keep the old image for a rollback\n"
            "  - tagged with the date\n"
            "  - pushed to the mirror\n\n"
            "```python\n"
            f"def check_{k}(client, timeout=5.0):\n"
            f'    response = client.get("/api/v{k}/status", timeout=timeout)\n'
            "    response.raise_for_status()\n"
            '    return response.json()["healthy"]\n'
            "```\n\n"
            "| service | p50 ms | p95 ms | errors |\n"
            "|---------|-------:|-------:|-------:|\n"
            f"| api | {k + 11} | {k + 40} | 0 |\n"
            f"| worker | {k + 20} | {k + 90} | {k % 3} |\n\n"
            "1. merge the fix\n"
            "2. watch the canary for an hour\n"
            "3. promote to production\n\n"
        )
        parts.append(part)
        size += len(part)
    parts.append(f"That is all for this pane, the last words are {MARKERS[pane]}\n")
    return "".join(parts)


async def paced(pieces: AsyncIterator[Any], interval: float) -> AsyncIterator[Any]:
    """Re-yield ``pieces`` one every ``interval`` seconds on a fixed schedule: a piece late
    (the loop was busy) goes at once, so the mean rate holds instead of drifting down."""
    start = time.monotonic()
    index = 0
    async for piece in pieces:
        index += 1
        wait = start + index * interval - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        elif index % 8 == 0:
            await asyncio.sleep(0)  # far behind: still let the UI run
        yield piece


def watch_gc(on_pause: Callable[[int, float, float], None]) -> None:
    """Call ``on_pause(generation, started, seconds)`` after each garbage collection (on the
    monotonic clock): a collection pauses the event loop, and the lag figures include it."""
    started = 0.0

    def callback(phase: str, info: dict[str, Any]) -> None:
        nonlocal started
        now = time.monotonic()
        if phase == "start":
            started = now
        else:
            on_pause(info["generation"], started, now - started)

    gc.callbacks.append(callback)


async def sample_lag(on_lag: Callable[[float, float], None]) -> None:
    """Forever: ``on_lag(started, overshoot)`` for a ``LAG_TICK_S`` sleep (the loop's lag)."""
    while True:
        before = time.monotonic()
        await asyncio.sleep(LAG_TICK_S)
        on_lag(before, time.monotonic() - before - LAG_TICK_S)


class Probe:
    """What the runner records: lag samples, CPU, input changes, stream starts and ends."""

    def __init__(self, out: Path, mode: str) -> None:
        self.out = out
        self.mode = mode
        self.lag: list[tuple[float, float]] = []  # (monotonic at the sleep's start, overshoot)
        self.changes: list[tuple[float, int]] = []  # (monotonic, len(value))
        self.starts: dict[int, float] = {}
        self.ends: dict[int, float] = {}
        self.chars: dict[int, int] = {}
        self.extra: dict[str, Any] = {}
        self.window_start = 0.0
        self.cpu_start = 0.0
        self.gc_pauses: list[tuple[int, float, float]] = []  # (generation, at, seconds)
        watch_gc(self._on_gc)

    def _on_gc(self, generation: int, started: float, seconds: float) -> None:
        if seconds >= 0.020:  # collections of 20 ms or more
            self.gc_pauses.append((generation, started - self.window_start, seconds))

    async def sample_lag(self) -> None:
        await sample_lag(lambda started, lag: self.lag.append((started, lag)))

    def write(self, name: str, data: dict[str, Any]) -> None:
        tmp = self.out / f".{name}.tmp"
        tmp.write_text(json.dumps(data))
        tmp.replace(self.out / name)


async def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"runner: timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


async def drive(app: App[Any], probe: Probe, args: argparse.Namespace,
                ready: Callable[[], bool], value: Callable[[], str],
                start_streams: Callable[[], Awaitable[None]],
                widgets: Callable[[], int]) -> None:
    """The shared script: handshake, streams, window, report."""
    loop = asyncio.get_running_loop()
    loop.call_later(args.max_s, app.exit)  # never outlive the bench, whatever happens
    lag_task = loop.create_task(probe.sample_lag())
    try:
        await wait_for(ready, 30, "the panes to open and focus their composer")
        probe.write("mounted.json", {"pid": os.getpid()})
        await wait_for(lambda: value() == args.prefix, 30, "the typed prefix")
        await asyncio.sleep(0.3)
        probe.window_start = time.monotonic()
        probe.cpu_start = time.process_time()
        probe.lag.clear()
        await start_streams()
        probe.write("ready.json", {"start": probe.window_start, "markers": list(MARKERS),
                                  "mode": probe.mode})
        try:
            await wait_for(lambda: len(probe.ends) == 4, args.seconds + args.bound, "the ends")
            complete = True
        except TimeoutError:
            complete = False
        end = max(probe.ends.values()) if complete else time.monotonic()
        cpu = time.process_time() - probe.cpu_start
        await asyncio.sleep(max(0.0, end + 1.0 - time.monotonic()))  # the end-of-stream work
        lag = [s for t, s in probe.lag if t <= end + 1.0]
        worst = sorted(((s, t - probe.window_start) for t, s in probe.lag if t <= end + 1.0),
                       reverse=True)[:12]

        def report(final: bool) -> dict[str, Any]:
            return {
                "mode": probe.mode, "final": final, "start": probe.window_start, "end": end,
                "cpu_s": cpu, "complete": complete, "lag": lag, "changes": probe.changes,
                "prefix": args.prefix, "starts": probe.starts, "ends": probe.ends,
                "chars": probe.chars, "widgets": widgets(), "worst_lag": worst,
                "gc_pauses": probe.gc_pauses, **probe.extra,
            }

        probe.write("report.json", report(final=False))  # in case the keys never all arrive
        # The bench says how many keys it typed; wait (bounded) until all their TextArea.Changed
        # arrived here (they bubble through every container: a busy loop delivers them late).
        typed = probe.out / "typed.json"
        with contextlib.suppress(TimeoutError):
            await wait_for(typed.exists, 20, "typed.json")
            want = len(args.prefix) + json.loads(typed.read_text())["count"]
            await wait_for(lambda: max((n for _, n in probe.changes), default=0) >= want, 10,
                           "every key's TextArea.Changed")
        probe.write("report.json", report(final=True))
    except Exception as error:
        probe.write("report.json", {"error": f"{type(error).__name__}: {error}"})
    finally:
        lag_task.cancel()


# -- tui-agent -------------------------------------------------------------------------------


def run_tui_agent(args: argparse.Namespace, probe: Probe) -> None:
    import tui_agent.app.app as tui_app_module
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.gc_policy import settle_garbage_collector
    from tui_agent.app.widgets.composer import Composer, Identity
    from tui_agent.models.base import ModelRequest, TextDelta
    from tui_agent.testing import ScriptedModel

    chars = int(args.rate * 4 * args.seconds)
    texts = [answer(i, chars) for i in range(4)]

    def handler(messages: list[dict[str, Any]], tools: Any) -> str:
        last = str(messages[-1]["content"])
        return texts[int(last.rsplit(" ", 1)[-1])]

    class PacedModel(ScriptedModel):
        """The scripted model, each stream paced to the rate and its start/end recorded."""

        async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
            pane = int(str(request.messages[-1]["content"]).rsplit(" ", 1)[-1])
            probe.starts[pane] = time.monotonic()
            probe.chars[pane] = 0
            async for event in paced(super().stream(request), 1 / args.rate):
                if isinstance(event, TextDelta):
                    probe.chars[pane] += len(event.text)
                    if probe.chars[pane] >= len(texts[pane]):
                        probe.ends[pane] = time.monotonic()
                yield event

    model = PacedModel(handler=handler, chunk_size=4, delay_s=0.0)
    agent = Agent(name="bench", instructions="Answer.", model=model,
                  memory=Memory(store=SqliteStore(args.dir / "store.sqlite")))
    threads = [(RESOURCE, f"t{i + 1}") for i in range(4)]
    config = AppConfig(agent=agent, threads=threads, identity=Identity("zoe", {"from": "cli"}),
                       agent_label="bench", model_label="scripted", default_resource=RESOURCE,
                       warm_model=False)

    class BenchApp(TuiAgentApp):
        # a relative CSS_PATH is found beside the subclass's module: point at the app's own
        CSS_PATH = str(Path(tui_app_module.__file__).with_name("app.tcss"))

        def on_mount(self) -> None:  # Textual calls TuiAgentApp.on_mount itself (MRO)
            asyncio.get_running_loop().create_task(
                drive(self, probe, args, ready, value, start_streams, widgets))

        def on_text_area_changed(self, message: TextArea.Changed) -> None:
            probe.changes.append((message.time, len(message.text_area.text)))

    app = BenchApp(config)

    def composer() -> Composer | None:
        focused = app.focused
        return focused if isinstance(focused, Composer) else None

    def ready() -> bool:
        return all(p.feed.attached for p in app.panes) and composer() is not None

    def value() -> str:
        box = composer()
        return box.value if box is not None else ""

    async def start_streams() -> None:
        asyncio.get_running_loop().create_task(trace_ends())
        receipts = [agent.send_message(f"go {i}", resource_id=RESOURCE, thread_id=t)
                    for i, (_, t) in enumerate(threads)]
        for receipt in receipts:
            await receipt.accepted

    def widgets() -> int:
        return len(list(app.query("*")))

    async def trace_ends() -> None:
        """After each stream's end: when its last words reached the pane's transcript (the
        feed), its ``MarkdownStream`` source, and when the stream was finished (seconds)."""
        from tui_agent.app.widgets.markdown_stream import MarkdownStream

        seen: dict[str, dict[str, float]] = {str(i): {} for i in range(4)}
        probe.extra["trace"] = seen
        while True:
            await asyncio.sleep(0.005)
            for i, pane in enumerate(app.panes):
                end = probe.ends.get(i)
                if end is None or len(seen[str(i)]) == 4:
                    continue
                now = time.monotonic() - end
                marks = seen[str(i)]
                entries = [e for e in pane.feed.transcript.entries if e.kind == "assistant"]
                if entries and MARKERS[i] in entries[-1].text:
                    marks.setdefault("feed", now)
                if entries and entries[-1].status != "streaming":
                    marks.setdefault("feed_done", now)
                streams = list(pane.query(MarkdownStream))
                if streams and MARKERS[i] in streams[-1].markdown[-200:]:
                    marks.setdefault("widget", now)
                if streams and streams[-1].finished:
                    marks.setdefault("finished", now)

    settle_garbage_collector()  # as ``tui-agent`` does before its app runs
    try:
        app.run()
    finally:
        with contextlib.suppress(Exception):
            asyncio.run(agent.memory.store.close())


# -- the anchor: Textual's Markdown with Markdown.get_stream --------------------------------


class AnchorApp(App[None]):
    CSS = """
    Grid { grid-size: 2 2; }
    .pane { border: round $border-blurred; }
    .pane VerticalScroll { height: 1fr; }
    .pane TextArea { height: 3; }
    """
    BINDINGS: ClassVar[list[Any]] = []

    def __init__(self, args: argparse.Namespace, probe: Probe) -> None:
        super().__init__()
        self.args = args
        self.probe = probe
        chars = int(args.rate * 4 * args.seconds)
        self.texts = [answer(i, chars) for i in range(4)]

    def compose(self) -> ComposeResult:
        with Grid():
            for i in range(4):
                with Vertical(classes="pane"):
                    with VerticalScroll(id=f"scroll{i}"):
                        yield Markdown(id=f"md{i}")
                    yield TextArea(id=f"input{i}", placeholder="type here")

    def on_mount(self) -> None:
        for i in range(4):
            self.query_one(f"#scroll{i}", VerticalScroll).anchor()
        self.query_one("#input3", TextArea).focus()
        asyncio.get_running_loop().create_task(drive(
            self, self.probe, self.args, self.bench_ready, self.bench_value, self.bench_start,
            self.bench_widgets))

    def on_text_area_changed(self, message: TextArea.Changed) -> None:
        self.probe.changes.append((message.time, len(message.text_area.text)))

    def bench_ready(self) -> bool:
        return isinstance(self.focused, TextArea)

    def bench_value(self) -> str:
        return self.focused.text if isinstance(self.focused, TextArea) else ""

    def bench_widgets(self) -> int:
        return len(list(self.query("*")))

    async def bench_start(self) -> None:
        for i in range(4):
            self.run_worker(self.bench_feed(i), group=f"feed{i}")

    async def bench_feed(self, pane: int) -> None:
        """Write the 4-character chunks due by now in one ``write`` (what a socket read of a
        streamed response gives when the loop was busy), then sleep until the next is due."""
        text = self.texts[pane]
        probe = self.probe
        stream = Markdown.get_stream(self.query_one(f"#md{pane}", Markdown))
        start = probe.starts[pane] = time.monotonic()
        probe.chars[pane] = 0
        try:
            while probe.chars[pane] < len(text):
                due = int((time.monotonic() - start) * self.args.rate) * 4 + 4
                piece = text[probe.chars[pane] : due]
                if piece:
                    await stream.write(piece)
                    probe.chars[pane] += len(piece)
                wait = start + probe.chars[pane] / 4 / self.args.rate - time.monotonic()
                await asyncio.sleep(max(0.0, wait))
            probe.ends[pane] = time.monotonic()
        finally:
            await stream.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("app", "anchor"), required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=500.0, help="tokens/s per stream")
    parser.add_argument("--prefix", default="qzxjv")
    parser.add_argument("--bound", type=float, default=20.0,
                        help="seconds past --seconds to wait for the streams' ends")
    parser.add_argument("--max-s", type=float, default=150.0)
    args = parser.parse_args()
    probe = Probe(args.dir, args.mode)
    if args.mode == "anchor":
        AnchorApp(args, probe).run()
    else:
        run_tui_agent(args, probe)


if __name__ == "__main__":
    main()

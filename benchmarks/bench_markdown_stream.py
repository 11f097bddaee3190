"""Streaming a ~4,000-token Markdown answer in 4-character chunks into one pane.

Measures the cost of one append plus the repaint of the visible lines (layout when the height
changed, then the screen's update: what the next frame does) for ``MarkdownStream`` (line API,
finished blocks rendered once), beside Textual's own ``Markdown`` widget doing the same appends
with ``Markdown.append`` (what ``Markdown.get_stream`` calls, minus its coalescing) in the same
run as the anchor. Both sit in an anchored ``VerticalScroll`` of a headless 100×40 app. Prints
mean, p95 and max per append, the total, and the end of the stream (``finish()`` beside
``Markdown.update`` of the whole text).

The repaint is forced with ``Screen._on_timer_update`` (what Textual's update timer calls), so
each figure holds the work of its own append and no other; messages a widget posts for later
(Textual's ``Markdown`` posts some) are left out, which flatters the anchor, not us.

    .venv/bin/python benchmarks/bench_markdown_stream.py [--tokens 4000] [--chunk 4]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Markdown

from tui_agent.app.widgets.markdown_stream import MarkdownStream

SIZE = (100, 40)


def answer(tokens: int) -> str:
    """Mixed Markdown of about ``tokens`` tokens (4 characters a token)."""
    sections: list[str] = []
    k = 0
    while sum(map(len, sections)) < tokens * 4:
        k += 1
        sections.append(
            f"## Step {k}: check the service\n\n"
            f"The deploy of build {k} reached **staging** after the migration; the health "
            f"check on `/api/v{k}/status` answered in {k * 7} ms, and the error budget is "
            "intact. We keep the canary at ten percent until the latency graph is flat.\n\n"
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
    return "".join(sections).rstrip() + "\n"


class Pane(App[None]):
    CSS = "VerticalScroll { height: 1fr; }"

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.widget = widget

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield self.widget

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).anchor()


Append = Callable[[str], Awaitable[None]]


async def stream(
    widget: Widget, append: Append, end: Append, text: str, chunk: int
) -> tuple[list[float], float, float]:
    """Seconds per append + repaint, seconds for the end of the stream, total CPU seconds."""
    app = Pane(widget)
    samples: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        cpu = time.process_time()
        for i in range(0, len(text), chunk):
            start = time.perf_counter()
            await append(text[i : i + chunk])
            screen._on_timer_update()  # layout if needed, then paint the dirty lines
            samples.append(time.perf_counter() - start)
            await asyncio.sleep(0)  # let the app's own tasks run between appends
        start = time.perf_counter()
        await end(text)
        screen._on_timer_update()
        finish = time.perf_counter() - start
        cpu = time.process_time() - cpu
        await pilot.pause()
    return samples, finish, cpu


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def line(label: str, samples: list[float], finish: float, cpu: float) -> str:
    ms = 1e3
    return (f"{label:<34} mean {statistics.fmean(samples) * ms:6.2f} ms  "
            f"p95 {p95(samples) * ms:6.2f} ms  max {max(samples) * ms:7.1f} ms  "
            f"total {sum(samples):6.2f} s  (CPU {cpu:5.1f} s)  end {finish * ms:6.1f} ms")


async def main(tokens: int, chunk: int) -> None:
    text = answer(tokens)
    ours = MarkdownStream()

    async def append_ours(piece: str) -> None:
        ours.append(piece)
        ours.flush()  # what the update append() schedules does, done now to be measured

    async def finish_ours(_: str) -> None:
        ours.finish()
        ours.flush()

    theirs = Markdown()

    async def append_theirs(piece: str) -> None:
        await theirs.append(piece)

    async def finish_theirs(full: str) -> None:
        await theirs.update(full)

    mine = await stream(ours, append_ours, finish_ours, text, chunk)
    anchor = await stream(theirs, append_theirs, finish_theirs, text, chunk)
    blocks = ours.blocks_rendered
    print(f"answer: {len(text):,} characters (~{len(text) // 4:,} tokens) in "
          f"{len(mine[0]):,} appends of {chunk} characters, headless {SIZE[0]}x{SIZE[1]}")
    print(line("MarkdownStream (line API, blocks)", *mine))
    print(line("anchor: textual Markdown.append", *anchor))
    mean_ratio = statistics.fmean(anchor[0]) / statistics.fmean(mine[0])
    print(f"ratio (anchor / ours): mean {mean_ratio:.1f}x"
          f", p95 {p95(anchor[0]) / p95(mine[0]):.1f}x; finished blocks rendered while "
          f"streaming: {blocks} (each once); end = finish() vs Markdown.update(whole text)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--chunk", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main(args.tokens, args.chunk))

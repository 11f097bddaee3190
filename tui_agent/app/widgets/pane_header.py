"""A pane's header: thread, unread inbox records, agent and model, the run's state (with
elapsed time) and tokens."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

STATE_STYLES = {
    "idle": ("○ idle", "$text-muted"),
    "running": ("● running", "$text-success"),
    "waiting": ("⏸ waiting for approval (f10)", "$text-warning bold"),
    "sending": ("◌ waiting for the lease", "$text-accent"),
    "aborted": ("⏹ aborted", "$text-warning"),
    "interrupted": ("⚠ interrupted", "$text-warning"),
    "failed": ("✗ failed", "$text-error"),
    "detached": ("⊘ detached", "$text-warning"),
    "connecting": ("… connecting", "$text-muted"),
}


@dataclass
class HeaderState:
    title: str
    thread: str  # resource/thread
    agent: str
    model: str
    state: str = "connecting"
    started_at: float | None = None  # monotonic, while running
    run_tokens: int = 0
    thread_tokens: int = 0
    cost: float | None = None  # the last run's, USD (None: not known)
    thread_cost: float | None = None  # the thread's so far, at its model's prices
    unread: int = 0  # inbox records of the thread with status pending or delivered


class PaneHeader(Static):
    DEFAULT_CSS = """
    PaneHeader {
        height: 1;
        background: $panel;
        color: $foreground;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, state: HeaderState) -> None:
        super().__init__(markup=False)
        self.state = state
        self._shown: Content | None = None

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)  # the elapsed time of a running run
        self.show()

    def _tick(self) -> None:
        """The elapsed time shown counts whole seconds of the monotonic clock, so it changes
        at a whole second: a streaming pane's next sync (on the app's grid) shows it in the
        frame it paints anyway, and this tick only when nothing else repaints the pane."""
        if self.state.state == "running":
            self.show()

    def show(self) -> None:
        """Repaint when the header's text changed (a pane syncs many times a second while it
        streams; the header changes about once a second, on a whole second). A repaint, not a
        layout: the header is one row whatever it says, and a layout arranges every widget of
        every pane."""
        content = render_header(self.state, math.floor(time.monotonic()))
        if content != self._shown:
            self._shown = content
            self.update(content, layout=False)


def render_header(state: HeaderState, now: float) -> Content:
    label, style = STATE_STYLES.get(state.state, (state.state, ""))
    if state.state == "running" and state.started_at is not None:
        label += f" {max(0.0, now - state.started_at):.0f}s"
    tokens = (f"last run {_count(state.run_tokens)} tok{_cost(state.cost)} · "
              f"thread {_count(state.thread_tokens)}{_cost(state.thread_cost)}")
    heading: list[str | tuple[str, str]] = [(state.title, "bold"), " "] if state.title else []
    # Most telling first: a narrow pane cuts the end of the line, not the run's state.
    parts: list[str | tuple[str, str]] = [
        *heading, (state.thread, "bold" if not state.title else "$text-muted"), " · ",
        (label, style), " · ",
    ]
    if state.unread:  # the thread's inbox records nobody has seen, dismissed or archived yet
        parts += [(f"✉ {state.unread} unread", "$text-warning bold"), " · "]
    parts += [
        (tokens, "$text-muted"), " · ", (state.agent, "$text-accent"), " · ",
        (state.model, "$text-muted"),
    ]
    return Content.assemble(*parts)


def _count(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 10_000 else str(tokens)


def _cost(cost: float | None) -> str:
    """`` $0.0012`` (free: `` $0``); nothing where the cost map does not know the model."""
    if cost is None:
        return ""
    if cost == 0:
        return " $0"
    return f" ${cost:.4f}" if cost >= 0.0001 else " <$0.0001"

"""App tests wait one way: ``until`` an explicit condition holds, with a bound (never a fixed
pause). ``drained``: no run live and everything the pane saw is on screen. ``typed_ahead``:
keys that reach the app in one burst, before it handled the first (a terminal's one read)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from textual import events

from tui_agent.app.app import TuiAgentApp
from tui_agent.app.widgets.thread_pane import ThreadPane

AppFactory = Callable[..., TuiAgentApp]
KEY_CHARACTERS = {"slash": "/", "space": " ", "full_stop": ".", "comma": ","}  # typed_ahead's


async def until(
    pilot: Any, condition: Callable[[], bool], what: str, timeout: float = 10.0
) -> None:
    """Let the app run until ``condition()`` holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {what}")
        await pilot.pause()
        await asyncio.sleep(0.005)


def pane_of(app: TuiAgentApp, index: int = 0) -> ThreadPane:
    return app.panes[index]


def kinds(pane: ThreadPane) -> list[str]:
    return [entry.kind for entry in pane.feed.transcript.entries]


async def drained(pilot: Any, pane: ThreadPane, what: str = "the pane drained") -> None:
    """Until no run is live on the pane's thread and everything it saw is on screen."""
    await until(pilot, lambda: pane.feed.active_run_id() is None and pane.drained, what)


async def typed_ahead(pilot: Any, *keys: str) -> None:
    """Post every key before the app handles the first, as a fast typist's keys (or a loaded
    machine's) arrive in one read of the terminal; then let the app handle them. ``pilot.press``
    waits between keys until the app looks idle, and on a busy machine it looks idle too soon:
    this is that case made certain, so a test of it cannot pass by luck."""
    for key in keys:
        event = events.Key(key, KEY_CHARACTERS.get(key, key if len(key) == 1 else None))
        event.set_sender(pilot.app)
        pilot.app.post_message(event)
    await pilot.pause()

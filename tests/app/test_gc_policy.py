"""``tui-agent`` settles the garbage collector before its app runs (tui_agent/app/gc_policy.py):
start-up's objects frozen, young collections rarer — full collections with four panes
streaming otherwise paused the app for 100-280 ms every second."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tempfile
import weakref
from typing import Any

import pytest
from helpers.app import AppFactory, drained, until

from tui_agent.app import gc_policy
from tui_agent.app.gc_policy import YOUNG_THRESHOLD

PROBE = """
import gc, json, sys, tempfile
import textual.app

async def report(self, *args, **kwargs):  # where the app would start: say what the GC is
    print(json.dumps({"threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}))
    return 0

textual.app.App.run_async = report
before = {"threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count()}
print(json.dumps(before))
from tui_agent.main import main
main(["--no-warm", "--db", tempfile.mkdtemp() + "/s.sqlite"])
"""


def test_the_app_runs_with_startup_frozen_and_a_raised_young_threshold() -> None:
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                              timeout=60, env={"HOME": home, "PATH": "/usr/bin:/bin"})
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 2, done.stdout + done.stderr
    before, running = lines
    assert before == {"threshold": 700, "frozen": 0}
    assert running["threshold"] == YOUNG_THRESHOLD
    assert running["frozen"] > 10_000  # the imported modules' objects, no longer walked


async def test_widgets_a_transcript_prunes_are_freed_by_the_sweeper_not_left_for_later(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pruned entry widget is cyclic garbage; with automatic collection off (the app's
    full collections come seldom), only the sweeper frees it — soon after the prune, once."""
    monkeypatch.setattr(gc_policy, "SWEEP_AFTER_S", 0.2)
    monkeypatch.setattr(gc_policy, "SWEEP_SHARE", 1.0)  # an earlier test's sweep: no wait
    app = make_app(threads=[("me", "left"), ("me", "right")])
    agent = app.config.agent
    gc.collect()
    gc.disable()
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: all(p.feed.attached for p in app.panes), "two panes")
            left = app.panes[0]
            view = left.transcript_view()
            first: weakref.ref[Any] | None = None
            painted: weakref.ref[Any] | None = None  # its paint cache (Textual's StylesCache)
            sweeps = gc_policy.SWEEPER.sweeps
            for i in range(14):
                receipt = agent.send_message(f"question {i}", resource_id="me", thread_id="left")
                await receipt.accepted
                await agent.wait_for_local_runs()
                await drained(pilot, left)
                if first is None and view.children:
                    first = weakref.ref(view.children[0])
                    # Private, on purpose: the workaround for textual#6665 is what is tested.
                    painted = weakref.ref(view.children[0]._styles_cache)
            assert first is not None and painted is not None
            await until(pilot, lambda: first() is None or not first().is_attached, "pruned")
            await until(pilot, lambda: first() is None, "the pruned widget freed", timeout=5)
            assert gc_policy.SWEEPER.sweeps > sweeps
            # Textual's lru_cache on an instance method kept it (and every line it painted)
            # after the widget itself was freed: the sweep clears that cache first.
            assert painted() is None
    finally:
        gc.enable()


LATE_IMPORT_PROBE = """
import gc, json, sys
from tui_agent.app.gc_policy import freeze_late_imports, settle_garbage_collector
freeze_late_imports()  # not settled (a test run, an embedding program): left alone
untouched = gc.get_freeze_count()
settle_garbage_collector()
settled = gc.get_freeze_count()
import email.parser, http.client  # a late import, as litellm's is in the app
freeze_late_imports()
print(json.dumps([untouched, settled, gc.get_freeze_count()]))
"""


def test_a_late_import_is_frozen_only_where_the_app_settled_the_collector() -> None:
    done = subprocess.run([sys.executable, "-c", LATE_IMPORT_PROBE], capture_output=True,
                          text=True, timeout=60)
    untouched, settled, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert untouched == 0
    assert after > settled > 0  # what the late import made is frozen too

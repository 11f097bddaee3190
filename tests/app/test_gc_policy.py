"""``tui-agent`` settles the garbage collector before its app runs (tui_agent/app/gc_policy.py):
start-up's objects frozen, young collections rarer — full collections with four panes
streaming otherwise paused the app for 100-280 ms every second."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

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

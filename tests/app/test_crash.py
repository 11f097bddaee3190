"""A bug never ends the app silently: the real ``tui-agent`` exits 1 and says where the
traceback was written (a crash file in the state folder, redacted, without local variables),
and the runs the app owned end aborted with nothing accepted lost (tui_agent/app/crash.py)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.app import AppFactory, pane_of, until
from helpers.common import Held

from tui_agent.app.widgets.thread_pane import ThreadPane

PROBE = """
import sys
from tui_agent.app.widgets.thread_pane import ThreadPane

def boom(self):
    raise RuntimeError("boom in a key handler, key sk-abcdef1234567890XYZ")

setattr(ThreadPane, sys.argv[2], boom)  # the pane's first sync, or its compose, hits the bug
from tui_agent.main import main
sys.exit(main(["--no-warm", "--db", sys.argv[1]]))
"""


@pytest.mark.parametrize(("where", "frame"), [("_update_header", "_sync"),
                                              ("compose", "compose")])
def test_a_crash_exits_1_and_names_its_crash_file(where: str, frame: str) -> None:
    """After start-up (the pane's first sync) or during it (the pane's compose)."""
    with tempfile.TemporaryDirectory() as home:
        env = {"HOME": home, "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": f"{home}/state",
               "TEXTUAL_DRIVER": "textual.drivers.headless_driver:HeadlessDriver",
               "TEXTUAL": ""}
        done = subprocess.run([sys.executable, "-c", PROBE, f"{home}/s.sqlite", where],
                              capture_output=True, text=True, timeout=60, env=env)
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        crashes = list(Path(home, "state", "tui-agent").glob("crash-*.txt"))
        assert len(crashes) == 1
        report = crashes[0].read_text()
        assert f"the traceback is in {crashes[0]}" in done.stderr
        assert "RuntimeError: boom in a key handler" in report
        assert "Traceback (most recent call last)" in report and frame in report
        assert "sk-abcdef1234567890XYZ" not in report + done.stderr + done.stdout  # redacted
        assert "self = " not in done.stderr  # no frame's locals on the terminal


async def test_a_crash_mid_run_ends_the_apps_run_aborted_and_keeps_what_was_sent(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = Held("never shown")
    app = make_app(handler=held)
    agent = app.config.agent

    def boom(self: ThreadPane) -> None:
        raise RuntimeError("a bug in copy")

    with pytest.raises(RuntimeError, match="a bug in copy"):
        async with app.run_test(size=(100, 30)) as pilot:
            pane = pane_of(app)
            await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
            receipt = agent.send_message("long job please", resource_id="me", thread_id="main")
            await receipt.accepted
            await until(pilot, lambda: held.entered.is_set(), "the run is mid-step")
            monkeypatch.setattr(ThreadPane, "action_copy_message", boom)
            await pilot.press("ctrl+y")
            await until(pilot, lambda: app.crash is not None, "the crash")
    assert app.return_code == 1
    await app.shutdown()  # what ``tui-agent`` does once the app has ended, a crash or not
    runs = await agent.memory.store.list_runs("main")
    assert [run.status for run in runs] == ["aborted"]
    history = await agent.memory.list_messages("main")
    assert "long job please" in str([m.content for m in history if m.role == "user"])

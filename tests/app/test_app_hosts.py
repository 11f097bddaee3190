"""The app hosts its store (issue 21, points 3 and 7): with no pane open and no run live, it
sends the digests that come due and answers what ``tui-agent notify`` leaves on a thread."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.app import AppFactory, until

from tui_agent.app.widgets.inbox_sidebar import InboxSidebar
from tui_agent.hosts import hosted

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"
pytestmark = pytest.mark.both_stores


async def notify(db: str, *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tui_agent", "--db", db, "--agent", SCRIPTED, "-r", "me", "-t",
        "main", "notify", "--new", "--source", "ci", "--kind", "build", *args, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0, err
    return err.decode()


async def test_the_app_with_no_pane_open_sends_a_digest_that_comes_due(
    make_app: AppFactory,
) -> None:
    app = make_app(threads=[])  # no pane, no subscription, no run: it used to dispatch nothing
    db = app.config.agent.memory.store.location
    async with app.run_test(size=(120, 30)) as pilot:
        sidebar = app.query_one(InboxSidebar)
        await until(pilot, lambda: sidebar.feed.loaded, "the inbox read")
        if hosted(getattr(app.config.agent.memory.store, "path", None)) is not None:
            assert hosted(app.config.agent.memory.store.path) is True  # the registry knows it
        err = await notify(db, "--priority", "low", "nightly flaky")
        assert "summarize" in err
        await until(pilot, lambda: any(
            r.summary == "nightly flaky" and r.summarized_at is not None
            for r in sidebar.feed.records.values()), "the digest, sent by the app")

"""A pane shows what other processes do on its thread: ``tui-agent send`` from a script, with
its own run, appears in the pane, badges and answer included; on a SQLite file and on a
PostgreSQL database (``both_stores``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.app import AppFactory, drained, kinds, pane_of, until

from tui_agent.app.widgets.user_message import UserMessage

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"


@pytest.mark.both_stores
async def test_a_message_sent_by_another_process_appears_with_its_answer(
    make_app: AppFactory, tmp_path: Path,
) -> None:
    app = make_app(threads=[("demo", "demo")])
    db = app.config.agent.memory.store.location  # a file, or a postgresql:// URL
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        command = [sys.executable, "-m", "tui_agent", "--db", db, "send", "--agent",
                   SCRIPTED, "-r", "demo", "-t", "demo", "--new", "--as", "Zed", "--attr",
                   "from=cli", "--quiet", "hello from elsewhere"]
        process = await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(process.communicate(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, err.decode()
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "Zed and the answer")
        await drained(pilot, pane)
        user = pane.query_one(UserMessage).entry
        assert (user.author, user.source, user.text) == ("Zed", "cli", "hello from elsewhere")
        answer = pane.feed.transcript.entries[1].text  # the model saw the attributed message
        assert answer == 'echo: <user name="Zed" from="cli">hello from elsewhere</user>'

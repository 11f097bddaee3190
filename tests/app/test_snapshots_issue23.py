"""Snapshots of acting on messages and of a model per thread (issue 23): a retried answer and an
edited message (superseded, still shown), a selected message; the model picker over a thread
whose model has no key (its banner). As ``test_snapshots.py``: synchronous tests, each app on a
store of its own, every wait on a condition; what varies by nature (a run id in a notice, the
header's clock) is fixed before the shot."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.app import drained, until
from textual.widgets import Input, TextArea

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app import app as app_module
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.screens.model_picker import ModelPicker
from tui_agent.app.widgets import pane_header, thread_pane
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.app.widgets.transcript_view import TranscriptView
from tui_agent.testing import ScriptedModel

Compare = Callable[..., bool]
VARIANTS = [((80, 24), "tui-agent-dark"), ((160, 48), "tui-agent-light")]
variants = pytest.mark.parametrize(("size", "theme"), VARIANTS, ids=["80x24-dark", "160x48-light"])
ANSWERS = ["Friday at the earliest: **#42** still waits for review.",
           "Thursday, if Devin reviews **#42** today:\n\n```bash\ngh pr merge 42\n```\n",
           "In `docs/CHANGES.md`; two entries are missing.",
           "In `docs/CHANGES.md`: **#40** and **#42** are missing."]


class SnapApp(TuiAgentApp):
    """The app, closing its agent and store on its own loop when it exits."""

    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def __init__(self, config: AppConfig, store: SqliteStore) -> None:
        super().__init__(config)
        self.store = store

    async def on_unmount(self) -> None:
        await self.config.agent.close(timeout=5.0)
        await self.store.close()


def make_app(tmp_path: Path, model: Any) -> SnapApp:
    store = SqliteStore(tmp_path / "snap.sqlite")
    agent = Agent(name="demo", instructions="Be brief.", model=model, memory=Memory(store=store))
    config = AppConfig(agent=agent, threads=[("me", "main")], identity=Identity("zoe", {}),
                       agent_label="demo", default_resource="me",
                       model_label=model if isinstance(model, str) else "scripted",
                       warm_model=False, models=["anthropic/claude-3-5-haiku-latest"])
    return SnapApp(config, store)


@pytest.fixture(autouse=True)
def steady(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pane_header, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    monkeypatch.setattr(thread_pane, "NOTICE_S", 3600.0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


async def settle(pilot: Any) -> None:
    app = pilot.app
    pane = app.panes[0]
    await app.config.agent.wait_for_local_runs()
    await drained(pilot, pane)
    pane.clear_notice()  # "↪ wake → run 1a2b…": a run id, new each time
    for screen in app.screen_stack:
        for field in [*screen.query(Input), *screen.query(TextArea)]:
            field.cursor_blink = False
    await pilot.pause()


async def send(pilot: Any, text: str, answers: int) -> None:
    pane = pilot.app.panes[0]
    composer = pane.query_one(Composer)
    composer.focus()
    composer.value = text
    await pilot.press("enter")
    await until(pilot, lambda: sum(e.kind == "assistant" for e in pane.feed.transcript.entries)
                >= answers, f"answer {answers}")
    await settle(pilot)


@variants
def test_a_retried_answer_an_edited_message_and_a_selected_one(
    snap_compare: Compare, tmp_path: Path, size: tuple[int, int], theme: str
) -> None:
    replies = iter(ANSWERS)
    app = make_app(tmp_path, ScriptedModel(handler=lambda messages, tools: next(replies)))

    async def run_before(pilot: Any) -> None:
        app.animation_level = "none"
        app.theme = theme
        pane = app.panes[0]
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send(pilot, "When can we tag?", 1)
        await pilot.press("f9")
        await until(pilot, lambda: sum(e.superseded != "" for e in pane.feed.transcript.entries)
                    == 1 and pane.feed.transcript.entries[-1].text == ANSWERS[1], "retried")
        await settle(pilot)
        await send(pilot, "where are the relase notes", 3)
        await pilot.press("f4")
        pane.query_one(Composer).value = "Where are the release notes?"
        await pilot.press("enter")
        await until(pilot, lambda: pane.feed.transcript.entries[-1].text == ANSWERS[3],
                    "the edited message answered")
        await settle(pilot)
        await pilot.press("ctrl+up", "up")  # the edited message, selected
        view = pane.query_one(TranscriptView)
        await until(pilot, lambda: (view.selected_entry() or SimpleNamespace(text="")).text
                    == "Where are the release notes?", "selected")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@variants
def test_the_model_picker_over_a_thread_whose_model_has_no_key(
    snap_compare: Compare, tmp_path: Path, size: tuple[int, int], theme: str
) -> None:
    app = make_app(tmp_path, "openai/gpt-4o-mini")

    async def run_before(pilot: Any) -> None:
        app.animation_level = "none"
        app.theme = theme
        pane = app.panes[0]
        await until(pilot, lambda: pane.model_problem is not None, "the banner")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)

"""Regenerate the README's pictures of acting on messages and of a model per thread:
``python tools/screenshot_issue23.py [FOLDER]`` (default ``.readme/``).

Scripted scenes (no model, no network) on a temporary store, driven through the keys a user
presses; each SVG is Textual's own screenshot of the real app.

- ``message-actions.svg``: an answer retried (the old one dimmed, superseded), a message edited
  and resent (struck through), and a message selected in the transcript.
- ``thread-model.svg``: a thread whose model has no key (the banner names the variable) with the
  model picker open over it.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path(__file__).resolve().parents[1] / ".readme"
ANSWERS = iter([
    "Friday at the earliest: **#42** still waits for review.",
    "Thursday, if Devin reviews **#42** today:\n\n```bash\ngh pr merge 42 --squash\n```\n",
    "The release notes are in `docs/CHANGES.md`; two entries are missing.",
    "In `docs/CHANGES.md`: the entries for **#40** and **#42** are still missing.",
])


async def _settle(pilot: Any, app: Any) -> None:
    for _ in range(400):
        if all(p.feed.attached and p.drained and p.feed.active_run_id() is None
               for p in app.panes):
            break
        await pilot.pause(0.05)
    await app.config.agent.wait_for_local_runs()
    await pilot.pause(0.3)
    for pane in app.panes:
        pane.header_state.started_at = None  # no elapsed time: the SVG stays stable
        pane.query_one("PaneHeader").show()


async def _say(pilot: Any, app: Any, text: str) -> None:
    composer = app.panes[0].query_one("Composer")
    composer.focus()
    composer.value = text
    await pilot.press("enter")
    await pilot.pause(0.2)
    await _settle(pilot, app)


def _app(agent: Any, model_label: str) -> Any:
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.widgets.composer import Identity

    return TuiAgentApp(AppConfig(
        agent=agent, threads=[("team", "release")], identity=Identity("you", {"from": "terminal"}),
        agent_label="demo", model_label=model_label, default_resource="team", warm_model=False,
        models=["anthropic/claude-3-5-haiku-latest", "openai/gpt-4o-mini"]))


async def message_actions(folder: Path, out: Path) -> None:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    store = SqliteStore(folder / "actions.db")
    agent = Agent(name="demo", instructions="-", memory=Memory(store=store),
                  model=ScriptedModel(handler=lambda messages, tools: next(ANSWERS)))
    await agent.memory.create_thread("release", resource_id="team", title="Release 2.4")
    app = _app(agent, "local/smollm2")
    async with app.run_test(size=(100, 34)) as pilot:
        await _settle(pilot, app)
        await _say(pilot, app, "When can we tag 2.4?")
        await pilot.press("f9")  # retry: the first answer stays, superseded
        await pilot.pause(0.3)
        await _settle(pilot, app)
        await _say(pilot, app, "where are the relase notes")
        await pilot.press("f4")  # edit the typo and resend
        app.panes[0].query_one("Composer").value = "Where are the release notes?"
        await pilot.press("enter")
        await pilot.pause(0.3)
        await _settle(pilot, app)
        await pilot.press("ctrl+up", "up", "up", "up")  # the retried answer, selected
        await pilot.pause(0.3)
        app.save_screenshot(filename=out.name, path=str(out.parent))
    await agent.close()
    await store.close()


async def thread_model(folder: Path, out: Path) -> None:
    from tui_agent import Agent, Memory, SqliteStore

    os.environ.pop("OPENAI_API_KEY", None)
    store = SqliteStore(folder / "model.db")
    agent = Agent(name="demo", instructions="-", model="openai/gpt-4o-mini",
                  memory=Memory(store=store))
    await agent.memory.create_thread("release", resource_id="team", title="Release 2.4")
    app = _app(agent, "openai/gpt-4o-mini")
    async with app.run_test(size=(100, 30)) as pilot:
        await _settle(pilot, app)
        for _ in range(100):  # the pane checks its model off the loop
            if app.panes[0].model_problem:
                break
            await pilot.pause(0.05)
        await pilot.press("ctrl+l")
        await pilot.pause(0.5)
        app.save_screenshot(filename=out.name, path=str(out.parent))
    await agent.close()
    await store.close()


async def make_screenshots(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    shots = [out / "message-actions.svg", out / "thread-model.svg"]
    with tempfile.TemporaryDirectory() as folder:
        await message_actions(Path(folder), shots[0])
        await thread_model(Path(folder), shots[1])
    return shots


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for shot in asyncio.run(make_screenshots(Path(args[0]) if args else DEFAULT_OUT)):
        print(shot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

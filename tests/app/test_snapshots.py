"""Snapshots of the app (pytest-textual-snapshot): each message kind, the ends of runs, four
panes mid-stream, the thread picker and an aborted run — on both themes, at 80×24 and 160×48.

``snap_compare`` runs the app with ``App.run``, on an event loop of its own (not the test's):
so these tests are synchronous and each builds its own store and agent, which open on the
app's loop and close on it when the app exits (``SnapApp.on_unmount``).

Deterministic by construction: a thread's content is written through the agent's API, not
typed (no "↪ wake → run 1a2b…" route line in the status line); a run that must be caught
mid-answer is held by the model (``Frozen``), not by timing; every wait is on a condition. What
is nondeterministic by nature is fixed in the setup: the local timezone (UTC) and the threads'
``updated_at`` (the picker's dates); the pane headers' clock (a running run shows "running 3s",
set right before the shot); status-line notices do not time out.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.app import drained, kinds, until
from pydantic import BaseModel
from textual.screen import Screen
from textual.widgets import Input, OptionList, TextArea

from tui_agent import Agent, Memory, SqliteStore, create_tool
from tui_agent.app import app as app_module
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.screens.confirm import ConfirmScreen
from tui_agent.app.screens.thread_picker import ThreadPicker
from tui_agent.app.widgets import pane_header, state_panel, thread_pane
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.app.widgets.pane_header import PaneHeader
from tui_agent.app.widgets.thread_pane import ThreadPane
from tui_agent.app.widgets.tool_call import ToolCall
from tui_agent.models.base import ModelRequest, StepEnd, TextDelta, Usage
from tui_agent.notifications.dispatcher import dispatch_due
from tui_agent.testing import ScriptedModel

SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
THEMES = {"dark": "tui-agent-dark", "light": "tui-agent-light"}
MAIN = {"resource_id": "me", "thread_id": "main"}
PERSIST = {"behavior": "persist"}  # a signal stored and shown, no run woken
MANUAL = {"dispatch_interval_s": 3600, "dispatch_on_change": False}  # dispatch_due by hand
HEADER_NOW, RUNNING_S = 1000.0, 3.0  # the pane headers' frozen clock; a running run's age

Compare = Callable[..., bool]
# Every scene on the dark theme at both sizes, and on the light theme (its colours) at the large
# one: the light theme at 80×24 too would add a third to the runtime and show nothing new.
VARIANTS = [("80x24", "dark"), ("160x48", "dark"), ("160x48", "light")]
variants = pytest.mark.parametrize(("size", "theme"), VARIANTS,
                                   ids=[f"{size}-{theme}" for size, theme in VARIANTS])


# -- a model that answers by question, and can stop mid-answer ---------------------------------
class Frozen:
    """A reply streamed up to its end and then held there: its run stays mid-answer (running)
    until it is aborted — no sleeps, no timing."""

    def __init__(self, text: str = "") -> None:
        self.text = text


class SnapModel:
    """Answers each call by its question (the last user message) with the next of its replies
    (the last one repeats); a reply is a ScriptedModel reply (a string, tool calls, an
    exception) or ``Frozen``. Any other question gets ``default``."""

    def __init__(self, answers: dict[str, list[Any]] | None = None, default: Any = "ok") -> None:
        self.answers = {question: list(replies) for question, replies in (answers or {}).items()}
        self.default = default

    @property
    def model_id(self) -> str:
        return "scripted/snap"

    def check_ready(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        question = next((str(m["content"]) for m in reversed(request.messages)
                         if m["role"] == "user"), "")
        replies = self.answers.get(question) or [self.default]
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, Frozen):
            for start in range(0, len(reply.text), 8):
                yield TextDelta(reply.text[start:start + 8])
            await asyncio.Event().wait()  # held: an abort cancels the run's model task
            yield StepEnd("stop", Usage())
            return
        async for event in ScriptedModel(replies=[reply]).stream(request):
            yield event


# -- the app, on a store of its own --------------------------------------------------------------
class SnapApp(TuiAgentApp):
    """The app, closing its agent and store on its own loop when it exits."""

    # Textual resolves a relative CSS_PATH beside the subclass's module: point at the app's.
    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def __init__(self, config: AppConfig, store: SqliteStore) -> None:
        super().__init__(config)
        self.store = store

    async def on_unmount(self) -> None:
        agent = self.config.agent
        for output in agent.local_runs():  # a Frozen answer: end it
            output.abort()
        await agent.close(timeout=5.0)
        await self.store.close()


def make_app(tmp_path: Path, model: SnapModel | None = None,
             threads: list[tuple[str, str]] | None = None, **options: Any) -> SnapApp:
    store = SqliteStore(tmp_path / "snap.sqlite")
    agent = Agent(name="demo", instructions="Be brief.", model=model or SnapModel(),
                  memory=Memory(store=store), **options)
    config = AppConfig(agent=agent, threads=[("me", "main")] if threads is None else threads,
                       identity=Identity("zoe", {"from": "cli"}), agent_label="demo",
                       model_label="scripted", default_resource="me", warm_model=False)
    return SnapApp(config, store)


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC for the test (the picker shows local dates)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.fixture(autouse=True)
def steady_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pane header's clock stands still (a running run's elapsed time is what ``settle``
    sets, however long the shot takes: Textual's idle waits before it can take seconds), a
    status-line notice stays until replaced instead of clearing after NOTICE_S seconds, and a
    changed state lane is not highlighted (a lane read after the panel's first read is
    highlighted for HIGHLIGHT_S: whether the shot fell inside those seconds depended on the
    machine's load — the demo shot at 200×50 lost its highlight once, under two busy loops)."""
    monkeypatch.setattr(pane_header, "time", SimpleNamespace(monotonic=lambda: HEADER_NOW))
    monkeypatch.setattr(thread_pane, "NOTICE_S", 3600.0)
    monkeypatch.setattr(state_panel, "HIGHLIGHT_S", 0.0)


async def ready(pilot: Any, theme: str) -> None:
    """Animations off, the theme chosen, every pane subscribed."""
    app = pilot.app
    app.animation_level = "none"
    app.theme = THEMES[theme]
    await until(pilot, lambda: all(p.feed.attached for p in app.panes),
                "the panes subscribed", timeout=20.0)


def key_of(screen: Screen[Any], binding_id: str) -> str:
    """The key bound to ``binding_id`` on ``screen`` now (keys may be remapped)."""
    for key, active in screen.active_bindings.items():
        if active.binding.id == binding_id:
            return key
    raise AssertionError(f"no active binding {binding_id!r}")


async def settle(pilot: Any) -> None:
    """Right before the shot: every pane drawn, cursors steady, a running run's elapsed time
    at RUNNING_S."""
    app = pilot.app
    panes = [p for p in app.panes if p.display]
    await until(pilot, lambda: all(p.drained for p in panes), "every pane drawn")
    for pane in panes:  # each follows its thread: at the end, nothing held back as "N new ↓"
        view = pane.transcript_view()
        assert view.following and not view.unseen, f"{pane.key} stopped following its thread"
        # the scroll to the end lands after the refresh that lays the new lines out
        await until(pilot, lambda v=view: v.scroll_y >= v.max_scroll_y - 1,
                    f"{pane.key}, which follows its thread, scrolled to its end")
    for screen in app.screen_stack:
        for field in [*screen.query(Input), *screen.query(TextArea)]:
            field.cursor_blink = False
    for pane in panes:  # one more sync each: the header in step with its feed (a live run
        pane.refresh_header()  # shown running) before its clock is frozen
    await until(pilot, lambda: all(p.drained for p in panes), "every header synced")
    for pane in panes:
        if pane.header_state.state == "running":
            pane.header_state.started_at = HEADER_NOW - RUNNING_S
            pane.query_one(PaneHeader).show()
    await pilot.pause()


async def focused_composer(pilot: Any, pane: ThreadPane) -> None:
    composer = pane.query_one(Composer)
    await until(pilot, lambda: pilot.app.focused is composer, f"{pane.key}'s composer focused")


def answer_shown(pane: ThreadPane, text: str) -> bool:
    """The pane's last answer holds ``text`` (a streaming one: all the text sent so far)."""
    entries = pane.feed.transcript.entries
    return bool(entries) and entries[-1].kind == "assistant" and entries[-1].text == text


# -- message kinds -------------------------------------------------------------------------------
QUESTION = "what is left before the release?"
ANSWER = """Two things before the release:

1. Merge **#42** once CI is green.
2. Tag `v1.4.0` and push it:

```bash
git tag v1.4.0 && git push --tags
```
"""


@variants
def test_user_messages_with_and_without_badges_and_a_markdown_answer(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    app = make_app(tmp_path, SnapModel({QUESTION: [ANSWER]}))
    agent = app.config.agent

    async def run_before(pilot: Any) -> None:
        await ready(pilot, theme)
        pane = app.panes[0]
        devin = {"type": "user", "contents": "PR #42 is green, CI passed on main",
                 "attributes": {"name": "Devin", "from": "github"}}
        await agent.send_signal(devin, if_idle=PERSIST, **MAIN).accepted
        await until(pilot, lambda: kinds(pane) == ["user"], "Devin's message")
        await agent.send_message(QUESTION, **MAIN).accepted  # no attributes
        await until(pilot, lambda: kinds(pane) == ["user", "user", "assistant"], "the answer")
        await drained(pilot, pane)
        await focused_composer(pilot, pane)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


class Pair(BaseModel):
    a: int
    b: int


@variants
def test_tool_calls_one_collapsed_one_expanded(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    add = create_tool(id="add", description="a + b", input_schema=Pair,
                      execute=lambda pair: pair.a + pair.b)
    mul = create_tool(id="mul", description="a × b", input_schema=Pair,
                      execute=lambda pair: pair.a * pair.b)
    calls = {"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}},
                            {"name": "mul", "args": {"a": 4, "b": 5}}]}
    model = SnapModel({"what are 2+3 and 4×5?": [calls, "2 + 3 is **5** and 4 × 5 is **20**."]})
    app = make_app(tmp_path, model, tools={"add": add, "mul": mul})
    agent = app.config.agent

    async def run_before(pilot: Any) -> None:
        await ready(pilot, theme)
        pane = app.panes[0]
        await agent.send_message("what are 2+3 and 4×5?", **MAIN).accepted
        await until(pilot, lambda: kinds(pane) == ["user", "tool", "tool", "assistant"],
                    "two tool calls and the answer")
        await drained(pilot, pane)
        second = pane.query(ToolCall)[1]
        await pilot.click(second)  # expands it (and focuses it)
        await until(pilot, lambda: second.expanded, "the second tool call expanded")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@variants
def test_signals_state_reminder_digest_and_notification(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    model = SnapModel(default="I'll look at the two failed jobs.")
    # No background dispatcher pass: the digest is sent when the test says (dispatch_due).
    app = make_app(tmp_path, model, notifications=MANUAL)
    agent = app.config.agent

    async def run_before(pilot: Any) -> None:
        await ready(pilot, theme)
        pane = app.panes[0]
        await agent.memory.create_thread("main", resource_id="me")
        await agent.send_state_signal(
            {"id": "browser", "mode": "snapshot", "cache_key": "42",
             "value": {"url": "https://github.com/acme/app/pull/42", "tabs": 3}},
            if_idle=PERSIST, **MAIN)
        await agent.send_signal({"type": "reactive", "contents": "stand-up in 5 min"},
                                if_idle=PERSIST, **MAIN).accepted
        low = [{"source": "github", "kind": "review", "summary": "review requested on #42",
                "priority": "low"},
               {"source": "github", "kind": "comment", "summary": "Devin commented on #41",
                "priority": "low"},
               {"source": "slack", "kind": "mention", "summary": "Ana mentioned you",
                "priority": "low"}]
        await agent.send_notification_signal(low, **MAIN)  # low: summarised in a digest
        await dispatch_due(agent)
        await until(pilot, lambda: kinds(pane) == ["signal"] * 3, "the digest")
        await agent.send_notification_signal(  # high, on an idle thread: delivered, answered
            {"source": "ci", "kind": "build", "summary": "build failed on main (2 jobs)",
             "priority": "high"}, **MAIN)
        await until(pilot, lambda: kinds(pane) == ["signal"] * 4 + ["assistant"], "the answer")
        await drained(pilot, pane)
        # The inbox polls the store: its unread count (in the pane bar and header) comes later.
        await until(pilot, lambda: pane.header_state.unread == 4, "the 4 records unread")
        await focused_composer(pilot, pane)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# -- the ends of runs ----------------------------------------------------------------------------
@variants
def test_run_markers_aborted_failed_and_interrupted(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    model = SnapModel({"is the build green?": [Frozen("Checking the build log of")],
                       "retry it": [RuntimeError("rate limited by the provider (429)")]})
    app = make_app(tmp_path, model)
    agent, store = app.config.agent, app.store

    async def run_before(pilot: Any) -> None:
        await ready(pilot, theme)
        pane = app.panes[0]
        await agent.send_message("is the build green?", **MAIN).accepted
        await until(pilot, lambda: answer_shown(pane, "Checking the build log of"),
                    "the partial answer")
        for output in agent.local_runs():
            output.abort()
        await until(pilot, lambda: kinds(pane)[-1:] == ["marker"], "the aborted marker")
        await drained(pilot, pane)
        await agent.send_message("retry it", **MAIN).accepted
        await until(pilot, lambda: kinds(pane).count("marker") == 2, "the failed marker")
        await drained(pilot, pane)
        # A run whose process died: its lease expired, then it is reaped (as by any process).
        assert await store.start_run("main", "me", "dead-run", owner="a-dead-process",
                                     ttl_s=-1.0, agent_id="demo")
        assert await store.reap_expired_lease("main")
        await until(pilot, lambda: kinds(pane).count("marker") == 3, "the interrupted marker")
        await drained(pilot, pane)
        await focused_composer(pilot, pane)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


PARTIAL = """The outage started at 09:12 when the deploy

- rolled out to **eu-west**
- restarted the wor"""


def abort_from_the_pane(tmp_path: Path, theme: str, *, confirm: bool) -> tuple[SnapApp, Any]:
    """A run mid-answer; the abort key pressed: the question, or (confirmed) the aborted run."""
    app = make_app(tmp_path, SnapModel({"summarise the incident": [Frozen(PARTIAL)]}))
    agent = app.config.agent

    async def run_before(pilot: Any) -> None:
        await ready(pilot, theme)
        pane = app.panes[0]
        await agent.send_message("summarise the incident", **MAIN).accepted
        await until(pilot, lambda: answer_shown(pane, PARTIAL), "the partial answer")
        await focused_composer(pilot, pane)
        await until(pilot, lambda: pane.drained, "the partial answer drawn")
        await pilot.press(key_of(app.screen, "pane.abort"))
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        if confirm:
            await pilot.press(key_of(app.screen, "confirm.yes"))
            await until(pilot, lambda: kinds(pane)[-1:] == ["marker"], "the aborted marker")
            await drained(pilot, pane)
            await focused_composer(pilot, pane)
        await settle(pilot)

    return app, run_before


@variants
def test_abort_asks_first(snap_compare: Compare, tmp_path: Path, size: str, theme: str) -> None:
    app, run_before = abort_from_the_pane(tmp_path, theme, confirm=False)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


@variants
def test_an_aborted_run_keeps_its_partial_answer(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    app, run_before = abort_from_the_pane(tmp_path, theme, confirm=True)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# -- four panes, two of them mid-run -------------------------------------------------------------
NOTES = """## Release 1.4

- panes stream at a bounded rate
- the thread picker shows live threads
- abort from any pane

The upgrade needs no"""


@variants
def test_four_panes_mid_stream(
    snap_compare: Compare, tmp_path: Path, size: str, theme: str
) -> None:
    model = SnapModel({
        "draft the release notes": [Frozen(NOTES)],
        "anything blocking?": ["Nothing blocking: **#42** merges after lunch."],
        "why did the build fail?": [Frozen()],  # running, before its first word
    })
    app = make_app(tmp_path, model, threads=[])
    agent = app.config.agent
    memory = agent.memory
    threads = [("me", "release", "Release 1.4"), ("team", "standup", "Stand-up"),
               ("ops", "ci", None), ("me", "notes", "Notes")]

    async def run_before(pilot: Any) -> None:
        for resource, thread, title in threads:
            await memory.create_thread(thread, resource_id=resource, title=title)
            app.open_pane(resource, thread)
        await ready(pilot, theme)
        release, standup, ci, notes = app.panes
        await agent.send_message("anything blocking?", resource_id="team",
                                 thread_id="standup").accepted
        await until(pilot, lambda: kinds(standup) == ["user", "assistant"], "stand-up answer")
        await drained(pilot, standup)
        await agent.send_state_signal(
            {"id": "editor", "mode": "snapshot", "cache_key": "1",
             "value": {"file": "CHANGELOG.md", "line": 12}},
            if_idle=PERSIST, resource_id="me", thread_id="notes")
        await until(pilot, lambda: kinds(notes) == ["signal"], "the notes' state line")
        ci_target = {"resource_id": "ops", "thread_id": "ci"}
        await agent.send_message("why did the build fail?", **ci_target).accepted
        await until(pilot, lambda: ci.header_state.state == "running", "the CI run")
        ana = {"contents": "it is the flaky cache test again",
               "attributes": {"name": "Ana", "from": "slack"}}
        await agent.send_message(ana, **ci_target).accepted  # waits for the run's next step
        await until(pilot, lambda: len(ci.feed.waiting) == 1, "Ana's message waiting")
        await agent.send_message("draft the release notes", resource_id="me",
                                 thread_id="release").accepted
        await until(pilot, lambda: answer_shown(release, NOTES), "the notes half written")
        await pilot.press(key_of(app.screen, "app.next_pane"))  # from the last pane to the first
        await until(pilot, lambda: release.focused, "the first pane focused")
        await focused_composer(pilot, release)
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# -- the thread picker ---------------------------------------------------------------------------
DEC_1_9AM = 1_796_115_600.0  # 2026-12-01 09:00 UTC


@variants
def test_thread_picker(
    snap_compare: Compare, tmp_path: Path, utc: None, size: str, theme: str
) -> None:
    model = SnapModel({"draft the release notes": [Frozen()],
                       "anything blocking?": ["Nothing blocking."]})
    app = make_app(tmp_path, model)
    agent, store = app.config.agent, app.store
    memory = agent.memory
    # (resource, thread, title, hours before 09:00), newest first
    threads = [("me", "main", "Release 1.4", 0), ("team", "standup", "Stand-up notes", 1),
               ("ops", "ci", None, 26), ("me", "scratch", "Scratch", 24 * 9)]

    async def run_before(pilot: Any) -> None:
        for resource, thread, title, _ in threads:
            await memory.create_thread(thread, resource_id=resource, title=title)
        await ready(pilot, theme)
        await agent.send_message("anything blocking?", resource_id="team",
                                 thread_id="standup").accepted
        await agent.send_signal({"type": "reactive", "contents": "nightly build failed"},
                                if_idle=PERSIST, resource_id="ops", thread_id="ci").accepted
        await agent.send_message("why?", **MAIN).accepted
        await until(pilot, lambda: not agent.local_runs(), "the answers")
        await agent.send_message("draft the release notes", **MAIN).accepted  # stays live
        # Every message stored (a thread's date moves with its messages), then the dates set.
        expected = {"main": (3, True), "standup": (2, False), "ci": (1, False)}
        deadline = time.monotonic() + 10
        while await memory.thread_activity() != expected:
            assert time.monotonic() < deadline, "timed out waiting for the threads' messages"
            await pilot.pause()
        async with store.transaction() as db:
            for _, thread, _, hours in threads:
                await db.execute("UPDATE threads SET updated_at=? WHERE id=?",
                                 (DEC_1_9AM - hours * 3600, thread))
        await pilot.press(key_of(app.screen, "app.open_thread"))
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker)
                    and app.screen.query_one(OptionList).option_count == len(threads),
                    "the picker and its threads")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZES[size], run_before=run_before)


# -- the demo's screen at the three common terminal sizes ----------------------------------------
DEMO_SIZES = {"80x24": (80, 24), "120x35": (120, 35), "200x50": (200, 50)}
DEMO_ANSWER = "Yes: v2.4 ships today once **#42** is merged.\n\n- CI is green\n- notes drafted\n"


@pytest.mark.parametrize("size", list(DEMO_SIZES))
def test_the_demo_screen_fits_the_terminal(
    snap_compare: Compare, tmp_path: Path, size: str,
) -> None:
    """The screen of ``tui-agent --demo`` (the release-day thread, its lanes and inbox, with
    two more threads open): one pane and no sidebars at 80×24, two panes stacked beside the
    inbox at 120×35, the grid with the inbox and the state panel at 200×50."""
    question = "Good morning! Are we still shipping v2.4 today?"
    model = SnapModel(default=DEMO_ANSWER)
    app = make_app(tmp_path, model, threads=[], notifications=MANUAL)
    app.config.show_inbox = app.config.show_state = True
    agent = app.config.agent
    demo = {"resource_id": "demo", "thread_id": "demo"}

    async def run_before(pilot: Any) -> None:
        memory = agent.memory
        await memory.create_thread("demo", resource_id="demo", title="Demo: release day")
        for resource, thread in (("team", "standup"), ("ops", "ci"), ("demo", "demo")):
            app.open_pane(resource, thread)
        await ready(pilot, "dark")
        pane = app.panes[-1]
        await agent.send_state_signal(
            {"id": "browser", "mode": "snapshot", "cache_key": "1",
             "value": {"title": "PR #42 · login fix",
                       "tabs": ["https://github.com/acme/app/pull/42"]}},
            if_idle=PERSIST, **demo)
        ana = {"contents": question, "attributes": {"name": "Ana", "from": "slack"}}
        await agent.send_message(ana, **demo).accepted
        await until(pilot, lambda: kinds(pane) == ["signal", "user", "assistant"], "the answer")
        await drained(pilot, pane)
        await agent.send_notification_signal(
            {"source": "ci", "kind": "build_failed", "priority": "low",
             "summary": "Build #101 failed on main: test_login"}, **demo)
        await until(pilot, lambda: pane.header_state.unread == 1, "the record unread")
        await focused_composer(pilot, pane)
        await settle(pilot)

    assert snap_compare(app, terminal_size=DEMO_SIZES[size], run_before=run_before)

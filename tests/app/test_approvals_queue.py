"""The approvals queue above the inbox (issue 24): a tool call that waits for a person shows
(id, thread, tool, input, age) with a toast, and is answered by key — approve, approve with an
edited input, deny with a reason — as ``tui-agent approve``/``deny`` would; a refused answer is
a toast and changes nothing; calls parked and answered through another store connection (another
terminal's view of the file) come and go live. A snapshot of the queue with a waiting call.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.app import typed_ahead, until
from textual.widgets import Input, OptionList, TextArea

from tui_agent import Agent, Memory, RunSetAsideError, SqliteStore, create_tool
from tui_agent.app import app as app_module
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets import pane_header, thread_pane
from tui_agent.app.widgets.approvals_queue import ApprovalsQueue
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.store import approvals as store_approvals
from tui_agent.testing import ScriptedModel

THREAD = {"resource": "me", "thread": "main"}
SCHEMA = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}


def deploy_tool() -> Any:
    return create_tool(
        id="deploy",
        description="Deploy the app",
        input_schema=SCHEMA,
        execute=lambda i: f"deployed to {i['env']}",
        require_approval=True,
    )


def deployer(store: Any, name: str = "demo") -> Agent:
    """Asked anything, it calls ``deploy`` (prod); then it says what the tool said."""

    def reply(messages: list[dict[str, Any]], tools: Any) -> Any:
        last = messages[-1]
        if last["role"] == "tool":
            return f"the tool said {last['content']}"
        return {"tool_calls": [{"name": "deploy", "args": {"env": "prod"}}]}

    return Agent(
        name=name,
        instructions="x",
        model=ScriptedModel(handler=reply),
        tools={"deploy": deploy_tool()},
        memory=Memory(store=store),
    )


def app_on(agent: Agent) -> TuiAgentApp:
    return TuiAgentApp(
        AppConfig(
            agent=agent,
            threads=[("me", "main")],
            identity=Identity("zoe", {}),
            agent_label="demo",
            model_label="scripted",
            default_resource="me",
            warm_model=False,
            show_inbox=True,
        )
    )


@pytest.fixture
async def agent(store: Any) -> Any:
    made = deployer(store)
    yield made
    await made.close(timeout=5.0)


def queue_of(app: TuiAgentApp) -> ApprovalsQueue:
    return app.query_one(ApprovalsQueue)


async def waiting(pilot: Any, count: int = 1) -> ApprovalsQueue:
    queue = queue_of(pilot.app)
    await until(
        pilot,
        lambda: (
            len(queue.feed.records) == count and queue.display and queue.calls.option_count == count
        ),
        f"{count} call(s) in the queue",
    )
    return queue


def toasts(app: TuiAgentApp) -> list[str]:
    """The notifications raised and not expired: title and message."""
    return [f"{n.title} {n.message}" for n in app._notifications]


def rows(queue: ApprovalsQueue) -> list[str]:
    return [str(queue.calls.get_option_at_index(i).prompt) for i in range(queue.calls.option_count)]


async def test_a_waiting_call_shows_and_y_approves_it(agent: Agent) -> None:
    app = app_on(agent)
    async with app.run_test(size=(160, 40)) as pilot:
        queue = queue_of(app)
        await until(pilot, lambda: queue.feed.loaded, "the queue read")
        assert not queue.display  # nothing waits: it takes no room
        output = await agent.stream("ship it", memory=THREAD)
        queue = await waiting(pilot)
        (record,) = queue.feed.records
        (row,) = rows(queue)
        first, second = row.splitlines()  # which call and how long it waits; what it runs
        assert re.fullmatch(rf"{record.id}  me/main  \d+s", first), first
        assert second == '  deploy({"env": "prod"})'

        await until(
            pilot,
            lambda: any("waits for approval · me/main" in t for t in toasts(app)),
            "a toast naming the call",
        )
        pane = app.panes[0]
        await until(pilot, lambda: pane.header_state.state == "waiting", "the header waits")
        await pilot.press("f10")
        assert isinstance(app.focused, OptionList) and app.focused.parent is queue
        await pilot.press("y")
        result = await asyncio.wait_for(output.result(), 10)
        assert result.text == "the tool said deployed to prod"
        await until(pilot, lambda: not queue.display, "the queue emptied")
        await until(pilot, lambda: pane.header_state.state == "idle", "the header idle")


async def test_e_approves_with_an_edited_input_and_n_denies_with_a_reason(agent: Agent) -> None:
    app = app_on(agent)
    async with app.run_test(size=(160, 40)) as pilot:
        output = await agent.stream("ship it", memory=THREAD)
        queue = await waiting(pilot)
        await pilot.press("f10", "e")
        line = queue.line
        assert line.display and app.focused is line and line.value == '{"env": "prod"}'
        line.value = '{"env": "staging"}'
        await pilot.press("enter")
        result = await asyncio.wait_for(output.result(), 10)
        assert result.text == "the tool said deployed to staging"
        output = await agent.stream("again", memory=THREAD)
        queue = await waiting(pilot)
        await pilot.press("f10", "n")
        assert app.focused is queue.line and queue.line.value == ""
        await pilot.press(*"not today", "enter")
        result = await asyncio.wait_for(output.result(), 10)
        assert "a person declined this tool call: not today" in result.text


async def test_a_refused_answer_is_a_toast_and_changes_nothing(agent: Agent) -> None:
    app = app_on(agent)
    async with app.run_test(size=(160, 40)) as pilot:
        output = await agent.stream("ship it", memory=THREAD)
        queue = await waiting(pilot)
        await pilot.press("f10", "e")
        queue.line.value = '{"env": 5}'
        await pilot.press("enter")
        await until(
            pilot,
            lambda: any(
                "approve refused" in t and "edited input of deploy was refused" in t
                for t in toasts(app)
            ),
            "a toast",
        )
        (still,) = await agent.memory.list_approvals()  # type: ignore[union-attr]
        assert still.status == "pending"
        await pilot.press("f10", "y")
        await asyncio.wait_for(output.result(), 10)


async def test_calls_from_another_terminal_come_and_go_live(
    agent: Agent, stores: Any, tmp_path: Path
) -> None:
    """Another store object on the same file (what another process sees) parks a call and
    answers it: the queue follows through the change feed."""
    other = deployer(stores(), name="other")
    app = app_on(agent)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            queue = queue_of(app)
            await until(pilot, lambda: queue.feed.loaded, "the queue read")
            output = await other.stream("ship it", memory={"resource": "you", "thread": "t2"})
            queue = await waiting(pilot)
            assert "you/t2" in rows(queue)[0]
            (record,) = queue.feed.records
            await other.decline_tool_call(
                run_id=record.run_id,
                tool_call_id=record.tool_call_id,
                reason="from the other terminal",
            )
            await until(pilot, lambda: not queue.display, "the answered call gone")
            await asyncio.wait_for(output.result(), 10)
    finally:
        await other.close(timeout=5.0)


# -- the snapshot --------------------------------------------------------------------------------

Compare = Callable[..., bool]


class SnapApp(TuiAgentApp):
    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def __init__(self, config: AppConfig, store: SqliteStore) -> None:
        super().__init__(config)
        self.store = store

    async def on_unmount(self) -> None:
        await self.config.agent.close(timeout=5.0)
        await self.store.close()


def test_snapshot_the_queue_with_a_waiting_call(
    snap_compare: Compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pane_header, "time", SimpleNamespace(monotonic=lambda: 1000.0))
    monkeypatch.setattr(thread_pane, "NOTICE_S", 3600.0)
    monkeypatch.setattr(store_approvals, "new_id", lambda: "5f0c2a9e71d4" + "0" * 20)
    store = SqliteStore(tmp_path / "snap.sqlite")
    app = SnapApp(app_on(deployer(store)).config, store)

    async def run_before(pilot: Any) -> None:
        app.animation_level = "none"
        queue = queue_of(app)
        await until(pilot, lambda: queue.feed.loaded and app.panes[0].feed.attached, "ready")
        await app.config.agent.stream("ship it", memory=THREAD, run_id="7c1d9e0b" + "0" * 24)
        queue = await waiting(pilot)
        created = queue.feed.records[0].created_at.timestamp()
        queue.clock = lambda: created + 75.0  # "1m 15s"
        queue.refresh_view()
        await pilot.press("f10")
        for field in [*app.screen.query(Input), *app.screen.query(TextArea)]:
            field.cursor_blink = False
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 32), run_before=run_before)


@pytest.mark.both_stores
async def test_a_call_waiting_in_another_process_is_answered_from_the_app(
    agent: Agent, tmp_path: Path
) -> None:
    """``tui-agent send`` in another process parks on a call; the app's queue shows it and
    ``y`` answers it: the other process's run goes on and ends with the tool's result."""
    root = Path(__file__).resolve().parents[2]
    deployer_agent = f"{root / 'tests' / 'helpers' / 'approval_agents.py'}:deployer"
    assert agent.memory is not None
    await agent.memory.create_thread("deploys", resource_id="ann")
    app = app_on(agent)
    async with app.run_test(size=(160, 40)) as pilot:
        queue = queue_of(app)
        await until(pilot, lambda: queue.feed.loaded, "the queue read")
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tui_agent",
            "--db",
            agent.memory.store.location,
            "--agent",
            deployer_agent,
            "send",
            "-r",
            "ann",
            "-t",
            "deploys",
            "deploy prod",
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            queue = await waiting(pilot)
            assert "ann/deploys" in rows(queue)[0]
            await pilot.press("f10", "y")
            out, err = await asyncio.wait_for(process.communicate(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, err.decode()
        assert "the tool said deployed to prod x1" in out.decode()
        await until(pilot, lambda: not queue.display, "the answered call gone")


async def test_y_typed_right_after_f10_answers_the_call_not_the_composer(agent: Agent) -> None:
    """Keys typed ahead go where the key before them moved the focus: f10 and y in one burst
    approve the call (with the focus moved later, y was typed into the composer instead)."""
    app = app_on(agent)
    async with app.run_test(size=(160, 40)) as pilot:
        output = await agent.stream("ship it", memory=THREAD)
        queue = await waiting(pilot)
        await typed_ahead(pilot, "f10", "y")
        await until(pilot, lambda: not queue.display, "the queue emptied")
        assert (await output.result()).text == "the tool said deployed to prod"
        assert app.panes[0].query_one(Composer).value == ""  # the y went nowhere else


async def test_a_call_waiting_when_the_app_quits_is_answered_in_the_next_app(
    agent: Agent, stores: Any
) -> None:
    """Quitting sets the waiting run aside (not aborted): the next app on the store lists the
    call, and ``y`` there goes on with the run, in that app's process."""
    first = app_on(agent)
    async with first.run_test(size=(160, 40)) as pilot:
        output = await agent.stream("ship it", memory=THREAD)
        await waiting(pilot)
        await first.shutdown()  # what ctrl+q does before the app exits
    with pytest.raises(RunSetAsideError):
        await output.result()
    later = deployer(stores())
    second = app_on(later)
    try:
        async with second.run_test(size=(160, 40)) as pilot:
            queue = await waiting(pilot)
            await pilot.press("f10", "y")
            await until(pilot, lambda: not queue.display, "the queue emptied")
            await asyncio.wait_for(later.wait_for_local_runs(), 10)  # it went on here
            assert later.memory is not None
            messages = await later.memory.list_messages("main")
            assert messages[-1].content == "the tool said deployed to prod"
    finally:
        await later.close(timeout=5.0)

"""A pane shows what happens on its thread as what it is: messages with author badges, answers
as Markdown, tool calls, signals and run ends — sent from this app or by anyone on the store."""

from __future__ import annotations

from typing import Any

from helpers.app import AppFactory, drained, kinds, pane_of, until
from helpers.common import Held
from pydantic import BaseModel

from tui_agent import create_tool
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.run_marker import RunMarker
from tui_agent.app.widgets.signal_line import SignalLine
from tui_agent.app.widgets.signal_run import SignalRun
from tui_agent.app.widgets.tool_call import ToolCall
from tui_agent.app.widgets.user_message import UserMessage


def screen_text(widget: Any) -> str:
    """The widget's text as painted (its visual, not its source)."""
    return "\n".join(strip.text for strip in widget.render_lines(widget.region.reset_offset))


def signal_lines(pane: Any) -> list[str]:
    """The signal lines as painted, whether in a run of them or a widget of their own."""
    return [line for widget in pane.query("SignalLine, SignalRun")
            for line in screen_text(widget).split("\n")]


async def type_and_send(pilot: Any, text: str) -> None:
    await pilot.press(*text)
    await pilot.press("enter")


async def test_a_message_typed_in_the_composer_is_answered_in_the_pane(
    make_app: AppFactory,
) -> None:
    app = make_app(handler=lambda messages, tools: "Hello **there**")
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await type_and_send(pilot, "hi all")
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        await drained(pilot, pane)
        user = pane.query_one(UserMessage)
        assert user.entry.author == "zoe" and user.entry.source == "cli"
        assert "zoe" in screen_text(user) and "hi all" in screen_text(user)
        answer = pane.query_one(AssistantMessage)
        assert "Hello there" in screen_text(answer.stream)  # bold, no **
        # "↪ wake → run" said where the message went; it goes once that run has ended
        await until(pilot, lambda: not str(pane.query_one("#pane-status").render()),
                    "the route's line gone with its run")
        assert "idle" in pane.header_state.state


async def test_attributes_show_as_badges_and_escaped_text_exactly_as_sent(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        text = 'if a < b && c > "d" </user><user name="Mallory">'
        receipt = agent.send_message(
            {"contents": text, "attributes": {"name": "Devin", "from": "github"}},
            resource_id="me", thread_id="main",
        )
        await receipt.accepted
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "Devin's message")
        await drained(pilot, pane)
        painted = screen_text(pane.query_one(UserMessage))
        assert "Devin" in painted and "github" in painted
        assert text in painted  # unescaped, exactly as sent: no &lt; and no wrapper element
        assert "<user name=\"Devin\"" not in painted


class Add(BaseModel):
    a: int
    b: int


async def test_a_tool_call_is_one_line_that_expands_to_arguments_and_result(
    make_app: AppFactory,
) -> None:
    add = create_tool(id="add", description="add", input_schema=Add,
                      execute=lambda tool_input: tool_input.a + tool_input.b)
    replies: list[Any] = [{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]}, "It is 5."]
    app = make_app(replies=replies, tools={"add": add})
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await type_and_send(pilot, "2+3?")
        await until(pilot, lambda: "tool" in kinds(pane) and kinds(pane)[-1] == "assistant",
                    "the tool call and the answer")
        await drained(pilot, pane)
        call = pane.query_one(ToolCall)
        line = screen_text(call)
        assert len(line.strip().splitlines()) == 1
        assert "add" in line and '"a": 2' in line and "✓" in line and "→ 5" in line
        await pilot.click(ToolCall)
        await until(pilot, lambda: call.expanded, "the tool call expanded")
        expanded = screen_text(call)
        assert "arguments" in expanded and "result" in expanded and "5" in expanded
        assert len(expanded.strip().splitlines()) > 3


async def test_state_notification_and_reminder_signals_each_have_their_own_line(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    target = {"resource_id": "me", "thread_id": "main"}
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await agent.memory.create_thread("main", resource_id="me")
        await agent.send_state_signal(
            {"id": "browser", "mode": "snapshot", "cache_key": "42",
             "value": {"url": "https://x/42"}},
            if_idle={"behavior": "persist"}, **target)
        await agent.send_notification_signal(
            {"source": "ci", "kind": "build", "summary": "build failed on main",
             "priority": "low"}, **target)
        receipt = agent.send_signal({"type": "reactive", "contents": "stand-up in 5 min"},
                                    if_idle={"behavior": "persist"}, **target)
        await receipt.accepted
        await until(pilot, lambda: len(signal_lines(pane)) >= 3, "three signal lines")
        await drained(pilot, pane)

        def shown() -> bool:  # what the lines show once the sync under way has refreshed them
            lines = signal_lines(pane)
            return (any("⟳ state browser v1" in line and "https://x/42" in line for line in lines)
                    and any(line.lstrip().startswith("✉") and "ci" in line for line in lines)
                    and any("↺ system-reminder" in line and "stand-up" in line
                            for line in lines))

        await until(pilot, shown, "the state, notification and reminder lines")
        assert not pane.query(UserMessage)
        # The three lines are one widget; selecting one gives it a widget of its own, between
        # runs of the others, and the lines read as before.
        assert len(pane.query(SignalRun)) == 1 and not pane.query(SignalLine)
        before = signal_lines(pane)
        view = pane.transcript_view()
        middle = pane.feed.transcript.entries[1]
        view.focus()
        view.select(middle.key)
        await until(pilot, lambda: [w.has_class("-selected") for w in view.children]
                    == [False, True, False], "the middle line split out, selected")
        assert [type(w) for w in view.children] == [SignalRun, SignalLine, SignalRun]
        assert view.children[1].id == f"entry-{middle.key}"
        await until(pilot, lambda: signal_lines(pane) == before, "the same lines, painted")
        assert view.selected_entry() is middle
        # The last line split out of its run of one: a signal that arrives next still shows.
        view.select(pane.feed.transcript.entries[2].key)
        await until(pilot, lambda: [type(w) for w in view.children]
                    == [SignalRun, SignalLine, SignalLine], "the last line split out")
        await agent.send_signal({"type": "reactive", "contents": "lunch at noon"},
                                if_idle={"behavior": "persist"}, **target).accepted
        await until(pilot, lambda: any("lunch at noon" in line for line in signal_lines(pane)),
                    "the next signal's line")


async def test_a_failed_run_is_one_clear_line_in_the_pane(make_app: AppFactory) -> None:
    def broken(messages: Any, tools: Any) -> str:
        raise RuntimeError("provider said no")

    app = make_app(handler=broken)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await type_and_send(pilot, "hello")
        await until(pilot, lambda: "marker" in kinds(pane), "the failure marker")
        await drained(pilot, pane)
        marker = screen_text(pane.query_one(RunMarker))
        assert "✗" in marker and "provider said no" in marker
        assert "Traceback" not in marker
        assert pane.header_state.state == "failed"


async def test_a_pane_joining_mid_run_shows_that_run_from_its_start_once(
    make_app: AppFactory,
) -> None:
    held = Held("the answer")
    app = make_app(handler=held, threads=[])
    agent = app.config.agent
    async with app.run_test(size=(100, 30)) as pilot:
        receipt = agent.send_message("first question", resource_id="me", thread_id="main")
        await receipt.accepted
        await until(pilot, lambda: held.entered.is_set(), "the run reached the model")
        pane = app.open_pane("me", "main")
        await until(pilot, lambda: kinds(pane) == ["user"], "the live run's question")
        held.gate.set()
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        await drained(pilot, pane)
        texts = [e.text for e in pane.feed.transcript.entries]
        assert texts == ["first question", "the answer"]


async def test_a_notification_typed_by_hand_shows_no_empty_fields(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await type_and_send(pilot, "/signal notification the deploy is done")
        await until(pilot, lambda: bool(signal_lines(pane)), "the notification's line")
        line = signal_lines(pane)[0]
        assert "✉ notification" in line and "the deploy is done" in line
        assert "/ ()" not in line and "· /" not in line


async def test_a_click_on_a_line_of_a_signal_run_selects_that_signal(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    target = {"resource_id": "me", "thread_id": "main"}
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await agent.memory.create_thread("main", resource_id="me")
        for text in ("first tick", "second tick", "third tick"):
            await agent.send_signal({"type": "reactive", "contents": text},
                                    if_idle={"behavior": "persist"}, **target).accepted
        await until(pilot, lambda: len(signal_lines(pane)) >= 3, "three signal lines")
        await drained(pilot, pane)
        run = pane.query_one(SignalRun)
        assert len(run.entries) == 3
        await pilot.click(run, offset=(10, 2))
        view = pane.transcript_view()
        third = pane.feed.transcript.entries[2]
        await until(pilot, lambda: view.selected == third.key, "the third line selected")
        await until(pilot, lambda: [type(w) for w in view.children] == [SignalRun, SignalLine],
                    "split out of its run")
        assert "third tick" in screen_text(view.children[1])

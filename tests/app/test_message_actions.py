"""Acting on any message (issue 23): select it by keyboard or mouse, copy it or one of its code
blocks, quote it into the composer, retry the last answer (the old one stays, superseded),
edit and resend your last message — and another process's retry shows here live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.app import AppFactory, drained, pane_of, typed_ahead, until
from helpers.common import AgentFactory, StoreFactory
from textual.widgets._toast import Toast

from tui_agent import Memory
from tui_agent.app import clipboard
from tui_agent.app.message_actions import CodeTurn, edit_refusal, quoted, retry_refusal
from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.composer import Composer
from tui_agent.app.widgets.thread_pane import ThreadPane
from tui_agent.app.widgets.transcript_view import TranscriptView
from tui_agent.app.widgets.user_message import UserMessage
from tui_agent.testing import ScriptedModel

MAIN = {"resource_id": "me", "thread_id": "main"}
TWO_BLOCKS = "First:\n\n```sh\nmake\n```\n\nThen:\n\n```sh\nmake test\n```\n"


class Answers:
    """Answers a1, a2, … in turn (a retry gets a new one), or ``fixed`` when given."""

    def __init__(self, fixed: str | None = None) -> None:
        self.fixed = fixed
        self.calls = 0

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls += 1
        return self.fixed or f"a{self.calls}"


@pytest.fixture(autouse=True)
def _a_terminal_that_takes_osc52(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("TMUX", raising=False)


def toasts(app: Any) -> list[str]:
    return [toast.render().plain for toast in app.screen.query(Toast)]


async def say(pilot: Any, pane: ThreadPane, text: str, answers: int) -> None:
    """Type ``text`` into the pane's composer and send it; wait for ``answers`` answers."""
    composer = pane.query_one(Composer)
    composer.focus()
    composer.value = text
    await pilot.press("enter")
    await until(pilot, lambda: sum(e.kind == "assistant" for e in pane.feed.transcript.entries)
                >= answers, f"answer {answers}")
    await pilot.app.config.agent.wait_for_local_runs()
    await drained(pilot, pane)


def shown(pane: ThreadPane) -> list[tuple[str, str, str]]:
    return [(e.kind, e.text, e.superseded and "superseded")
            for e in pane.feed.transcript.entries]


# -- the rules, without a screen ---------------------------------------------------------------
def entry(kind: str, text: str = "", author: str = "", superseded: str = "") -> Entry:
    return Entry(key=text or kind, kind=kind, text=text, author=author, superseded=superseded)


def test_only_the_last_answer_is_retried_and_only_your_last_message_edited() -> None:
    old_q, old_a = entry("user", "q1", "zoe"), entry("assistant", "a1")
    q, a = entry("user", "q2", "zoe"), entry("assistant", "a2")
    entries = [old_q, old_a, q, a]
    assert retry_refusal(entries, None) is None and retry_refusal(entries, a) is None
    assert retry_refusal(entries, old_a) == "only the last answer can be retried"
    assert retry_refusal([], None) == "nothing to retry: no message in this thread yet"
    assert edit_refusal(entries, None, "zoe") is None and edit_refusal(entries, q, "zoe") is None
    assert "later ones came after it" in (edit_refusal(entries, old_q, "zoe") or "")
    assert edit_refusal(entries, a, "zoe") == "only your last message can be edited"
    assert edit_refusal(entries, None, "devin") == "the last message is zoe's, not yours"
    edited = [old_q, old_a, entry("user", "typo", "zoe", superseded="edit")]
    assert "later ones" not in (edit_refusal(edited, old_q, "zoe") or "")


def test_a_quote_names_its_author_and_code_blocks_come_in_turn() -> None:
    assert quoted(entry("user", "two\n\nlines", "Ana")) == "> **Ana:**\n> two\n>\n> lines\n\n"
    turn, answer = CodeTurn(), entry("assistant", TWO_BLOCKS)
    assert [turn.next_block(answer) for _ in range(3)] == [
        ("make", 1, 2), ("make test", 2, 2), ("make", 1, 2)]
    assert turn.next_block(entry("assistant", "no code")) is None


# -- in the app --------------------------------------------------------------------------------
async def test_any_message_is_selected_by_keyboard_and_copied(make_app: AppFactory) -> None:
    app = make_app(handler=Answers())
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "first question", 1)
        await say(pilot, pane, "second question", 2)
        view = pane.query_one(TranscriptView)
        await pilot.press("ctrl+up")  # into the transcript, on the newest message
        assert app.focused is view and view.selected_entry() is pane.feed.transcript.entries[-1]
        await pilot.press("up", "up", "up")  # a2 → second question → a1 → first question
        selected = view.selected_entry()
        assert selected is not None and selected.text == "first question"
        assert pane.query(UserMessage).first().has_class("-selected")
        await pilot.press("c")
        await until(pilot, lambda: app.clipboard == "first question", "the message copied")
        await pilot.press("down")
        await pilot.press("ctrl+y")  # the pane's copy takes the selection too
        await until(pilot, lambda: app.clipboard == "a1", "the selected answer copied")
        assert any("terminal clipboard (OSC 52)" in toast for toast in toasts(app))


async def test_a_click_selects_a_message_and_b_copies_its_code_blocks_in_turn(
    make_app: AppFactory,
) -> None:
    app = make_app(handler=Answers(TWO_BLOCKS))
    async with app.run_test(size=(100, 40), notifications=True) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "how do I build?", 1)
        await say(pilot, pane, "and again?", 2)
        first_answer = pane.query(AssistantMessage).first()
        await pilot.click(first_answer)
        view = pane.query_one(TranscriptView)
        await until(pilot, lambda: view.selected_entry() is first_answer.entry, "selected")
        await pilot.press("b")
        await until(pilot, lambda: app.clipboard == "make", "the first block")
        await pilot.press("b")
        await until(pilot, lambda: app.clipboard == "make test", "the second block")
        await until(pilot, lambda: any("code block 2 of 2" in t for t in toasts(app)),
                    "which block the toast says")


async def test_a_quote_goes_into_the_composer_above_what_you_typed(make_app: AppFactory) -> None:
    app = make_app(handler=Answers("The build is **green**."))
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "is it green?", 1)
        composer = pane.query_one(Composer)
        composer.value = "thanks!"
        await typed_ahead(pilot, "ctrl+up", "q")  # q reaches the app before ctrl+up is handled
        assert app.focused is composer
        assert composer.value == "> **demo:**\n> The build is **green**.\n\nthanks!"


async def test_retry_answers_again_and_the_old_answer_stays_superseded(
    make_app: AppFactory,
) -> None:
    answers = Answers()
    app = make_app(handler=answers)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "a joke please", 1)
        await pilot.press("f9")
        await until(pilot, lambda: shown(pane)[-1][:2] == ("assistant", "a2"), "the retry")
        await app.config.agent.wait_for_local_runs()
        await drained(pilot, pane)
        assert shown(pane) == [("user", "a joke please", ""),
                               ("assistant", "a1", "superseded"), ("assistant", "a2", "")]
        old, new = pane.query(AssistantMessage)
        assert old.has_class("-superseded") and not new.has_class("-superseded")
        assert "retried · superseded" in str(old.query_one(".assistant--head").render())
        stored = await app.config.agent.memory.list_messages("main")
        assert [("superseded" in m.metadata) for m in stored] == [False, True, False]


async def test_a_retry_elsewhere_marks_the_answer_here_live(
    make_app: AppFactory, agents: AgentFactory, stores: StoreFactory
) -> None:
    """Another process (its own agent on the same store) retries: this pane marks the old
    answer at once, from the store's data-superseded event, and shows the new one."""
    app = make_app(handler=Answers())
    other = agents(name="demo", model=ScriptedModel(replies=["from elsewhere"]),
                   memory=Memory(store=stores()))  # the same file, its own connection
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "hello", 1)
        output = await other.retry(**MAIN)
        await output.result()
        await until(pilot, lambda: shown(pane) == [
            ("user", "hello", ""), ("assistant", "a1", "superseded"),
            ("assistant", "from elsewhere", "")], "the retry, live")


async def test_edit_and_resend_replaces_your_last_message(make_app: AppFactory) -> None:
    answers = Answers()
    app = make_app(handler=answers)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "waht time is it", 1)
        await pilot.press("f4")
        composer = pane.query_one(Composer)
        assert composer.value == "waht time is it"
        assert "editing your last message" in str(composer.border_title)
        composer.value = "what time is it"
        await pilot.press("enter")
        await until(pilot, lambda: shown(pane)[-1][:2] == ("assistant", "a2"), "the new answer")
        await app.config.agent.wait_for_local_runs()
        await drained(pilot, pane)
        assert shown(pane) == [("user", "waht time is it", "superseded"),
                               ("assistant", "a1", "superseded"),
                               ("user", "what time is it", ""), ("assistant", "a2", "")]
        assert pane.query(UserMessage).first().has_class("-superseded")
        assert not composer.border_title


async def test_someone_else_s_last_message_is_not_yours_to_edit(make_app: AppFactory) -> None:
    app = make_app(handler=Answers())
    agent = app.config.agent
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        devin = {"contents": "ship it", "attributes": {"name": "Devin", "from": "slack"}}
        await agent.send_message(devin, **MAIN).accepted
        await agent.wait_for_local_runs()
        await drained(pilot, pane)
        await pilot.press("f4")
        status = pane.query_one("#pane-status")
        await until(pilot, lambda: "Devin's, not yours" in str(status.render()), "the refusal")
        assert pane.query_one(Composer).value == ""


async def test_a_copy_the_terminal_refuses_is_saved_and_said(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TERM", "linux")  # the Linux console: no clipboard at all
    monkeypatch.setattr(clipboard, "system_clipboard", lambda: None)
    app = make_app(handler=Answers("the answer"))
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await say(pilot, pane, "hi", 1)
        await pilot.press("ctrl+y")
        saved = tmp_path / "state" / "tui-agent" / "clipboard.txt"
        await until(pilot, lambda: any("does not support" in t and "clipboard.txt" in t
                                       for t in toasts(app)), "the fallback notice")
        assert saved.read_text() == "the answer"
        assert saved.stat().st_mode & 0o777 == 0o600

"""The controls of a pane: abort (confirmed), detach and attach, send now or queue, follow mode,
copy — each driven by its keys, as a user would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers.app import AppFactory, drained, kinds, pane_of, until
from helpers.common import Held
from textual.widgets._toast import Toast

from tui_agent.app.bridge import FIRST_PAGE
from tui_agent.app.screens.confirm import ConfirmScreen
from tui_agent.app.widgets import thread_pane, transcript_view
from tui_agent.app.widgets.assistant_message import AssistantMessage
from tui_agent.app.widgets.thread_pane import ThreadPane
from tui_agent.app.widgets.transcript_view import MAX_ENTRIES, TranscriptView
from tui_agent.app.widgets.waiting_signals import WaitingSignals


def status_line(pane: Any) -> str:
    return str(pane.query_one("#pane-status").render())


async def send_from_elsewhere(agent: Any, text: str, **extra: Any) -> dict[str, Any]:
    receipt = agent.send_message(text, resource_id="me", thread_id="main", **extra)
    return dict(await receipt.accepted)


async def test_abort_asks_first_then_stops_the_run_and_keeps_its_partial_answer(
    make_app: AppFactory,
) -> None:
    held = Held("never shown")
    app = make_app(handler=held)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send_from_elsewhere(app.config.agent, "long job please")
        await until(pilot, lambda: pane.feed.active_run_id() is not None, "the run is live")
        await until(pilot, lambda: pane.header_state.state == "running", "header: running")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("n")  # cancelled: the run goes on
        await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "dialog closed")
        assert pane.feed.active_run_id() is not None
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: kinds(pane)[-1:] == ["marker"], "the aborted marker")
        await drained(pilot, pane)
        assert pane.feed.transcript.entries[-1].status == "aborted"
        assert pane.header_state.state == "aborted"
        held.gate.set()


async def test_abort_with_no_live_run_says_so(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await pilot.press("escape")
        await until(pilot, lambda: "no live run" in status_line(pane), "the notice")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_detached_pane_stops_watching_and_attaching_catches_up_from_memory(
    make_app: AppFactory,
) -> None:
    app = make_app(handler=lambda messages, tools: "answer")
    agent = app.config.agent
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await pilot.press("ctrl+g")
        await until(pilot, lambda: pane.header_state.state == "detached", "header: detached")
        accepted = await send_from_elsewhere(agent, "while you were away")
        await agent.wait_for_local_runs()  # the run went on without the pane
        assert accepted["action"] == "wake"
        assert kinds(pane) == []  # detached: nothing new shown
        await pilot.press("ctrl+g")
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "caught up")
        await drained(pilot, pane)
        assert [e.text for e in pane.feed.transcript.entries] == ["while you were away",
                                                                   "answer"]
        # drained holds from the start of a sync; the header is set at its end
        await until(pilot, lambda: pane.header_state.state == "idle", "header: idle")


async def test_reattaching_keeps_one_transcript_view_at_every_step(make_app: AppFactory) -> None:
    """A sync may run at any moment of re-attaching (the pane's timer, the old feed's last
    change): at no step is the pane without its transcript view (a sync then raised NoMatches
    and ended the app), and the view shown is the one kept, now following the new feed."""
    app = make_app(handler=lambda messages, tools: "answer")
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send_from_elsewhere(app.config.agent, "before")
        await app.config.agent.wait_for_local_runs()
        await until(pilot, lambda: len(pane.transcript_view().children) == 2, "shown")
        view = pane.transcript_view()
        await pilot.press("ctrl+g")
        await until(pilot, lambda: pane.header_state.state == "detached", "header: detached")
        views_seen: set[int] = set()
        reattach = asyncio.ensure_future(pane.run_action("toggle_attach"))
        while not reattach.done():
            views_seen.add(len(pane.query(TranscriptView)))
            await asyncio.sleep(0)
        await reattach
        assert views_seen == {1}
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "caught up")
        await drained(pilot, pane)
        assert pane.transcript_view() is view
        assert [w.entry.text for w in view.children] == ["before", "answer"]  # type: ignore[attr-defined]


async def test_queue_mode_sends_after_the_live_run_and_shows_it_waiting(
    make_app: AppFactory,
) -> None:
    held = Held("first answer")
    app = make_app(handler=held)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send_from_elsewhere(app.config.agent, "first")
        await until(pilot, lambda: held.entered.is_set(), "the first run is at the model")
        await pilot.press("ctrl+t", *"second", "enter")
        await until(pilot, lambda: "queued → after run" in status_line(pane), "queued route")
        waiting = pane.query_one(WaitingSignals)
        await until(pilot, lambda: waiting.has_class("-some"), "the waiting line")
        assert "second" in str(waiting.render()) and "queued" in str(waiting.render())
        held.gate.set()
        await until(pilot, lambda: [e.text for e in pane.feed.transcript.entries] ==
                    ["first", "first answer", "second", "first answer"], "both runs")
        await drained(pilot, pane)
        assert not waiting.has_class("-some")


async def test_a_message_into_a_live_run_waits_visibly_for_the_next_step(
    make_app: AppFactory,
) -> None:
    held = Held("done")
    app = make_app(handler=held)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send_from_elsewhere(app.config.agent, "first")
        await until(pilot, lambda: held.entered.is_set(), "the run is at the model")
        accepted = await send_from_elsewhere(
            app.config.agent, "and also this")
        assert accepted["action"] == "deliver"
        waiting = pane.query_one(WaitingSignals)
        await until(pilot, lambda: "and also this" in str(waiting.render())
                    and waiting.has_class("-some"), "the delivered message, waiting")
        assert "next step" in str(waiting.render())
        held.gate.set()
        await until(pilot, lambda: "and also this" in [e.text for e in
                                                       pane.feed.transcript.entries], "taken")
        await drained(pilot, pane)
        assert not waiting.has_class("-some")


async def test_scrolled_up_pane_buffers_new_output_and_end_resumes_following(
    make_app: AppFactory,
) -> None:
    app = make_app(handler=lambda messages, tools: "line\n\n" * 6)
    agent = app.config.agent
    async with app.run_test(size=(80, 24)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        for index in range(4):
            await send_from_elsewhere(agent, f"message {index}")
            await agent.wait_for_local_runs()
        await drained(pilot, pane)
        view = pane.query_one(TranscriptView)
        await until(pilot, lambda: view.max_scroll_y > 0 and view.following, "a full pane")
        view.scroll_home(animate=False)
        await until(pilot, lambda: not view.following, "follow paused")
        mounted = view.widget_count()
        await send_from_elsewhere(agent, "while scrolled up")
        await agent.wait_for_local_runs()
        await until(pilot, lambda: view.unseen >= 2, "new entries counted, not mounted")
        assert view.widget_count() == mounted
        assert "new ·" in status_line(pane)
        await pilot.press("pagedown", "pagedown", "pagedown")
        await until(pilot, lambda: view.following and view.unseen == 0, "following again")
        await drained(pilot, pane)
        await until(pilot, lambda: view.widget_count() == mounted + 2, "flushed")
        await until(pilot, lambda: view.scroll_y >= view.max_scroll_y - 1, "at the bottom")


async def test_a_long_thread_opens_with_a_bounded_page_and_pages_older_history_in(
    make_app: AppFactory,
) -> None:
    app = make_app(threads=[])
    memory = app.config.agent.memory
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"}
                for i in range(1000)]
    await memory.save_messages(messages, thread_id="main", resource_id="me")
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.open_pane("me", "main")
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        view = pane.query_one(TranscriptView)
        await until(pilot, lambda: view.widget_count() > 0, "the newest page")
        await drained(pilot, pane)
        texts = [e.text for e in pane.feed.transcript.entries]
        assert texts[-1] == "message 999" and len(texts) <= MAX_ENTRIES
        first = texts[0]
        await until(pilot, lambda: 0 < view.max_scroll_y <= view.scroll_y + 1, "at the bottom")
        view.scroll_home(animate=False)
        await until(pilot, lambda: pane.feed.transcript.entries[0].text != first, "older page")
        older = [e.text for e in pane.feed.transcript.entries]
        assert older.index(first) > 0 and older[-1] == "message 999"
        assert older == sorted(older, key=lambda t: int(t.split()[1]))  # in order, no gaps
        numbers = [int(t.split()[1]) for t in older]
        assert numbers == list(range(numbers[0], 1000))


async def test_a_pane_that_cannot_scroll_yet_pages_older_history_in_by_itself(
    make_app: AppFactory,
) -> None:
    """A pane opens with one screenful (FIRST_PAGE); in a tall pane that screenful does not
    fill the view, so there is no top to scroll to: the pane pages the rest in by itself."""
    app = make_app(threads=[])
    memory = app.config.agent.memory
    count = FIRST_PAGE + 10
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
                for i in range(count)]
    await memory.save_messages(messages, thread_id="main", resource_id="me")
    async with app.run_test(size=(100, 120)) as pilot:
        pane = app.open_pane("me", "main")
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        entries = pane.feed.transcript.entries
        await until(pilot, lambda: len(entries) == count, "the whole thread paged in")
        await drained(pilot, pane)
        assert not pane.feed.has_older
        texts = [e.text for e in pane.feed.transcript.entries]
        assert texts == [f"m{i}" for i in range(count)]


async def test_copy_takes_the_last_answer_and_its_code_block(make_app: AppFactory) -> None:
    answer = "Use this:\n\n```python\nprint('hi')\n```\n"
    app = make_app(handler=lambda messages, tools: answer)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await send_from_elsewhere(app.config.agent, "code please")
        await app.config.agent.wait_for_local_runs()
        await drained(pilot, pane)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.clipboard == answer, "the answer copied")
        await pilot.press("ctrl+b")
        await until(pilot, lambda: app.clipboard == "print('hi')", "the code block copied")
        await until(pilot, lambda: any("copied a code block (1 lines)" in toast
                                       for toast in toasts(app)), "the toast")
        assert any("terminal clipboard (OSC 52)" in toast for toast in toasts(app))


def toasts(app: Any) -> list[str]:
    return [toast.render().plain for toast in app.screen.query(Toast)]


async def test_an_answers_end_shows_at_once_not_at_the_panes_next_tick(
    make_app: AppFactory, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Panes sync at a bounded rate (a background pane a few times a second); the end of an
    answer or run is synced at once, so its last words and status never wait for a tick."""
    monkeypatch.setattr(thread_pane, "FOCUSED_HZ", 0.02)  # a tick every 50 s
    monkeypatch.setattr(thread_pane, "BACKGROUND_HZ", 0.02)
    app = make_app(handler=lambda messages, tools: "the last words")
    agent = app.config.agent
    async with app.run_test(size=(80, 24)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await until(pilot, lambda: pane.drained, "the first sync")
        await send_from_elsewhere(agent, "hello")
        await agent.wait_for_local_runs()

        def shown() -> bool:
            answers = list(pane.query(AssistantMessage))
            stream = answers[-1].stream if answers else None
            return (stream is not None and stream.is_mounted
                    and "the last words" in stream.markdown)

        await until(pilot, shown, "the answer's end on screen", timeout=10)
        await until(pilot, lambda: pane.header_state.state == "idle", "the pane idle")


async def test_a_pane_not_focused_keeps_only_its_last_screenfuls_mounted(
    make_app: AppFactory,
) -> None:
    """Unfocused, a pane keeps COMPACT_SCREENS screenfuls of its newest entries mounted (its
    view shows the same newest lines); focused again, scrolling to the top pages the rest in."""
    app = make_app(threads=[("me", "left"), ("me", "right")])
    memory = app.config.agent.memory
    await memory.create_thread("left", resource_id="me")
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": f"line one\nline two\nmessage {i}"} for i in range(200)]
    await memory.save_messages(messages, thread_id="left", resource_id="me")
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "two panes")
        left, right = app.panes
        assert app.focused_pane() is right
        view = left.transcript_view()
        await until(pilot, lambda: view.widget_count() > 0, "the newest page")
        left.schedule_sync()
        await drained(pilot, left)
        await until(pilot, lambda: view.widget_count() < FIRST_PAGE, "compacted")
        keep = view.widget_count()
        assert keep >= transcript_view.COMPACT_MIN_ENTRIES
        height = view.scrollable_content_region.height
        lines = sum(w.outer_size.height + w.styles.margin.top for w in view.children)
        assert lines >= transcript_view.COMPACT_SCREENS * height - 2
        assert left.feed.transcript.entries[-1].text.endswith("message 199")
        await pilot.click(left, offset=(10, 5))
        await until(pilot, lambda: app.focused_pane() is left, "focused")
        view.scroll_home(animate=False)
        await until(pilot, lambda: view.widget_count() > keep, "older history paged back in")


async def test_a_pane_compacted_after_a_live_session_pages_its_history_back_in_order(
    make_app: AppFactory,
) -> None:
    """Everything a pane shows came live from the stream (no stored ids); compacted while not
    focused, it drops its oldest entries. Focused and scrolled to the top, it finds where its
    entries start in the stored history and pages in what is older: the whole session, in
    order, nothing twice."""
    def answer(messages: list[dict[str, Any]], tools: Any) -> str:
        return "answer to " + str(messages[-1]["content"]).rsplit(" ", 1)[-1]

    app = make_app(handler=answer, threads=[("me", "left"), ("me", "right")])
    agent = app.config.agent
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "two panes")
        left, right = app.panes
        assert app.focused_pane() is right
        for i in range(14):
            receipt = agent.send_message(f"question {i}", resource_id="me", thread_id="left")
            await receipt.accepted
            await agent.wait_for_local_runs()
        expected = [text for i in range(14) for text in (f"question {i}", f"answer to {i}")]
        view = left.transcript_view()
        await drained(pilot, left)
        await until(pilot, lambda: texts_of(left)[-1] == "answer to 13", "the session shown")
        await until(pilot, lambda: texts_of(left)[0] != "question 0", "compacted")
        assert all(entry.message_id is None for entry in left.feed.transcript.entries)
        await pilot.click(left, offset=(10, 5))
        await until(pilot, lambda: app.focused_pane() is left, "focused")
        view.scroll_home(animate=False)
        await until(pilot, lambda: texts_of(left)[0] == "question 0", "paged back to the start")
        assert texts_of(left) == expected


def texts_of(pane: ThreadPane) -> list[str]:
    return [entry.text for entry in pane.feed.transcript.entries
            if entry.kind in ("user", "assistant")]

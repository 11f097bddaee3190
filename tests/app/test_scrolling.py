"""Scrolling a pane's transcript: PgUp/PgDn and the wheel move it at once, also while an answer
streams; scrolled up, new output does not pull the view down and "↓ N new" shows; End (or the
bottom) follows again."""

from __future__ import annotations

from typing import Any

from helpers.app import AppFactory, drained, pane_of, until
from helpers.common import Held
from textual import events

from tui_agent.app.widgets.transcript_view import TranscriptView

LONG = "\n\n".join(f"Paragraph {k}: the deploy went fine on host {k}." for k in range(40))


async def long_pane(pilot: Any, app: Any) -> Any:
    pane = pane_of(app)
    await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
    agent = app.config.agent
    for index in range(3):
        await agent.send_message(f"question {index}", resource_id="me", thread_id="main").accepted
        await agent.wait_for_local_runs()
    await drained(pilot, pane)
    view = pane.query_one(TranscriptView)
    await until(pilot, lambda: view.max_scroll_y > 60 and view.scroll_y >= view.max_scroll_y - 1,
                "a long transcript, at its end")
    return pane, view


async def test_page_up_moves_at_once_while_an_answer_streams_and_end_follows_again(
    make_app: AppFactory,
) -> None:
    replies: list[Any] = [LONG, LONG, LONG]
    held = Held("streamed while you read " * 30)
    app = make_app(handler=lambda messages, tools: replies.pop(0) if replies else held(
        messages, tools))
    async with app.run_test(size=(100, 30)) as pilot:
        pane, view = await long_pane(pilot, app)
        agent = app.config.agent
        agent.send_message("one more", resource_id="me", thread_id="main")
        await until(pilot, lambda: held.entered.is_set(), "a run mid-answer")
        bottom = view.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < bottom - 10  # moved at once, the anchor let go
        assert not view.following
        up = view.scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert view.scroll_y < up
        held.gate.set()  # the answer ends below: the view stays where you read
        await agent.wait_for_local_runs()
        await drained(pilot, pane)
        assert view.scroll_y < up
        # drained holds from the start of the pane's last sync, which shows the notice at its end
        await until(pilot, lambda: "new ·" in str(pane.query_one("#pane-status").render()),
                    "the '↓ N new' notice")
        assert view.scroll_y < up
        await pilot.press("ctrl+end")
        await until(pilot, lambda: view.following and view.scroll_y >= view.max_scroll_y - 1,
                    "following again at the end")


async def test_the_wheel_scrolls_up_and_back_down_resumes_following(
    make_app: AppFactory,
) -> None:
    replies: list[Any] = [LONG, LONG, LONG]
    app = make_app(handler=lambda messages, tools: replies.pop(0) if replies else "ok")
    async with app.run_test(size=(100, 30)) as pilot:
        _pane, view = await long_pane(pilot, app)
        for _ in range(3):  # what the terminal sends for a turn of the wheel
            view.post_message(events.MouseScrollUp(view, 5, 5, 0, -1, 0, False, False, False))
        await pilot.pause()
        assert view.scroll_y < view.max_scroll_y - 5 and not view.following  # off the end
        view.scroll_end(animate=False, immediate=True)
        await until(pilot, lambda: view.following, "following at the bottom")


async def test_a_following_view_still_follows_after_resizes(make_app: AppFactory) -> None:
    replies: list[Any] = [LONG, LONG, LONG]
    app = make_app(handler=lambda messages, tools: replies.pop(0) if replies else "ok")
    async with app.run_test(size=(80, 24)) as pilot:
        _pane, view = await long_pane(pilot, app)
        for size in ((120, 35), (200, 50), (80, 24), (100, 30)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
        await until(pilot, lambda: view.scroll_y >= view.max_scroll_y - 1, "at the end")
        assert view.following and not view.unseen


async def test_a_following_view_follows_an_answer_through_resizes(make_app: AppFactory) -> None:
    from tui_agent.testing import ScriptedModel

    replies: list[Any] = [LONG, LONG, LONG, LONG]
    app = make_app(handler=lambda messages, tools: replies.pop(0) if replies else "ok")
    app.config.show_inbox = app.config.show_state = True  # sidebars come and go with the size
    async with app.run_test(size=(80, 24)) as pilot:
        pane, view = await long_pane(pilot, app)
        model = app.config.agent.model
        assert isinstance(model, ScriptedModel)
        model.delay_s = 0.002  # the model's pace: an answer streams while the terminal resizes
        await app.config.agent.send_message("more", resource_id="me", thread_id="main").accepted
        for size in ((120, 35), (200, 50), (80, 24), (120, 35), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
        await app.config.agent.wait_for_local_runs()
        await drained(pilot, pane)
        await until(pilot, lambda: view.scroll_y >= view.max_scroll_y - 1, "at the end")
        assert view.following and not view.unseen

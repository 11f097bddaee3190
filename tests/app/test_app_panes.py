"""Panes in the app: open threads from the picker (fuzzy search, new thread), up to four at
once in a grid, more kept open and cycled, focus by keys and mouse, maximise, close, swap; and
themes: shipped, user-made, remembered."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from helpers.app import AppFactory, drained, typed_ahead, until
from textual.widgets import Input

from tui_agent.app.layout import MAX_VISIBLE
from tui_agent.app.screens.thread_picker import ThreadChoice, ThreadPicker, parse_new_thread, rank
from tui_agent.app.widgets.composer import Composer
from tui_agent.app.widgets.thread_pane import ThreadPane


async def seed_threads(agent: Any) -> None:
    memory = agent.memory
    for resource, thread, title, count in [("team", "standup", "Daily stand-up", 3),
                                           ("team", "release", "Release 2.4", 1),
                                           ("me", "notes", None, 2)]:
        await memory.create_thread(thread, resource_id=resource, title=title)
        await memory.save_messages([{"role": "user", "content": f"m{i}"} for i in range(count)],
                                   thread_id=thread, resource_id=resource)


def picker_rows(app: Any) -> list[ThreadChoice]:
    screen = app.screen
    assert isinstance(screen, ThreadPicker)
    return list(screen.shown)


async def test_the_picker_lists_threads_newest_first_with_counts_and_filters_fuzzily(
    make_app: AppFactory,
) -> None:
    app = make_app(threads=[])
    await seed_threads(app.config.agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await until(pilot, lambda: len(picker_rows(app)) == 3, "three threads")
        rows = picker_rows(app)
        assert [r.thread_id for r in rows] == ["notes", "release", "standup"]  # newest first
        assert {r.thread_id: r.messages for r in rows} == {"notes": 2, "release": 1,
                                                          "standup": 3}
        await pilot.press(*"stnd")  # fuzzy: s-t-n-d in "Daily stand-up team/standup"
        await until(pilot, lambda: [r.thread_id for r in picker_rows(app)][:1] == ["standup"],
                    "the fuzzy match first")
        assert picker_rows(app)[-1].new  # "new thread me/stnd" comes after the matches
        await pilot.press("enter")
        await until(pilot, lambda: len(app.panes) == 1 and app.panes[0].feed.attached,
                    "the pane opened")
        await drained(pilot, app.panes[0], "the pane shown whole, its header too")
        assert app.panes[0].key == "team/standup"
        assert [e.text for e in app.panes[0].feed.transcript.entries] == ["m0", "m1", "m2"]
        assert app.panes[0].header_state.title == "Daily stand-up"


async def test_typing_a_new_thread_id_in_the_picker_opens_an_empty_pane_on_it(
    make_app: AppFactory,
) -> None:
    app = make_app(threads=[])
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await pilot.press(*"lab/ideas")
        await until(pilot, lambda: picker_rows(app)[:1] and picker_rows(app)[0].new,
                    "the new thread row")
        await pilot.press("enter")
        await until(pilot, lambda: len(app.panes) == 1 and app.panes[0].feed.attached,
                    "the pane opened")
        assert app.panes[0].key == "lab/ideas"
        await pilot.press(*"first words", "enter")
        await app.config.agent.wait_for_local_runs()
        thread = await app.config.agent.memory.get_thread("ideas")
        assert thread is not None and thread.resource_id == "lab"


def test_new_thread_ids_are_parsed_or_refused() -> None:
    assert parse_new_thread("lab/ideas", "me") == ("lab", "ideas")
    assert parse_new_thread("ideas", "me") == ("me", "ideas")
    assert parse_new_thread("two words", "me") is None
    assert parse_new_thread("lab/", "me") is None
    assert parse_new_thread("", "me") is None


def test_rank_keeps_newest_first_without_a_query_and_drops_non_matches() -> None:
    rows = [ThreadChoice("a", "alpha"), ThreadChoice("b", "beta"), ThreadChoice("c", "gamma")]
    assert rank(rows, "") == rows
    assert [r.thread_id for r in rank(rows, "bta")] == ["beta"]
    assert rank(rows, "zzz") == []


async def test_four_panes_share_the_screen_and_a_fifth_hides_the_least_recent(
    make_app: AppFactory,
) -> None:
    threads = [("me", f"t{i}") for i in range(MAX_VISIBLE + 1)]
    app = make_app(threads=threads[:MAX_VISIBLE])
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "four panes")
        visible = app.visible_panes()
        assert len(visible) == MAX_VISIBLE
        regions = {p.key: p.region for p in visible}
        assert len({(r.x, r.y) for r in regions.values()}) == MAX_VISIBLE  # a 2×2 grid
        assert all(r.width >= 70 and r.height >= 20 for r in regions.values())
        first = app.panes[0]
        fifth = app.open_pane(*threads[-1])
        await until(pilot, lambda: fifth.feed.attached, "the fifth pane")
        assert fifth.display and not first.display  # first was shown least recently
        assert len(app.visible_panes()) == MAX_VISIBLE
        assert app.focused_pane() is fifth
        for _ in range(len(app.panes) - 1):  # f6 cycles through all, hidden ones included
            await pilot.press("f6")
        await until(pilot, lambda: app.focused_pane() is app.panes[-2], "cycled")
        await pilot.press("f6", "f6")
        await until(pilot, lambda: app.focused_pane() is first and first.display,
                    "the hidden pane shown again")


async def test_words_typed_right_after_f6_or_f8_go_to_the_pane_the_focus_went_to(
    make_app: AppFactory,
) -> None:
    """f6 and f8 move the keyboard focus to a composer as they are handled, not a refresh
    later: what is typed right behind them (one read of the terminal) lands there."""
    app = make_app(threads=[("me", "left"), ("me", "middle"), ("me", "right")])
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "three panes")
        left, middle, right = app.panes
        assert app.focused is right.query_one(Composer)
        await typed_ahead(pilot, "f6", *"hi")  # from the last pane round to the first
        assert left.query_one(Composer).value == "hi"
        assert right.query_one(Composer).value == ""
        await typed_ahead(pilot, "f8", *"yo")  # closes the left pane: the focus goes on
        await until(pilot, lambda: not left.is_attached, "the left pane closed")
        composers = {p.key: p.query_one(Composer).value for p in (middle, right)}
        assert sorted(composers.values()) == ["", "yo"], composers
        assert app.focused_pane() is not None
        assert app.focused_pane().query_one(Composer).value == "yo"


async def test_words_typed_right_after_ctrl_o_go_into_the_picker_not_the_composer(
    make_app: AppFactory,
) -> None:
    """The picker opens as ctrl+o is handled and loads its threads once it is up: what is
    typed right behind ctrl+o (one read of the terminal) is its search, not a message."""
    app = make_app(threads=[("me", "notes")])
    await seed_threads(app.config.agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "the pane")
        composer = app.panes[0].query_one(Composer)
        await typed_ahead(pilot, "ctrl+o", *"rel")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await until(pilot, lambda: app.screen.query_one(Input).value == "rel", "the search")
        await until(pilot, lambda: [r.thread_id for r in picker_rows(app)][:1] == ["release"],
                    "the threads loaded and ranked")
        assert composer.value == ""
        await pilot.press("enter")
        await until(pilot, lambda: len(app.panes) == 2, "the thread opened beside")
        assert app.panes[-1].key == "team/release"


async def test_a_picker_whose_threads_cannot_be_read_says_so_and_still_opens_a_new_one(
    make_app: AppFactory, monkeypatch: Any,
) -> None:
    app = make_app(threads=[("me", "notes")])

    async def unreadable(agent: Any) -> list[Any]:
        raise OSError("disk I/O error")

    monkeypatch.setattr("tui_agent.app.bridge.thread_listing", unreadable)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "the pane")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await until(pilot, lambda: any("could not be read: disk I/O error" in toast.render().plain
                                       for toast in app.screen.query("Toast")), "the error shown")
        await pilot.press(*"me/fresh", "enter")
        await until(pilot, lambda: [p.key for p in app.panes] == ["me/notes", "me/fresh"],
                    "the new thread opened")


async def test_focus_moves_by_click_maximise_and_close(make_app: AppFactory) -> None:
    app = make_app(threads=[("me", "left"), ("me", "right")])
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "two panes")
        left, right = app.panes
        assert app.focused_pane() is right  # the last opened
        await pilot.click(left, offset=(10, 5))
        await until(pilot, lambda: app.focused_pane() is left, "focus by mouse")
        assert left.has_class("-focused") and not right.has_class("-focused")
        await pilot.press("f11")
        await until(pilot, lambda: app.screen.maximized is left, "maximised")
        assert left.region.width == 120
        await pilot.press("f11")
        await until(pilot, lambda: app.screen.maximized is None, "restored")
        await pilot.press("f8")
        await until(pilot, lambda: app.panes == [right], "the left pane closed")
        await until(pilot, lambda: app.focused_pane() is right, "focus on what is left")
        assert not left.is_attached


async def test_a_pane_closed_while_its_feed_starts_leaves_no_timer(make_app: AppFactory) -> None:
    """A worker that finishes after its pane closed (the feed's start, then the model check,
    at quit) asks for a header repaint: nothing is scheduled on the closed pane, so no timer
    outlives the app (this was a flaky teardown of the themes test below)."""
    app = make_app(threads=[("me", "left"), ("me", "right")])
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "two panes")
        closed = app.panes[-1]
        await pilot.press("f8")
        await until(pilot, lambda: not closed.is_running, "the pane's loop ended")
        timers_before = timer_tasks()
        closed.refresh_header()  # what start_feed's model check does when it finishes late
        assert timer_tasks() == timers_before


def timer_tasks() -> set[asyncio.Task[Any]]:
    return {task for task in asyncio.all_tasks()
            if task.get_name().startswith("set_timer") and not task.done()}


async def test_swap_shows_another_thread_in_the_focused_pane(make_app: AppFactory) -> None:
    app = make_app(threads=[("me", "main")])
    await seed_threads(app.config.agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.panes and app.panes[0].feed.attached, "the pane")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await pilot.press(*"release", "enter")
        await until(pilot, lambda: [p.key for p in app.panes] == ["team/release"], "swapped")


async def test_themes_shipped_and_user_made_are_offered_and_the_choice_is_remembered(
    make_app: AppFactory, _app_config_dir: Path,
) -> None:
    themes_dir = _app_config_dir / "themes"
    themes_dir.mkdir(parents=True)
    (themes_dir / "mine.toml").write_text('name = "mine"\nprimary = "#ff0000"\ndark = true\n')
    (themes_dir / "broken.toml").write_text('name = "broken"\ncolour = "#00ff00"\n')
    app = make_app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        assert app.theme == "tui-agent-dark"
        assert {"tui-agent-dark", "tui-agent-light", "mine", "textual-light"} <= set(
            app.available_themes)
        assert "broken" not in app.available_themes
        app.theme = "tui-agent-light"
        await pilot.pause()
    state = json.loads((_app_config_dir / "app-state.json").read_text())
    assert state["theme"] == "tui-agent-light"
    again = make_app()
    async with again.run_test(size=(100, 30)):
        assert again.theme == "tui-agent-light"


def pane_classes(pane: ThreadPane) -> set[str]:
    return set(pane.classes)


async def test_a_hidden_pane_buffers_and_shows_what_it_missed_when_shown(
    make_app: AppFactory,
) -> None:
    threads = [("me", f"t{i}") for i in range(MAX_VISIBLE + 1)]
    app = make_app(threads=threads)
    agent = app.config.agent
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: all(p.feed.attached for p in app.panes), "five panes")
        hidden = app.panes[0]
        assert not hidden.display
        receipt = agent.send_message("while hidden", resource_id="me", thread_id="t0")
        await receipt.accepted
        await agent.wait_for_local_runs()
        await until(pilot, lambda: len(hidden.feed.transcript.entries) == 2, "fed")
        await until(pilot, lambda: hidden.drained, "the change taken")
        assert hidden.transcript_view().widget_count() == 0  # buffered, not rendered
        app.show_pane(hidden)
        await until(pilot, lambda: hidden.transcript_view().widget_count() == 2, "shown")

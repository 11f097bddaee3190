"""ctrl+f in a pane (issue 23): the thread's matches over its whole history, not only what is
mounted: the count, the newest first, ↑ to an older one pages it in and scrolls it into view,
tinted; Esc closes and clears. f12 exports the thread (Markdown and JSON) as the app
delivers files. The thread picker finds threads by their messages' text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.app import AppFactory, drained, pane_of, until
from textual.widgets import Input, OptionList, Static

from tui_agent.app.screens.thread_picker import ThreadPicker
from tui_agent.app.widgets.find_bar import FindBar
from tui_agent.store.records import MessageIn

OLD_AT = 5  # of 300: far above what a pane mounts (MAX_ENTRIES), paged in by the find


async def a_long_thread(store: Any) -> None:
    await store.ensure_thread("main", "me", title="long one")
    texts = [f"message number {n}" for n in range(300)]
    texts[OLD_AT] = "the zebra crossing is closed"
    texts[295] = "a zebra again"
    await store.append("main", "me", messages=[
        MessageIn("user" if n % 2 == 0 else "assistant", text) for n, text in enumerate(texts)])


def count(bar: FindBar) -> str:
    return str(bar.query_one("#find-count", Static).render())


def in_view(view: Any, widget: Any) -> bool:
    return view.region.y <= widget.region.y < view.region.bottom


async def test_find_goes_to_a_match_that_was_not_mounted(
    make_app: AppFactory, store: Any
) -> None:
    await a_long_thread(store)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await drained(pilot, pane)
        assert not any("zebra crossing" in e.text for e in pane.feed.transcript.entries)
        await pilot.press("ctrl+f")
        bar = pane.query_one(FindBar)
        assert bar.shown and isinstance(app.focused, Input)
        await pilot.press(*"zebra")
        await until(pilot, lambda: count(bar) == "2/2", "two matches, the newest current")
        assert "zebra again" in str(bar.query_one("#find-snippet", Static).render())
        await pilot.press("up")
        await until(pilot, lambda: count(bar) == "1/2", "the older match")
        view = pane.transcript_view()

        def old_widget() -> Any:
            for entry in pane.feed.transcript.entries:
                if entry.text == "the zebra crossing is closed":
                    found = list(view.query(f"#entry-{entry.key}"))
                    return found[0] if found else None
            return None

        await until(pilot, lambda: old_widget() is not None and in_view(view, old_widget()),
                    "the old match paged in and scrolled into view")
        assert old_widget().styles.background.a > 0.3  # the current match is tinted
        await pilot.press("down")
        await until(pilot, lambda: count(bar) == "2/2", "wraps to the newest")
        await pilot.press("escape")
        await until(pilot, lambda: not bar.shown, "the bar closed")
        assert old_widget() is None or old_widget().styles.background.a == 0
        assert app.focused is pane.query_one("#composer")


async def test_find_with_no_match_says_so(make_app: AppFactory, store: Any) -> None:
    await a_long_thread(store)
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await drained(pilot, pane)
        await pilot.press("ctrl+f", *"okapi")
        bar = pane.query_one(FindBar)
        await until(pilot, lambda: count(bar) == "no match", "no match")


async def test_f12_exports_the_thread(make_app: AppFactory, store: Any,
                                        tmp_path: Path, monkeypatch: Any) -> None:
    await a_long_thread(store)
    app = make_app()
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    monkeypatch.setattr("textual.app.user_downloads_path", lambda: downloads, raising=False)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = pane_of(app)
        await drained(pilot, pane)
        await pilot.press("f12")
        await until(pilot, lambda: (downloads / "me-main.json").exists()
                    and (downloads / "me-main.md").exists(), "both files delivered")
    text = (downloads / "me-main.md").read_text()
    assert text.startswith("# long one") and "the zebra crossing is closed" in text


async def test_the_thread_picker_finds_threads_by_their_messages(
    make_app: AppFactory, store: Any
) -> None:
    await a_long_thread(store)
    await store.ensure_thread("other", "me", title="unrelated")
    await store.append("other", "me", messages=[MessageIn("user", "nothing to see")])
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await drained(pilot, pane_of(app))
        await pilot.press("ctrl+o")
        await until(pilot, lambda: isinstance(app.screen, ThreadPicker), "the picker")
        await pilot.press(*"crossing")
        picker = app.screen
        assert isinstance(picker, ThreadPicker)
        await until(pilot, lambda: [c.thread_id for c in picker.shown if not c.new] == ["main"],
                    "the thread whose message says it")
        row = str(picker.query_one(OptionList).get_option_at_index(0).prompt)
        assert "zebra crossing" in row

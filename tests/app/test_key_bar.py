"""The key bar: the focused widget's keys and the app's, after the keymap; a click presses a key;
moving the focus between panes that show the same keys does not repaint it."""

from __future__ import annotations

from helpers.app import AppFactory, pane_of, until

from tui_agent.app.screens.help import HelpScreen
from tui_agent.app.widgets.key_bar import KeyBar


def descriptions(bar: KeyBar) -> list[str]:
    return [hint.description for hint in bar.hints]


def x_of(bar: KeyBar, description: str) -> int:
    """The first column of the bar where a click lands on ``description``'s hint."""
    for x in range(bar.size.width):
        hint = bar.hint_at(x)
        if hint is not None and hint.description == description:
            return x
    raise AssertionError(f"{description!r} is not on the key bar: {descriptions(bar)}")


async def test_the_bar_shows_the_pane_and_app_keys_after_the_keymap(
    make_app: AppFactory,
) -> None:
    app = make_app()
    app.config.keymap = {"pane.abort": "f5"}
    async with app.run_test(size=(160, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        bar = app.query_one(KeyBar)
        await until(pilot, lambda: "Abort run" in descriptions(bar), "the pane's keys")
        shown = {hint.description: hint.display for hint in bar.hints}
        assert shown["Abort run"] == "f5" and shown["Help"] == "f1"
        assert bar.palette is not None and bar.palette.display == "^p"
        assert len(set(descriptions(bar))) == len(bar.hints)  # one hint per action


async def test_a_click_on_a_hint_presses_its_key(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(160, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        bar = app.query_one(KeyBar)
        await until(pilot, lambda: "Help" in descriptions(bar), "the help key")
        await pilot.click(KeyBar, offset=(x_of(bar, "Help"), 0))
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
        text = str(app.screen.query_one("#help-text").render())
        for binding_id in ("pane.abort", "app.quit", "pane.toggle_state", "inbox.dismiss",
                           "state.history", "composer.toggle_queue", "app.help"):
            assert binding_id in text  # every binding with the id the keymap uses
        assert "^q" in text and "Quit" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), "help closed")


async def test_moving_between_panes_with_the_same_keys_keeps_the_bar(
    make_app: AppFactory,
) -> None:
    app = make_app(threads=[("me", "a"), ("me", "b")])
    async with app.run_test(size=(160, 30)) as pilot:
        first, second = app.panes
        bar = app.query_one(KeyBar)
        await until(pilot, lambda: "Abort run" in descriptions(bar), "the pane's keys")
        hints = bar.hints
        assert second.focused  # the last opened
        await pilot.press("f6")
        await until(pilot, lambda: app.focused is not None and first in app.focused.ancestors,
                    "the other pane focused")
        await pilot.pause()
        assert bar.hints is hints  # the same keys: nothing recomputed into a new repaint

"""The composer, driven through the app as a user would: a multi-line paste is sent whole, a key
starts a new line and Enter sends, up/down recall your earlier messages like a shell's history,
long text grows to a third of the pane and then scrolls, and the typed commands still work."""

from __future__ import annotations

from typing import Any

from helpers.app import AppFactory, drained, kinds, pane_of, until
from helpers.common import Held
from textual import events

from tui_agent.app.alt_enter import ESC_CR, register_alt_enter
from tui_agent.app.app import binding_scopes
from tui_agent.app.keymap import COMPOSER_KEYS, check_keymap
from tui_agent.app.widgets.composer import Composer, editing_bindings
from tui_agent.app.widgets.thread_pane import ThreadPane


class Recorder:
    """A model handler that answers "ok" and keeps the last user message it was given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.seen.append(str(messages[-1]["content"]))
        return "ok"


async def opened(pilot: Any) -> tuple[ThreadPane, Composer]:
    """The first pane, subscribed, with its composer focused."""
    pane = pane_of(pilot.app)
    composer = pane.query_one(Composer)
    await until(pilot, lambda: pane.feed.attached and pilot.app.focused is composer,
                "the pane subscribed, its composer focused")
    return pane, composer


async def paste(pilot: Any, text: str) -> None:
    """What a terminal's bracketed paste gives the app."""
    pilot.app.post_message(events.Paste(text))
    await pilot.pause()


def texts(pane: ThreadPane) -> list[str]:
    return [entry.text for entry in pane.feed.transcript.entries]


async def test_a_multi_line_paste_is_sent_whole_with_every_line(make_app: AppFactory) -> None:
    model = Recorder()
    app = make_app(handler=model)
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await paste(pilot, "def f():\r    return 1\r\rprint(f())")  # tmux: lines end in \r
        assert composer.value == "def f():\n    return 1\n\nprint(f())"
        await pilot.press("enter")
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        assert texts(pane)[0] == "def f():\n    return 1\n\nprint(f())"
        assert "def f():\n    return 1\n\nprint(f())" in model.seen[-1]
        assert composer.value == ""


async def test_the_newline_keys_start_a_line_and_enter_sends_and_clears(
    make_app: AppFactory,
) -> None:
    model = Recorder()
    app = make_app(handler=model)
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await pilot.press("a", "ctrl+j", "b", "alt+enter", "c", "shift+enter", "d")
        assert composer.value == "a\nb\nc\nd"
        assert pane.feed.transcript.entries == []  # none of them sent
        await pilot.press("enter")
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        assert texts(pane)[0] == "a\nb\nc\nd" and "a\nb\nc\nd" in model.seen[-1]
        assert composer.value == ""
        await pilot.press("enter")  # empty: nothing is sent
        await drained(pilot, pane)
        assert kinds(pane) == ["user", "assistant"]


async def test_keys_arriving_at_once_act_in_the_order_they_were_typed(
    make_app: AppFactory,
) -> None:
    """As from tmux or a fast typist: one read from the terminal, several keys."""
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        for key in ("a", "ctrl+j", "b", "c", "alt+enter", "d"):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await until(pilot, lambda: len(composer.value) == 6, "every key typed")
        assert composer.value == "a\nbc\nd"
        for key in ("e", "enter", "f"):
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        assert texts(pane)[0] == "a\nbc\nde" and composer.value == "f"


async def test_the_keymap_remaps_the_newline_and_send_keys_by_their_ids(
    make_app: AppFactory,
) -> None:
    app = make_app()
    app.config.keymap = {"composer.newline": "enter", "composer.submit": "ctrl+s"}
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await pilot.press("a", "enter", "b", "ctrl+j", "c")  # ctrl+j: no longer a newline
        assert composer.value == "a\nbc"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: kinds(pane) == ["user", "assistant"], "the answer")
        assert texts(pane)[0] == "a\nbc"
    assert check_keymap(app.config.keymap, binding_scopes())[1] == []  # no clash with tool.toggle


def test_alt_enter_sent_as_esc_cr_is_alt_enter_not_enter() -> None:
    from textual._xterm_parser import XTermParser

    register_alt_enter()
    parser = XTermParser()
    keys = [getattr(event, "key", None) for event in parser.feed(f"a{ESC_CR}\r")]
    assert keys == ["a", "alt+enter", "enter"]


def test_the_keymap_knows_every_key_the_composer_edits_with() -> None:
    keys = {key.strip() for binding in editing_bindings() for key in binding.key.split(",")}
    assert keys | {"enter"} == COMPOSER_KEYS
    assert not keys & {"pageup", "pagedown", "f6", "ctrl+y"}  # the pane's and the app's


async def test_up_and_down_recall_your_messages_and_give_back_what_you_were_typing(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await pilot.press(*"first", "enter")
        await until(pilot, lambda: texts(pane) == ["first", "ok"], "the first answer")
        await agent.send_message({"contents": "not yours", "attributes": {"name": "devin"}},
                                 resource_id="me", thread_id="main").accepted
        await until(pilot, lambda: len(texts(pane)) == 4, "devin's message answered")
        await paste(pilot, "second\nin two lines")
        await pilot.press("enter")
        await until(pilot, lambda: len(texts(pane)) == 6, "the second answer")
        await drained(pilot, pane)

        await pilot.press(*"draft")
        await pilot.press("up")
        assert composer.value == "second\nin two lines"
        await pilot.press("up")  # the cursor is on its last line: it moves up first
        assert composer.value == "second\nin two lines" and composer.cursor_location[0] == 0
        await pilot.press("up")
        assert composer.value == "first"  # devin's message is not yours
        await pilot.press("up")  # nothing older: it stays
        assert composer.value == "first"
        await pilot.press("down")
        assert composer.value == "second\nin two lines"
        await pilot.press("down")
        assert composer.value == "draft" and composer.cursor_location == (0, 5)
        await pilot.press("down")  # past the draft: nothing happens
        assert composer.value == "draft"


async def test_a_message_just_sent_is_recalled_once_before_and_after_it_shows(
    make_app: AppFactory,
) -> None:
    held = Held("done")
    app = make_app(handler=held)
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await app.config.agent.send_message("busy", resource_id="me",
                                            thread_id="main").accepted
        await until(pilot, lambda: held.entered.is_set(), "a run at the model")
        await pilot.press("ctrl+t", *"queued one", "enter")  # not shown until its run
        status = pane.query_one("#pane-status")
        await until(pilot, lambda: "queued → after run" in str(status.render()), "queued")
        assert "queued one" not in texts(pane)
        await pilot.press("up")
        assert composer.value == "queued one"
        await pilot.press("down")
        assert composer.value == ""
        held.gate.set()
        await until(pilot, lambda: texts(pane).count("queued one") == 1, "its run took it")
        await drained(pilot, pane)
        await pilot.press("up")
        assert composer.value == "queued one"
        await pilot.press("up")  # listed once: nothing older of yours
        assert composer.value == "queued one"


async def test_long_text_grows_to_a_third_of_the_pane_then_scrolls(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        assert composer.outer_size.height == 3  # one line and its border
        await paste(pilot, "one\ntwo\nthree")
        assert composer.outer_size.height == 5
        await paste(pilot, "".join(f"\nline {n}" for n in range(40)))
        third = pane.outer_size.height / 3
        assert third - 2 < composer.outer_size.height <= third
        assert composer.max_scroll_y > 0 and composer.scroll_y == composer.max_scroll_y
        await pilot.resize_terminal(100, 12)  # a pane too short for a third to hold a line
        await until(pilot, lambda: pane.outer_size.height <= 10, "the pane shrunk")
        assert composer.outer_size.height == 3
        await pilot.press("enter")
        await until(pilot, lambda: composer.outer_size.height == 3, "back to one line")


async def test_the_commands_and_queue_mode_work_on_multi_line_text(
    make_app: AppFactory,
) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        pane, composer = await opened(pilot)
        await paste(pilot, "/signal reactive build\nfailed twice")
        await pilot.press("enter")
        await until(pilot, lambda: "build\nfailed twice" in texts(pane), "the signal")
        await paste(pilot, "/tag deploy\nrolled back")
        await pilot.press("enter")
        await until(pilot, lambda: "rolled back" in texts(pane), "the tagged signal")
        await drained(pilot, pane)
        signals = {e.text: e for e in pane.feed.transcript.entries if e.kind == "signal"}
        assert signals["build\nfailed twice"].signal_type == "reactive"
        assert signals["rolled back"].tag == "deploy"

        await paste(pilot, "/as bob from=slack")
        await pilot.press("enter")
        assert composer.identity.label() == "bob from=slack"
        assert "as bob from=slack" in str(composer.placeholder)
        await pilot.press("ctrl+t")
        assert composer.border_title == "queue" and "queue after" in str(composer.placeholder)
        await paste(pilot, "two\nlines")
        await pilot.press("enter")
        await until(pilot, lambda: "two\nlines" in texts(pane), "bob's queued message")
        user = next(e for e in pane.feed.transcript.entries if e.text == "two\nlines")
        assert (user.author, user.source) == ("bob", "slack")

        await paste(pilot, "/signal bogus\ntext")
        await pilot.press("enter")
        status = pane.query_one("#pane-status")
        await until(pilot, lambda: "usage: /signal" in str(status.render()), "the usage line")
        assert composer.value == "/signal bogus\ntext"  # kept, to fix

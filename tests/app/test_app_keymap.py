"""The keymap: binding ids remapped from the settings take effect (footer included); unknown ids
and clashes are warnings in the app, never a crash."""

from __future__ import annotations

from helpers.app import AppFactory, pane_of, until
from helpers.common import Held

from tui_agent.app.app import binding_scopes
from tui_agent.app.keymap import check_keymap
from tui_agent.app.screens.confirm import ConfirmScreen


async def test_abort_remapped_to_another_key_aborts_the_run(make_app: AppFactory) -> None:
    held = Held("never")
    app = make_app(handler=held)
    app.config.keymap = {"pane.abort": "f5"}
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        receipt = app.config.agent.send_message("go", resource_id="me", thread_id="main")
        await receipt.accepted
        await until(pilot, lambda: held.entered.is_set(), "the run is at the model")
        await until(pilot, lambda: pane.feed.active_run_id() is not None, "the run is live")
        await pilot.press("escape")  # the old key does nothing now
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(pilot, lambda: pane.header_state.state == "aborted", "aborted")
        assert pane.key_for("pane.abort") == "f5"
        held.gate.set()


def test_unknown_ids_and_clashes_are_warnings() -> None:
    usable, warnings = check_keymap(
        {"pane.abort": "f6", "pane.nothing": "f9", "pane.detach": "ctrl+u"}, binding_scopes())
    assert usable == {"pane.abort": "f6", "pane.detach": "ctrl+u"}
    assert "keymap: unknown binding id 'pane.nothing' (ignored)" in warnings
    assert "keymap: app.next_pane and pane.abort are both on f6" in warnings
    assert "keymap: pane.detach on ctrl+u is taken by the composer while typing" in warnings
    assert check_keymap({"pane.abort": "f5"}, binding_scopes()) == ({"pane.abort": "f5"}, [])


def test_a_key_that_moves_the_focus_may_not_be_a_key_you_type() -> None:
    """The app acts on f10 (and the other keys that move the focus) before the focused widget
    sees them: remapped to a letter, it would take that letter from the composer."""
    usable, warnings = check_keymap(
        {"app.approvals": "a", "app.toggle_inbox": "ctrl+i,space",
         "app.next_pane": "alt+n,shift+f5"}, binding_scopes())
    assert usable == {"app.next_pane": "alt+n,shift+f5"}
    assert check_keymap({"inbox.search": "question_mark"}, binding_scopes())[1] == []
    assert warnings == [
        "keymap: app.approvals on a would take a key you type; use an f-key or a ctrl/alt chord"
        " (ignored)",
        "keymap: app.toggle_inbox on space would take a key you type; use an f-key or a ctrl/alt"
        " chord (ignored)",
    ]


async def test_a_bad_keymap_shows_warnings_and_the_app_runs(make_app: AppFactory) -> None:
    app = make_app()
    app.config.keymap = {"no.such": "f9"}
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await until(pilot, lambda: any("unknown binding id 'no.such'" in toast.render().plain
                                       for toast in app.screen.query("Toast")), "the warning")

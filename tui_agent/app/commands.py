"""The command palette's commands (``ctrl+p``): the app's, and, with a pane focused, that
pane's, each naming its key. Tested by tests/app/test_inbox.py."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from textual.app import SystemCommand

if TYPE_CHECKING:
    from tui_agent.app.widgets.thread_pane import ThreadPane


class PaletteHost(Protocol):
    """What the commands call on the app (``TuiAgentApp``)."""

    def action_open_thread(self) -> None: ...
    def action_swap_thread(self) -> None: ...
    def action_close_pane(self) -> Awaitable[None]: ...
    def action_toggle_maximize(self) -> None: ...
    def action_toggle_inbox(self) -> None: ...
    def toggle_inbox_scope(self) -> None: ...
    def focused_pane(self) -> ThreadPane | None: ...
    def send_by_hand(self, kind: str) -> Any: ...


def palette_commands(app: PaletteHost) -> Iterator[SystemCommand]:
    """The app's own commands (after Textual's), then the focused pane's, if one is."""
    yield SystemCommand("Open thread", "Open a thread in a new pane (ctrl+o)",
                        app.action_open_thread)
    yield SystemCommand("Swap thread", "Show another thread in this pane (ctrl+r)",
                        app.action_swap_thread)
    yield SystemCommand("Close pane", "Close the focused pane (f8)", app.action_close_pane)
    yield SystemCommand("Maximise pane", "Maximise the focused pane or restore the grid (f11)",
                        app.action_toggle_maximize)
    yield SystemCommand("Toggle inbox", "Show or hide the notification inbox of every thread "
                        "(f2)", app.action_toggle_inbox)
    yield SystemCommand("Inbox: only my panes", "Show only the notifications of the threads in "
                        "panes, or of every thread (m in the inbox)", app.toggle_inbox_scope)
    pane = app.focused_pane()
    if pane is None:
        return
    yield SystemCommand("Send notification…", "Into this pane's thread, by hand: try the "
                        "delivery policy", lambda: app.send_by_hand("notification"))
    yield SystemCommand("Send state update…", "A state lane of this pane's thread",
                        lambda: app.send_by_hand("state"))
    yield SystemCommand("Abort run", "Abort the focused pane's live run (escape)",
                        pane.action_abort)
    yield SystemCommand("Detach / attach", "Stop or resume watching this thread (ctrl+g)",
                        pane.action_toggle_attach)
    yield SystemCommand("Copy answer", "Copy the last answer's Markdown, or the selected "
                        "message (ctrl+y)", pane.action_copy_message)
    yield SystemCommand("Copy code block", "Copy the answer's code blocks, one each time "
                        "(ctrl+b)", pane.action_copy_code)
    yield SystemCommand("Select a message", "Move through the messages with up/down; c copy, "
                        "b code, q quote, r retry, e edit (ctrl+up)", pane.action_select_message)
    yield SystemCommand("Retry the last answer", "A new run on the same input; the old answer "
                        "stays, superseded (f9)", pane.action_retry)
    yield SystemCommand("Edit and resend my last message", "Your last message into the "
                        "composer; sending replaces it (f4)", pane.action_edit_last)
    yield SystemCommand("Model of this thread…", "Pick the thread's model: local, the "
                        "settings', or any litellm string (ctrl+l)", pane.action_pick_model)
    yield SystemCommand("Toggle state panel", "Show or hide the thread's state lanes (f3)",
                        pane.action_toggle_state)
    yield SystemCommand("Toggle queue mode", "Send now or queue after the live run (ctrl+t)",
                        pane.toggle_queue_mode)

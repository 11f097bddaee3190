"""Moving the keyboard focus before the next key is handled.

``Widget.focus`` moves the focus in a callback queued behind the messages the app already has:
a key typed right after the one that moved the focus (both in one read of the terminal, or a
busy moment of the app) went to the widget the focus was leaving: ``f10`` then ``y`` typed a
``y`` into the composer instead of approving the call. ``focus_now`` moves it at once, so the
next key lands where the user sent the focus (tests/app/test_approvals_queue.py::
test_y_typed_right_after_f10_answers_the_call_not_the_composer). A screen a key opens takes the
keys typed right behind it into its search field (``typed_into_field``).
"""

from __future__ import annotations

from typing import Any

from textual import events
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input


def focus_now(widget: Widget, scroll_visible: bool = True) -> None:
    """Focus ``widget`` now; one not mounted yet gets it once it is (``Widget.focus``)."""
    if not widget.is_mounted:
        widget.focus(scroll_visible)
        return
    widget.screen.set_focus(widget, scroll_visible=scroll_visible)


def typed_into_field(screen: Screen[Any], event: events.Key) -> None:
    """For a screen opened by a key, whose search field takes the focus when it mounts: a key
    that reached the screen itself while the field has the focus was typed right behind the
    key that opened it (the app forwarded it to the screen before the field had the focus), so
    it goes into the field as it would have. The field stops every printable key it gets, so no
    other key is taken (tests/app/test_app_panes.py)."""
    field = screen.focused
    if isinstance(field, Input) and event.is_printable and event.character:
        field.insert_text_at_cursor(event.character)
        event.stop()

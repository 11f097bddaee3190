"""Moving the keyboard focus before the next key is handled.

``Widget.focus`` moves the focus in a callback queued behind the messages the app already has:
a key typed right after the one that moved the focus (both in one read of the terminal, or a
busy moment of the app) went to the widget the focus was leaving: ``f10`` then ``y`` typed a
``y`` into the composer instead of approving the call. ``focus_now`` moves it at once, so the
next key lands where the user sent the focus (tests/app/test_approvals_queue.py::
test_y_typed_right_after_f10_answers_the_call_not_the_composer).
"""

from __future__ import annotations

from textual.widget import Widget


def focus_now(widget: Widget, scroll_visible: bool = True) -> None:
    """Focus ``widget`` now; one not mounted yet gets it once it is (``Widget.focus``)."""
    if not widget.is_mounted:
        widget.focus(scroll_visible)
        return
    widget.screen.set_focus(widget, scroll_visible=scroll_visible)

"""Where the panes, the inbox and the state panel go at a terminal size: one pure function.

The rules, from the issue "the app holds up" (tests/app/test_layout.py):

- **Panes**: two columns from ``WIDE`` columns, two rows from ``TALL`` rows; more panes than fit
  stay open as tabs (the pane bar lists them, f6 cycles). 80×24: one pane; 120×35: two,
  stacked; 200×50: a 2×2 grid.
- **The inbox** is a sidebar from ``MEDIUM`` columns (narrower below ``WIDE``) when you chose to
  show it; below ``MEDIUM`` it never takes columns from the panes: opened, it covers them (an
  overlay) until closed.
- **The state panel** sits beside the focused pane's transcript only where the transcript keeps
  ``min_transcript`` columns (80 from ``MEDIUM``, 36 in a wide grid); elsewhere, opened, it
  covers the transcript until closed.

So the focused pane's transcript gets at least 60 columns at 80×24 and 80 at 120×35.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MEDIUM = 100  # columns from which the inbox can be a sidebar
WIDE = 160  # columns from which panes go two across
TALL = 30  # rows from which panes go two down
INBOX_WIDE, INBOX_MEDIUM = 52, 34  # the inbox sidebar's width
STATE_WIDTH = 34  # the state panel beside a transcript
PANE_CHROME = 2  # a pane's border, left and right
MAX_VISIBLE = 4  # panes in view at the most: the 2×2 grid

Place = Literal["side", "over", "hidden"]


@dataclass(frozen=True)
class Plan:
    columns: int  # of the pane grid
    rows: int
    visible: int  # panes shown at once (the rest are tabs)
    inbox: Place
    inbox_width: int
    state: Place  # the focused pane's state panel
    transcript_width: int  # what the focused pane's transcript gets


def plan_layout(width: int, height: int, panes: int, *, show_inbox: bool, show_state: bool,
                inbox_open: bool = False, state_open: bool = False) -> Plan:
    """The layout for a ``width``×``height`` terminal with ``panes`` open. ``show_*``: the
    sidebars you chose to see (kept in the settings); ``*_open``: opened over the content for
    now, where there is no room beside it."""
    capacity_columns = 2 if width >= WIDE else 1
    capacity_rows = 2 if height >= TALL else 1
    visible = max(1, min(panes, capacity_columns * capacity_rows, MAX_VISIBLE))
    columns = min(capacity_columns, visible) if visible < 3 else 2
    rows = 1 if visible <= columns else 2
    if width >= MEDIUM:
        inbox: Place = "side" if show_inbox else ("over" if inbox_open else "hidden")
        inbox_width = INBOX_WIDE if width >= WIDE else INBOX_MEDIUM
    else:
        inbox = "over" if inbox_open else "hidden"
        inbox_width = width
    room = width - (inbox_width if inbox == "side" else 0)
    pane_inner = room // columns - PANE_CHROME
    min_transcript = 36 if columns == 2 else (80 if width >= MEDIUM else 60)
    if show_state and pane_inner - STATE_WIDTH >= min_transcript:
        state: Place = "side"
    else:
        state = "over" if state_open else "hidden"
    transcript = pane_inner - (STATE_WIDTH if state == "side" else 0)
    return Plan(columns, rows, visible, inbox, inbox_width, state,
                0 if state == "over" or inbox == "over" else transcript)

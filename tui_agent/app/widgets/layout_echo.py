"""Widgets whose size change needs no second layout.

After each layout Textual hands every widget the size the layout gave it
(``Widget._size_updated``). It stores the virtual size through a reactive declared with
``layout=True``, so a widget whose virtual size changed (an answer that grew a line, the
transcript holding it) asks for *another* layout of the screen: one that arranges exactly what
the first did and changes nothing — an echo. While four panes stream, that was about half the
app's layouts (benchmarks/bench_app_hours.py). ``NoLayoutEcho`` stores the size the layout
computed without asking for the layout that computed it again; scrollbars and Resize events
are Textual's as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.geometry import Size

if TYPE_CHECKING:
    from textual.widget import Widget

    _Base = Widget
else:  # a plain mixin at run time: a Widget base would bring its CSS (overflow) into the MRO
    _Base = object


class NoLayoutEcho(_Base):
    """Mixed into a widget (before its Textual base): its virtual size is stored by the layout
    that computed it, with no layout requested in echo (tests/app/test_layout_echo.py)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)

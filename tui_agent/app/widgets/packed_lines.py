"""Rendered lines kept so that the garbage collector never walks them.

A long answer keeps thousands of rendered lines, each a list of rich ``Segment``s (tuples that
hold a ``Style``): every full collection walked them all, and with a few panes of long answers
those passes took hundreds of milliseconds (``benchmarks/bench_app_soak.py``). ``PackedLines``
keeps a line as a tuple of its texts and a tuple of indexes into one list of styles: tuples of
strings and small integers are untracked by the collector, so a finished answer costs it a
handful of objects, however long. A line is unpacked into segments only when it is painted.
Checked by tests/app/test_markdown_stream.py (the lines read back equal those packed).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style

Line = list[Segment]


class PackedLines:
    """A list of rendered lines, packed: ``append``/``extend`` take segment lists, indexing
    gives them back."""

    __slots__ = ("_lines", "_style_index", "_styles")

    def __init__(self) -> None:
        self._lines: list[tuple[tuple[str, ...], tuple[int, ...]]] = []
        self._styles: list[Style | None] = []
        self._style_index: dict[Style | None, int] = {}

    def __len__(self) -> int:
        return len(self._lines)

    def __getitem__(self, y: int) -> Line:
        texts, indexes = self._lines[y]
        styles = self._styles
        return [Segment(text, styles[index]) for text, index in zip(texts, indexes, strict=True)]

    def append(self, line: Line) -> None:
        index_of = self._style_index
        indexes = []
        for segment in line:
            index = index_of.get(segment.style)
            if index is None:
                index = index_of[segment.style] = len(self._styles)
                self._styles.append(segment.style)
            indexes.append(index)
        self._lines.append((tuple(segment.text for segment in line), tuple(indexes)))

    def extend(self, lines: Iterable[Line]) -> None:
        for line in lines:
            self.append(line)

    def slice(self, start: int, stop: int) -> list[Line]:
        return [self[y] for y in range(start, stop)]

    def copy(self) -> PackedLines:
        packed = PackedLines()
        packed._lines = list(self._lines)
        packed._styles = list(self._styles)
        packed._style_index = dict(self._style_index)
        return packed

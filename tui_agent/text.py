"""Plain-text helpers the app and the CLI both draw with: one line of a value, and a Markdown
text's finished blocks. No rich, no Textual: both front ends sit above this module
(tests/test_shared_helpers.py, tests/app/test_markdown_stream.py)."""

from __future__ import annotations

import json
from typing import Any

ONE_LINE = 160  # tool arguments/results and signal texts are cut to this many characters


def one_line(value: Any, limit: int = ONE_LINE) -> str:
    """``value`` (a string, else its JSON) on one line, whitespace runs as one space, cut to
    ``limit`` characters with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def split_blocks(text: str) -> tuple[list[str], str]:
    """Finished Markdown blocks (ended by a blank line outside a code fence) and the rest."""
    lines = text.split("\n")
    spans = block_spans(lines)
    start, end = spans.pop()  # the last run takes the last line: it is not finished
    return ["\n".join(lines[s:e]) for s, e in spans], "\n".join(lines[start:end])


def block_spans(lines: list[str]) -> list[tuple[int, int]]:
    """The line ranges ``[start, end)`` of the runs of lines between blank lines outside a code
    fence. The last line always belongs to the last run (it may be blank): never empty."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    fenced = False
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and not line.strip() and not last:
            if start is not None:
                spans.append((start, index))
                start = None
            continue
        if start is None:
            start = index
    assert start is not None  # the last line always starts or continues a run
    spans.append((start, len(lines)))
    return spans

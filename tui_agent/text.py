"""Plain-text helpers the app and the CLI both draw with: one line of a value, and a Markdown
text's finished blocks. No rich, no Textual: both front ends sit above this module
(tests/test_shared_helpers.py, tests/app/test_markdown_stream.py)."""

from __future__ import annotations

import json
import re
from typing import Any, Final

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


# -- search: a query's terms, where they match a text, and a snippet around the first match --
# The stores' indexes split a text into runs of letters and digits, case folded; a query's words
# match a word they begin (prefix match), and every term must match (tests/test_search.py).

_QUERY_TERM: Final = re.compile(r'"([^"]*)"?|(\S+)')
_WORD: Final = re.compile(r"[^\W_]+")


def search_terms(query: str) -> list[tuple[str, ...]]:
    """The terms of a search ``query``: each a word, or a ``"quoted phrase"`` (its words in
    order), lower-cased, split as the index splits text; punctuation alone is no term."""
    terms: list[tuple[str, ...]] = []
    for phrase, word in _QUERY_TERM.findall(query):
        words = tuple(w.lower() for w in _WORD.findall(phrase or word))
        if words and words not in terms:
            terms.append(words)
    return terms


def match_spans(text: str, terms: list[tuple[str, ...]]) -> list[tuple[int, int]]:
    """``[start, end)`` of every word of ``text`` that a word of ``terms`` begins (a one-letter
    word: that is), in order: what a search result highlights."""
    words = {w for term in terms for w in term}
    prefixes = tuple(w for w in words if len(w) > 1)  # a one-letter word matches only itself
    if not words:
        return []
    return [(m.start(), m.end()) for m in _WORD.finditer(text)
            if (word := m.group().lower()) in words or word.startswith(prefixes)]


def snippet(text: str, terms: list[tuple[str, ...]], width: int = 100) -> str:
    """One line of ``text`` around its first match, about ``width`` characters, with an
    ellipsis where it was cut."""
    flat = " ".join(text.split())
    spans = match_spans(flat, terms)
    start = max(0, spans[0][0] - width // 3) if spans else 0
    if start:  # begin at a word
        space = flat.rfind(" ", 0, start)
        start = space + 1 if space >= 0 else start
    cut = flat[start:start + width]
    return ("…" if start else "") + cut + ("…" if start + width < len(flat) else "")


def waited(seconds: float) -> str:
    """How long something has waited, to a glance: ``12s``, ``3m 05s``, ``2h 10m``, ``3d 4h``
    (a tool call waiting for approval, in ``tui-agent approvals`` and the app's queue)."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    if whole < 86400:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m"
    return f"{whole // 86400}d {whole % 86400 // 3600}h"

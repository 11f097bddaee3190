"""Author badges: a colour per author, stable across processes, from the theme's text colours.

The colours are theme variables (``$text-primary`` …), which each theme makes readable on its
own background, so a badge reads on dark and light themes alike.
"""

from __future__ import annotations

import zlib

from textual.content import Content

AUTHOR_COLOURS = (
    "$text-primary",
    "$text-secondary",
    "$text-accent",
    "$text-success",
    "$text-warning",
    "$text-error",
)


def author_colour(author: str) -> str:
    """crc32, not ``hash``: the same author has the same colour in every terminal."""
    return AUTHOR_COLOURS[zlib.crc32(author.encode()) % len(AUTHOR_COLOURS)]


def author_badge(name: str, source: str = "") -> Content:
    """``Ana`` in her colour, then ``slack`` quieter; either may be missing."""
    parts: list[str | tuple[str, str]] = []
    if name:
        parts.append((f" {name} ", f"bold {author_colour(name)} reverse"))
    if source:
        if parts:
            parts.append(" ")
        parts.append((source, f"italic {author_colour(source)}"))
    if not parts:
        parts.append((" user ", "bold $text-muted reverse"))
    return Content.assemble(*parts)


def superseded_label(superseded: str) -> Content:
    """What a superseded message says of itself: an edited message, or an answer retried."""
    if not superseded:
        return Content("")
    text = "✎ superseded by an edit" if superseded == "edit" else "↻ retried · superseded"
    return Content.assemble(("  ", ""), (text, "italic $text-muted"))

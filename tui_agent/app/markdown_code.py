"""Code blocks in Markdown source (what 'copy code' copies)."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(?P<fence>```|~~~)[^\n]*\n(?P<body>.*?)^(?P=fence)\s*$", re.M | re.S)


def code_blocks(markdown: str) -> list[str]:
    """The bodies of the fenced code blocks, in order, without their fences."""
    return [m.group("body").rstrip("\n") for m in _FENCE.finditer(markdown)]


def last_code_block(markdown: str) -> str | None:
    blocks = code_blocks(markdown)
    return blocks[-1] if blocks else None

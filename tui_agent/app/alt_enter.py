"""Alt+Enter reaches the app as "alt+enter" on terminals that send it as ESC CR (xterm, tmux,
most terminals without the kitty keyboard protocol).

Textual 8.2.8 drops the alt of a named key there and reports a plain "enter"
(Textualize/textual#6663): in the composer that would send a half-written message instead of
starting a new line. Its parser looks every escape sequence up in one table; this adds ESC CR
to it, unless Textual maps it itself. Tested in tests/app/test_composer.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

ESC_CR = "\x1b\r"


@dataclass(frozen=True)
class _KeyName:
    """What the parser reads of a table entry: the key's name, as ``Keys.value`` is."""

    value: str


def register_alt_enter() -> None:
    """Idempotent; a Textual that maps ESC CR itself keeps its own entry."""
    from textual import _ansi_sequences  # the table Textual's parser reads (no public hook)

    table: object = _ansi_sequences.ANSI_SEQUENCES_KEYS
    if isinstance(table, dict) and ESC_CR not in table:
        # typed tuple[Keys, ...]: the parser only reads each entry's ``value``
        entries = cast("dict[str, object]", table)
        entries[ESC_CR] = (_KeyName("alt+enter"),)

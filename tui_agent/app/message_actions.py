"""What a pane does with one message of its transcript: copy it or one of its code blocks,
quote it into the composer, retry the last answer, edit and resend your last message.

Which message may be retried or edited is decided here, on the transcript alone (no Textual,
no store): the pane asks, then acts (tests/app/test_message_actions.py). The store has the last
word: a retry or an edit that another process overtook is refused there (``ThreadFeed``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from tui_agent.app.markdown_code import code_blocks
from tui_agent.app.transcript import Entry

ANSWER_KINDS = ("assistant", "tool")


def entry_text(entry: Entry) -> str:
    """What copying a message copies: an answer's Markdown, a message's text as typed, a tool
    call with its arguments and result."""
    if entry.kind == "tool":
        return f"{entry.tag}({_json(entry.args)}) → {_json(entry.result)}"
    return entry.text


def quoted(entry: Entry) -> str:
    """The message as a Markdown quote, its author first, ready to answer below it."""
    who = entry.author or ("agent" if entry.kind == "assistant" else "")
    lines = entry_text(entry).splitlines() or [""]
    head = [f"> **{who}:**"] if who else []
    return "\n".join([*head, *(f"> {line}" if line else ">" for line in lines)]) + "\n\n"


@dataclass
class CodeTurn:
    """Which of a message's code blocks the next 'copy code' copies: each press the next."""

    key: str = ""
    index: int = -1

    def next_block(self, entry: Entry) -> tuple[str, int, int] | None:
        """(block, its number from 1, how many) or None when the message has none."""
        blocks = code_blocks(entry.text)
        if not blocks:
            return None
        self.index = self.index + 1 if self.key == entry.key else 0
        self.key = entry.key
        self.index %= len(blocks)
        return blocks[self.index], self.index + 1, len(blocks)


def last_user(entries: Sequence[Entry]) -> Entry | None:
    """The thread's last user message still in force, as the pane shows it."""
    for entry in reversed(entries):
        if entry.kind == "user" and not entry.superseded:
            return entry
    return None


def retry_refusal(entries: Sequence[Entry], entry: Entry | None) -> str | None:
    """Why ``entry`` (None: the last answer) cannot be retried, or None when it can: only the
    answer to the thread's last message is answered again."""
    user = last_user(entries)
    if user is None:
        return "nothing to retry: no message in this thread yet"
    if entry is None or entry is user:
        return None
    after = entries[entries.index(user) + 1:] if user in entries else []
    if entry.kind in ANSWER_KINDS and entry in after:
        return None
    return "only the last answer can be retried"


def edit_refusal(entries: Sequence[Entry], entry: Entry | None, you: str) -> str | None:
    """Why ``entry`` (None: your last message) cannot be edited and resent, or None: only your
    own message, and only while it is the thread's last."""
    user = last_user(entries)
    if user is None or (entry is not None and entry.kind != "user"):
        return "only your last message can be edited"
    if entry is not None and entry is not user:
        return "only your last message can be edited (later ones came after it)"
    if user.author != you:
        return f"the last message is {user.author or 'someone else'}'s, not yours"
    return None


def _json(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)

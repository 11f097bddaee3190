"""What up/down recall in a pane's composer: your earlier messages in its thread, like a shell's
history. No Textual here (tests/app/test_composer.py drives it through the app).

``own_messages`` reads them from the pane's transcript (entries of kind "user" whose author and
``from`` are yours) and adds what you sent that the transcript does not show yet (a send's echo
arrives a moment later; a queued message only when its run takes it). ``Recall`` browses them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tui_agent.app.transcript import Entry


@dataclass(eq=False)
class Sent:
    """A message this composer sent: ``after`` is the transcript's last entry at that moment,
    so only an entry after it can be its echo."""

    text: str
    after: Entry | None


def own_messages(entries: Sequence[Entry], who: tuple[str, str],
                 sent: list[Sent]) -> tuple[list[str], list[Sent]]:
    """Your messages oldest first (``who``: name and ``from``), and the sends still not in
    ``entries``. A send whose ``after`` left the transcript (pruned, or a new feed) counts as
    shown: it was long ago, or the new feed loaded it from the store."""
    mine = [(i, e.text) for i, e in enumerate(entries)
            if e.kind == "user" and (e.author, e.source) == who]
    position = {id(e): i for i, e in enumerate(entries)}
    claimed: set[int] = set()
    waiting: list[Sent] = []
    for send in sent:
        if send.after is not None and id(send.after) not in position:
            continue
        start = position[id(send.after)] if send.after is not None else -1
        echo = next((i for i, text in mine
                     if i > start and i not in claimed and text == send.text), None)
        if echo is None:
            waiting.append(send)
        else:
            claimed.add(echo)
    return [text for _, text in mine] + [send.text for send in waiting], waiting


class Recall:
    """Shell-like browsing: ``older`` steps back (the first step keeps what you were typing),
    ``newer`` steps forward, and past the newest gives what you were typing back. The list is
    read once per browse (messages arriving meanwhile join the next one); the same message
    twice in a row is one step."""

    def __init__(self) -> None:
        self._items: list[str] | None = None
        self._index = 0
        self._draft = ""

    @property
    def browsing(self) -> bool:
        return self._items is not None

    def older(self, current: str, load: Callable[[], list[str]]) -> str | None:
        """The message before the one shown (None: nothing older)."""
        if self._items is None:
            items = _without_repeats(load())
            if not items:
                return None
            self._items, self._index, self._draft = items, len(items), current
        if self._index == 0:
            return None
        self._index -= 1
        return self._items[self._index]

    def newer(self) -> str | None:
        """The message after the one shown, or the draft past the newest (None: not browsing)."""
        if self._items is None:
            return None
        self._index += 1
        if self._index < len(self._items):
            return self._items[self._index]
        draft = self._draft
        self.reset()
        return draft

    def reset(self) -> None:
        self._items, self._index, self._draft = None, 0, ""


def _without_repeats(items: list[str]) -> list[str]:
    return [text for i, text in enumerate(items) if i == 0 or text != items[i - 1]]

"""ctrl+f in a thread pane: find the thread's messages by their words over its whole history
(the store's search index, ``ThreadFeed.search``), not only what is mounted.

The bar shows how many messages match and which one is current ("3/12"), with that message's
snippet, its matched words highlighted. Enter or ↓ goes to the next (newer) match, ↑ to the
previous (older), wrapping; Esc closes the bar and clears the highlights. Going to a match pages
older history into the pane until its message is mounted, scrolls it to the top of the view, and
tints it; every other mounted match is tinted lighter. Tested in tests/app/test_find.py.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Protocol

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from tui_agent.app.focus import focus_now
from tui_agent.app.transcript import Entry
from tui_agent.app.widgets.reveal_scroll import (
    answers_rendered,
    scroll_until_there,
    wait_until,
    widget_of,
)
from tui_agent.text import match_spans, search_terms, snippet

DEBOUNCE_S = 0.15  # typing pauses this long before the store is asked
MAX_PAGES = 400  # older history pages read looking for a match's message (20,000 messages)
_WORD = re.compile(r"[^\W_]+")


class FindPane(Protocol):
    """What the bar needs of its pane (a ``ThreadPane``)."""

    @property
    def feed(self) -> Any: ...

    @property
    def drained(self) -> bool: ...

    def transcript_view(self) -> Any: ...


def holds(text: str, terms: list[tuple[str, ...]]) -> bool:
    """Whether ``text`` has a word each term's first word begins (an entry shown live, with no
    stored message id yet, is found by its text)."""
    words = [w.lower() for w in _WORD.findall(text)]
    return all(any(w.startswith(term[0]) for w in words) for term in terms)


class FindClosed(Message):
    """The bar closed: the pane gives the focus back to its composer."""


class FindBar(Horizontal):
    DEFAULT_CSS = """
    FindBar {
        height: 1;
        display: none;
        &.-shown { display: block; }
        & > Input, & > Input:focus {
            width: 32; height: 1; border: none; padding: 0 1; background: $boost;
        }
        & > #find-count { width: auto; min-width: 8; padding: 0 1; color: $text-muted; }
        & > #find-snippet { width: 1fr; color: $text-muted; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close find", id="find.close"),
        Binding("down", "step(1)", "Next", id="find.next"),
        Binding("up", "step(-1)", "Previous", id="find.previous"),
    ]

    def __init__(self, pane: FindPane, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pane = pane
        self.hits: list[Any] = []
        self.index = -1
        self.terms: list[tuple[str, ...]] = []
        self.limit_reached = False
        self._timer: Any = None
        self._tinted: list[Widget] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="find in this thread…", id="find-input")
        yield Static("", id="find-count", markup=False)
        yield Static("", id="find-snippet", markup=False)

    @property
    def shown(self) -> bool:
        return self.has_class("-shown")

    def open(self) -> None:
        self.add_class("-shown")
        focus_now(self.query_one(Input))

    def action_close(self) -> None:
        self.remove_class("-shown")
        self._untint()
        self.hits, self.index = [], -1
        self.query_one(Input).value = ""
        self._show_count("")
        self.query_one("#find-snippet", Static).update("")
        self.post_message(FindClosed())

    # -- typing: ask the store ---------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DEBOUNCE_S, lambda: self.search(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_step(1)

    @work(exclusive=True, group="find")
    async def search(self, query: str) -> None:
        from tui_agent.app.bridge import FIND_LIMIT

        self._timer = None
        self.terms = search_terms(query)
        if not self.terms:
            self.hits, self.index = [], -1
            self._untint()
            self._show_count("")
            self.query_one("#find-snippet", Static).update("")
            return
        hits = await self.pane.feed.search(query)
        self.hits = hits
        self.limit_reached = len(hits) >= FIND_LIMIT
        self.index = len(hits) - 1  # the newest first
        if not hits:
            self._untint()
            self._show_count("no match")
            self.query_one("#find-snippet", Static).update("")
            return
        await self.go()

    def action_step(self, step: int) -> None:
        if self.hits:
            self.index = (self.index + step) % len(self.hits)
            self.run_worker(self.go(), exclusive=True, group="find-go")

    # -- going to the current match ------------------------------------------------------------

    async def go(self) -> None:
        hit = self.hits[self.index]
        total = f"{len(self.hits)}+" if self.limit_reached else str(len(self.hits))
        self._show_count(f"{self.index + 1}/{total}")
        shown = Text(snippet(hit.text, self.terms, 160))
        for start, end in match_spans(shown.plain, self.terms):
            shown.stylize("bold reverse", start, end)
        self.query_one("#find-snippet", Static).update(shown)
        view = self.pane.transcript_view()
        entry = await self._entry_of(hit)
        widget = None if entry is None else await widget_of(view, entry)
        if widget is None:
            self._show_count(f"{self.index + 1}/{total} (not in view)")
            return
        await wait_until(lambda: self.pane.drained)
        await answers_rendered(view)
        view.following = False  # no later sync scrolls it back to the end
        self._tint(widget)
        await scroll_until_there(view, widget)

    async def _entry_of(self, hit: Any) -> Entry | None:
        """The entry of ``hit``'s message, paging older history in until it is mounted."""
        view = self.pane.transcript_view()
        feed = self.pane.feed
        for _ in range(MAX_PAGES):
            entry = self._mounted_entry(hit)
            if entry is not None or not feed.has_older:
                return entry
            view.following = False  # older pages stay mounted (a following view prunes)
            if not await feed.load_older():
                break
            await view.sync()
        return self._mounted_entry(hit)

    def _mounted_entry(self, hit: Any) -> Entry | None:
        entries = self.pane.feed.transcript.entries
        for entry in entries:
            if entry.message_id == hit.message_id:
                return entry
        live = [e for e in entries if e.message_id is None and e.kind in ("user", "assistant",
                                                                         "signal")]
        for entry in reversed(live):  # shown live: its stored id is not known to the view
            if holds(entry.text, self.terms):
                return entry
        return None

    # -- highlights ----------------------------------------------------------------------------

    def _tint(self, current: Widget) -> None:
        self._untint()
        accent = Color.parse(self.app.theme_variables.get("accent", "#ffb86c"))
        ids = {hit.message_id for hit in self.hits}
        view = self.pane.transcript_view()
        for entry in self.pane.feed.transcript.entries:
            if entry.message_id in ids:
                widget = view.entry_widget(entry.key)
                if widget is not None and widget is not current:
                    widget.styles.background = accent.with_alpha(0.12)
                    self._tinted.append(widget)
        current.styles.background = accent.with_alpha(0.35)
        self._tinted.append(current)

    def _untint(self) -> None:
        for widget in self._tinted:
            widget.styles.clear_rule("background")
        self._tinted = []

    def _show_count(self, text: str) -> None:
        self.query_one("#find-count", Static).update(text)

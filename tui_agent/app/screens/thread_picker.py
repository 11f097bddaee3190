"""Pick a thread to open: fuzzy search over title, resource and thread id, newest first, with
message counts and whether a run is live — or start a new thread. What is typed also searches the
messages of every thread (the store's search index, through ``search``): threads whose messages
hold the words are listed after the title matches, with how many and a snippet of the newest
(tests/app/test_find.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tui_agent.app.focus import focus_now, typed_into_field


@dataclass(frozen=True)
class ThreadChoice:
    """One row of the picker (or the "new thread" row when ``new`` is set)."""

    resource_id: str
    thread_id: str
    title: str = ""
    messages: int = 0
    live: bool = False
    updated_at: datetime | None = None
    new: bool = False
    found: int = 0  # messages of the thread that hold the words typed
    snippet: str = ""  # the newest of them, around its first match

    @property
    def haystack(self) -> str:
        return f"{self.title} {self.resource_id}/{self.thread_id}"


def rank(choices: list[ThreadChoice], query: str) -> list[ThreadChoice]:
    """Newest first without a query; best fuzzy match first with one (ties: newest)."""
    if not query.strip():
        return list(choices)
    matcher = Matcher(query)
    scored = [(matcher.match(c.haystack), i, c) for i, c in enumerate(choices)]
    return [c for score, _, c in sorted(scored, key=lambda t: (-t[0], t[1])) if score > 0]


SEARCH_DEBOUNCE_S = 0.15


def with_messages(shown: list[ThreadChoice], choices: list[ThreadChoice],
                  found: dict[str, list[Any]], query: str) -> list[ThreadChoice]:
    """The title matches, then the threads whose messages hold the words (newest match
    first), each with its count and the newest match's snippet."""
    from tui_agent.text import search_terms, snippet

    terms = search_terms(query)

    def noted(choice: ThreadChoice) -> ThreadChoice:
        hits = found.get(choice.thread_id)
        if not hits:
            return choice
        return replace(choice, found=len(hits), snippet=snippet(hits[0].text, terms, 60))

    listed = {c.thread_id for c in shown}
    by_id = {c.thread_id: c for c in choices}
    more = [by_id[t] for t in found if t in by_id and t not in listed]
    return [noted(c) for c in shown] + [noted(c) for c in more]


def parse_new_thread(query: str, default_resource: str) -> tuple[str, str] | None:
    """``resource/thread`` or ``thread`` typed in the search box, as a new thread's ids."""
    text = query.strip()
    if not text or " " in text:
        return None
    resource, sep, thread = text.rpartition("/")
    if sep and (not resource or not thread):
        return None
    return (resource or default_resource, thread)


class ThreadPicker(ModalScreen[ThreadChoice | None]):
    CSS_PATH = "thread_picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close", id="picker.close"),
        Binding("down", "cursor(1)", "Down", show=False, id="picker.down"),
        Binding("up", "cursor(-1)", "Up", show=False, id="picker.up"),
    ]

    def __init__(self, choices: list[ThreadChoice], default_resource: str, *,
                 search: Callable[[str], Awaitable[dict[str, list[Any]]]] | None = None,
                 load: Callable[[], Awaitable[list[ThreadChoice]]] | None = None,
                 ) -> None:
        """``load``: the choices, read once the picker is up (it opens at once, so what is
        typed right behind the key that opened it lands in its search field)."""
        super().__init__()
        self.choices = choices
        self.load = load
        self.default_resource = default_resource
        self.search = search
        self.shown: list[ThreadChoice] = []
        self._found: dict[str, list[Any]] = {}  # the message search of the query shown
        self._timer: Any = None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static("Open a thread", id="picker-title")
            yield Input(placeholder="search title, resource/thread… or type resource/thread "
                        "for a new one", id="picker-search")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        self._fill("")
        focus_now(self.query_one(Input))  # before the keys typed ahead are handled
        if self.load is not None:
            self._load()

    @work(exclusive=True, group="picker-load")
    async def _load(self) -> None:
        assert self.load is not None
        try:
            choices = await self.load()
        except Exception as error:  # the store unreadable: say so, a new thread still opens
            self.notify(f"the threads could not be read: {error}", severity="error")
            return
        if self.is_attached:  # not picked (or closed) meanwhile
            self.choices = choices
            self._fill(self.query_one(Input).value)

    def on_key(self, event: events.Key) -> None:
        typed_into_field(self, event)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._found = {}
        self._fill(event.value)
        if self.search is not None:
            if self._timer is not None:
                self._timer.stop()
            self._timer = self.set_timer(SEARCH_DEBOUNCE_S, lambda: self._search(event.value))

    @work(exclusive=True, group="picker-search")
    async def _search(self, query: str) -> None:
        self._timer = None
        if self.search is None or not query.strip():
            return
        found = await self.search(query)
        if query == self.query_one(Input).value:  # still what is typed
            self._found = found
            self._fill(query)

    def _fill(self, query: str) -> None:
        shown = with_messages(rank(self.choices, query), self.choices, self._found, query)
        new = parse_new_thread(query, self.default_resource)
        known = {(c.resource_id, c.thread_id) for c in self.choices}
        if new is not None and new not in known:  # below the matches, if there are any
            shown.append(ThreadChoice(new[0], new[1], new=True))
        self.shown = shown
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(_row(c)) for c in shown])
        if shown:
            options.highlighted = 0

    def action_cursor(self, step: int) -> None:
        options = self.query_one(OptionList)
        if self.shown:
            current = options.highlighted or 0
            options.highlighted = max(0, min(len(self.shown) - 1, current + step))

    def on_input_submitted(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is not None and index < len(self.shown):
            self.dismiss(self.shown[index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.shown[event.option_index])


def _row(choice: ThreadChoice) -> Content:
    if choice.new:
        return Content.assemble(("＋ new thread ", "bold $text-success"),
                                f"{choice.resource_id}/{choice.thread_id}")
    live = ("● live ", "$text-success") if choice.live else ("  ", "")
    when = choice.updated_at.astimezone().strftime("%b %d %H:%M") if choice.updated_at else ""
    row = Content.assemble(
        live, (choice.title or choice.thread_id, "bold"), "  ",
        (f"{choice.resource_id}/{choice.thread_id}", "$text-muted"), "  ",
        (f"{choice.messages} {'msg' if choice.messages == 1 else 'msgs'} · {when}",
         "$text-muted"),
    )
    if not choice.found:
        return row
    return Content.assemble(row, "\n    ", (f"{choice.found} found: ", "$text-accent"),
                            (choice.snippet, "italic"))

"""Pick a thread to open: fuzzy search over title, resource and thread id, newest first, with
message counts and whether a run is live — or start a new thread."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option


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

    def __init__(self, choices: list[ThreadChoice], default_resource: str) -> None:
        super().__init__()
        self.choices = choices
        self.default_resource = default_resource
        self.shown: list[ThreadChoice] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static("Open a thread", id="picker-title")
            yield Input(placeholder="search title, resource/thread… or type resource/thread "
                        "for a new one", id="picker-search")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def _fill(self, query: str) -> None:
        shown = rank(self.choices, query)
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
    return Content.assemble(
        live, (choice.title or choice.thread_id, "bold"), "  ",
        (f"{choice.resource_id}/{choice.thread_id}", "$text-muted"), "  ",
        (f"{choice.messages} {'msg' if choice.messages == 1 else 'msgs'} · {when}",
         "$text-muted"),
    )

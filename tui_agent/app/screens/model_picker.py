"""Pick the model of a pane's thread: the local model, the settings file's model strings, or
any litellm model string typed in (``provider/model``). Kept with the thread, in the store, so
every terminal's runs on it use it (tests/app/test_thread_model.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from tui_agent.app.focus import focus_now, typed_into_field

NOTES = {"local/": "offline, no key, free"}


class ModelPicker(ModalScreen[str | None]):
    """Dismissed with the chosen model string, or None (escape). ``check(text)`` says why a
    typed string is not a model string (None: it is one)."""

    CSS_PATH = "model_picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close", id="model.close"),
        Binding("down", "cursor(1)", "Down", show=False, id="model.down"),
        Binding("up", "cursor(-1)", "Up", show=False, id="model.up"),
    ]

    def __init__(self, thread: str, current: str, choices: list[str],
                 check: Callable[[str], str | None]) -> None:
        super().__init__()
        self.thread = thread
        self.current = current
        self.choices = choices
        self.check = check
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="model-picker"):
            yield Static(Content.assemble(("Model of ", "bold"), (self.thread, "bold $accent")),
                         id="model-title")
            yield Input(placeholder="filter, or type any litellm model: provider/model",
                        id="model-search")
            yield OptionList(id="model-list")
            yield Static("", id="model-error", markup=False)

    def on_mount(self) -> None:
        self._fill("")
        focus_now(self.query_one(Input))  # before the keys typed ahead are handled

    def on_key(self, event: events.Key) -> None:
        typed_into_field(self, event)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#model-error", Static).update("")
        self._fill(event.value)

    def _fill(self, query: str) -> None:
        text = query.strip()
        shown = [c for c in self.choices if text.lower() in c.lower()]
        if text and text not in shown:
            shown.append(text)  # what was typed, as a model string of its own
        self.shown = shown
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options([Option(self._row(c, typed=c not in self.choices)) for c in shown])
        if shown:
            options.highlighted = shown.index(self.current) if self.current in shown else 0

    def _row(self, model: str, *, typed: bool) -> Content:
        mark = ("● ", "$text-success") if model == self.current else ("  ", "")
        note = next((n for prefix, n in NOTES.items() if model.startswith(prefix)), "")
        if typed:
            note = "typed: any litellm model string"
        return Content.assemble(mark, (model, "bold"), ("  " + note if note else "",
                                                         "$text-muted"))

    def action_cursor(self, step: int) -> None:
        options = self.query_one(OptionList)
        if self.shown:
            current = options.highlighted or 0
            options.highlighted = max(0, min(len(self.shown) - 1, current + step))

    def on_input_submitted(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is not None and index < len(self.shown):
            self._choose(self.shown[index])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._choose(self.shown[event.option_index])

    def _choose(self, model: str) -> None:
        problem = self.check(model)
        if problem is not None:
            self.query_one("#model-error", Static).update(f"✗ {problem}")
            return
        self.dismiss(model.strip())

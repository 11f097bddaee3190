"""A small form to send a notification or a state update into a thread by hand, to try the
delivery policy from the app (the command palette's "Send notification…" / "Send state…")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

PRIORITIES = ("low", "medium", "high", "urgent")


@dataclass
class SignalForm:
    """What the form gives back: ``kind`` "notification" (fields source, kind, priority,
    summary, dedupe_key) or "state" (lane, value as parsed JSON, delta)."""

    kind: str
    fields: dict[str, Any]


class SendSignalScreen(ModalScreen[SignalForm | None]):
    CSS_PATH = "send_signal.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel", id="send_signal.cancel"),
    ]

    def __init__(self, kind: str, thread: str) -> None:
        super().__init__()
        self.kind = kind
        self.thread = thread

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Static(f"Send a {self.kind} into {self.thread}", id="form-title")
            if self.kind == "notification":
                yield from _row("source", Input("ci", id="source"))
                yield from _row("kind", Input("build", id="kind"))
                yield from _row("priority", Select([(p, p) for p in PRIORITIES], value="high",
                                                   allow_blank=False, id="priority"))
                yield from _row("summary", Input(placeholder="what happened", id="summary"))
                yield from _row("dedupe key", Input(placeholder="optional", id="dedupe_key"))
            else:
                yield from _row("lane", Input("browser", id="lane"))
                yield from _row("value", Input('{"tabs": 3}', id="value"))
                yield from _row("mode", Select([("snapshot", "snapshot"), ("delta", "delta")],
                                               value="snapshot", allow_blank=False, id="mode"))
            yield Static("", id="form-error")
            with Horizontal(id="form-buttons"):
                yield Button("Send", variant="primary", id="send")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
        else:
            self._submit()

    def on_input_submitted(self) -> None:
        self._submit()

    def _submit(self) -> None:
        try:
            form = self._read()
        except ValueError as error:
            self.query_one("#form-error", Static).update(str(error))
            return
        self.dismiss(form)

    def _read(self) -> SignalForm:
        """The form's values, or ValueError naming the field that is wrong."""
        def text(field: str) -> str:
            return self.query_one(f"#{field}", Input).value.strip()

        if self.kind == "notification":
            fields: dict[str, Any] = {name: text(name) for name in ("source", "kind", "summary")}
            for name, value in fields.items():
                if not value:
                    raise ValueError(f"{name}: required")
            fields["priority"] = self.query_one("#priority", Select).value
            if text("dedupe_key"):
                fields["dedupe_key"] = text("dedupe_key")
            return SignalForm("notification", fields)
        if not text("lane"):
            raise ValueError("lane: required")
        try:
            value = json.loads(text("value"))
        except ValueError as error:
            raise ValueError(f"value: not JSON ({error})") from None
        delta = self.query_one("#mode", Select).value == "delta"
        return SignalForm("state", {"lane": text("lane"), "value": value, "delta": delta})


def _row(label: str, field: Any) -> ComposeResult:
    with Horizontal(classes="form-row"):
        yield Label(label, classes="form-label")
        yield field

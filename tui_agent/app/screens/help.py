"""f1: every binding of the app, by where it works, with its key (after the keymap) and its id
(the name the ``keymap`` setting uses to remap it). Checked by tests/app/test_key_bar.py."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

SCOPE_TITLES = {"main": "Panes and the app", "picker": "Thread picker",
                "confirm": "Confirmation", "inbox": "Inbox", "state": "State panel"}


def help_text(scopes: dict[str, list[Any]], key_of: Any) -> Content:
    """One section per scope: ``key  description  id`` a line, each binding once."""
    lines: list[Content] = []
    for scope, bindings in scopes.items():
        lines.append(Content.styled(SCOPE_TITLES.get(scope, scope), "bold $text-accent"))
        seen: set[str] = set()
        for binding in bindings:
            if not isinstance(binding, Binding) or not binding.id or binding.id in seen:
                continue
            seen.add(binding.id)
            lines.append(Content.assemble((f"  {key_of(binding):>12}", "bold"), "  ",
                                          f"{binding.description or binding.action:<24}",
                                          (f"  {binding.id}", "$text-muted")))
        lines.append(Content(""))
    lines.append(Content.styled("Remap a key in the settings file: [keymap] \"pane.abort\" = "
                                "\"f5\"   ·   f1 or escape closes this", "$text-muted"))
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
        & > VerticalScroll {
            width: 90; max-width: 100%; height: 90%;
            border: round $border; background: $surface; padding: 0 1;
        }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, text: Content) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="help-text")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)

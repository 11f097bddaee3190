"""The bottom line of key hints: one widget, repainted only when the keys it shows change.

Textual's ``Footer`` recomposes a widget per key on every focus change (≈ a dozen mounts and
restyles each time the focus moves between panes); this bar renders the same hints as one line
of text and skips the repaint when the shown keys are unchanged. It looks and behaves like the
footer: the focused widget's shown bindings first, one per action, disabled ones dimmed, the
command palette's key at the right; a click on a key presses it.
Checked by ``tests/app/test_key_bar.py`` and the app's snapshots.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.text import Text
from textual import events
from textual.screen import Screen
from textual.widget import Widget


class KeyHint(NamedTuple):
    key: str  # what a click presses
    display: str  # what the bar shows (after the keymap)
    description: str
    enabled: bool
    action: str = ""


PINNED = ("toggle_help", "quit")  # always shown, at the end: help lists whatever is left out


def short(description: str) -> str:
    """A label's first word: "Abort run" → "Abort", "Queue/now" → "Queue"."""
    return description.split()[0].split("/")[0] if description else description


class KeyBar(Widget, can_focus=False):
    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "key-bar--key", "key-bar--description", "key-bar--disabled"
    }
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        text-overflow: clip;
        .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-bar--disabled { text-style: dim; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hints: tuple[KeyHint, ...] = ()
        self.palette: KeyHint | None = None
        self._spans: list[tuple[int, int, KeyHint]] = []  # x range of each hint, for clicks

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is not self.screen:
            return
        hints, palette = self._read_hints(screen)
        if (hints, palette) != (self.hints, self.palette):
            self.hints, self.palette = hints, palette
            self.refresh()

    def _read_hints(self, screen: Screen[object]) -> tuple[tuple[KeyHint, ...], KeyHint | None]:
        app = self.app
        palette_key = app.COMMAND_PALETTE_BINDING if app.ENABLE_COMMAND_PALETTE else None
        hints: dict[str, KeyHint] = {}  # one per action: its first shown binding
        palette = None
        for key, active in screen.active_bindings.items():
            binding = active.binding
            hint = KeyHint(binding.key, app.get_key_display(binding), binding.description,
                           active.enabled, binding.action)
            if key == palette_key:
                palette = hint
            elif binding.show and binding.action not in hints:
                hints[binding.action] = hint
        return tuple(hints.values()), palette

    def fitted(self, width: int) -> tuple[list[KeyHint], bool]:
        """The hints that fit ``width`` cells: all with their labels if they fit, else with
        short labels, else the first ones that fit before help and quit (True: some were left
        out, and help says "more"). The bar is never cut in the middle of a hint."""
        pinned = [h for h in self.hints if h.action in PINNED]
        rest = [h for h in self.hints if h.action not in PINNED]
        for hints in (rest, [h._replace(description=short(h.description)) for h in rest]):
            if _width([*hints, *pinned]) <= width:
                return [*hints, *pinned], False
        kept: list[KeyHint] = []
        more = [h._replace(description="more") if h.action == "toggle_help" else h
                for h in pinned]
        for hint in hints:
            if _width([*kept, hint, *more]) > width:
                break
            kept.append(hint)
        return [*kept, *more], True

    def render(self) -> Text:
        key_style = self.get_component_rich_style("key-bar--key")
        text_style = self.get_component_rich_style("key-bar--description")
        dim = self.get_component_rich_style("key-bar--disabled")
        width = self.size.width
        tail = None
        if self.palette is not None:
            tail = Text.assemble("▏", (f" {self.palette.display} ", key_style),
                                 (f"{self.palette.description} ", text_style))
            if _width(list(self.hints)) + tail.cell_len > width:
                tail = None  # the palette's key gives way to the others (help lists it)
        hints, _ = self.fitted(width - (tail.cell_len if tail is not None else 0))
        line = Text(no_wrap=True, overflow="crop")
        self._spans = []
        for hint in hints:
            start = line.cell_len
            line.append(f" {hint.display} ", key_style if hint.enabled else key_style + dim)
            line.append(f"{hint.description} ", text_style if hint.enabled else text_style + dim)
            self._spans.append((start, line.cell_len, hint))
        if tail is not None and self.palette is not None:
            gap = max(1, width - line.cell_len - tail.cell_len)
            line.append(" " * gap)
            start = line.cell_len
            line.append_text(tail)
            self._spans.append((start, line.cell_len, self.palette))
        return line

    def hint_at(self, x: int) -> KeyHint | None:
        return next((hint for start, end, hint in self._spans if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        hint = self.hint_at(event.x)
        if hint is None:
            return
        if hint.enabled:
            self.app.simulate_key(hint.key)
        else:
            self.app.bell()


def _width(hints: list[KeyHint]) -> int:
    """Cells the hints take in the bar: `` key `` then ``description `` each."""
    return sum(len(h.display) + len(h.description) + 3 for h in hints)

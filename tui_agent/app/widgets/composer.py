"""A pane's composer: who you are (name, ``from``), what you send (message or typed signal),
and whether it joins the live run or is queued after it.

Multi-line, on Textual's ``TextArea``: a paste keeps every line, Enter sends, ``composer.newline``
(shift+enter where the terminal reports it; ctrl+j and alt+enter everywhere) starts a new line;
up on the first line and down on the last recall your earlier messages in the thread
(``composer_history``). It grows with its text up to a third of the pane, then scrolls.

Typed commands: ``/as NAME from=SOURCE k=v…`` sets who you are (remembered for this pane),
``/queue TEXT`` queues one message, ``/signal reactive|notification TEXT`` and ``/tag TAG TEXT``
send typed signals; anything else is a message as you.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.widgets import TextArea

from tui_agent.app.alt_enter import register_alt_enter
from tui_agent.app.composer_history import Recall, Sent, own_messages
from tui_agent.app.transcript import Entry

SIGNAL_TYPES = ("reactive", "notification")


class ComposerError(ValueError):
    """A command typed wrong: the message says how to write it."""


@dataclass
class Identity:
    name: str
    attributes: dict[str, str] = field(default_factory=dict)

    def as_attributes(self) -> dict[str, str]:
        return {"name": self.name, **self.attributes} if self.name else dict(self.attributes)

    def label(self) -> str:
        extra = " ".join(f"{k}={v}" for k, v in self.attributes.items())
        return f"{self.name or 'anonymous'}" + (f" {extra}" if extra else "")


@dataclass
class Parsed:
    """One line of the composer, understood."""

    text: str = ""
    queued: bool = False
    signal_type: str = "user"
    tag_name: str | None = None
    identity: Identity | None = None  # /as: the new identity, nothing to send


def parse_line(line: str, queue_mode: bool) -> Parsed:
    """Raise ComposerError with a usage line for a command typed wrong. The text may hold
    several lines: a command's words end at any space or line break, its text is kept whole."""
    if not line.startswith("/"):
        return Parsed(text=line, queued=queue_mode)
    command, rest = _first_word(line)
    if command == "/as":
        return Parsed(identity=_identity(rest))
    if command == "/queue":
        _need(rest, "/queue TEXT")
        return Parsed(text=rest, queued=True)
    if command == "/signal":
        kind, text = _first_word(rest)
        if kind not in SIGNAL_TYPES or not text:
            raise ComposerError("usage: /signal reactive|notification TEXT")
        return Parsed(text=text, signal_type=kind)
    if command == "/tag":
        tag, text = _first_word(rest)
        _need(tag and text, "/tag TAG TEXT")
        return Parsed(text=text, signal_type="reactive", tag_name=tag)
    raise ComposerError(f"unknown command {command}: /as, /queue, /signal, /tag")


def _first_word(text: str) -> tuple[str, str]:
    """The first word and the rest, both stripped (the rest keeps its inner line breaks)."""
    words = text.split(maxsplit=1)
    return (words[0] if words else ""), (words[1].strip() if len(words) > 1 else "")


def _identity(rest: str) -> Identity:
    try:
        words = shlex.split(rest)
    except ValueError as error:
        raise ComposerError(f"/as: {error}") from None
    if not words or "=" in words[0]:
        raise ComposerError("usage: /as NAME [from=SOURCE] [key=value …]")
    attributes: dict[str, str] = {}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ComposerError(f"/as: {word!r} is not key=value (e.g. from=slack)")
        attributes[key] = value
    return Identity(words[0], attributes)


def _need(value: object, usage: str) -> None:
    if not value:
        raise ComposerError(f"usage: {usage}")


# What the composer does in turn with the typed keys (see ``Composer._on_key``).
SEQUENCED_ACTIONS = frozenset({"submit", "newline"})
# TextArea keys the pane and the app use: theirs win (scrolling, next pane, copy the answer).
TAKEN_KEYS = frozenset({"pageup", "pagedown", "f6", "ctrl+y"})


def editing_bindings() -> list[Binding]:
    """TextArea's editing bindings, less the keys in ``TAKEN_KEYS``."""
    kept: list[Binding] = []
    for binding in TextArea.BINDINGS:
        if not isinstance(binding, Binding):
            continue
        keys = [key for key in binding.key.split(",") if key.strip() not in TAKEN_KEYS]
        if keys:
            kept.append(replace(binding, key=",".join(keys)))
    return kept


class Composer(TextArea, inherit_bindings=False):
    """Enter sends the text whole (every line); ``ctrl+t`` toggles send-now / queue for plain
    messages. Tested in tests/app/test_composer.py."""

    DEFAULT_CSS = """
    Composer {
        height: auto;
        padding: 0 2;
        border: tall $border-blurred;
        &:focus { border: tall $border; background-tint: $foreground 5%; }
        & .text-area--placeholder { color: $text-disabled; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        *editing_bindings(),
        Binding("enter", "submit", "Send", show=False, id="composer.submit"),
        Binding("shift+enter,ctrl+j,alt+enter", "newline", "New line", show=False,
                id="composer.newline"),
        Binding("ctrl+t", "toggle_queue", "Queue/now", id="composer.toggle_queue"),
    ]

    # Replaces Input.Submitted on purpose: the pane gets the parsed line (on_composer_submitted),
    # never Input's raw value.
    class Submitted(Message):  # pyright: ignore[reportIncompatibleVariableOverride]
        def __init__(self, composer: Composer, parsed: Parsed) -> None:
            super().__init__()
            self.composer = composer
            self.parsed = parsed

    class Invalid(Message):
        def __init__(self, error: str) -> None:
            super().__init__()
            self.error = error

    def __init__(self, identity: Identity, *,
                 entries: Callable[[], Sequence[Entry]] = tuple, id: str | None = None) -> None:
        """``entries``: the pane's transcript now (where up/down find your earlier messages)."""
        super().__init__(id=id, soft_wrap=True, tab_behavior="focus")
        self.highlight_cursor_line = False
        self.identity = identity
        self.queue_mode = False
        self.cursor_blink = False  # a steady cursor: an idle app paints nothing
        self._entries = entries
        self._recall = Recall()
        self._sent: list[Sent] = []  # sent, not in the transcript yet
        self._show_mode()

    def on_mount(self) -> None:
        register_alt_enter()  # else ESC CR arrives as Enter, and sends

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        """As tall as the text, up to a third of the pane with the border (then it scrolls);
        one line at least, however small the pane."""
        lines = super().get_content_height(container, viewport, width)
        return max(1, min(lines, container.height // 3 - self.styles.gutter.height))

    @property
    def value(self) -> str:
        """The text, lines joined by "\\n" (whatever line breaks a paste brought)."""
        return "\n".join(self.document.lines)

    @value.setter
    def value(self, text: str) -> None:
        """Replace the text; the cursor goes to its end."""
        self.load_text(text)
        self.move_cursor(self.document.end)

    def _show_mode(self) -> None:
        mode = "queue after the live run" if self.queue_mode else "send"
        self.placeholder = f"as {self.identity.label()} · Enter: {mode} · /as NAME from=…"
        self.border_title = "queue" if self.queue_mode else None

    def action_toggle_queue(self) -> None:
        self.queue_mode = not self.queue_mode
        self._show_mode()

    def action_newline(self) -> None:
        self.insert("\n")

    async def _on_key(self, event: events.Key) -> None:
        """Send and new line act here, in turn with the keys typed around them: as bindings
        they would run once the key had bubbled up to the app, after the keys typed next
        (tmux, a fast typist), and TextArea would make Enter a new line first."""
        action = self._own_action(event.key)
        if action is None:
            await super()._on_key(event)
            return
        event.stop()
        event.prevent_default()
        await self.run_action(action)

    def _own_action(self, key: str) -> str | None:
        """The composer's action on ``key`` now (the keymap applied), if send or new line."""
        active = self.screen.active_bindings.get(key)
        if active is None or active.node is not self:
            return None
        action = active.binding.action
        return action if action in SEQUENCED_ACTIONS else None

    # -- history -------------------------------------------------------------------------------

    def action_cursor_up(self, select: bool = False) -> None:
        """On the first line (as shown, wrapped), recall the message before."""
        if not select and self.selection.is_empty and self._on_first_row():
            recalled = self._recall.older(self.value, self._own_messages)
            if recalled is not None:
                self.value = recalled
                return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        """On the last line, the message after (past the newest: what you were typing)."""
        if not select and self.selection.is_empty and self._on_last_row():
            recalled = self._recall.newer()
            if recalled is not None:
                self.value = recalled
                return
        super().action_cursor_down(select)

    def _on_first_row(self) -> bool:
        return self.wrapped_document.location_to_offset(self.cursor_location).y == 0

    def _on_last_row(self) -> bool:
        row = self.wrapped_document.location_to_offset(self.cursor_location).y
        return row >= self.wrapped_document.height - 1

    def _own_messages(self) -> list[str]:
        who = (self.identity.name, self.identity.attributes.get("from", ""))
        texts, self._sent = own_messages(self._entries(), who, self._sent)
        return texts

    # -- sending -------------------------------------------------------------------------------

    async def action_submit(self) -> None:
        text = self.value.strip()
        if not text:
            return
        try:
            parsed = parse_line(text, self.queue_mode)
        except ComposerError as error:
            self.post_message(self.Invalid(str(error)))
            return
        self.clear()
        self._recall.reset()
        if parsed.identity is not None:
            self.identity = parsed.identity
            self._show_mode()
            return
        if parsed.signal_type == "user":
            self._own_messages()  # drops the sends shown since: the list stays short
            entries = self._entries()
            self._sent.append(Sent(parsed.text, entries[-1] if entries else None))
        self.post_message(self.Submitted(self, parsed))

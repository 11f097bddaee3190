"""A pane's composer: who you are (name, ``from``), what you send (message or typed signal),
and whether it joins the live run or is queued after it.

Typed commands: ``/as NAME from=SOURCE k=v…`` sets who you are (remembered for this pane),
``/queue TEXT`` queues one message, ``/signal reactive|notification TEXT`` and ``/tag TAG TEXT``
send typed signals; anything else is a message as you.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

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
    """Raise ComposerError with a usage line for a command typed wrong."""
    if not line.startswith("/"):
        return Parsed(text=line, queued=queue_mode)
    command, _, rest = line.partition(" ")
    rest = rest.strip()
    if command == "/as":
        return Parsed(identity=_identity(rest))
    if command == "/queue":
        _need(rest, "/queue TEXT")
        return Parsed(text=rest, queued=True)
    if command == "/signal":
        kind, _, text = rest.partition(" ")
        if kind not in SIGNAL_TYPES or not text.strip():
            raise ComposerError("usage: /signal reactive|notification TEXT")
        return Parsed(text=text.strip(), signal_type=kind)
    if command == "/tag":
        tag, _, text = rest.partition(" ")
        _need(tag and text.strip(), "/tag TAG TEXT")
        return Parsed(text=text.strip(), signal_type="reactive", tag_name=tag)
    raise ComposerError(f"unknown command {command}: /as, /queue, /signal, /tag")


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


class Composer(Input):
    """Enter sends; ``ctrl+t`` toggles send-now / queue for plain lines."""

    DEFAULT_CSS = """
    Composer {
        height: 3;
        border: tall $border-blurred;
        &:focus { border: tall $border; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
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

    def __init__(self, identity: Identity, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.identity = identity
        self.queue_mode = False
        self.cursor_blink = False  # a steady cursor: an idle app paints nothing
        self._show_mode()

    def _show_mode(self) -> None:
        mode = "queue after the live run" if self.queue_mode else "send"
        self.placeholder = f"as {self.identity.label()} · Enter: {mode} · /as NAME from=…"
        self.border_title = "queue" if self.queue_mode else None

    def action_toggle_queue(self) -> None:
        self.queue_mode = not self.queue_mode
        self._show_mode()

    async def action_submit(self) -> None:
        line = self.value.strip()
        if not line:
            return
        try:
            parsed = parse_line(line, self.queue_mode)
        except ComposerError as error:
            self.post_message(self.Invalid(str(error)))
            return
        self.value = ""
        if parsed.identity is not None:
            self.identity = parsed.identity
            self._show_mode()
            return
        self.post_message(self.Submitted(self, parsed))

"""What the CLI's commands share beyond the start-up (``tui_agent.startup``): a message's shape."""

from __future__ import annotations

from typing import Any


def message_of(text: str, attributes: dict[str, str]) -> Any:
    return {"contents": text, "attributes": attributes} if attributes else text

"""Copy text to the system clipboard where there is one, else through the terminal (OSC 52).

Returns how it was copied, so the toast can say whether it worked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

# Tried in order; the first whose program exists (and whose display is set) is used.
_TOOLS: tuple[tuple[str, list[str], str | None], ...] = (
    ("pbcopy", ["pbcopy"], None),
    ("wl-copy", ["wl-copy"], "WAYLAND_DISPLAY"),
    ("xclip", ["xclip", "-selection", "clipboard"], "DISPLAY"),
    ("xsel", ["xsel", "--clipboard", "--input"], "DISPLAY"),
)


def system_clipboard() -> list[str] | None:
    for program, argv, needs in _TOOLS:
        if shutil.which(program) and (needs is None or os.environ.get(needs)):
            return argv
    return None


def copy_text(text: str, osc52: Callable[[str], None]) -> str:
    """Copy ``text``; returns "system clipboard" or "terminal clipboard (OSC 52)" — and, where
    the terminal is known to refuse OSC 52, says so and where the text was saved instead (so
    nothing copied is lost: tests/app/test_message_actions.py)."""
    argv = system_clipboard()
    if argv is not None:
        try:
            subprocess.run(argv, input=text.encode(), check=True, timeout=2,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return "system clipboard"
        except (OSError, subprocess.SubprocessError):
            pass  # fall back to the terminal
    osc52(text)
    refusal = osc52_refusal()
    if refusal is None:
        return "terminal clipboard (OSC 52)"
    saved = save_copy(text)
    return (f"terminal clipboard (OSC 52), which {refusal}: the text is also in {saved}")


def osc52_refusal() -> str | None:
    """Why this terminal will not take an OSC 52 copy, if it is known not to: the Linux
    console and dumb terminals have no clipboard; tmux passes OSC 52 on only with
    ``set-clipboard`` on (it is "external" by default: kept in tmux's own buffer)."""
    term = os.environ.get("TERM", "")
    if term in ("", "dumb", "linux"):
        return f"this terminal ({term or 'no TERM'}) does not support"
    if os.environ.get("TMUX") and _tmux_option("set-clipboard") == "off":
        return "tmux drops (set -g set-clipboard on passes it on)"
    return None


def _tmux_option(name: str) -> str | None:
    try:
        found = subprocess.run(["tmux", "show-options", "-gv", name], capture_output=True,
                               text=True, timeout=1, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip()


def save_copy(text: str) -> Path:
    """Keep a copy the terminal refused in ``$XDG_STATE_HOME/tui-agent/clipboard.txt``
    (only you can read it)."""
    from tui_agent.paths import state_dir

    path = state_dir() / "clipboard.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    return path

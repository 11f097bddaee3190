"""Copy text to the system clipboard where there is one, else through the terminal (OSC 52).

Returns how it was copied, so the toast can say whether it worked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable

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
    """Copy ``text``; returns "system clipboard" or "terminal clipboard (OSC 52)"."""
    argv = system_clipboard()
    if argv is not None:
        try:
            subprocess.run(argv, input=text.encode(), check=True, timeout=2,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return "system clipboard"
        except (OSError, subprocess.SubprocessError):
            pass  # fall back to the terminal
    osc52(text)
    return "terminal clipboard (OSC 52)"

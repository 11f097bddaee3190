"""When the app dies of a bug, say so: its traceback goes to a crash file in the state folder
(``$XDG_STATE_HOME/tui-agent/``) and the process exits with status 1, never 0.

The file has the traceback without local variables and with anything credential-shaped
redacted (the screen and the files never show a key). Checked by tests/app/test_crash.py.
"""

from __future__ import annotations

import os
import platform
import time
import traceback
from pathlib import Path

EXIT_CRASHED = 1


def write_crash_report(error: BaseException, folder: Path | None = None) -> Path:
    """Write ``error``'s traceback to a new file in ``folder`` (the state folder); its path."""
    from tui_agent.app.bridge import redact_secrets
    from tui_agent.paths import state_dir

    folder = folder or state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"crash-{stamp}-{os.getpid()}.txt"
    lines = traceback.format_exception(error)
    head = (f"tui-agent crashed at {time.strftime('%Y-%m-%d %H:%M:%S %z')}\n"
            f"python {platform.python_version()} on {platform.platform()}\n\n")
    path.write_text(redact_secrets(head + "".join(lines)), encoding="utf-8")
    return path


def crash_line(error: BaseException, path: Path) -> str:
    """The one line the terminal gets once the app's screen is gone (redacted too)."""
    from tui_agent.app.bridge import redact_secrets

    what = redact_secrets(f"{type(error).__name__}: {error}")
    return f"tui-agent crashed ({what}); the traceback is in {path}"

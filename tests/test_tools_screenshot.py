"""``tools/screenshot.py`` (the README's screenshot, moved out of the package) still renders the
real app's scripted scene."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(180)
def test_the_screenshot_tool_renders_the_scene(tmp_path: Path) -> None:
    out = tmp_path / "app.svg"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "screenshot.py"), str(out)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stderr
    svg = out.read_text(encoding="utf-8")
    assert "Demo:&#160;release&#160;day" in svg and "Daily&#160;stand-up" in svg

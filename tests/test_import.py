"""``import tui_agent`` stays light: it imports neither litellm nor textual (seconds each), nor
the direct model path's httpx-sse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("litellm", "textual", "httpx_sse")


def loaded_after(code: str) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; report which heavy modules it left in sys.modules."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_tui_agent_is_light() -> None:
    assert loaded_after("import tui_agent") == {"litellm": False, "textual": False,
                                                 "httpx_sse": False}


def test_model_modules_are_light_until_used() -> None:
    code = ("import tui_agent.models.resolve as r, tui_agent.models.litellm_model as m\n"
            "r.validate_model_spec(['openai/gpt-4o', {'id': 'anthropic/claude'}])\n"
            "r.resolve_model('openai/gpt-4o')\n"
            "r.resolve_model('groq/llama')")
    assert loaded_after(code) == {"litellm": False, "textual": False, "httpx_sse": False}


def test_agent_access_and_construction_are_light() -> None:
    code = ("import tui_agent\n"
            "tui_agent.Agent(name='a', instructions='x', model=['openai/gpt-4o', 'groq/llama'])")
    assert loaded_after(code) == {"litellm": False, "textual": False, "httpx_sse": False}


def test_no_core_module_imports_textual() -> None:
    """The core never imports the UI: every module of the package (the future Textual app,
    ``tui_agent.app``, and ``__main__`` entry points, which run on import, excepted) is
    imported and textual must still be absent."""
    code = (
        "import importlib, pkgutil, tui_agent\n"
        "for info in pkgutil.walk_packages(tui_agent.__path__, 'tui_agent.'):\n"
        "    app = info.name == 'tui_agent.app' or info.name.startswith('tui_agent.app.')\n"
        "    if not app and not info.name.endswith('.__main__'):\n"
        "        importlib.import_module(info.name)\n"
    )
    assert loaded_after(code)["textual"] is False

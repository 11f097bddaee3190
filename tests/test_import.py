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


def test_every_public_name_loads_without_ui_or_litellm() -> None:
    """``from tui_agent import X`` works for every name of ``__all__`` (the agent, tools,
    memory, the stores, the errors, the test model, the event types), and none of them brings
    in litellm, textual or the direct path's httpx-sse."""
    code = "import tui_agent\nfor name in tui_agent.__all__:\n    getattr(tui_agent, name)"
    assert loaded_after(code) == {"litellm": False, "textual": False, "httpx_sse": False}


def test_the_public_surface_names_every_error_and_chunk_type() -> None:
    import inspect

    import tui_agent
    from tui_agent import errors, events

    public = set(tui_agent.__all__)
    error_classes = {name for name, value in inspect.getmembers(errors, inspect.isclass)
                     if issubclass(value, Exception) and value.__module__ == errors.__name__}
    chunk_types = {name for name in vars(events) if name.endswith("Chunk") and name[0] != "_"}
    assert error_classes <= public and chunk_types <= public
    assert {"Agent", "create_tool", "Memory", "open_store", "SqliteStore", "PostgresStore",
            "Store", "ScriptedModel", "Chunk"} <= public
    assert tui_agent.StoreError is errors.StoreError and tui_agent.Chunk is events.Chunk
    assert set(dir(tui_agent)) >= public

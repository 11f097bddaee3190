"""Every package that ``tui_agent`` imports is declared in pyproject.toml (a dependency, or an
extra for the optional ones), so a fresh ``pip install tui-agent`` has what the code needs."""

from __future__ import annotations

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tui_agent"


def imported_top_levels(package: Path = PACKAGE) -> set[str]:
    """The top-level names of every absolute import in the package (function-local ones too)."""
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return names - set(sys.stdlib_module_names) - {"tui_agent"}


def declared() -> set[str]:
    """The normalised names of tui-agent's requirements, extras included."""
    requirements = metadata.requires("tui-agent") or []
    return {normalise(re.split(r"[\s<>=!~;\[]", line, maxsplit=1)[0]) for line in requirements}


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_imported_package_is_declared() -> None:
    distributions = metadata.packages_distributions()
    undeclared = {
        module: distributions.get(module, ["?"])
        for module in imported_top_levels()
        if not {normalise(d) for d in distributions.get(module, [module])} & declared()
    }
    assert undeclared == {}


def test_the_check_sees_a_function_local_import(tmp_path: Path) -> None:
    (tmp_path / "late.py").write_text("def f():\n    import jsonschema.validators\n")
    (tmp_path / "rel.py").write_text("from . import sibling\nimport os\n")
    assert imported_top_levels(tmp_path) == {"jsonschema"}

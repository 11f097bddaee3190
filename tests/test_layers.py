"""The package's import layers: a module never imports one of a higher layer.

Every ``import`` in every module of ``tui_agent`` counts, wherever it is — at the top, inside a
function (the lazy imports that keep ``import tui_agent`` light) or under ``TYPE_CHECKING`` — so
no circle can hide behind a function-local import. Modules of one layer may import each other.
A new top-level module or package must be given a layer here.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tui_agent"

# Highest first. The root package is the lazy facade (``from tui_agent import Agent``).
LAYERS: list[tuple[str, ...]] = [
    ("tui_agent", "tui_agent.cli", "tui_agent.app", "tui_agent.demo"),
    ("tui_agent.agent",),
    ("tui_agent.memory", "tui_agent.state", "tui_agent.notifications"),
    # Signals sit above the store: the store keeps rows and renders nothing (issue 25).
    ("tui_agent.signals",),
    ("tui_agent.store",),
    ("tui_agent.models", "tui_agent.tools", "tui_agent.testing"),
    ("tui_agent.errors", "tui_agent._util", "tui_agent.context", "tui_agent.paths",
     "tui_agent.settings", "tui_agent.events"),
]


def layer_of(module: str) -> int:
    """The index of the layer ``module`` belongs to (its longest listed prefix)."""
    best, best_len = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or module.startswith(prefix + ".")
            if matches and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best >= 0, f"{module} has no layer: add it to LAYERS in {__file__}"
    return best


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(
    path: Path, module: str, *, type_checking: bool = True, submodules: bool = False
) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in the file of ``module``, anywhere in it (without those
    under ``if TYPE_CHECKING:`` unless ``type_checking``). With ``submodules``, ``from a import
    b`` also yields ``a.b`` (it is a module when ``a`` is a package)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    if not type_checking:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from its package, one level up per extra dot
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            yield node.lineno, source
            if submodules:
                yield from ((node.lineno, f"{source}.{alias.name}") for alias in node.names)


def violations(package: Path = PACKAGE) -> list[str]:
    """Every import of a higher layer in the package at ``package``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        own = layer_of(module)
        for line, target in imported(path, module):
            if target != "tui_agent" and not target.startswith("tui_agent."):
                continue
            if layer_of(target) < own:
                where = f"{path.relative_to(package.parent)}:{line}"
                found.append(f"{where}: {module} imports {target}, a higher layer")
    return found


def runtime_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → the package's modules it imports when it runs (TYPE_CHECKING ones left out)."""
    files = {module_name(path, package): path for path in package.rglob("*.py")}
    return {
        module: {t for _, t in imported(path, module, type_checking=False, submodules=True)
                 if t in files} - {module}
        for module, path in files.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Circles left on 2026-12-01, each outside this branch's files: settings ↔ paths and the store
# package ↔ its sqlite module (the store branch), a package __init__ re-exporting a module that
# imports a sibling through the package (notifications), and the CLI ↔ the app's entry point.
KNOWN_CYCLES = [
    {"tui_agent.paths", "tui_agent.settings"},
    {"tui_agent.notifications", "tui_agent.notifications.inbox"},
    {"tui_agent.app.main", "tui_agent.cli.main"},
]


def test_no_new_import_cycle() -> None:
    """Outside ``TYPE_CHECKING`` no module imports itself through others: the agent's modules
    import each other one way (the agent → router, subscription, runtime → run), type hints
    aside."""
    new = [cycle for cycle in cycles(runtime_graph()) if cycle not in KNOWN_CYCLES]
    assert new == []


def test_no_module_imports_a_higher_layer() -> None:
    assert violations() == []


def test_every_module_has_a_layer() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer_of(module_name(path))


def test_the_check_sees_function_local_and_relative_imports(tmp_path: Path) -> None:
    """A lower module importing a higher one inside a function body (the kind that used to hide
    a circle), or relatively, is reported with its line."""
    signals = tmp_path / "tui_agent" / "signals"
    signals.mkdir(parents=True)
    (signals / "__init__.py").write_text("from .data import x\n")
    (signals / "data.py").write_text(
        "import json\n\n\ndef later():\n    from tui_agent.agent.agent import Agent\n"
    )
    store = tmp_path / "tui_agent" / "store"
    store.mkdir()
    (store / "wrong.py").write_text("from ..signals import elements\n")
    assert violations(tmp_path / "tui_agent") == [
        "tui_agent/signals/data.py:5: tui_agent.signals.data imports tui_agent.agent.agent, "
        "a higher layer",
        "tui_agent/store/wrong.py:1: tui_agent.store.wrong imports tui_agent.signals, "
        "a higher layer",
    ]


def test_the_cycle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [{"a", "b", "c"}]


def test_the_store_renders_no_signal_itself() -> None:
    """The store keeps rows and renders nothing (issue 25): loaded alone it has no renderer for
    a stored signal, and says which layer renders one; once ``tui_agent.signals`` is loaded,
    the same data renders as that layer renders it."""
    script = (
        "import sys\n"
        "from tui_agent.errors import StoreError\n"
        "from tui_agent.store import records\n"
        "assert 'tui_agent.signals' not in sys.modules\n"
        "data = {'type': 'user', 'contents': '<b>', 'attributes': {}, 'provider_options': {}}\n"
        "try:\n"
        "    records.model_message_of(data)\n"
        "except StoreError as error:\n"
        "    print('refused:', error)\n"
        "import tui_agent.signals\n"
        "print('rendered:', records.model_message_of(data))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30, check=True)
    refused, rendered = done.stdout.splitlines()
    assert refused.startswith("refused: ") and "tui_agent.signals" in refused
    assert rendered == "rendered: {'role': 'user', 'content': '&lt;b>'}"

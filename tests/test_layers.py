"""The package's import layers hold: import-linter checks every contract in pyproject.toml
(``[tool.importlinter]``): the layers, no import cycles, the core below the front ends, the app
and the CLI apart, the app's one door to the core. Every import counts, wherever it is — at the
top, inside a function (the lazy imports that keep ``import tui_agent`` light) or under
``TYPE_CHECKING`` — so no circle can hide behind a function-local import.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# Contracts that hold only once the agent's branch of issue 25 lands: the store still renders
# signals (store/records.py imports signals/), the agent's modules still import each other in
# a ring under TYPE_CHECKING. Enable each (remove it here) when test_pending_... fails.
PENDING = {"store-keeps-rows", "agent-no-cycles"}


def contract_ids(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    return [contract["id"] for contract in config["tool"]["importlinter"]["contracts"]]


def lint_imports(*contracts: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    flags = [arg for contract in contracts for arg in ("--contract", contract)]
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", *flags], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(cwd), "PATH": ""})


def test_every_layer_contract_holds() -> None:
    enabled = [c for c in contract_ids() if c not in PENDING]
    done = lint_imports(*enabled)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(enabled)} kept, 0 broken." in done.stdout


@pytest.mark.parametrize("contract", sorted(PENDING))
def test_pending_contract_is_still_broken(contract: str) -> None:
    """A pending contract that holds must be enabled: this fails the day it does."""
    assert contract in contract_ids()
    done = lint_imports(contract)
    assert "BROKEN" in done.stdout, f"{contract} holds now: remove it from PENDING"


def test_the_check_sees_function_local_and_type_checking_imports(tmp_path: Path) -> None:
    """A lower module importing a higher one inside a function body (the kind that used to hide
    a circle) or under TYPE_CHECKING is reported with its line."""
    package = tmp_path / "layered"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("import layered.low\n")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from layered import high\n\n"
        "\ndef later():\n    from layered.high import x\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "layered"\n\n[[tool.importlinter.contracts]]\n'
        'id = "layers"\nname = "layers"\ntype = "layers"\nlayers = ["layered.high", '
        '"layered.low"]\n'
    )
    done = lint_imports("layers", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "layered.low -> layered.high (l.4, l.8)" in done.stdout

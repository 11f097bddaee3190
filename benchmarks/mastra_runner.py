"""Mastra's side of bench_signal_speed, measured on this machine in the same run (issue 22).

``measure(...)`` installs ``benchmarks/mastra``'s locked packages (``npm ci``, once: the
``node_modules`` it makes is kept and git-ignored), runs ``bench.mjs`` under a bound and parses
its one JSON line. Where Node or npm is missing, the install fails or the script fails or runs
late, it returns the figures of the issue's run instead, labelled as quoted with the reason, so
the benchmark still prints every row and never pretends a quote is a measurement.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent / "mastra"
# The run (Mastra 1.71, Node 20, in-process mock model): used only when Mastra cannot
# be measured here.
QUOTED_BURST = (52_389.0, 35_270.0)  # send_signal user / typed, accepted/s
QUOTED_WAKE_MS = 8.99  # idle thread sendMessage → first text delta, median
INSTALL_TIMEOUT_S = 600


@dataclass(frozen=True, slots=True)
class MastraFigures:
    burst_user: float  # accepted/s, median of the rounds
    burst_typed: float
    wake_ms: float  # median
    measured: bool  # False: the quoted figures (``source`` says why)
    source: str  # "Mastra 1.71.0 on Node v20…, LibSQLStore file", or the reason for a quote


def quoted(reason: str) -> MastraFigures:
    return MastraFigures(*QUOTED_BURST, QUOTED_WAKE_MS, measured=False,
                         source=f"quoted from the issue's run, not measured here: {reason}")


def measure(burst: int, rounds: int, wakes: int, timeout_s: float = 300.0) -> MastraFigures:
    """Mastra's burst rates and idle-wake median, measured now (or quoted, with the reason)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return quoted("node/npm not found on PATH")
    try:
        _install(npm)
        done = subprocess.run(
            [node, str(HERE / "bench.mjs"), "--burst", str(burst), "--rounds", str(rounds),
             "--wakes", str(wakes), "--timeout-s", str(int(timeout_s))],
            cwd=HERE, capture_output=True, text=True, timeout=timeout_s + 30)
    except (OSError, subprocess.SubprocessError) as error:
        return quoted(f"{type(error).__name__}: {error}")
    if done.returncode != 0:
        return quoted(f"bench.mjs exited {done.returncode}: {_last_line(done.stderr)}")
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
        setup = got["setup"]
        return MastraFigures(
            float(got["burst_user"]), float(got["burst_typed"]), float(got["wake_ms"]),
            measured=True,
            source=(f"Mastra {setup['versions']['@mastra/core']} on Node {setup['node']}, "
                    f"{setup['storage']}, {setup['model']}"))
    except (ValueError, KeyError, IndexError, TypeError) as error:
        return quoted(f"bench.mjs printed no figures ({error!r}): {_last_line(done.stdout)}")


def _install(npm: str) -> None:
    """``npm ci`` from the lock file, unless an install of that lock is already there."""
    marker = HERE / "node_modules" / ".package-lock.json"
    lock = HERE / "package-lock.json"
    if marker.exists() and marker.stat().st_mtime >= lock.stat().st_mtime:
        return
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                          capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    if done.returncode != 0:
        raise subprocess.SubprocessError(f"npm ci exited {done.returncode}: "
                                         f"{_last_line(done.stderr)}")


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"

"""Wall time of ``python -c "import tui_agent"`` (median of fresh subprocesses), goal <= 150 ms,
beside ``python -c "pass"`` (the interpreter alone) and ``python -c "import pydantic"`` measured
in the same run. ``from tui_agent import Agent`` (what a program really does; it loads pydantic
but still neither litellm nor textual) is shown too. Over the goal, ``-X importtime`` names the
slowest imports.

    .venv/bin/python benchmarks/bench_import.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 0.150
SNIPPETS = {
    "import tui_agent": "import tui_agent",
    "from tui_agent import Agent": "from tui_agent import Agent",
    "pass (interpreter)": "pass",
    "import pydantic": "import pydantic",
}


def wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=os.environ.copy())
    return time.perf_counter() - start


def medians(runs: int) -> dict[str, float]:
    """Interleaved runs, so load on the machine hits every snippet alike."""
    samples: dict[str, list[float]] = {name: [] for name in SNIPPETS}
    for _ in range(2):  # warm the OS file cache
        for code in SNIPPETS.values():
            wall(code)
    for _ in range(runs):
        for name, code in SNIPPETS.items():
            samples[name].append(wall(code))
    return {name: statistics.median(values) for name, values in samples.items()}


def heavy_modules() -> None:
    """The loaded modules that must never be (litellm, textual), checked in a fresh process."""
    code = ("import sys; from tui_agent import Agent; print(' '.join(m for m in"
            " ('litellm', 'textual', 'aiosqlite') if m in sys.modules) or 'none')")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT).stdout.strip()
    print(f"heavy modules loaded by `from tui_agent import Agent`: {out}")


def top_imports(limit: int = 15) -> None:
    """``-X importtime``: the slowest imports by cumulative time."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tui_agent"],
                            check=True, capture_output=True, text=True, cwd=ROOT)
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(f"slowest imports (cumulative µs, -X importtime), top {limit}:")
    for cumulative, name in sorted(rows, reverse=True)[:limit]:
        print(f"  {cumulative:>8}  {name}")


def main(runs: int) -> None:
    results = medians(runs)
    ours = results["import tui_agent"]
    bare = results["pass (interpreter)"]
    rows = [("figure", "goal", "median wall", "anchor (same run)", "ratio")]
    for name, seconds in results.items():
        is_ours = name == "import tui_agent"
        rows.append((
            name,
            "<= 150 ms" if is_ours else "-",
            f"{seconds * 1e3:.1f} ms",
            f"{bare * 1e3:.1f} ms (python -c pass)" if name != "pass (interpreter)" else "-",
            f"+{(seconds - bare) * 1e3:.1f} ms over the interpreter" if seconds != bare else "-",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    rows.insert(1, tuple("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    print(f"(median of {runs} fresh `{Path(sys.executable).name} -c` processes each)")
    heavy_modules()
    if ours > GOAL_S:
        top_imports()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--importtime", action="store_true", help="always list slow imports")
    args = parser.parse_args()
    main(args.runs)
    if args.importtime:
        top_imports()

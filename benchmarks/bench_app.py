"""The app's figures (issue: the Textual app), each beside an anchor measured in the same run.

1. ``paint``: time to first paint of the real ``tui-agent`` (``--no-warm``, a fresh ``--db``)
   in a real terminal (tmux, 200×50), beside a bare Textual app (one ``Static``) and beside
   ``python -c "import litellm"``. Goal: within 0.1 s of the bare app.
2. ``stream``: four panes, each streaming a long Markdown answer at 500 tokens/s (1 token = 4
   characters) for 20 s, in tmux, while keys are typed into the focused composer at a steady
   rate. The app runs from ``bench_app_runner.py`` (loop lag, CPU, ``TextArea.Changed`` times);
   this script sends the keys and polls the screen (what tmux shows) for each typed character
   and for the last words of each answer. Anchor: the same load on four of Textual's own
   ``Markdown`` widgets fed by ``Markdown.get_stream``. Goals: lag p95 ≤ 50 ms, max ≤ 150 ms;
   key → value p50 ≤ 20 ms, p95 ≤ 120 ms; key → painted p50 ≤ 100 ms, p95 ≤ 250 ms; CPU ≤ 70%
   of one core; every answer's last words on screen ≤ 250 ms after its stream's end.
3. ``long``: open a 10,000-message thread in the running app (headless): pane painted (its
   newest history laid out and drawn) ≤ 150 ms, RSS delta and mounted widgets as for a
   100-message thread. Anchor: one ``Static`` per message in a bare ``VerticalScroll``.
4. ``many``: after 200 streamed answers in one pane, its mounted widgets ≤ 250 and a forced
   relayout (``screen.refresh(layout=True)`` until a ``call_after_refresh`` callback) ≤ 15 ms.
   Anchor: the same relayout over 1,000 and 4,000 plain ``Static`` widgets.

Items 3 and 4 run headless, each case in a fresh process (clean RSS). The terminal is a tmux
server on a private socket, driven through one control-mode client (a capture costs ~0.3 ms,
not a fork); it is killed, and the temporary directories removed, however the run ends.

    .venv/bin/python benchmarks/bench_app.py [--only paint,stream,long,many] [--paint-runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import math
import os
import queue
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CLI = str(Path(PY).with_name("tui-agent"))
RUNNER = ROOT / "benchmarks" / "bench_app_runner.py"
SIZE = (200, 50)
RESOURCE = "bench"
BARE_APP = """\
import sys
from textual.app import App, ComposeResult
from textual.widgets import Static


class Bare(App[None]):
    def compose(self) -> ComposeResult:
        yield Static("hello " + sys.argv[1])


Bare().run()
"""

Row = tuple[str, str, str, str, str]  # figure, measured, anchor, goal, verdict
ROWS: list[Row] = []
KEEP: Path | None = None  # --keep DIR: copy the runner's reports there


def load(section: str) -> None:
    """The machine is shared: say how busy it was (1-minute load average, 2 cores)."""
    print(f"[{section}] load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def row(figure: str, measured: str, anchor: str, goal: str, ok: bool | None) -> None:
    verdict = "-" if ok is None else ("pass" if ok else "FAIL")
    ROWS.append((figure, measured, anchor, goal, verdict))


def ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds == float("inf"):
        return "never"
    return f"{seconds * 1e3:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank); ``inf`` stands for a sample that never arrived."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@contextlib.contextmanager
def temp_dir(prefix: str) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# -- a terminal: tmux on a private socket, driven through one control-mode client ------------


class Tmux:
    """A detached tmux session of ``SIZE``; ``cmd`` runs a tmux command through a persistent
    control-mode client and returns its output lines (bounded wait)."""

    def __init__(self) -> None:
        self.socket = f"bench_app_{os.getpid()}"
        self.base = ["tmux", "-L", self.socket, "-f", "/dev/null"]
        subprocess.run([*self.base, "new-session", "-d", "-s", "bench", "-x", str(SIZE[0]),
                        "-y", str(SIZE[1]), "sleep 100000"], check=True, timeout=10)
        self.proc: subprocess.Popen[bytes] | None = None
        self.socket_path: Path | None = None
        self.replies: queue.Queue[tuple[bool, list[str]]] = queue.Queue()
        try:
            for option in ("remain-on-exit on", "window-size manual"):
                subprocess.run([*self.base, "set-option", "-g", *option.split()], check=True,
                               timeout=10)
            self.proc = subprocess.Popen(
                [*self.base, "-C", "attach-session", "-t", "bench", "-f",
                 "ignore-size,no-output"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            threading.Thread(target=self._read, daemon=True).start()
            self.replies.get(timeout=10)  # the attach command's own (empty) reply
            self.socket_path = Path(self.cmd("display-message -p '#{socket_path}'")[0])
            self.cmd(f"resize-window -t bench -x {SIZE[0]} -y {SIZE[1]}")
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        lines: list[str] | None = None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("%begin"):
                lines = []
            elif line.startswith(("%end", "%error")) and lines is not None:
                self.replies.put((line.startswith("%end"), lines))
                lines = None
            elif lines is not None:
                lines.append(line)

    def cmd(self, command: str, timeout: float = 10.0) -> list[str]:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        ok, lines = self.replies.get(timeout=timeout)
        if not ok:
            raise RuntimeError(f"tmux {command!r}: {' '.join(lines)}")
        return lines

    def capture(self) -> str:
        return "\n".join(self.cmd("capture-pane -p -t bench"))

    def respawn(self, shell_command: str) -> None:
        if "'" in shell_command:
            raise ValueError("no single quotes in a pane command")
        self.cmd(f"respawn-pane -k -t bench '{shell_command}'")

    def dead(self) -> bool:
        return self.cmd("display-message -p -t bench '#{pane_dead}'") == ["1"]

    def keys(self, literal: str) -> None:
        self.cmd(f"send-keys -t bench -l {literal}")

    def idle(self) -> None:
        """Kill whatever runs in the pane (bounded)."""
        self.respawn("exec sleep 100000")

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.kill()
                self.proc.wait(timeout=5)
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=10)
        if self.socket_path is not None:  # kill-server leaves the socket file behind
            self.socket_path.unlink(missing_ok=True)


def in_pane(command: list[str], env: dict[str, str]) -> str:
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    return f"cd {shlex.quote(str(ROOT))} && exec env {assignments} {shlex.join(command)}"


# -- 1. first paint ----------------------------------------------------------------------------


def first_paint(tmux: Tmux, command: str, needles: list[str], timeout: float = 30.0,
                early: list[str] | None = None) -> float:
    """Seconds from spawning ``command`` in the pane until every needle is on screen (and, in
    ``first_paint.early_s``, until every ``early`` needle was: the first frame)."""
    start = time.monotonic()
    first_paint.early_s = None  # type: ignore[attr-defined]
    tmux.respawn(command)
    while True:
        screen = tmux.capture()
        now = time.monotonic()
        seen_early = early and all(n in screen for n in early)
        if seen_early and first_paint.early_s is None:  # type: ignore[attr-defined]
            first_paint.early_s = now - start  # type: ignore[attr-defined]
        if all(n in screen for n in needles):
            break
        if now - start > timeout:
            raise TimeoutError(f"nothing painted after {timeout} s; screen:\n{screen[:2000]}")
        time.sleep(0.002)
    tmux.cmd("send-keys -t bench C-q")
    deadline = time.monotonic() + 5
    while not tmux.dead() and time.monotonic() < deadline:
        time.sleep(0.02)
    tmux.idle()
    return now - start


def import_litellm() -> float:
    start = time.perf_counter()
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no network fetch
    subprocess.run([PY, "-c", "import litellm"], check=True, cwd=ROOT, timeout=60, env=env,
                   capture_output=True)
    return time.perf_counter() - start


STARTUP = """\
import sys, tempfile, time
t0 = time.perf_counter()
import textual.app
t1 = time.perf_counter()

async def stop(self, *args, **kwargs):  # the app would start here: report, do not run it
    print(f"{time.perf_counter() - t0:.3f} {t1 - t0:.3f}", flush=True)
    return 0

textual.app.App.run_async = stop
from tui_agent.main import main
main(["--no-warm", "--db", tempfile.mkdtemp() + "/s.sqlite"])
"""


def startup_phases(top: int = 8) -> None:
    """Where ``tui-agent``'s time goes before its app starts: the seconds until
    ``App.run_async`` is called, and the slowest imports on the way (``-X importtime``)."""
    result = subprocess.run([PY, "-X", "importtime", "-c", STARTUP], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    if result.returncode != 0 or not result.stdout.strip():
        print(f"[paint] startup phases failed: {result.stderr.strip()[-800:]}")
        return
    total, textual_s = map(float, result.stdout.split()[:2])
    rows = []
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].strip()
            if name.startswith("tui_agent") and "." in name:
                rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    slow = ", ".join(f"{name.strip()} {seconds:.2f} s"
                     for seconds, name in sorted(rows, reverse=True)[:top])
    print(f"[paint] tui-agent in-process: {total:.2f} s before App.run_async() is called "
          f"(import textual.app alone {textual_s:.2f} s); slowest tui_agent imports "
          f"(cumulative, nested): {slow}")


def bench_paint(tmux: Tmux, runs: int, litellm_runs: int) -> None:
    bare_s: list[float] = []
    app_s: list[float] = []
    frame_s: list[float] = []
    litellm_s: list[float] = []
    with temp_dir("bench_app_paint_") as tmp:
        bare = tmp / "bare.py"
        bare.write_text(BARE_APP)
        env = {"XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
               "COLORTERM": "truecolor"}
        for rep in range(runs + 1):  # the first round warms the OS file cache, not counted
            token = f"r{rep}x{os.getpid()}"
            bare_one = first_paint(tmux, in_pane([PY, str(bare), token], env), [f"hello {token}"])
            db = tmp / f"{token}.sqlite"
            app_one = first_paint(
                tmux, in_pane([CLI, "--no-warm", "--db", str(db)], env),
                [str(db), "palette", "Enter: send"], early=["palette"])
            if rep:
                bare_s.append(bare_one)
                app_s.append(app_one)
                frame_s.append(first_paint.early_s or app_one)  # type: ignore[attr-defined]
            if rep and rep <= litellm_runs:
                litellm_s.append(import_litellm())
    bare_m, app_m = statistics.median(bare_s), statistics.median(app_s)
    litellm_m = statistics.median(litellm_s) if litellm_s else None
    print(f"[paint] bare {[round(s, 3) for s in bare_s]}  tui-agent "
          f"{[round(s, 3) for s in app_s]}  import litellm {[round(s, 2) for s in litellm_s]}")
    frame_m = statistics.median(frame_s)
    row("first frame (bar + footer), tui-agent --no-warm", ms(frame_m),
        f"bare Textual {ms(bare_m)}", "<= bare + 100 ms", frame_m <= bare_m + 0.100)
    row("first pane usable (composer shown)", ms(app_m),
        f"bare Textual {ms(bare_m)}; import litellm {ms(litellm_m)}",
        "<= bare + 100 ms", app_m <= bare_m + 0.100)
    row("  first paint over the bare app", f"+{(app_m - bare_m) * 1e3:.0f} ms", "-",
        "<= 100 ms", None)
    if app_m > bare_m + 0.100:
        startup_phases()


# -- 2. four panes streaming -------------------------------------------------------------------


def wait_file(path: Path, timeout: float, tmux: Tmux) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline or tmux.dead():
            raise TimeoutError(f"no {path.name} after {timeout} s; the pane shows:\n"
                               + tmux.capture()[-3000:])
        time.sleep(0.02)
    return json.loads(path.read_text())


def stream_run(tmux: Tmux, mode: str, seconds: float, rate: float, keys_per_s: float,
               grace: float) -> dict[str, Any]:
    """One streaming session in the pane; returns the runner's report plus what was seen."""
    prefix = "qzxjv"
    rng = random.Random(7)
    with temp_dir(f"bench_app_stream_{mode}_") as tmp:
        env = {"XDG_CONFIG_HOME": str(tmp / "config"), "XDG_DATA_HOME": str(tmp / "data"),
               "COLORTERM": "truecolor"}
        command = [PY, str(RUNNER), "--mode", mode, "--dir", str(tmp), "--seconds",
                   str(seconds), "--rate", str(rate), "--prefix", prefix,
                   "--max-s", str(seconds * 3 + grace + 60)]
        tmux.respawn(in_pane(command, env))
        try:
            wait_file(tmp / "mounted.json", 60, tmux)
            tmux.keys(prefix)
            deadline = time.monotonic() + 20
            while prefix not in tmux.capture():
                if time.monotonic() > deadline:
                    raise TimeoutError("the typed prefix never showed")
                time.sleep(0.01)
            ready = wait_file(tmp / "ready.json", 30, tmux)
            return watch(tmux, tmp, ready, prefix, rng, seconds, keys_per_s, grace)
        finally:
            tmux.idle()


def watch(tmux: Tmux, tmp: Path, ready: dict[str, Any], prefix: str, rng: random.Random,
          seconds: float, keys_per_s: float, grace: float,
          report_bound: float = 20.0) -> dict[str, Any]:
    """Type at a steady rate while polling the screen: when each typed character shows, when
    each answer's last words show. Waits (bounded) for the runner's report."""
    start = float(ready["start"])
    markers: list[str] = ready["markers"]
    count = int((seconds + 1.0) * keys_per_s)
    body = "".join(rng.choice("abcdefghijklmnopqrstuvwxy") for _ in range(count))
    full = prefix + body
    sent: list[float] = []
    painted: list[float | None] = [None] * count
    seen: dict[int, float] = {}
    report: dict[str, Any] | None = None
    shown = 0  # typed characters known to be on screen
    first_key = start + 0.3
    deadline = start + seconds + report_bound  # a report may never come: the loop is stuck
    screen = ""
    while time.monotonic() < deadline:
        now = time.monotonic()
        if len(sent) < count and now >= first_key + len(sent) / keys_per_s:
            sent.append(time.monotonic())
            tmux.keys(body[len(sent) - 1])
            if len(sent) == count:
                (tmp / "typed.json").write_text(json.dumps({"count": count}))
        screen = tmux.capture()
        at = time.monotonic()
        for k in range(len(sent), shown, -1):
            if full[: len(prefix) + k][-10:] in screen:
                for j in range(shown, k):
                    painted[j] = at
                shown = k
                break
        for i, marker in enumerate(markers):
            if i not in seen and marker in screen:
                seen[i] = at
        if (report is None or not report["final"]) and (tmp / "report.json").exists():
            report = json.loads((tmp / "report.json").read_text())
            if "error" in report:
                raise RuntimeError(report["error"])
            deadline = min(deadline, max(float(report["end"]) + grace, first_key + seconds + 2))
        if report and report["final"] and len(seen) == len(markers) and shown == count:
            break
        wait = 0.004 if len(sent) >= count else first_key + len(sent) / keys_per_s - now
        time.sleep(min(0.004, max(0.0, wait)))
    else:
        state = "missing" if report is None else ("in" if report["final"] else "preliminary")
        print(f"[stream] {ready.get('mode', '?')}: stopped waiting (report {state}, {len(seen)}/"
              f"{len(markers)} answers' ends and {shown}/{count} keys on screen)")
    if report is None:
        report = {}
    if KEEP is not None:
        mode = ready.get("mode", "?")
        KEEP.mkdir(parents=True, exist_ok=True)
        (KEEP / f"screen-{mode}.txt").write_text(screen)
        if (tmp / "report.json").exists():
            shutil.copy(tmp / "report.json", KEEP / f"report-{mode}.json")
    report.update(sent=sent, painted=painted, seen=seen, bound_s=grace)
    return report


def stream_figures(report: dict[str, Any]) -> dict[str, Any]:
    """Summarise one run: lag, key → value, key → painted, CPU, answers' ends on screen."""
    sent: list[float] = report["sent"]
    inf = float("inf")
    out: dict[str, Any] = {"keys": len(sent)}
    painted = [(p - s) if p is not None else inf for p, s in zip(report["painted"], sent,
                                                                   strict=False)]
    out["painted"] = painted
    if "changes" in report:
        first: dict[int, float] = {}
        for t, length in report["changes"]:
            first.setdefault(int(length), float(t))
        base = len(report["prefix"])
        out["value"] = [first[base + i + 1] - s if base + i + 1 in first else inf
                        for i, s in enumerate(sent)]
        out["lag"] = report["lag"]
        window = float(report["end"]) - float(report["start"])
        out["window"] = window
        out["cpu"] = float(report["cpu_s"]) / window
        chars = report["chars"]
        out["rate"] = statistics.fmean(
            int(chars[k]) / 4 / (float(report["ends"].get(k, report["end"]))
                                 - float(report["starts"][k]))
            for k in report["starts"])
        out["widgets"] = report["widgets"]
        ends = report["ends"]
        out["ends"] = [max(0.0, report["seen"][i] - float(ends[str(i)]))
                       if i in report["seen"] and str(i) in ends else inf for i in range(4)]
        out["complete"] = report["complete"]
        out["trace"] = report.get("trace")
        out["worst_lag"] = report.get("worst_lag") or []
        out["gc_pauses"] = report.get("gc_pauses") or []
        out["reached"] = sum(map(int, chars.values()))
    return out


def bench_stream(tmux: Tmux, seconds: float, rate: float, keys_per_s: float) -> None:
    runs: dict[str, dict[str, Any]] = {}
    for mode, grace in (("app", 10.0), ("anchor", 10.0)):
        try:
            runs[mode] = stream_figures(stream_run(tmux, mode, seconds, rate, keys_per_s, grace))
        except Exception as error:  # one side failing still reports the other
            print(f"[stream] {mode}: {type(error).__name__}: {error}")
            runs[mode] = {}
    ours, anchor = runs["app"], runs["anchor"]
    for label, figures in (("tui-agent", ours), ("anchor", anchor)):
        if "window" in figures:
            print(f"[stream] {label}: window {figures['window']:.1f} s, "
                  f"{figures['rate']:.0f} tokens/s per stream"
                  f"{'' if figures['complete'] else ' (streams cut at the bound)'}, "
                  f"{figures['keys']} keys, "
                  f"{figures['widgets']} widgets mounted at the end, answers' ends on screen "
                  f"after {[ms(s) for s in figures['ends']]}")
            if figures.get("trace"):
                print("[stream] tui-agent, after each stream's end (n/a: not yet by the report)"
                      ": last words in the feed's transcript / its answer ended there / in the "
                      "MarkdownStream / stream finished: " + "; ".join(
                          " / ".join(ms(marks.get(k))
                                     for k in ("feed", "feed_done", "widget", "finished"))
                          for marks in figures["trace"].values()))
            if "gc_pauses" in figures:
                pauses = figures["gc_pauses"]
                worst = ", ".join(f"{ms(lag)} at {at:.1f} s"
                                  for lag, at in figures["worst_lag"][:4])
                print(f"[stream] {label}: worst lags {worst}; garbage-collector pauses >= 20 ms: "
                      f"{len(pauses)}, longest {ms(max((p[2] for p in pauses), default=0.0))} "
                      f"(generations {sorted({p[0] for p in pauses})})")

    def get(figures: dict[str, Any], key: str, q: float) -> float | None:
        values = figures.get(key)
        return pct(values, q) if values else None

    def cell(figures: dict[str, Any], key: str, q: float) -> str:
        value = get(figures, key, q)
        if value is None:
            return "n/a"
        missing = sum(v == float("inf") for v in figures[key])
        return ms(value) + (f" ({missing}/{len(figures[key])} never)" if missing else "")

    def check(key: str, q: float, goal: float) -> bool | None:
        value = get(ours, key, q)
        return None if value is None else value <= goal

    specs = [
        ("4×500 tok/s: event-loop lag p95", "lag", 0.95, 0.050),
        ("4×500 tok/s: event-loop lag max", "lag", 1.0, 0.150),
        ("4×500 tok/s: key → value p50", "value", 0.50, 0.020),
        ("4×500 tok/s: key → value p95", "value", 0.95, 0.120),
        ("4×500 tok/s: key → painted p50", "painted", 0.50, 0.100),
        ("4×500 tok/s: key → painted p95", "painted", 0.95, 0.250),
        ("4×500 tok/s: last words on screen (worst pane)", "ends", 1.0, 0.250),
    ]
    for figure, key, q, goal in specs:
        row(figure, cell(ours, key, q), "get_stream " + cell(anchor, key, q),
            f"<= {goal * 1e3:.0f} ms", check(key, q, goal))
    cpu = ours.get("cpu")
    starved = "rate" in ours and ours["rate"] < 0.9 * rate  # the pace fell behind: no CPU left
    row("4×500 tok/s: CPU, % of one core",
        "n/a" if cpu is None else f"{cpu * 100:.0f}%" + (" (starved)" if starved else ""),
        f"get_stream {anchor['cpu'] * 100:.0f}%" if "cpu" in anchor else "n/a", "<= 70%",
        None if cpu is None or starved else cpu <= 0.70)


# -- 3 and 4: headless, each case in a fresh process -------------------------------------------


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def message_text(k: int) -> str:
    return (f"Answer {k}: the **deploy** of build {k} is green; the canary holds.\n\n"
            f"- step one of {k}\n- step two\n\n```python\nprint({k})\n```\n")


async def fill_store(db: Path, threads: dict[str, int]) -> None:
    from tui_agent import Memory, SqliteStore

    store = SqliteStore(db)
    memory = Memory(store=store)
    try:
        for thread, count in threads.items():
            for first in range(0, count, 1000):
                batch = [{"role": "user", "content": f"question {k}"} if k % 2 == 0 else
                         {"role": "assistant", "content": message_text(k)}
                         for k in range(first, min(count, first + 1000))]
                await memory.save_messages(batch, thread_id=thread, resource_id=RESOURCE)
    finally:
        await store.close()


def make_app(db: Path, threads: list[tuple[str, str]], handler: Any = None) -> Any:
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.app.app import AppConfig, TuiAgentApp
    from tui_agent.app.widgets.composer import Identity
    from tui_agent.testing import ScriptedModel

    model = ScriptedModel(handler=handler or (lambda messages, tools: "ok"), chunk_size=4)
    agent = Agent(name="bench", instructions="Answer.", model=model,
                  memory=Memory(store=SqliteStore(db)))
    return TuiAgentApp(AppConfig(agent=agent, threads=threads, identity=Identity("zoe"),
                                 agent_label="bench", model_label="scripted",
                                 default_resource=RESOURCE, warm_model=False))


async def until(condition: Callable[[], bool], what: str, timeout: float,
                step: float = 0.001) -> float:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(step)
    return time.monotonic()


async def close_app(app: Any) -> None:
    agent = app.config.agent
    await agent.close(timeout=5)
    await agent.memory.store.close()


async def child_open(db: Path, thread: str, reps: int = 3) -> dict[str, Any]:
    """Open ``thread`` in a running app (after a warm-up pane on a small thread): seconds until
    its newest history is laid out and painted (median of ``reps`` opens, each pane closed
    after), RSS delta and widgets mounted (the first open)."""
    from tui_agent.app.widgets.transcript_view import TranscriptView

    app = make_app(db, [])
    out: dict[str, Any] = {}

    def painted(pane: Any) -> Callable[[], bool]:
        def check() -> bool:
            views = pane.query(TranscriptView)
            return bool(views) and bool(views.first().children) and \
                bool(views.first().children[-1].region)
        return check

    async with app.run_test(size=SIZE):
        pane = app.open_pane(RESOURCE, "warm")
        await until(painted(pane), "the warm-up pane", 30)
        await until(lambda: pane.drained, "the warm-up pane drained", 30)
        await app.action_close_pane()
        paints: list[float] = []
        for rep in range(reps):  # RSS and widgets from the first; the median paint
            await asyncio.sleep(0.2)
            gc.collect()
            before = rss()
            start = time.monotonic()
            pane = app.open_pane(RESOURCE, thread)
            paints.append(await until(painted(pane), "the pane painted", 30) - start)
            await until(lambda p=pane: p.drained, "the pane drained", 30)
            if rep == 0:
                await asyncio.sleep(0.2)
                gc.collect()
                out["rss"] = rss() - before
                out["widgets"] = len(list(pane.query("*")))
                out["entries"] = pane.transcript_view().widget_count()
            await app.action_close_pane()
        out["paint_s"] = statistics.median(paints)
        out["paints"] = paints
    await close_app(app)
    return out


async def child_statics(count: int) -> dict[str, Any]:
    """The anchor: one ``Static`` per message in a bare ``VerticalScroll``."""
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield VerticalScroll()

    app = Bare()
    out: dict[str, Any] = {}
    async with app.run_test(size=SIZE):
        scroll = app.query_one(VerticalScroll)
        await asyncio.sleep(0.1)
        gc.collect()
        before = rss()
        start = time.monotonic()
        widgets = [Static(message_text(k) if k % 2 else f"question {k}", markup=False)
                   for k in range(count)]
        await scroll.mount_all(widgets)
        out["paint_s"] = await until(lambda: bool(widgets[0].region), "painted", 120) - start
        await asyncio.sleep(0.2)
        gc.collect()
        out["rss"] = rss() - before
        out["widgets"] = len(list(app.screen.query("*")))
    return out


async def relayout(app: Any, reps: int = 20) -> dict[str, float]:
    """``screen.refresh(layout=True)`` until a ``call_after_refresh`` callback runs (median,
    max), and ``Screen._refresh_layout()`` alone, timed directly (median: what it costs)."""
    public: list[float] = []
    direct: list[float] = []
    for _ in range(reps):
        await asyncio.sleep(0.05)
        done = asyncio.Event()
        start = time.perf_counter()
        app.screen.refresh(layout=True)
        app.call_after_refresh(done.set)
        await asyncio.wait_for(done.wait(), 30)
        public.append(time.perf_counter() - start)
    for _ in range(reps):
        await asyncio.sleep(0.02)
        start = time.perf_counter()
        app.screen._refresh_layout()
        direct.append(time.perf_counter() - start)
    return {"median": statistics.median(public), "max": max(public),
            "direct": statistics.median(direct)}


async def child_many(db: Path, answers: int) -> dict[str, Any]:
    """One pane, ``answers`` streamed answers (Markdown, 4-character chunks), then count its
    widgets and time a forced relayout."""
    app = make_app(db, [(RESOURCE, "many")],
                   handler=lambda messages, tools: message_text(len(messages)) * 2)
    agent = app.config.agent
    out: dict[str, Any] = {}
    async with app.run_test(size=SIZE):
        pane = app.panes[0]
        await until(lambda: pane.feed.attached, "the pane attached", 30, 0.01)
        start = time.monotonic()
        for k in range(answers):
            receipt = agent.send_message(f"question {k}", resource_id=RESOURCE,
                                         thread_id="many")
            await asyncio.wait_for(receipt.accepted, 30)
            await asyncio.wait_for(agent.wait_for_local_runs(), 30)
        await until(lambda: pane.feed.active_run_id() is None and pane.drained,
                    "the pane drained", 30, 0.01)
        out["stream_s"] = time.monotonic() - start
        stored = await agent.memory.list_messages("many", limit=4 * answers)
        out["answers"] = sum(m.role == "assistant" for m in stored)
        out["widgets"] = len(list(pane.query("*")))
        out["screen_widgets"] = len(list(app.screen.query("*")))
        out.update(await relayout(app))
    await close_app(app)
    return out


async def child_relayout_statics(count: int) -> dict[str, Any]:
    from textual.app import App, ComposeResult
    from textual.containers import VerticalScroll
    from textual.widgets import Static

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            with VerticalScroll():
                for k in range(count):
                    yield Static(f"line {k}: the deploy of build {k} is green", markup=False)

    app = Bare()
    async with app.run_test(size=SIZE):
        await asyncio.sleep(0.3)
        out = await relayout(app)
        out["screen_widgets"] = len(list(app.screen.query("*")))
    return out


def child(kind: str, *args: str, timeout: float = 120.0) -> dict[str, Any]:
    """Run one headless case in a fresh process; its JSON result (bounded)."""
    result = subprocess.run([PY, __file__, "--child", kind, *args], cwd=ROOT, timeout=timeout,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"child {kind} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def bench_long(messages: int, small: int) -> None:
    with temp_dir("bench_app_long_") as tmp:
        db = tmp / "store.sqlite"
        start = time.monotonic()
        asyncio.run(fill_store(db, {"big": messages, "small": small, "warm": 6}))
        print(f"[long] stored {messages:,} + {small} + 6 messages in "
              f"{time.monotonic() - start:.1f} s")
        big = child("open", str(db), "big")
        little = child("open", str(db), "small")
    few = 2000
    anchor_few = child("statics", str(few))
    anchor_all: dict[str, Any] | None = None
    if anchor_few["paint_s"] * messages / few <= 15:  # else extrapolate (the time budget)
        try:
            anchor_all = child("statics", str(messages), timeout=60)
        except (subprocess.TimeoutExpired, RuntimeError) as error:
            print(f"[long] anchor with {messages:,} Statics: {type(error).__name__}")
    if anchor_all is not None:
        anchor = (f"{messages:,} Statics {ms(anchor_all['paint_s'])}, "
                  f"RSS +{anchor_all['rss'] / 2**20:.0f} MiB")
    else:
        scale = messages / few
        anchor = (f"{few:,} Statics {ms(anchor_few['paint_s'])} (×{scale:.0f} ≈ "
                  f"{ms(anchor_few['paint_s'] * scale)} extrapolated)")
    print(f"[long] {messages:,}: {big}; {small}: {little}; {few:,} Statics: {anchor_few}"
          + (f"; {messages:,} Statics: {anchor_all}" if anchor_all else ""))
    row(f"open a {messages:,}-message thread: painted", ms(big["paint_s"]),
        f"{small} messages {ms(little['paint_s'])}; {anchor}",
        "<= 150 ms", big["paint_s"] <= 0.150)
    row(f"  RSS delta, {messages:,} vs {small} messages",
        f"{big['rss'] / 2**20:+.1f} vs {little['rss'] / 2**20:+.1f} MiB",
        f"{few:,} Statics {anchor_few['rss'] / 2**20:+.1f} MiB", "the same (±2 MiB)",
        abs(big["rss"] - little["rss"]) <= 2 * 2**20)
    row(f"  widgets in the pane, {messages:,} vs {small}",
        f"{big['widgets']} vs {little['widgets']}",
        f"{(anchor_all or anchor_few)['widgets']:,} widgets", "the same",
        big["widgets"] == little["widgets"])


def bench_many(answers: int) -> None:
    with temp_dir("bench_app_many_") as tmp:
        ours = child("many", str(tmp / "store.sqlite"), str(answers), timeout=150)
    anchors = {n: child("relayout-statics", str(n)) for n in (1000, 4000)}
    print(f"[many] {ours['answers']} answers streamed in {ours['stream_s']:.1f} s; "
          f"pane {ours['widgets']} widgets, screen {ours['screen_widgets']}; relayout "
          f"median {ms(ours['median'])} max {ms(ours['max'])} (_refresh_layout alone "
          f"{ms(ours['direct'])}); anchors "
          + "; ".join(f"{n:,} Statics ({a['screen_widgets']:,} on screen): median "
                      f"{ms(a['median'])} max {ms(a['max'])} (alone {ms(a['direct'])})"
                      for n, a in anchors.items()))
    row(f"after {answers} answers: widgets in the pane", str(ours["widgets"]), "-",
        "<= 250", ours["widgets"] <= 250)
    row(f"after {answers} answers: forced relayout (median)", ms(ours["median"]),
        " / ".join(f"{n:,} Statics {ms(a['median'])}" for n, a in anchors.items()),
        "<= 15 ms", ours["median"] <= 0.015)


# -- main ------------------------------------------------------------------------------------


def print_table() -> None:
    header: Row = ("figure", "measured", "anchor (same run)", "goal", "")
    widths = [max(len(r[i]) for r in [header, *ROWS]) for i in range(len(header))]
    for line in [header, tuple("-" * w for w in widths), *ROWS]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def run_child(args: list[str]) -> None:
    kind, *rest = args
    if kind == "open":
        result = asyncio.run(child_open(Path(rest[0]), rest[1]))
    elif kind == "statics":
        result = asyncio.run(child_statics(int(rest[0])))
    elif kind == "many":
        result = asyncio.run(child_many(Path(rest[0]), int(rest[1])))
    elif kind == "relayout-statics":
        result = asyncio.run(child_relayout_statics(int(rest[0])))
    else:
        raise SystemExit(f"unknown child {kind}")
    print(json.dumps(result))


def main() -> None:
    for stop in (signal.SIGTERM, signal.SIGHUP):  # clean up (finally blocks) when killed
        signal.signal(stop, lambda number, frame: sys.exit(128 + number))
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="paint,stream,long,many",
                        help="comma-separated subset of paint,stream,long,many")
    parser.add_argument("--paint-runs", type=int, default=5)
    parser.add_argument("--litellm-runs", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20.0, help="streaming window")
    parser.add_argument("--rate", type=float, default=500.0, help="tokens/s per pane")
    parser.add_argument("--keys-per-s", type=float, default=8.0)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--answers", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="copy the stream runner's reports here")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global KEEP
    KEEP = args.keep
    if args.child:
        run_child(args.child)
        return
    only = set(args.only.split(","))
    unknown = only - {"paint", "stream", "long", "many"}
    if unknown:
        parser.error(f"--only: unknown {sorted(unknown)}")
    started = time.monotonic()
    tmux = Tmux() if only & {"paint", "stream"} else None
    try:
        if tmux is not None and "paint" in only:
            load("paint")
            bench_paint(tmux, args.paint_runs, args.litellm_runs)
        if tmux is not None and "stream" in only:
            load("stream")
            bench_stream(tmux, args.seconds, args.rate, args.keys_per_s)
    finally:
        if tmux is not None:
            tmux.close()
    if "long" in only:
        load("long")
        bench_long(args.messages, 100)
    if "many" in only:
        load("many")
        bench_many(args.answers)
    print()
    print_table()
    print(f"(a shared machine, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          f"now: compare each figure with its anchor; total {time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""The state-lane panel: a pane's lanes (id, mode, version, age, value as a JSON tree), live
from any process with the changed lane highlighted, shown/focused or hidden by a key, each lane's
history on demand (stepping through versions, each delta as added / changed / removed keys),
long strings folded and big values capped — and two snapshots of it, one per theme.

Waits are on conditions (``until``), never fixed pauses; ages are frozen by the panel's
injectable clock, and in the snapshots the lanes' store time is frozen too.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers.app import AppFactory, drained, kinds, pane_of, until
from textual.widgets import Input

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.app import app as app_module
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets import state_panel
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.app.widgets.key_bar import KeyBar
from tui_agent.app.widgets.state_panel import StatePanel
from tui_agent.app.widgets.state_tree import MAX_ITEMS, StateTree
from tui_agent.app.widgets.state_values import (
    diff_changes,
    fold_middle,
    format_age,
    one_line,
    patch_changes,
)
from tui_agent.app.widgets.thread_pane import ThreadPane
from tui_agent.store import sqlite_lanes as lanes_module
from tui_agent.testing import ScriptedModel

MAIN = {"resource_id": "me", "thread_id": "main"}
PERSIST = {"behavior": "persist"}  # stored and shown, no run woken
ROOT = Path(__file__).resolve().parents[2]


# -- helpers -------------------------------------------------------------------------------------
def panel_of(pane: ThreadPane) -> StatePanel:
    return pane.query_one(StatePanel)


def tree_lines(tree: StateTree) -> list[str]:
    """The tree's lines as painted (the visible ones), right-trimmed."""
    return [tree.render_line(y).text.rstrip() for y in range(tree.size.height)]


def lanes_text(panel: StatePanel) -> list[str]:
    return [line for line in tree_lines(panel.query_one("#state-lanes", StateTree)) if line]


def history_text(panel: StatePanel) -> str:
    return str(panel.query_one("#state-history").render())


def history_value(panel: StatePanel) -> list[str]:
    return [line for line in tree_lines(panel.query_one("#state-history-value", StateTree))
            if line]


def line_of(lines: list[str], lane: str) -> str:
    return next(line for line in lines if line.lstrip("▼▶ ").startswith(f"{lane} "))


async def send_state(agent: Any, lane: str, key: str, *, value: Any = None,
                     delta: Any = None) -> dict[str, Any]:
    state: dict[str, Any] = {"id": lane, "cache_key": key}
    if delta is None:
        state.update(mode="snapshot", value=value)
    else:
        state.update(mode="delta", delta=delta)
    return await agent.send_state_signal(state, if_idle=PERSIST, **MAIN)


async def shown_panel(pilot: Any, app: TuiAgentApp) -> StatePanel:
    """The first pane subscribed, its state panel shown with the toggle key and settled."""
    pane = pane_of(app)
    await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
    await pilot.press("f3")
    panel = panel_of(pane)
    await until(pilot, lambda: panel.shown and panel.settled and panel.reads > 0,
                "the panel shown and read")
    return panel


def footer_keys(app: TuiAgentApp) -> list[str]:
    """The key bar's descriptions as shown now."""
    return [hint.description for hint in app.screen.query_one(KeyBar).hints]


def freeze_ages(panel: StatePanel, lane: str, seconds: float) -> None:
    """The panel's clock: ``seconds`` after ``lane`` last changed."""
    changed = panel.lanes[lane].updated_at.timestamp()
    panel.clock = lambda: changed + seconds


# -- listing -------------------------------------------------------------------------------------
async def test_the_panel_lists_each_lane_with_mode_version_age_and_value(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(160, 40)) as pilot:
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "42", value={
            "url": "https://github.com/acme/app/pull/42", "tabs": ["#41", "#42"], "pinned": True})
        await send_state(agent, "editor", "a", value={"file": "app.py", "line": 1})
        await send_state(agent, "editor", "b", delta={"line": 120, "unsaved": True})
        panel = await shown_panel(pilot, app)
        await until(pilot, lambda: set(panel.lanes) == {"browser", "editor"}, "both lanes")
        freeze_ages(panel, "browser", 185)
        await until(pilot, lambda: "3 min ago" in line_of(lanes_text(panel), "browser"),
                    "the age drawn from the panel's clock")
        lines = lanes_text(panel)
        assert line_of(lines, "browser").split()[1:] == ["browser", "snapshot", "v1", "3", "min",
                                                         "ago"]
        assert "delta v2" in line_of(lines, "editor")
        painted = "\n".join(lines)
        url = next(line for line in lines if "url:" in line)  # folded in its middle
        assert url.split("url: ")[1].startswith('"https:') and url.endswith('/pull/42"')
        assert "…" in url and len(url) <= 32  # fits its line, both ends kept
        for shown in ("tabs: [2 items]", '0: "#41"',
                      "pinned: true", 'file: "app.py"', "line: 120", "unsaved: true"):
            assert shown in painted, shown
        assert lines.index(line_of(lines, "browser")) < lines.index(line_of(lines, "editor"))
        panel.clock = lambda: panel.lanes["browser"].updated_at.timestamp() + 125
        await until(pilot, lambda: "2 min ago" in line_of(lanes_text(panel), "browser"),
                    "the age kept current (redrawn every second)")


async def test_the_toggle_key_shows_and_hides_the_panel(make_app: AppFactory) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        panel = panel_of(pane)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "1", value={"tabs": 1})
        assert not panel.display and not panel.shown
        await pilot.press("f3")
        await until(pilot, lambda: panel.display and panel.settled and "browser" in panel.lanes,
                    "the panel shown with its lane")
        assert panel.region.width > 0
        assert app.focused is panel.query_one("#state-lanes")
        pane.focus_composer()  # shown but unfocused: the key focuses it
        await until(pilot, lambda: app.focused is pane.query_one(Composer), "composer focused")
        await pilot.press("f3")
        await until(pilot, lambda: app.focused is panel.query_one("#state-lanes"),
                    "the panel focused, still shown")
        assert panel.display
        await pilot.press("f3")  # focused: the key hides it
        await until(pilot, lambda: not panel.display, "the panel hidden")
        await until(pilot, lambda: app.focused is pane.query_one(Composer),
                    "the composer focused again")
        reads = panel.reads
        await send_state(agent, "browser", "2", value={"tabs": 2})
        await until(pilot, lambda: pane.feed.state_events >= 2, "the change reached the feed")
        await drained(pilot, pane)
        assert panel.reads == reads  # hidden: nothing read
        await pilot.press("f3")
        await until(pilot, lambda: panel.settled and panel.lanes["browser"].version == 2,
                    "shown again, the change read once")
        assert panel.reads == reads + 1
        assert "tabs: 2" in "\n".join(lanes_text(panel))


# -- live ----------------------------------------------------------------------------------------
async def test_a_change_sent_through_the_agent_updates_the_lane_and_highlights_it(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(160, 40)) as pilot:
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "1", value={"url": "https://x/1"})
        await send_state(agent, "editor", "1", value={"file": "a.py"})
        panel = await shown_panel(pilot, app)
        await until(pilot, lambda: len(panel.lanes) == 2, "both lanes")
        assert not panel.highlighted("browser") and not panel.highlighted("editor")
        started = time.monotonic()
        await send_state(agent, "editor", "2", delta={"file": "b.py", "line": 7})
        await until(pilot, lambda: panel.lanes["editor"].version == 2 and panel.settled,
                    "the change read")
        assert time.monotonic() - started < 1.0  # within a second (reads are 4 a second)
        assert panel.highlighted("editor") and not panel.highlighted("browser")
        tree = panel.query_one("#state-lanes", StateTree)
        lines = lanes_text(panel)
        changed = tree.get_component_rich_style("state-tree--changed").bgcolor
        row = tree.render_line(lines.index(line_of(lines, "editor")))
        assert any(seg.style and seg.style.bgcolor == changed for seg in row)
        other = tree.render_line(lines.index(line_of(lines, "browser")))
        assert not any(seg.style and seg.style.bgcolor == changed for seg in other)
        assert "delta v2" in line_of(lines, "editor")
        assert 'file: "b.py"' in "\n".join(lines) and "line: 7" in "\n".join(lines)


async def test_a_burst_of_changes_costs_a_few_reads_and_ends_on_the_last(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(120, 30)) as pilot:
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "0", value={"n": 0})
        panel = await shown_panel(pilot, app)
        reads, started = panel.reads, time.monotonic()
        for n in range(1, 31):
            await send_state(agent, "browser", str(n), delta={"n": n})
        await until(pilot, lambda: panel.lanes["browser"].version == 31 and panel.settled,
                    "the last change read")
        elapsed = time.monotonic() - started
        assert panel.reads - reads <= elapsed / state_panel.MIN_READ_S + 2 < 30
        assert "n: 30" in "\n".join(lanes_text(panel))


PEER = textwrap.dedent("""
    import asyncio, sys
    from tui_agent import Agent, Memory, SqliteStore
    from tui_agent.testing import ScriptedModel

    async def main() -> None:
        store = SqliteStore(sys.argv[1])
        agent = Agent(name="peer", instructions="-", model=ScriptedModel(replies=["ok"]),
                      memory=Memory(store=store))
        try:
            await agent.send_state_signal(
                {"id": "browser", "mode": "delta", "cache_key": "peer", "delta": {"tab": 9}},
                resource_id="me", thread_id="main", if_idle={"behavior": "persist"})
        finally:
            await agent.close()
            await store.close()

    asyncio.run(main())
""")


async def test_a_change_from_another_process_shows_and_is_highlighted(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    db = str(agent.memory.store.path)
    async with app.run_test(size=(120, 30)) as pilot:
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "1", value={"tab": 1})
        panel = await shown_panel(pilot, app)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PEER, db, cwd=ROOT, stderr=asyncio.subprocess.PIPE)
        try:
            _, err = await asyncio.wait_for(process.communicate(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode == 0, err.decode()
        await until(pilot, lambda: panel.lanes["browser"].version == 2 and panel.settled,
                    "the other process's change read")
        assert panel.highlighted("browser")
        assert "tab: 9" in "\n".join(lanes_text(panel))


# -- history -------------------------------------------------------------------------------------
async def test_history_steps_through_versions_with_each_delta_and_value(
    make_app: AppFactory,
) -> None:
    app = make_app()
    agent = app.config.agent
    async with app.run_test(size=(160, 44)) as pilot:
        pane = pane_of(app)
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "editor", "v1",
                         value={"file": "app.py", "line": 1, "unsaved": False})
        await send_state(agent, "editor", "v2", delta={"line": 42, "unsaved": True})
        await send_state(agent, "editor", "v3", delta={"selection": "x = 1", "unsaved": None})
        panel = await shown_panel(pilot, app)
        await until(pilot, lambda: panel.lanes["editor"].version == 3, "the lane at v3")
        await pilot.press("h")
        await until(pilot, lambda: panel.history is not None and panel.has_class("-history"),
                    "the history open")
        assert app.focused is panel.query_one("#state-history-value")

        text = history_text(panel)  # v3, the newest: a delta adding one key, removing one
        assert "v3 1/3" in text and "\nv3 delta ·" in text
        assert '+ selection: "x = 1"' in text and "- unsaved" in text
        assert [line.split()[0] for line in text.splitlines()[1:4]] == ["▸", "v2", "v1"]
        value = history_value(panel)
        assert 'selection: "x = 1"' in value and "line: 42" in value
        assert not any("unsaved" in line for line in value)

        await pilot.press("left")  # older: v2 changed two keys
        text = history_text(panel)
        assert "\nv2 delta ·" in text and "~ line: 42" in text and "~ unsaved: true" in text
        assert "line: 42" in history_value(panel) and "unsaved: true" in history_value(panel)

        await pilot.press("left")  # v1: the snapshot, every key added
        text = history_text(panel)
        assert "\nv1 snapshot ·" in text and '+ file: "app.py"' in text and "+ line: 1" in text
        assert history_value(panel) == ['file: "app.py"', "line: 1", "unsaved: false"]
        await pilot.press("left")  # the oldest: stays
        assert "\nv1 snapshot ·" in history_text(panel)

        await pilot.press("right")  # newer again
        assert "\nv2 delta ·" in history_text(panel)
        assert "line: 42" in history_value(panel)

        await send_state(agent, "editor", "v4", delta={"line": 43})  # live, while open
        await until(pilot, lambda: panel.history is not None
                    and panel.history.entries[0].version == 4, "the history re-read")
        assert "\nv2 delta ·" in history_text(panel)  # still on the version being looked at
        assert "v2 3/4" in history_text(panel)

        await pilot.press("escape")  # back to the lanes (escape does not abort here)
        await until(pilot, lambda: panel.history is None, "the history closed")
        assert not panel.has_class("-history")
        assert app.focused is panel.query_one("#state-lanes")
        await pilot.press("escape")  # now escape goes on to the pane: abort (no run)
        await until(pilot, lambda: "no live run" in str(pane.query_one("#pane-status")
                                                         .render()), "the pane's abort")


# -- big values ----------------------------------------------------------------------------------
async def test_a_long_string_is_folded_and_big_values_capped(make_app: AppFactory) -> None:
    app = make_app()
    agent = app.config.agent
    log = "".join(f"line {n}: all good\n" for n in range(200))
    async with app.run_test(size=(160, 48)) as pilot:
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "watcher", "1", value={"log": log, "items": list(range(500)),
                                                       "deep": {"a": {"b": {"c": {"d": 1}}}},
                                                       "[/x]": "[b]as is[/b]"})
        panel = await shown_panel(pilot, app)
        await until(pilot, lambda: "watcher" in panel.lanes, "the lane")
        lines = lanes_text(panel)
        folded = next(line for line in lines if "log:" in line)
        assert folded.endswith(" 3.7k ch") and "…" in folded and len(folded) <= 32
        assert folded.split("log: ")[1].startswith('"line')
        assert "line 100" not in "\n".join(lines)
        assert "items: [500 items]" in "\n".join(lines)
        assert '[/x]: "[b]as is[/b]"' in "\n".join(lines)  # data, never markup

        tree = panel.query_one("#state-lanes", StateTree)
        log_node = next(n for n in tree.root.children[0].children if n.data.path == ("log",))
        items_node = next(n for n in tree.root.children[0].children
                          if n.data.path == ("items",))
        assert not log_node.is_expanded and not items_node.is_expanded
        assert not log_node.children and not items_node.children  # built when first opened
        tree.move_cursor(log_node)
        await pilot.press("space")  # unfold it: its text, line by line, bounded
        await until(pilot, lambda: log_node.is_expanded and log_node.children, "unfolded")
        assert len(log_node.children) == 21
        assert log_node.children[-1].data.parts[0][0] == "… 180 more lines"
        tree.move_cursor(items_node)
        await pilot.press("space")
        await until(pilot, lambda: items_node.is_expanded and items_node.children, "opened")
        assert len(items_node.children) == MAX_ITEMS + 1
        assert items_node.children[-1].data.parts[0][0] == f"… {500 - MAX_ITEMS} more"
        unfolded = [line.split("│ ")[-1].strip() for line in lanes_text(panel)]
        start = unfolded.index("├ line 0: all good")
        assert unfolded[start + 1] == "├ line 1: all good"


def test_a_merge_patch_reads_as_added_changed_and_removed_keys() -> None:
    before = {"a": 1, "b": {"c": 2, "d": 3}, "e": "x"}
    patch = {"a": 2, "b": {"c": None, "f": 4}, "e": None, "g": [1]}
    assert patch_changes(before, patch) == [
        ("~", "a", 2), ("-", "b.c", None), ("+", "b.f", 4), ("-", "e", None), ("+", "g", [1])]
    assert patch_changes(before, [1, 2]) == [("~", "(value)", [1, 2])]  # replaces it whole
    after = {"a": 1, "b": {"c": 5, "d": 3}, "h": True}
    assert diff_changes(before, after) == [("~", "b.c", 5), ("+", "h", True), ("-", "e", None)]
    assert [format_age(s) for s in (0.2, 59.9, 125, 7300, 90000)] == [
        "just now", "just now", "2 min ago", "2 h ago", "1 d ago"]
    assert fold_middle("https://github.com/acme/app/pull/42", 20) == "https:/…/app/pull/42"
    assert one_line("x" * 50, 12) == '"xxx…xxxxxx"' and one_line(list(range(30)), 40) == \
        "[30 items]"


# -- snapshots -----------------------------------------------------------------------------------
FROZEN_AT = 1_800_000_000.0  # every lane's store time in the snapshots
THEMES = {"dark": "tui-agent-dark", "light": "tui-agent-light"}
Compare = Callable[..., bool]


class SnapApp(TuiAgentApp):
    """The app on a store of its own, closing both on its own loop when it exits."""

    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))

    def __init__(self, config: AppConfig, store: SqliteStore) -> None:
        super().__init__(config)
        self.store = store

    async def on_unmount(self) -> None:
        await self.config.agent.close(timeout=5.0)
        await self.store.close()


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lanes are stored (by the SQLite store) at FROZEN_AT; no highlight (it would depend on
    when the shot is)."""
    monkeypatch.setattr(lanes_module, "time", SimpleNamespace(time=lambda: FROZEN_AT))
    monkeypatch.setattr(state_panel, "HIGHLIGHT_S", 0.0)


@pytest.mark.parametrize("theme", THEMES)
def test_snapshot_of_the_panel_with_a_snapshot_lane_and_a_delta_lane(
    snap_compare: Compare, tmp_path: Path, frozen: None, theme: str
) -> None:
    store = SqliteStore(tmp_path / "snap.sqlite")
    agent = Agent(name="demo", instructions="Be brief.", model=ScriptedModel(replies=["ok"]),
                  memory=Memory(store=store))
    config = AppConfig(agent=agent, threads=[("me", "main")], identity=Identity("zoe", {}),
                       agent_label="demo", model_label="scripted", default_resource="me",
                       warm_model=False)
    app = SnapApp(config, store)

    async def run_before(pilot: Any) -> None:
        app.animation_level = "none"
        app.theme = THEMES[theme]
        await until(pilot, lambda: bool(app.panes) and app.panes[0].feed.attached,
                    "the pane subscribed")
        await agent.memory.create_thread("main", resource_id="me")
        await send_state(agent, "browser", "42", value={
            "url": "https://github.com/acme/app/pull/42", "title": "Fix the release job",
            "tabs": ["https://github.com/acme/app/pull/41",
                     "https://github.com/acme/app/pull/42"]})
        await send_state(agent, "editor", "a", value={"file": "tui_agent/app/app.py",
                                                      "line": 1, "unsaved": False})
        await send_state(agent, "editor", "b", delta={
            "line": 120, "unsaved": True,
            "note": "the release job fails when the tag already exists on the remote"})
        panel = await shown_panel(pilot, app)
        await until(pilot, lambda: panel.lanes.get("editor") is not None
                    and panel.lanes["editor"].version == 2, "both lanes")
        panel.clock = lambda: FROZEN_AT + 180
        pane = pane_of(app)
        await until(pilot, lambda: kinds(pane) == ["signal"] * 3, "the three state lines")
        await drained(pilot, pane)
        await until(pilot, lambda: "3 min ago" in line_of(lanes_text(panel), "editor"),
                    "ages drawn from the frozen clock")
        await until(pilot, lambda: "History" in footer_keys(app), "the footer's history key")
        for field in app.query(Input):
            field.cursor_blink = False

    assert snap_compare(app, terminal_size=(160, 48), run_before=run_before)

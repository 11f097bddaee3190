"""A pane's state-lane panel: the thread's lanes — id, mode, version, age and value (a JSON
tree) — kept live, with any lane's recent history on demand.

Guarantees:
- Store reads run in workers, through the pane's feed (``LaneSource``); a burst of lane changes
  costs at most one read every ``MIN_READ_S`` (4 a second), and none while the panel is hidden:
  it reads once when shown again.
- A lane changed by any process is on screen within ``MIN_READ_S`` of its event reaching the
  feed, its line highlighted for ``HIGHLIGHT_S``. Only a changed lane's lines are rebuilt; nodes
  the user opened or closed stay so, and the cursor stays on its key.
- A fixed set of widgets (a title, the lanes tree, and in history a text block and a value
  tree); the trees' lines are bounded by ``state_tree``'s caps (items, depth, folded strings).
- Ages come from ``clock`` (injectable, epoch seconds) and are kept current every second while
  the panel is shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static, Tree

from tui_agent.app.focus import focus_now
from tui_agent.app.widgets.state_tree import (
    Part,
    Path,
    Row,
    StateTree,
    add_value,
    default_expanded,
    fill,
    find_node,
)
from tui_agent.app.widgets.state_values import (
    ADDED,
    REMOVED,
    Change,
    diff_changes,
    format_age,
    one_line,
    patch_changes,
)

MIN_READ_S = 0.25  # lanes are read at most 4 times a second, however many change
HIGHLIGHT_S = 2.0  # a changed lane's line stays highlighted this long
AGE_TICK_S = 1.0  # ages ("3 s ago") are redrawn this often while shown
HISTORY_LIMIT = 20  # versions a history shows
HISTORY_ROWS = 5  # of which this many are listed around the one shown
DELTA_ROWS = 8  # changes listed for the version shown; the rest are counted
VALUE_CHARS = 24  # a changed key's new value, on one line

Clock = Callable[[], float]


class LaneSource(Protocol):
    """Where the panel reads lanes from (the pane's ``ThreadFeed``)."""

    async def state_lanes(self) -> list[Any]: ...

    async def state_lane_history(self, lane_id: str, limit: int) -> list[Any]: ...


@dataclass
class History:
    """A lane's versions, newest first (one more than shown when older ones exist: the value
    the oldest shown version changed), and which one is shown."""

    lane_id: str
    entries: list[Any]
    index: int = 0
    changes: dict[int, list[Change]] = field(default_factory=dict)  # by version, computed once

    @property
    def shown(self) -> list[Any]:
        return self.entries[:HISTORY_LIMIT]

    @property
    def current(self) -> Any:
        return self.shown[self.index]

    def changes_of(self, index: int) -> list[Change]:
        """What version ``index`` changed: its delta's keys, or (a snapshot) its diff."""
        entry = self.shown[index]
        if entry.version not in self.changes:
            before = self.entries[index + 1].value if index + 1 < len(self.entries) else None
            if entry.mode == "delta":
                found = patch_changes(before if before is not None else {}, entry.delta)
            else:
                found = diff_changes(before if before is not None else {}, entry.value)
            self.changes[entry.version] = found
        return self.changes[entry.version]


class StatePanel(Vertical):
    DEFAULT_CSS = """
    StatePanel {
        width: 34;
        height: 1fr;
        display: none;
        border-left: vkey $border-blurred;
        &.-shown { display: block; }
        &.-over { width: 1fr; border-left: none; }  /* over the transcript: no room beside */
        & > #state-title {
            height: 1;
            padding: 0 1;
            color: $text-muted;
            text-wrap: nowrap;
            text-overflow: ellipsis;
        }
        & > #state-history { height: auto; padding: 0 1; display: none; }
        & > #state-history-value { display: none; }
        &.-history > #state-lanes { display: none; }
        &.-history > #state-history { display: block; }
        &.-history > #state-history-value { display: block; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("h", "history", "History", id="state.history"),
        Binding("left", "step(1)", "Older", id="state.older"),
        Binding("right", "step(-1)", "Newer", id="state.newer"),
        Binding("escape", "close_history", "Back", id="state.back"),
    ]

    def __init__(self, source: Callable[[], LaneSource], *, shown: bool = False,
                 clock: Clock = time.time, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.lanes: dict[str, Any] = {}  # by id, as last read
        self.history: History | None = None
        self.reads = 0  # lane reads done (each one store query)
        self.error: str | None = None
        self._source = source
        self._shown = shown
        self._lane_nodes: dict[str, Any] = {}  # lane id -> its node in the lanes tree
        self._highlight: dict[str, float] = {}  # lane id -> monotonic time the highlight ends
        self._ages_shown: tuple[object, ...] = ()  # what the last tick drew: highlights, ages
        self._open: dict[tuple[str, Path], bool] = {}  # nodes the user opened or closed
        self._dirty = True
        self._reading = False
        self._loaded = False
        self._last_read = 0.0
        self._read_timer: Any = None

    # -- widgets -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static("", id="state-title", markup=False)
        yield StateTree(id="state-lanes")
        yield Static("", id="state-history", markup=False)
        yield StateTree(id="state-history-value")

    def on_mount(self) -> None:
        self.query_one("#state-lanes", StateTree).describe = self._describe
        self.set_class(self._shown, "-shown")
        self.set_interval(AGE_TICK_S, self._tick)
        self._show_title()
        if self._shown:
            self.request_read()

    def _lanes_tree(self) -> StateTree:
        return self.query_one("#state-lanes", StateTree)

    def _history_tree(self) -> StateTree:
        return self.query_one("#state-history-value", StateTree)

    # -- shown or hidden -----------------------------------------------------------------------

    @property
    def shown(self) -> bool:
        return self._shown

    def set_shown(self, shown: bool) -> None:
        """Show or hide; shown, it reads the lanes if anything changed while hidden."""
        self._shown = shown
        self.set_class(shown, "-shown")
        if shown and self._dirty:
            self.request_read()

    def focus_panel(self) -> None:
        """Focus the tree in view (the lanes, or the history's value)."""
        focus_now(self._history_tree() if self.history else self._lanes_tree())

    @property
    def settled(self) -> bool:
        """Everything the panel was told of has been read and is on screen."""
        return not self._dirty and not self._reading and self._read_timer is None

    def highlighted(self, lane_id: str) -> bool:
        return self._highlight.get(lane_id, 0.0) > time.monotonic()

    # -- reading -------------------------------------------------------------------------------

    def lane_changed(self, lane_id: str = "") -> None:
        """A lane changed (the feed read its event): read the lanes again, soon."""
        self.request_read()

    def request_read(self) -> None:
        """Read the lanes within MIN_READ_S of the last read (one read for a burst)."""
        self._dirty = True
        if not self._shown or self._reading or self._read_timer is not None:
            return
        wait = max(0.005, MIN_READ_S - (time.monotonic() - self._last_read))
        self._read_timer = self.set_timer(wait, self._start_read)

    def _start_read(self) -> None:
        self._read_timer = None
        self._reading = True
        self._dirty = False
        self._read()

    @work(group="state-read", exit_on_error=False)
    async def _read(self) -> None:
        self._last_read = time.monotonic()
        try:
            lanes = await self._source().state_lanes()
            self._apply(lanes)
            history = self.history
            if history is not None and self._history_behind(history):
                await self._load_history(history.lane_id, keep=history.current.version)
            self.error = None
        except Exception as error:  # the store went away: one line in the title
            self.error = " ".join(str(error).split())[:120] or type(error).__name__
        finally:
            self._reading = False
            self.reads += 1
        self._show_title()
        if self._dirty:
            self.request_read()

    def _history_behind(self, history: History) -> bool:
        lane = self.lanes.get(history.lane_id)
        return lane is not None and lane.version != history.entries[0].version

    def _apply(self, lanes: Sequence[Any]) -> None:
        """Show what was read: rebuild only lanes whose version or time moved."""
        fresh = {lane.id: lane for lane in lanes}
        if bool(fresh) != bool(self.lanes):
            self.refresh_bindings()  # the history key acts once there is a lane
        for lane_id in [known for known in self.lanes if known not in fresh]:
            del self.lanes[lane_id]
            self._lane_nodes.pop(lane_id).remove()
        ends = time.monotonic() + HIGHLIGHT_S
        for position, lane in enumerate(lanes):
            old = self.lanes.get(lane.id)
            self.lanes[lane.id] = lane
            if old is not None and (old.version, old.updated_at) == (lane.version,
                                                                   lane.updated_at):
                continue
            self._show_lane(lane, position)
            if self._loaded:
                self._highlight[lane.id] = ends
        self._loaded = True
        tree = self._lanes_tree()
        if tree.cursor_line < 0 and tree.root.children:  # a cursor to start from (h, space)
            self.call_after_refresh(tree.move_cursor, tree.root.children[0])

    def _show_lane(self, lane: Any, position: int) -> None:
        tree = self._lanes_tree()
        cursor = tree.cursor_node
        keep = cursor.data.path if cursor and cursor.data and cursor.data.lane == lane.id \
            else None
        node = self._lane_nodes.get(lane.id)
        if node is None:
            before = position if position < len(tree.root.children) else None
            node = tree.root.add(lane.id, data=Row(lane.id, ()), before=before,
                                 expand=self._is_open(lane.id, (), None))
            self._lane_nodes[lane.id] = node
        else:
            node.remove_children()
            node.refresh()
        add_value(node, lane.id, lane.value, expanded=self._is_open)
        if keep is not None and (target := find_node(tree.root, lane.id, keep)) is not None:
            self.call_after_refresh(tree.move_cursor, target)

    def _is_open(self, lane: str, path: Path, value: Any) -> bool:
        """Open if the user left it open, else by default (a lane, small first levels)."""
        chosen = self._open.get((lane, path))
        if chosen is not None:
            return chosen
        return path == () or default_expanded(lane, path, value)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Row]) -> None:
        """Remember it open; build its lines if this is its first opening."""
        event.stop()
        if event.node.data is not None:
            self._open[(event.node.data.lane, event.node.data.path)] = True
            fill(event.node, self._is_open)

    def on_tree_node_collapsed(self, event: Tree.NodeCollapsed[Row]) -> None:
        event.stop()
        if event.node.data is not None:
            self._open[(event.node.data.lane, event.node.data.path)] = False

    # -- what a lane's line says ---------------------------------------------------------------

    def _describe(self, row: Row) -> list[Part]:
        """A lane's line: id, mode, version, age (now); highlighted while just changed."""
        lane = self.lanes.get(row.lane) if not row.path else None
        if lane is None:
            return row.parts
        age = format_age(self.clock() - lane.updated_at.timestamp())
        parts = [(lane.id, "lane"), (f" {lane.mode}", "mode"), (f" v{lane.version}", "version"),
                 (f" {age}", "muted")]
        if self.highlighted(lane.id):
            parts = [(text, f"{role} changed") for text, role in parts]
        return parts

    def _tick(self) -> None:
        """Keep ages current and end highlights (only while shown), repainting only when one
        of them changed: an idle panel does no render work."""
        if not self._shown:
            return
        now = time.monotonic()
        self._highlight = {lane: end for lane, end in self._highlight.items() if end > now}
        clock = self.clock()
        history = self.history
        shown = (frozenset(self._highlight),
                 tuple(format_age(clock - lane.updated_at.timestamp())
                       for lane in self.lanes.values()),
                 None if history is None else tuple(
                     format_age(clock - entry.updated_at.timestamp())
                     for entry in history.shown))
        if shown == self._ages_shown:
            return
        self._ages_shown = shown
        for node in self._lane_nodes.values():
            node.refresh()
        if history is not None:
            self._show_history_text()

    def _show_title(self) -> None:
        title = self.query_one("#state-title", Static)
        if self.error:
            title.update(Content.assemble(("✗ ", "$text-error"), self.error))
        elif self.history is not None:
            title.update(Content.assemble("state · ", (self.history.lane_id, "bold"),
                                          " history"))
        else:
            count = len(self.lanes)
            label = "no lanes yet" if not count else f"{count} lane{'s' if count > 1 else ''}"
            title.update(f"state · {label} · {self._key('state.history', 'h')} history")

    def _key(self, binding_id: str, default: str) -> str:
        """The key bound to ``binding_id`` now (after any keymap), else ``default``."""
        for active in self.screen.active_bindings.values():
            if active.binding.id == binding_id:
                return self.app.get_key_display(active.binding)
        return default

    # -- history -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """History keys act only in history (escape goes on to the pane otherwise)."""
        if action in ("step", "close_history"):
            return self.history is not None
        if action == "history":
            return bool(self.lanes)
        return True

    def action_history(self) -> None:
        """Open the history of the lane under the cursor (or close the history)."""
        if self.history is not None:
            self.action_close_history()
            return
        cursor = self._lanes_tree().cursor_node
        lane_id = cursor.data.lane if cursor is not None and cursor.data else next(
            iter(self.lanes), None)
        if lane_id is not None:
            self.open_history(lane_id)

    @work(group="state-history", exclusive=True, exit_on_error=False)
    async def open_history(self, lane_id: str) -> None:
        """Show ``lane_id``'s newest versions, the newest first."""
        try:
            await self._load_history(lane_id)
        except Exception as error:  # the store went away
            self.error = " ".join(str(error).split())[:120]
            self._show_title()
            return
        self.add_class("-history")
        self.refresh_bindings()
        self._show_title()
        focus_now(self._history_tree())

    async def _load_history(self, lane_id: str, keep: int | None = None) -> None:
        entries = await self._source().state_lane_history(lane_id, HISTORY_LIMIT + 1)
        if not entries:
            return
        history = History(lane_id, entries)
        if keep is not None:
            versions = [entry.version for entry in history.shown]
            history.index = versions.index(keep) if keep in versions else len(versions) - 1
        self.history = history
        self._show_history()

    def action_step(self, step: int) -> None:
        """Show an older (+1) or newer (-1) version."""
        history = self.history
        if history is None:
            return
        index = min(max(history.index + step, 0), len(history.shown) - 1)
        if index != history.index:
            history.index = index
            self._show_history()

    def action_close_history(self) -> None:
        self.history = None
        self.remove_class("-history")
        self.refresh_bindings()
        self._history_tree().clear()
        self._show_title()
        focus_now(self._lanes_tree())

    def _show_history(self) -> None:
        self._show_history_text()
        history = self.history
        if history is None:
            return
        tree = self._history_tree()
        tree.clear()
        add_value(tree.root, history.lane_id, history.current.value, expanded=self._is_open)
        tree.root.expand()

    def _show_history_text(self) -> None:
        history = self.history
        if history is not None:
            text = render_history(history, self.clock(), self._key("state.older", "←"),
                                  self._key("state.newer", "→"), self._key("state.back", "esc"))
            self.query_one("#state-history", Static).update(text)


# -- the history's text --------------------------------------------------------------------------

SIGN_STYLES = {ADDED: "$text-success", REMOVED: "$text-error"}


def render_history(history: History, now: float, older: str, newer: str, back: str) -> Content:
    """The versions around the one shown (with change counts), then what it changed."""
    shown = history.shown
    current = history.current
    lines = [Content.assemble((f"v{current.version}", "bold $text-accent"),
                              (f" {history.index + 1}/{len(shown)}", "$text-muted"),
                              (f"  {older} older  {newer} newer  {back} back", "$text-muted"))]
    start = min(max(0, history.index - HISTORY_ROWS // 2), max(0, len(shown) - HISTORY_ROWS))
    if start:
        lines.append(Content.styled(f"  … {start} newer", "$text-muted"))
    for index in range(start, min(len(shown), start + HISTORY_ROWS)):
        lines.append(_version_line(history, index, now))
    if len(shown) > start + HISTORY_ROWS:
        older_count = len(shown) - start - HISTORY_ROWS
        lines.append(Content.styled(f"  … {older_count} older", "$text-muted"))
    lines.append(_entry_heading(current, now))
    lines.extend(_change_lines(history.changes_of(history.index), current))
    lines.append(Content.styled(f"value at v{current.version}:", "$text-muted"))
    return Content("\n").join(lines)


def _version_line(history: History, index: int, now: float) -> Content:
    entry = history.shown[index]
    selected = index == history.index
    counts: dict[str, int] = {}
    for sign, _, _ in history.changes_of(index):
        counts[sign] = counts.get(sign, 0) + 1
    summary = " ".join(f"{sign}{counts[sign]}" for sign in ("+", "~", "-") if sign in counts)
    age = format_age(now - entry.updated_at.timestamp())
    return Content.assemble(("▸ " if selected else "  ", "$text-accent"),
                            (f"v{entry.version:<3}", "bold" if selected else ""),
                            (f" {entry.mode:<8}", "$text-muted"), f" {age:>10}",
                            (f"  {summary}", "$text-muted"))


def _entry_heading(entry: Any, now: float) -> Content:
    when = entry.updated_at.astimezone().strftime("%H:%M:%S")
    return Content.assemble((f"v{entry.version} {entry.mode}", "bold"),
                            (f" · {when} · {format_age(now - entry.updated_at.timestamp())}",
                             "$text-muted"))


def _change_lines(changes: list[Change], entry: Any) -> list[Content]:
    if not changes:
        return [Content.styled("  (no change)" if entry.mode == "delta" else "  (same value)",
                               "$text-muted")]
    lines = []
    for sign, path, value in changes[:DELTA_ROWS]:
        style = SIGN_STYLES.get(sign, "$text-warning")
        shown = "" if sign == REMOVED else f": {one_line(value, VALUE_CHARS)}"
        lines.append(Content.assemble((f"  {sign} ", f"bold {style}"), (path, style), shown))
    if len(changes) > DELTA_ROWS:
        lines.append(Content.styled(f"  … {len(changes) - DELTA_ROWS} more changes", "$text-muted"))
    return lines

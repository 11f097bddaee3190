"""``StateTree``: a JSON value as a collapsible tree, bounded whatever the value's size.

Each line's label is a list of ``(text, role)`` parts, styled at render time by the role's
component class (``state-tree--key``, ``--string``, …), so a theme change restyles it and the
panel can re-render a line (a lane's age) without rebuilding it. ``add_value`` caps what it
builds: ``MAX_ITEMS`` entries a container, ``MAX_DEPTH`` levels, ``NODE_BUDGET`` lines a value,
a string that would not fit its line (``LINE_CHARS``) folded in its middle (its full text, in
chunks, one expansion away).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from tui_agent.app.widgets.state_values import fold_middle, is_container, scalar_text, summary

MAX_ITEMS = 40  # entries shown per object or list; the rest is one "… N more" line
MAX_DEPTH = 6  # containers nested deeper show as a one-line summary
NODE_BUDGET = 300  # lines built per value at most
LINE_CHARS = 30  # a line's room: the panel's 34 columns less border, scrollbar, margin
MIN_FOLD = 12  # a folded string keeps at least this many characters, however deep
COUNT_CHARS = 80  # a folded string longer than this also says how long it is
CHUNK_CHARS = 30  # a folded string unfolds in lines of this many characters
MAX_CHUNKS = 20  # … and at most this many lines
AUTO_EXPAND_ITEMS = 6  # a first-level container this small starts expanded

Part = tuple[str, str]  # (text, role)
Path = tuple[Any, ...]


@dataclass
class Row:
    """What one line of a ``StateTree`` shows: its lane, its path in the value, its parts."""

    lane: str
    path: Path
    parts: list[Part] = field(default_factory=list)
    value: Any = None  # a closed node's value (a container or a folded string) …
    unbuilt: bool = False  # … whose lines are built when it is first opened (``fill``)


@dataclass
class Budget:
    left: int = NODE_BUDGET


ExpandRule = Callable[[str, Path, Any], bool]


def default_expanded(lane: str, path: Path, value: Any) -> bool:
    """A first-level container with few entries starts open; everything deeper, closed."""
    return len(path) == 1 and len(value) <= AUTO_EXPAND_ITEMS


class StateTree(Tree[Row]):
    """A Tree whose labels are role-styled parts (see the module docstring)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = Tree.COMPONENT_CLASSES | {
        f"state-tree--{role}" for role in (
            "key", "index", "string", "number", "bool", "null", "muted", "lane", "mode",
            "version", "changed", "added", "removed",
        )
    }
    DEFAULT_CSS = """
    StateTree {
        background: transparent;
        padding: 0;
        overflow-x: hidden;  /* labels are folded to fit; left/right step a lane's history */
        scrollbar-size-vertical: 1;
        & > .state-tree--key { color: $text-primary; }
        & > .state-tree--index { color: $text-muted; }
        & > .state-tree--string { color: $text-success; }
        & > .state-tree--number { color: $text-accent; }
        & > .state-tree--bool { color: $text-warning; }
        & > .state-tree--null { color: $text-muted; text-style: italic; }
        & > .state-tree--muted { color: $text-muted; }
        & > .state-tree--lane { text-style: bold; }
        & > .state-tree--mode { color: $text-muted; }
        & > .state-tree--version { color: $text-accent; }
        & > .state-tree--changed { background: $success 35%; text-style: bold; }
        & > .state-tree--added { color: $text-success; }
        & > .state-tree--removed { color: $text-error; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("state", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        self.describe: Callable[[Row], Sequence[Part]] = lambda row: row.parts

    def render_label(self, node: TreeNode[Row], base_style: Style, style: Style) -> Text:
        """The node's parts, each in its role's style, under ``style`` (cursor, hover)."""
        row = node.data
        if row is None:
            return super().render_label(node, base_style, style)
        label = Text.assemble(*[(text, self._role_style(role))
                                for text, role in self.describe(row)])
        label.stylize(style)
        if node.allow_expand:
            icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
            return Text.assemble((icon, base_style + Style(bold=True)), label)
        return label

    def _role_style(self, roles: str) -> Style:
        """The style of a part: its roles' (space-separated) component styles combined — each
        role's own rules only, its colours blended over the background (``$text-muted`` is a
        translucent colour: unblended it would be the terminal's default)."""
        styles = []
        for role in roles.split():
            full = self.get_component_rich_style(f"state-tree--{role}")
            own = self.get_component_rich_style(f"state-tree--{role}", partial=True)
            styles.append(Style(color=full.color if own.color else None,
                                bgcolor=full.bgcolor if own.bgcolor else None,
                                bold=own.bold, italic=own.italic))
        return Style.combine(styles)


def add_value(parent: TreeNode[Row], lane: str, value: Any, *, path: Path = (),
              expanded: ExpandRule = default_expanded, budget: Budget | None = None) -> None:
    """Add ``value`` under ``parent``: a container's entries (capped), or one scalar line."""
    budget = budget if budget is not None else Budget()
    if not is_container(value):
        _add_entry(parent, lane, None, value, path, expanded, budget)
        return
    items = value.items() if isinstance(value, Mapping) else enumerate(value)
    for index, (key, item) in enumerate(items):
        if index >= MAX_ITEMS or budget.left <= 0:
            more = f"… {len(value) - index} more"
            parent.add_leaf(Text(more), data=Row(lane, (*path, "…"), [(more, "muted")]))
            return
        _add_entry(parent, lane, key, item, (*path, key), expanded, budget)


def fill(node: TreeNode[Row], expanded: ExpandRule = default_expanded) -> None:
    """Build the lines of a node opened for the first time (closed nodes are built empty: a
    big value costs only the lines that were ever opened)."""
    row = node.data
    if row is None or not row.unbuilt:
        return
    row.unbuilt = False
    if isinstance(row.value, str):
        _add_chunks(node, row.lane, row.path, row.value)
    else:
        add_value(node, row.lane, row.value, path=row.path, expanded=expanded)


def _key_parts(key: Any) -> list[Part]:
    if key is None:
        return []
    if isinstance(key, int):
        return [(f"{key}", "index"), (": ", "muted")]
    return [(str(key), "key"), (": ", "muted")]


def _add_entry(parent: TreeNode[Row], lane: str, key: Any, item: Any, path: Path,
               expanded: ExpandRule, budget: Budget) -> None:
    budget.left -= 1
    parts = _key_parts(key)
    if is_container(item):
        parts.append((summary(item), "muted"))
        if not item or len(path) >= MAX_DEPTH:
            if item:
                parts.append((" …", "muted"))
            parent.add_leaf(_label(parts), data=Row(lane, path, parts))
            return
        is_open = expanded(lane, path, item)
        row = Row(lane, path, parts, value=item, unbuilt=not is_open)
        node = parent.add(_label(parts), data=row, expand=is_open)
        if is_open:
            add_value(node, lane, item, path=path, expanded=expanded, budget=budget)
        return
    text, role = scalar_text(item)
    room = LINE_CHARS - 2 * len(path) - len(_plain(parts))  # guides take 2 columns a level
    if role != "string" or len(text) <= room:
        parent.add_leaf(_label(parts), data=Row(lane, path, [*parts, (text, role)]))
        return
    _add_folded(parent, lane, path, parts, str(item), room, expanded)


def _add_folded(parent: TreeNode[Row], lane: str, path: Path, parts: list[Part], text: str,
                room: int, expanded: ExpandRule) -> None:
    """A long string: one line folded in its middle; its text (bounded) under it, when open."""
    size = f" {_size(len(text))}" if len(text) > COUNT_CHARS else ""
    limit = max(MIN_FOLD, room - 4 - len(size))  # the icon and the quotes
    ends = text if len(text) <= 4 * limit else text[:2 * limit] + text[-2 * limit:]
    shown = '"' + fold_middle(scalar_text(ends)[0][1:-1], limit) + '"'  # escapes visible
    is_open = expanded(lane, path, text)
    row = Row(lane, path, [*parts, (shown, "string"), (size, "muted")], value=text,
              unbuilt=not is_open)
    node = parent.add(_label(row.parts), data=row, expand=is_open)
    if is_open:
        _add_chunks(node, lane, path, text)


def _add_chunks(node: TreeNode[Row], lane: str, path: Path, text: str) -> None:
    pieces, rest = _chunks(text)
    for index, piece in enumerate(pieces):
        node.add_leaf(Text(piece), data=Row(lane, (*path, ("chunk", index)),
                                            [(piece, "string")]))
    if rest:
        node.add_leaf(Text(rest), data=Row(lane, (*path, "…"), [(rest, "muted")]))


def _chunks(text: str) -> tuple[list[str], str | None]:
    """A string's text line by line (long lines wrapped at CHUNK_CHARS, escapes visible, no
    quotes), at most MAX_CHUNKS pieces; and what was left out (``… 12 more lines``), if any.
    Only what is shown is split and escaped, however big the text."""
    body = text[:-1] if text.endswith("\n") else text  # a final newline ends the last line
    lines = body.split("\n", MAX_CHUNKS)  # past MAX_CHUNKS lines, the rest stays one string
    total = body.count("\n") + 1
    pieces: list[str] = []
    for index, line in enumerate(lines[:MAX_CHUNKS]):
        shown = scalar_text(line[: MAX_CHUNKS * CHUNK_CHARS + 1])[0][1:-1]
        wrapped = [shown[i:i + CHUNK_CHARS] for i in range(0, len(shown), CHUNK_CHARS)] or [""]
        room = MAX_CHUNKS - len(pieces)
        if len(wrapped) > room:
            pieces.extend(wrapped[:room])
            if index + 1 < total:
                return pieces, f"… {total - index:,} more lines"
            return pieces, f"… {max(1, len(line) - room * CHUNK_CHARS):,} more chars"
        pieces.extend(wrapped)
        if len(pieces) == MAX_CHUNKS and index + 1 < total:
            return pieces, f"… {total - index - 1:,} more lines"
    return pieces, None


def _size(chars: int) -> str:
    """A string's length in a few columns: ``812 ch``, ``3.7k ch``, ``41k ch``."""
    if chars < 1000:
        return f"{chars} ch"
    return f"{chars / 1000:.1f}k ch" if chars < 10_000 else f"{chars // 1000}k ch"


def _plain(parts: Sequence[Part]) -> str:
    return "".join(text for text, _ in parts)


def _label(parts: Sequence[Part]) -> Text:
    """The node's own label: plain text (never parsed as markup: keys and values are data)."""
    return Text(_plain(parts))


def find_node(root: TreeNode[Row], lane: str, path: Path) -> TreeNode[Row] | None:
    """The node showing ``path`` of ``lane`` under ``root``, if it is built."""
    stack = list(root.children)
    while stack:
        node = stack.pop()
        row = node.data
        if row is None or row.lane != lane:
            continue
        if row.path == path:
            return node
        if row.path == path[: len(row.path)]:
            stack.extend(node.children)
    return None

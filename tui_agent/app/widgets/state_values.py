"""Pure helpers of the state panel (no Textual): ages, folded JSON scalars, and a lane's change
as added / changed / removed keys.

A ``Change`` is ``(sign, path, value)``: sign ``+`` added, ``~`` changed, ``-`` removed; the path
is dotted (``editor.cursor.line``; list items as ``[3]``); value is the new value (None for a
removal). Everything here is bounded: strings are folded and change lists capped by the caller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

Change = tuple[str, str, Any]
ADDED, CHANGED, REMOVED = "+", "~", "-"
MAX_CHANGES = 50  # a change list longer than this is cut (the caller says how many more)


def format_age(seconds: float) -> str:
    """``"just now"`` (under a minute), ``"4 min ago"``, ``"2 h ago"`` or ``"3 d ago"``: an
    age changes at most once a minute, so an idle screen stays still (benchmarks/
    bench_app_idle.py)."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def scalar_text(value: Any) -> tuple[str, str]:
    """A JSON scalar as shown (strings quoted, escapes visible) and its role for styling:
    ``string``, ``number``, ``bool`` or ``null``."""
    if value is None:
        return "null", "null"
    if isinstance(value, bool):
        return ("true" if value else "false"), "bool"
    if isinstance(value, int | float):
        return json.dumps(value), "number"
    return json.dumps(str(value), ensure_ascii=False), "string"


def fold(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def fold_middle(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters by dropping its middle (``…``): both ends stay,
    which is what tells URLs, paths and ids apart."""
    if len(text) <= limit:
        return text
    head = max(1, (limit - 1) * 2 // 5)
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def summary(value: Any) -> str:
    """A container in a few characters: ``{3 keys}``, ``[4 items]`` (``{}``/``[]`` if empty)."""
    if isinstance(value, Mapping):
        count = len(value)
        return "{}" if not count else f"{{{count} key{'s' if count != 1 else ''}}}"
    count = len(value)
    return "[]" if not count else f"[{count} item{'s' if count != 1 else ''}]"


def is_container(value: Any) -> bool:
    return isinstance(value, Mapping | list)


def one_line(value: Any, limit: int) -> str:
    """Any JSON value on one line, folded to ``limit`` characters (a string in its middle, so
    both ends show; a container at its end)."""
    if is_container(value) and len(value) > 20:
        return summary(value)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, str) and len(text) > limit:
        return '"' + fold_middle(text[1:-1], limit - 2) + '"'
    return fold(text, limit)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def patch_changes(before: Any, patch: Any, path: str = "") -> list[Change]:
    """What a JSON Merge Patch (RFC 7396) does to ``before``, key by key: a ``None`` removes,
    a key absent before is added, any other key changed (an object on both sides is followed
    into). A patch that is not an object replaces the whole value: one change at ``path``."""
    if not isinstance(patch, Mapping):
        return [(CHANGED if before is not None else ADDED, path or "(value)", patch)]
    old = before if isinstance(before, Mapping) else {}
    changes: list[Change] = []
    for key, new in patch.items():
        where = _join(path, key)
        if new is None:
            changes.append((REMOVED, where, None))
        elif key not in old:
            changes.append((ADDED, where, new))
        elif isinstance(new, Mapping) and isinstance(old[key], Mapping):
            changes.extend(patch_changes(old[key], new, where))
        else:
            changes.append((CHANGED, where, new))
        if len(changes) >= MAX_CHANGES:
            break
    return changes[:MAX_CHANGES]


def diff_changes(before: Any, after: Any, path: str = "") -> list[Change]:
    """How ``after`` differs from ``before`` (for a snapshot, which carries no patch): keys
    added, changed or removed; objects on both sides are followed into."""
    if not (isinstance(before, Mapping) and isinstance(after, Mapping)):
        if before == after:
            return []
        return [(CHANGED if before is not None else ADDED, path or "(value)", after)]
    changes: list[Change] = []
    for key, new in after.items():
        where = _join(path, key)
        if key not in before:
            changes.append((ADDED, where, new))
        elif isinstance(new, Mapping) and isinstance(before[key], Mapping):
            changes.extend(diff_changes(before[key], new, where))
        elif before[key] != new:
            changes.append((CHANGED, where, new))
    changes.extend((REMOVED, _join(path, key), None) for key in before if key not in after)
    return changes[:MAX_CHANGES]

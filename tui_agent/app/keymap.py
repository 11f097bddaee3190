"""The user's keymap (binding id → keys), checked before Textual's ``App.set_keymap`` applies it:
an unknown id or a clash is a warning in the app, never a crash."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from textual.binding import Binding

# Keys the composer (a TextArea) edits with: a pane binding on one of them never fires while
# you type. The composer's editing bindings, ``composer.editing_bindings()``, and enter (a new
# line, if not sending); tested equal.
COMPOSER_KEYS = frozenset({
    "enter",
    "up", "down", "left", "right", "home", "end", "ctrl+left", "ctrl+right",
    "shift+up", "shift+down", "shift+left", "shift+right", "shift+home", "shift+end",
    "ctrl+shift+left", "ctrl+shift+right", "ctrl+a", "ctrl+e",
    "backspace", "delete", "ctrl+d", "ctrl+w", "ctrl+backspace", "alt+backspace", "alt+delete",
    "ctrl+u", "ctrl+k", "ctrl+shift+k", "ctrl+x", "ctrl+c", "ctrl+v", "ctrl+z", "f7",
    "super+backspace", "super+c", "super+x", "super+y", "super+z",
})
# Bindings of a widget that has the focus when they fire: the composer's, a tool call's and the
# transcript's (message actions) are never live at once with the composer's, so they do not clash.
FOCUS_SCOPES = ("composer.", "tool.", "transcript.")
# A priority binding is acted on before the focused widget sees the key: one of the main
# screen's, on a key you type (a letter, space, enter), would take that key from the composer.
# It may only be an f-key or a chord with ctrl, alt or super. (The inbox's "/" is priority too,
# but only where the inbox has the focus, and off in its search field.)
NOT_TYPED = re.compile(r"(shift\+)?f\d+|(ctrl|alt|super|meta|hyper)\+.+")


def binding_ids(scopes: Mapping[str, Iterable[object]]) -> dict[str, tuple[str, str]]:
    """``{binding id: (scope, default keys)}`` for every Binding with an id. A scope is a set
    of bindings live at the same time (the main screen's; a dialog's)."""
    return {binding_id: (scope, binding.key) for scope, binding_id, binding in _bindings(scopes)}


def _bindings(scopes: Mapping[str, Iterable[object]]) -> list[tuple[str, str, Binding]]:
    """(scope, id, binding) for every Binding with an id."""
    return [(scope, binding.id, binding) for scope, bindings in scopes.items()
            for binding in bindings if isinstance(binding, Binding) and binding.id]


def check_keymap(keymap: Mapping[str, str],
                 scopes: Mapping[str, Iterable[object]]) -> tuple[dict[str, str], list[str]]:
    """The entries that can be applied, and one warning per problem."""
    known = binding_ids(scopes)
    priority = {binding_id for _, binding_id, binding in _bindings(scopes) if binding.priority}
    usable: dict[str, str] = {}
    warnings: list[str] = []
    for binding_id, keys in keymap.items():
        if binding_id not in known:
            warnings.append(f"keymap: unknown binding id {binding_id!r} (ignored)")
            continue
        typed = sorted(key for key in _split(keys) if not NOT_TYPED.fullmatch(key))
        if binding_id in priority and known[binding_id][0] == "main" and typed:
            warnings.append(f"keymap: {binding_id} on {', '.join(typed)} would take a key you "
                            "type; use an f-key or a ctrl/alt chord (ignored)")
            continue
        usable[binding_id] = keys
    effective = {bid: usable.get(bid, default) for bid, (_, default) in known.items()}
    for binding_id, keys in usable.items():
        for warning in _clashes(binding_id, keys, known, effective):
            if warning not in warnings:
                warnings.append(warning)
    return usable, warnings


def _clashes(binding_id: str, keys: str, known: dict[str, tuple[str, str]],
             effective: dict[str, str]) -> list[str]:
    scope = known[binding_id][0]
    mine = _split(keys)
    found: list[str] = []
    for other, other_keys in effective.items():
        common = mine & _split(other_keys)
        if (other != binding_id and known[other][0] == scope and common
                and _live_together(binding_id, other)):
            pair = " and ".join(sorted((binding_id, other)))
            found.append(f"keymap: {pair} are both on {', '.join(sorted(common))}")
    if scope == "main" and not binding_id.startswith(FOCUS_SCOPES) and mine & COMPOSER_KEYS:
        taken = ", ".join(sorted(mine & COMPOSER_KEYS))
        found.append(f"keymap: {binding_id} on {taken} is taken by the composer while typing")
    return found


def _live_together(one: str, other: str) -> bool:
    scopes = {prefix for prefix in FOCUS_SCOPES if one.startswith(prefix)
              or other.startswith(prefix)}
    return len(scopes) < 2


def _split(keys: str) -> set[str]:
    return {key.strip() for key in keys.split(",") if key.strip()}

"""The thread a command names must exist: a typo creates nothing (issue 21).

A command given ``-t THREAD`` (a flag, not the settings' default thread) for a thread the store
does not have fails with exit status 2 and one line naming it and the closest existing names,
unless it says it may create it (``--new``; ``watch --wait`` waits for it). The default thread
(no ``-t``) is created on first use, as before. Tests: ``tests/test_cli_typos.py``.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any

CLOSEST = 3  # names suggested


def named(args: argparse.Namespace) -> bool:
    """Whether the thread was named on the command line (``-t``), not left to the default."""
    return bool(args.thread_given)


async def check_thread(memory: Any, args: argparse.Namespace, *, may_create: bool,
                       hint: str = "add --new to create it") -> bool:
    """True if the thread exists. A missing thread that was named (``-t``) without
    ``may_create`` is a ConfigError naming it, its closest existing names and ``hint``. Bad
    ids (empty, not UTF-8, too long) are the SignalError the send would raise."""
    from tui_agent.signals import parse_target

    parse_target(resource_id=args.resource, thread_id=args.thread)
    if await memory.get_thread(args.thread) is not None:
        return True
    if may_create or not named(args):
        return False
    from tui_agent.errors import ConfigError

    raise ConfigError(await missing_thread_message(memory, args.thread, hint))


async def missing_thread_message(memory: Any, thread_id: str, hint: str) -> str:
    names = [thread.id for thread in await memory.list_threads()]
    return closest_message(thread_id, names, memory.store.location, hint)


def closest_message(thread_id: str, names: list[str], location: str, hint: str) -> str:
    """``no thread 'x' in store STORE (closest: a, b); HINT`` (difflib's closest names)."""
    closest = difflib.get_close_matches(thread_id, names, n=CLOSEST, cutoff=0.5)
    where = f"no thread {thread_id!r} in store {location}"
    if closest:
        where += f" (closest: {', '.join(closest)})"
    elif not names:
        where += " (it has no threads yet)"
    return f"{where}; {hint}"

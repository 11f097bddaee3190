"""The command lines of ``tui-agent approvals``, ``approve ID [--args JSON]`` and ``deny ID
--reason TEXT`` (``tui_agent/cli/approvals.py`` runs them), added to the parser of ``args.py``.
Only argparse is imported here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_EPILOG = """\
A tool made with create_tool(..., require_approval=True), or any tool of a run started with
require_tool_approval=True, waits for a person before it runs. Any terminal on the same store
answers it: the run goes on in the process that runs it, or here if that process has stopped.
An unknown or already answered id is refused (exit 2) and changes nothing.
"""


def approval_parsers(sub: Any, fmt: Any, common: Callable[[Any], None], common_epilog: str) -> None:
    """Add the three commands to ``sub`` (each with the shared store/agent options)."""
    epilog = _EPILOG + "\n" + common_epilog
    listing = sub.add_parser(
        "approvals",
        help="list the tool calls waiting for approval",
        formatter_class=fmt,
        epilog=epilog,
    )
    common(listing)
    listing.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per call per line (id, thread, tool, args, …)",
    )
    approve = sub.add_parser(
        "approve",
        help="approve a waiting tool call: the run goes on",
        formatter_class=fmt,
        epilog=epilog,
    )
    common(approve)
    approve.add_argument("id", help="the call's id (tui-agent approvals lists them)")
    approve.add_argument(
        "--args",
        metavar="JSON",
        help="run it with this input instead (a JSON object, checked against the tool's schema)",
    )
    approve.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="if the run goes on here, wait for it without printing it",
    )
    deny = sub.add_parser(
        "deny",
        help="decline a waiting tool call: the model gets the reason",
        formatter_class=fmt,
        epilog=epilog,
    )
    common(deny)
    deny.add_argument("id", help="the call's id (tui-agent approvals lists them)")
    deny.add_argument(
        "--reason",
        required=True,
        metavar="TEXT",
        help="why: the model reads it as the tool's error",
    )
    deny.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="if the run goes on here, wait for it without printing it",
    )

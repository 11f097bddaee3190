"""The CLI's commands by name: ``tui_agent.main`` hands each parsed command line here. Each
command's module is imported only when it runs, so ``--help`` stays quick."""

from __future__ import annotations

import argparse
from typing import Any


async def run_command(args: argparse.Namespace) -> int:
    """Run ``args.command`` (one of ``tui_agent.startup.args.COMMANDS``) to its exit code."""
    command: Any
    if args.command == "send":
        from tui_agent.cli.send import run_send as command
    elif args.command == "watch":
        from tui_agent.cli.watch import run_watch as command
    elif args.command == "chat":
        from tui_agent.cli.chat import run_chat as command
    elif args.command == "notify":
        from tui_agent.cli.inbox import run_notify as command
    elif args.command == "state":
        from tui_agent.cli.inbox import run_state as command
    elif args.command == "search":
        from tui_agent.cli.search import run_search as command
    elif args.command == "export":
        from tui_agent.cli.transfer import run_export as command
    elif args.command == "import":
        from tui_agent.cli.transfer import run_import as command
    elif args.command in ("approvals", "approve", "deny"):
        from tui_agent.cli.approvals import run as command
    elif args.command == "serve":
        from tui_agent.cli.serve import run_serve as command
    else:  # parse_args allows no other command
        from tui_agent.cli.config import run_config as command
    return int(await command(args))

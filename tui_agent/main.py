"""``tui-agent``: parse the command line, then start the app (no command) or one of the CLI's
commands. The one module that imports both front ends; they share only what lies below them
(``tui_agent.startup``), never each other (the import-linter contracts in pyproject.toml).

Only argparse is imported here, so ``tui-agent --help`` is instant, and ``tui-agent notify``
first tries its lean path (``tui_agent.cli.notify_fast``: the standard library only, a few
milliseconds past Python's own start-up).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from tui_agent.startup.args import parse_args, settle

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    warnings.formatwarning = _one_line_warning
    if "notify" in (sys.argv[1:] if argv is None else argv):
        from tui_agent.cli.notify_fast import run_fast

        code = run_fast(argv)
        if code is not None:
            if argv is None:  # the command itself (not a caller in-process): end it now
                from tui_agent.cli.notify_fast import exit_now

                exit_now(code)
            return code
    args = parse_args(argv)
    try:
        if args.command != "app":  # the app reads them after its first paint
            settle(args)
        import asyncio

        return asyncio.run(_start(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as error:
        if not _is_expected(error):
            raise
        _print_error(error)
        return EXIT_ERROR


def _is_expected(error: Exception) -> bool:
    """Errors that are the user's input or the outside world (one line, exit 2), not a bug:
    ours, and a store file sqlite3 cannot use (where the store did not name it already)."""
    import sqlite3

    from tui_agent.errors import TuiAgentError

    return isinstance(error, TuiAgentError | sqlite3.DatabaseError)


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any,
                      **__: Any) -> str:
    return f"tui-agent: warning: {message}\n"


def _print_error(error: BaseException) -> None:
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False).print(
        Text(f"tui-agent: {error}", style="bold red"), soft_wrap=True
    )


async def _start(args: argparse.Namespace) -> int:
    if args.command == "app":
        from tui_agent.app.main import run_app

        return await run_app(args)
    from tui_agent.cli.commands import run_command

    return await run_command(args)


if __name__ == "__main__":
    sys.exit(main())

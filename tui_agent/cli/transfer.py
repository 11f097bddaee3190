"""``tui-agent export`` and ``tui-agent import``: a thread whole out of a store (JSON, which
``import`` takes back into any store, or Markdown to read) and into another.

``export -t T [--format md|json] [-o FILE]`` writes to stdout unless ``-o``; ``import FILE.json
[--replace]`` refuses a thread the store has unless ``--replace``, and a file that is not an
export with one line, writing nothing. Tested by tests/test_export_import.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tui_agent.cli.render import make_console
from tui_agent.errors import ConfigError, StoreError
from tui_agent.export import export_text, read_archive
from tui_agent.startup.agents import open_memory


async def run_export(args: argparse.Namespace) -> int:
    memory = open_memory(args)
    try:
        thread = await memory.get_thread(args.thread)
        if thread is None:
            from tui_agent.cli.threads import missing_thread_message

            raise ConfigError("export: " + await missing_thread_message(
                memory, args.thread, "see `tui-agent search` for the store's threads"))
        if thread.resource_id != args.resource:
            raise ConfigError(f"export: no thread {args.thread!r} of resource "
                              f"{args.resource!r} in {memory.store.location}")
        text = await export_text(memory.store, args.thread, args.format)
    finally:
        await memory.store.close()
    if args.output is None:
        sys.stdout.write(text)
        return 0
    Path(args.output).write_text(text, encoding="utf-8")
    make_console(sys.stderr).print(
        f"[dim]{args.resource}/{args.thread} → {args.output} ({args.format})[/dim]")
    return 0


async def run_import(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = sys.stdin.read() if args.file == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"import: cannot read {args.file}: {error}") from None
    archive = read_archive(text, args.file)  # before the store is opened: nothing written
    memory = open_memory(args)
    try:
        try:
            await memory.store.import_thread(archive, replace=args.replace)
        except StoreError as error:
            if "exists already" in str(error):
                raise ConfigError(f"import: thread {archive.thread.id!r} exists in "
                                  f"{memory.store.location}: --replace to overwrite it") from None
            raise
    finally:
        await memory.store.close()
    t = archive.thread
    make_console(sys.stderr).print(
        f"imported {t.resource_id}/{t.id}: {len(archive.messages)} messages, "
        f"{len(archive.signals)} signals, {len(archive.state_lanes)} state lanes, "
        f"{len(archive.notifications)} notifications")
    return 0

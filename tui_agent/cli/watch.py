"""``tui-agent watch``: print a thread's live stream (every run, every signal) until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from tui_agent.cli.render import Renderer, chunk_json, make_console, quiet_terminal
from tui_agent.cli.threads import check_thread
from tui_agent.events import Chunk
from tui_agent.startup.agents import build_agent, store_path


async def run_watch(args: argparse.Namespace) -> int:
    agent = build_agent(args)
    try:
        await check_thread(agent.memory, args, may_create=args.wait,
                           hint="add --wait to wait for it")
        agent.runtime.host()  # it answers what others leave on the store's threads (issue 21)
        sub = await agent.subscribe_to_thread(resource_id=args.resource, thread_id=args.thread)
    except BaseException:  # refused (another resource's thread): close before the one line,
        await agent.close()  # or the store's worker thread dies noisily at exit
        await agent.memory.store.close()
        raise
    console = make_console()
    # The header goes to stderr, so stdout is only the stream (pure JSON lines with --json);
    # it is printed once subscribed, so a script may wait for it before sending.
    make_console(sys.stderr).print(
        f"[dim]watching {args.resource}/{args.thread} · store {store_path(agent)} · "
        "Ctrl-C to stop[/dim]"
    )
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, sub.unsubscribe)
    loop.add_signal_handler(signal.SIGTERM, sub.unsubscribe)
    renderer = Renderer(console)
    try:
        with quiet_terminal():
            async for chunk in sub.stream:
                _show(chunk, renderer, args.json)
    finally:
        renderer.close()
        loop.remove_signal_handler(signal.SIGINT)
        loop.remove_signal_handler(signal.SIGTERM)
        await agent.close()
        await agent.memory.store.close()
    return 0


def _show(chunk: Chunk | dict[str, Any], renderer: Renderer, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(chunk_json(chunk) + "\n")
        sys.stdout.flush()
    else:
        renderer.handle(chunk)

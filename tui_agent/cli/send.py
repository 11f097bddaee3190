"""``tui-agent send``: route one message into a thread and say what happened.

With ``--no-wait`` it only sends (``ThreadRuntime.sender_only``): a message that would wake the
idle thread is held there (``hold``) for the process that hosts the store (the app, chat,
watch) or the next one to open it, and ``send`` returns at once (tests/test_cli_notify.py).

If the thread was idle and this process won the wake, the run lives here: it is driven to its end
(its answer printed, or awaited with ``--quiet``), and so is any queued run that the store hands
to this process when it ends, so the thread's lease is never left to a process that has exited.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from tui_agent.cli.common import message_of
from tui_agent.cli.render import Renderer, make_console, quiet_terminal
from tui_agent.cli.threads import check_thread
from tui_agent.errors import ConfigError
from tui_agent.events import ERROR
from tui_agent.startup.agents import build_agent, check_model, parse_attrs
from tui_agent.startup.mcp_tools import close_mcp_tools


async def run_send(args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if not text.strip():
        raise ConfigError("send: the message is empty")
    attributes = parse_attrs(args.attr, args.as_name)
    agent = build_agent(args)
    try:
        await check_thread(agent.memory, args, may_create=args.new)
    except BaseException:
        await agent.memory.store.close()
        raise
    await check_model(agent, warm=False)  # a missing runtime or key fails before sending
    target = {"resource_id": args.resource, "thread_id": args.thread}
    agent.runtime.sender_only = args.no_wait  # a wake is held for the store's host
    receipt = _send(agent, args, text, attributes, target)
    decision = await receipt.accepted
    err = make_console(sys.stderr)
    action = decision["action"]
    run_id = decision.get("run_id")
    err.print(f"[bold]{action}[/bold]" + (f" → run {run_id}" if run_id else "")
              + (f" · {_who_answers(agent)}" if action == "hold" else ""), highlight=False)
    code = 0
    try:
        if action == "wake":
            code = await _drive(agent, decision["output"], quiet=args.quiet)
        await _drain_local_runs(agent, quiet=args.quiet)
    finally:
        await agent.close()
        await close_mcp_tools(agent)
        await agent.memory.store.close()
    return code


def _who_answers(agent: Any) -> str:
    from tui_agent.cli.notify_fast import answerer
    from tui_agent.hosts import hosted

    return answerer(hosted(getattr(agent.memory.store, "path", None))).replace("sends", "answers")


def _send(
    agent: Any, args: argparse.Namespace, text: str, attributes: dict[str, str],
    target: dict[str, str],
) -> Any:
    if (args.signal_type and args.signal_type != "user") or args.tag:
        signal_ = {"type": args.signal_type or "user", "contents": text, "attributes": attributes}
        if args.tag:
            signal_["tag_name"] = args.tag
        return agent.send_signal(signal_, **target)
    message = message_of(text, attributes)
    if args.queue:
        return agent.queue_message(message, **target)
    return agent.send_message(message, **target)


async def _drive(agent: Any, output: Any, *, quiet: bool) -> int:
    """Print (or just await) the run this process won; Ctrl-C aborts it cleanly."""
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, output.abort)
    renderer = Renderer(make_console())
    failed = False
    try:
        with quiet_terminal():
            async for chunk in output:
                failed = failed or chunk["type"] == ERROR
                if not quiet:
                    renderer.handle(chunk)
    finally:
        renderer.close()
        loop.remove_signal_handler(signal.SIGINT)
    return 1 if failed else 0


async def _drain_local_runs(agent: Any, *, quiet: bool) -> None:
    """A queued message's run may have been started here when ours ended: see it through."""
    while True:
        starting = agent.runtime.background()
        if starting:  # routing tasks that may be starting a run here
            await asyncio.gather(*starting, return_exceptions=True)
        outputs = agent.local_runs()
        if not outputs:
            return
        for output in outputs:
            if not quiet:
                make_console(sys.stderr).print(f"[dim]running queued run {output.run_id}[/dim]")
            await _drive(agent, output, quiet=quiet)

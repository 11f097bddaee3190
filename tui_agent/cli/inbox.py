"""``tui-agent notify`` and ``tui-agent state``: feed a thread's inbox and state lanes from a
script, through ``send_notification_signal`` / ``send_state_signal``, and print what happened
(the record and the policy's decision; the lane's new version or "unchanged")."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tui_agent.cli.render import make_console
from tui_agent.cli.threads import check_thread
from tui_agent.errors import ConfigError
from tui_agent.startup.agents import build_agent, check_model
from tui_agent.state.lanes import state_update


async def run_notify(args: argparse.Namespace) -> int:
    """The full path of ``tui-agent notify`` (any store, any agent's policy; the lean one,
    ``notify_fast``, handled the common case before anything was imported). Without ``--wait``
    this process only sends (``ThreadRuntime.sender_only``): what the decision sends at once is
    stored for a host to answer, and it returns; with ``--wait`` it runs the wake here."""
    from tui_agent.cli.notify_fast import answerer, notifications_of
    from tui_agent.hosts import hosted

    try:
        items = notifications_of(args, sys.stdin if args.stdin else None)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    for item in items:
        if not str(item.get("summary") or "").strip():
            raise ConfigError("notify: the summary is empty")
        if not item.get("source") or not item.get("kind"):
            raise ConfigError("notify: --source and --kind are required (or in each JSON line)")
    agent = build_agent(args)
    try:
        if not await check_thread(agent.memory, args, may_create=args.new):
            await agent.memory.create_thread(args.thread, resource_id=args.resource)
        if args.wait:
            await check_model(agent, warm=False)  # a delivery may wake the model here
        else:
            agent.runtime.sender_only = True
        outcomes = await agent.send_notification_signal(
            items, resource_id=args.resource, thread_id=args.thread)
        path = getattr(agent.memory.store, "path", None)
        who = "" if args.wait else f" · {answerer(hosted(path))}"
        err = make_console(sys.stderr)
        for outcome in outcomes:
            record, decision = outcome["record"], outcome["decision"]
            err.print(f"[bold]{decision['action']}[/bold] ({decision.get('reason', '')}){who}",
                      highlight=False, soft_wrap=True)  # one line, as the lean path writes it
            print(json.dumps({"record": _plain(record), "decision": _plain(decision)},
                             default=str, ensure_ascii=False))
        await agent.wait_for_local_runs()  # --wait: a run it woke lives here, let it finish
    finally:
        await agent.close()
        await agent.memory.store.close()
    return 0


async def run_state(args: argparse.Namespace) -> int:
    try:
        value = json.loads(args.json)
    except ValueError as error:
        raise ConfigError(f"state: not JSON: {error}") from None
    signal = state_update(args.lane, value, delta=args.delta, cache_key=args.cache_key)
    agent = build_agent(args)
    try:
        if not await check_thread(agent.memory, args, may_create=args.new):
            await agent.memory.create_thread(args.thread, resource_id=args.resource)
        outcome = await agent.send_state_signal(
            signal, resource_id=args.resource, thread_id=args.thread,
            if_idle={"behavior": "persist"})
        lane = await agent.memory.get_state_lane(args.thread, args.lane)
        err = make_console(sys.stderr)
        if isinstance(outcome, dict) and outcome.get("skipped"):
            err.print(f"[bold]unchanged[/bold] ({outcome.get('reason')})")
        else:
            err.print(f"[bold]{args.lane}[/bold] → version {lane.version if lane else '?'}")
        print(json.dumps(_plain(lane), default=str, ensure_ascii=False))
        await agent.wait_for_local_runs()
    finally:
        await agent.close()
        await agent.memory.store.close()
    return 0


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value

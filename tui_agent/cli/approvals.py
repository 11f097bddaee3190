"""``tui-agent approvals | approve ID | deny ID --reason TEXT``: the tool calls that wait for a
person, answered from any terminal.

``approvals`` lists the store's pending calls across every thread, oldest first (id, thread,
tool, input, age; ``--json``: one object per line). ``approve`` (``--args JSON``: an edited
input, checked against the tool's schema) and ``deny`` answer one. The run goes on in the
process that owns it; if that process died while the run waited, it goes on here (this
command runs it to its end, printing it, as ``send`` does a run it woke). An unknown or
answered id, or a bad ``--args``, is one red line and exit 2, and changes nothing. Tested by
tests/test_approvals_cli.py.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from typing import Any

from rich.table import Table

from tui_agent.cli.render import Renderer, make_console, quiet_terminal
from tui_agent.errors import ApprovalError
from tui_agent.startup.agents import build_agent, open_memory
from tui_agent.text import one_line, waited

INPUT_CHARS = 60  # an input longer than this is cut in the table (--json has it whole)


async def run_approvals(args: argparse.Namespace) -> int:
    memory = open_memory(args)
    try:
        pending = await memory.list_approvals()
    finally:
        await memory.store.close()
    now = time.time()
    if args.json:
        for record in pending:
            age_s = round(now - record.created_at.timestamp(), 3)
            line = {**record.model_dump(mode="json"), "age_s": age_s}
            sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        return 0
    if pending:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("id", "thread", "tool", "input", "age"):
            table.add_column(column)
        for record in pending:
            table.add_row(
                record.id,
                f"{record.resource_id}/{record.thread_id}",
                record.tool_name,
                _cut(one_line(json.dumps(record.args, ensure_ascii=False))),
                waited(now - record.created_at.timestamp()),
            )
        make_console().print(table)
    count = len(pending)
    make_console(sys.stderr).print(
        f"[dim]{count} {'call waits' if count == 1 else 'calls wait'} for approval[/dim]"
    )
    return 0


async def run_approve(args: argparse.Namespace) -> int:
    edited = None if args.args is None else _json_object(args.args)
    return await _answer(args, approved=True, edited=edited, reason=None)


async def run_deny(args: argparse.Namespace) -> int:
    reason = args.reason.strip()
    if not reason:
        raise ApprovalError("deny: --reason is empty (the model reads it as the tool's error)")
    return await _answer(args, approved=False, edited=None, reason=reason)


async def _answer(
    args: argparse.Namespace, *, approved: bool, edited: Any, reason: str | None
) -> int:
    from tui_agent.agent.approvals import answer

    agent = build_agent(args)
    try:
        done = await answer(agent, args.id, approved=approved, args=edited, reason=reason)
        record = done.approval
        assert record is not None
        what = "approved" if approved else "denied"
        err = make_console(sys.stderr)
        head = (
            f"[bold]{what}[/bold] {record.id} ({record.tool_name} on "
            f"{record.resource_id}/{record.thread_id})"
        )
        if done.output is not None:
            err.print(f"{head} → run {done.run_id} goes on here (its owner had stopped)")
            return await _drive(agent, done.output, quiet=args.quiet)
        if done.run_id is not None:
            taken, output = await unless_owner_goes_on(agent, record)
            if taken:
                err.print(f"{head} → run {done.run_id} goes on in the process that runs it")
                return 0
            if output is not None:
                err.print(f"{head} → run {output.run_id} goes on here (its owner had stopped)")
                return await _drive(agent, output, quiet=args.quiet)
        waiting = [
            w
            for w in await agent.memory.list_approvals(thread_id=record.thread_id)
            if w.run_id == record.run_id
        ]
        if waiting:
            err.print(f"{head}; the run waits for {len(waiting)} more")
        elif record.agent_id not in (None, agent.id):
            err.print(f"{head}; its run goes on in a process with agent {record.agent_id!r}")
        else:
            err.print(f"{head}; its run has ended")
        return 0
    finally:
        await agent.close()
        await agent.memory.store.close()


async def unless_owner_goes_on(agent: Any, record: Any) -> tuple[bool, Any]:
    """The run's lease was live when answered: wait until its owner takes the answer (True,
    None), or, if its lease runs out first (the owner died just before), take the run over
    here: (False, its output), or (False, None) if it is another agent's run. Told by the
    store's change feed; bounded by the lease's expiry.

    The lease is read before the call: an owner takes the answer before its run ends, so a
    run found gone was taken already when the call is read. The other order took an owner
    that took the answer and ended between the two reads for a dead one
    (tests/test_approvals.py::test_an_answer_taken_and_run_to_its_end_between_two_reads_...)."""
    memory = agent.memory
    with memory.changes.watch() as watch:
        while True:
            watch.event.clear()
            live = await memory.store.active_run(record.thread_id)
            current = await memory.get_approval(record.id)
            if current is None or current.taken_by is not None:
                return True, None
            if live is None or live.run_id != record.run_id:
                agent.runtime.ensure_dispatcher()
                resumed = await agent.runtime.resume_parked()
                outputs = [o for o in agent.local_runs() if o.run_id in resumed]
                return False, outputs[0] if outputs else None
            await watch.wait(max(0.0, live.expires_at.timestamp() - time.time()) + 0.05)


async def _drive(agent: Any, output: Any, *, quiet: bool) -> int:
    """Run the taken-over run here to its end (printed unless ``quiet``; Ctrl-C aborts it),
    and any run the store hands to this process when it ends (a queued message's)."""
    loop = asyncio.get_running_loop()
    code = 0
    while output is not None:
        loop.add_signal_handler(signal.SIGINT, output.abort)
        renderer = Renderer(make_console())
        try:
            with quiet_terminal():
                async for chunk in output:
                    code = 1 if chunk["type"] == "error" else code
                    if not quiet:
                        renderer.handle(chunk)
        finally:
            renderer.close()
            loop.remove_signal_handler(signal.SIGINT)
        await asyncio.gather(*agent.runtime.background(), return_exceptions=True)
        outputs = agent.local_runs()
        output = outputs[0] if outputs else None
    return code


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ApprovalError(f"approve: --args is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise ApprovalError(f"approve: --args must be a JSON object, not {type(value).__name__}")
    return value


def _cut(text: str) -> str:
    return text if len(text) <= INPUT_CHARS else text[: INPUT_CHARS - 1] + "…"


async def run(args: argparse.Namespace) -> int:
    """``approvals``, ``approve`` or ``deny``, by ``args.command``."""
    if args.command == "approvals":
        return await run_approvals(args)
    if args.command == "approve":
        return await run_approve(args)
    return await run_deny(args)

"""A message is stored once (issue 11): how much a big message adds to the store, beside the
message's own size (the anchor: one copy), measured in the same run.

For each store (a SQLite file: database + WAL after a checkpoint; PostgreSQL: its tables with
TOAST and indexes, on a throwaway server unless ``--pg``/``$TUI_AGENT_TEST_PG`` names one):

- ``send_message`` into a live run (stored pending, taken by the run at its step boundary);
- ``send_message`` that wakes an idle thread;
- a ``generate()`` input.

Each figure is the store's growth in MB and as a multiple of the message (goal < 1.5×; before
issue 11 a sent message took about 5×: the signal's model message and data, the history
message's content and metadata, and the echo). The text is random base64, which neither store
compresses. The message size limit is raised for the run (``max_text_bytes``).

    .venv/bin/python benchmarks/bench_store_once.py [--size 10000000] [--pg URL] [--no-pg]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pg_server

from tui_agent import Agent, Memory, SqliteStore
from tui_agent.signals.limits import InputLimits, set_input_limits
from tui_agent.store import open_store
from tui_agent.testing import ScriptedModel

R = "bench-user"
Row = tuple[str, str, str]


async def store_bytes(store: Any) -> int:
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        files = [Path(store.path), Path(store.path + "-wal")]
        return sum(f.stat().st_size for f in files if f.exists())
    return int(await (await store.pool()).fetchval(
        "SELECT sum(pg_total_relation_size(oid))::bigint FROM pg_class"
        " WHERE relkind='r' AND relnamespace='public'::regnamespace"))


class Gated:
    """Holds the run's first model call until ``gate`` is set."""

    def __init__(self) -> None:
        self.entered, self.gate = asyncio.Event(), asyncio.Event()
        self.calls = 0

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> str:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            await self.gate.wait()
        return "ok"


async def into_live_run(agent: Agent, model: Gated, text: str, thread: str) -> None:
    woken = await agent.send_message("start", resource_id=R, thread_id=thread).accepted
    await model.entered.wait()
    await agent.send_message(text, resource_id=R, thread_id=thread).accepted
    model.gate.set()
    await woken["output"].result()


async def wake(agent: Agent, model: Gated, text: str, thread: str) -> None:
    model.gate.set()
    woken = await agent.send_message(text, resource_id=R, thread_id=thread).accepted
    await woken["output"].result()


async def generate_input(agent: Agent, model: Gated, text: str, thread: str) -> None:
    model.gate.set()
    await agent.generate(text, memory={"resource": R, "thread": thread})


CASES: list[tuple[str, Callable[[Agent, Gated, str, str], Awaitable[None]]]] = [
    ("send_message into a live run", into_live_run),
    ("send_message waking an idle thread", wake),
    ("generate() input", generate_input),
]


async def growth(location: str, kind: str, text: str) -> list[Row]:
    rows = []
    for number, (name, case) in enumerate(CASES):
        store = open_store(location)
        model = Gated()
        agent = Agent(name="bench", instructions="x", model=ScriptedModel(handler=model),
                      memory=Memory(store=store))
        thread = f"t{number}"
        await store.ensure_thread(thread, R)
        before = await store_bytes(store)
        await case(agent, model, text, thread)
        grown = await store_bytes(store) - before
        await agent.close()
        await store.close()
        rows.append((f"{name} [{kind}]", f"{grown / 1e6:.1f} MB",
                     f"{grown / len(text):.2f}x the message; goal < 1.5x"))
    return rows


async def run(size: int, pg: str | None, use_pg: bool) -> list[Row]:
    text = base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]
    rows: list[Row] = [("anchor: the message itself", f"{len(text) / 1e6:.1f} MB",
                        "one copy; random base64 (no store compresses it)")]
    with tempfile.TemporaryDirectory() as tmp:
        rows += await growth(str(Path(tmp) / "once.db"), "sqlite", text)
    if not use_pg:
        return rows
    with ExitStack() as stack:
        try:
            admin = pg or stack.enter_context(pg_server.admin_url())
        except Exception as error:  # no server binaries here: say so, keep the SQLite figures
            rows.append(("PostgreSQL", "-", f"not measured: {error}"))
            return rows
        name = pg_server.new_database_name()
        await pg_server.create_database(admin, name)
        try:
            rows += await growth(pg_server.database_url(admin, name), "postgres", text)
        finally:
            await pg_server.drop_database(admin, name)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000, help="the message, characters")
    parser.add_argument("--pg", default=os.environ.get("TUI_AGENT_TEST_PG"))
    parser.add_argument("--no-pg", action="store_true")
    args = parser.parse_args()
    set_input_limits(InputLimits(max_text_bytes=args.size + 1_000))
    rows = asyncio.run(run(args.size, args.pg, not args.no_pg))
    widths = [max(len(r[i]) for r in [("figure", "value", "notes"), *rows]) for i in range(2)]
    for row in [("figure", "value", "notes"), *rows]:
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}")


if __name__ == "__main__":
    main()

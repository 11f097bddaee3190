"""Tool calls that wait for a person, answered from any terminal (issue 24): real ``tui-agent``
processes on one store, SQLite and PostgreSQL.

The owner is ``tui-agent send`` with the agent of tests/helpers/approval_agents.py (its
``deploy`` tool needs approval): its run parks, and other processes list the call
(``approvals``), answer it (``approve``/``deny``) or send into the thread meanwhile. The owner
killed (``kill -9``) while it waits: the call stays listed, and the run goes on in the process
that answers. Threads are made with the library, not by ``send``. Steps wait on the store's
rows and the processes' exits, with bounds (failure guards), never on sleeps alone.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOYER = f"{ROOT / 'tests' / 'helpers' / 'approval_agents.py'}:deployer"
R, T = "ann", "deploys"
GUARD_S = 30.0


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The store every process opens: a SQLite file, or a PostgreSQL database of its own."""
    if request.param == "sqlite":
        location = str(tmp_path / "shared.db")
        _with_store(location, lambda s: s.ensure_thread(T, R))
        yield location
        return
    admin = request.getfixturevalue("pg_admin_url")
    name = pg_server.new_database_name()
    pg_server.create_database_sync(admin, name)
    url = pg_server.database_url(admin, name)
    _with_store(url, lambda s: s.ensure_thread(T, R))
    try:
        yield url
    finally:
        pg_server.drop_database_sync(admin, name)


class Cli:
    """A running ``python -m tui_agent ...`` with its output collected in files."""

    def __init__(self, tmp: Path, *args: str, ttl_s: float | None = None) -> None:
        env = {**os.environ}
        if ttl_s is not None:
            env["TUI_AGENT_LEASE_TTL_S"] = str(ttl_s)
        self._out = tmp / f"out-{time.monotonic_ns()}"
        self._err = self._out.with_suffix(".err")
        with self._out.open("wb") as out, self._err.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tui_agent", *args],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )

    def finish(self) -> tuple[int, str, str]:
        """Exit code, stdout, and stderr with its lines joined (rich wraps them at 80)."""
        code = self.process.wait(GUARD_S)
        return code, self._out.read_text(), " ".join(self._err.read_text().split())


@pytest.fixture
def cli(tmp_path: Path, db: str) -> Iterator[Any]:
    started: list[Cli] = []

    def start(*args: str, agent: bool = True, ttl_s: float | None = None) -> Cli:
        given = ["--db", db, *(["--agent", DEPLOYER] if agent else []), *args]
        started.append(Cli(tmp_path, *given, ttl_s=ttl_s))
        return started[-1]

    yield start
    for command in started:
        if command.process.poll() is None:
            command.process.kill()
            command.process.wait(GUARD_S)


def _with_store(location: str, work: Any) -> Any:
    from tui_agent.store import open_store

    async def go() -> Any:
        store = open_store(location)
        try:
            return await work(store)
        finally:
            await store.close()

    return pg_server.run_sync(go())


def waiting_calls(db: str, count: int = 1) -> list[Any]:
    """The store's pending calls, once there are ``count`` (bounded)."""
    deadline = time.monotonic() + GUARD_S
    while True:
        found = _with_store(db, lambda s: s.list_approvals())
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, "no call waited for approval in time"
        time.sleep(0.05)


def test_any_terminal_lists_and_answers_a_waiting_call(db: str, cli: Any) -> None:
    owner = cli("send", "-r", R, "-t", T, "deploy prod")
    (call,) = waiting_calls(db)
    code, table, _ = cli("approvals", agent=False).finish()
    assert code == 0
    row = next(line for line in table.splitlines() if call.id in line)
    assert re.search(rf"{call.id}\s+{R}/{T}\s+deploy\s+{{\"env\": \"prod\"}}\s+\d+s", row), row
    code, lines, _ = cli("approvals", "--json", agent=False).finish()
    listed = json.loads(lines.splitlines()[0])
    assert (listed["id"], listed["thread_id"], listed["tool_name"], listed["args"]) == (
        call.id,
        T,
        "deploy",
        {"env": "prod"},
    )
    assert listed["age_s"] >= 0
    code, _, err = cli("approve", call.id, "--args", '{"env": "staging", "replicas": "x"}').finish()
    assert code == 2 and "edited input of deploy was refused" in err
    assert [c.status for c in waiting_calls(db)] == ["pending"]  # a refused answer changes nothing
    code, _, err = cli("approve", call.id, "--args", '{"env": "staging"}').finish()
    assert code == 0 and "goes on in the process that runs it" in err
    code, out, _ = owner.finish()
    assert code == 0 and "the tool said deployed to staging x1" in out
    code, _, err = cli("approve", call.id).finish()
    assert code == 2 and "approved already" in err
    code, _, err = cli("deny", "no-such-id", "--reason", "x").finish()
    assert code == 2 and "no tool call waits for approval under id 'no-such-id'" in err


def test_deny_gives_the_model_the_reason_as_the_tools_error(db: str, cli: Any) -> None:
    owner = cli("send", "-r", R, "-t", T, "deploy prod")
    (call,) = waiting_calls(db)
    code, _, err = cli("deny", call.id, "--reason", "not on a Friday").finish()
    assert code == 0 and "denied" in err
    code, out, _ = owner.finish()
    assert code == 0
    assert "the tool said Error: a person declined this tool call: not on a Friday" in out
    assert _with_store(db, lambda s: s.list_approvals()) == []


def test_a_run_whose_owner_was_killed_goes_on_in_the_terminal_that_answers(
    db: str, cli: Any
) -> None:
    """kill -9 while the run waits: the call survives its owner (still listed), a message sent
    meanwhile waits for the run, and the process that answers runs the rest of it."""
    owner = cli("send", "-r", R, "-t", T, "deploy prod", ttl_s=1.0)
    (call,) = waiting_calls(db)
    owner.process.kill()
    owner.process.wait(GUARD_S)
    code, lines, _ = cli("approvals", "--json", agent=False).finish()
    assert code == 0 and json.loads(lines)["id"] == call.id
    code, _, err = cli("send", "-r", R, "-t", T, "and tag it", ttl_s=1.0).finish()
    assert code == 0 and f"deliver → run {call.run_id}" in err  # held for the waiting run
    code, out, err = cli("approve", call.id, ttl_s=1.0).finish()
    assert code == 0 and "goes on here (its owner had stopped)" in err
    assert "deployed to prod x1" in out and "also heard: and tag it" in out
    messages = _with_store(db, lambda s: s.list_messages(T, limit=50))
    assert [m.role for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    runs = _with_store(db, lambda s: s.list_runs(T))
    assert sorted(r.status for r in runs) == ["finished", "interrupted"]
    assert next(r for r in runs if r.id == call.run_id).status == "interrupted"
    stored = _with_store(db, lambda s: s.get_approval(call.id))
    assert stored.status == "approved" and stored.taken_by not in (None, call.run_id)


def test_a_run_answered_by_another_agent_goes_on_in_the_next_process_with_its_agent(
    db: str, cli: Any
) -> None:
    """Answered from a terminal whose agent is not the run's (the demo agent): the answer
    stands, and the next process with the run's agent (here ``watch``) goes on with it — its
    event-driven rescue pass resumes answered runs whose owner died."""
    owner = cli("send", "-r", R, "-t", T, "deploy prod", ttl_s=1.0)
    (call,) = waiting_calls(db)
    owner.process.kill()
    owner.process.wait(GUARD_S)
    code, _, err = cli("approve", call.id, agent=False, ttl_s=1.0).finish()
    assert code == 0 and "goes on in a process with agent 'deployer'" in err
    watcher = cli("watch", "-r", R, "-t", T, "--json", ttl_s=1.0)
    deadline = time.monotonic() + GUARD_S
    while not any(r.status == "finished" for r in _with_store(db, lambda s: s.list_runs(T))):
        assert time.monotonic() < deadline, "no process went on with the answered run"
        time.sleep(0.05)
    watcher.process.terminate()
    messages = _with_store(db, lambda s: s.list_messages(T, limit=50))
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1].content == "the tool said deployed to prod x1"

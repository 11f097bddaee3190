"""``tui-agent search``: the real command on a store filled through the store's own methods;
what a script sees (JSON lines, exit statuses) and what a person sees (where, a snippet)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_agent.store import open_store
from tui_agent.store.records import MessageIn

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 30.0


def run(*args: str) -> tuple[int, str, str]:
    process = subprocess.run(
        [sys.executable, "-m", "tui_agent", *args], cwd=ROOT, capture_output=True, text=True,
        stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, env={**os.environ, "COLUMNS": "200"},
    )
    return process.returncode, process.stdout, process.stderr


@pytest.fixture
async def db(tmp_path: Path) -> str:
    path = tmp_path / "search.db"
    store = open_store(path)
    try:
        await store.ensure_thread("ops", "ann", title="Release week")
        await store.append("ops", "ann", messages=[
            MessageIn("user", "Is the deploy blocked on the database migration?"),
            MessageIn("assistant", "Yes: the deploy waits for review."),
        ])
        await store.ensure_thread("misc", "bob")
        await store.append("misc", "bob", messages=[MessageIn("user", "lunch? no deploy talk")])
    finally:
        await store.close()
    return str(path)


def test_search_prints_where_each_message_is_and_a_snippet(db: str) -> None:
    code, out, err = run("--db", db, "search", "deploy", "blocked")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("ann/ops · Release week · ") and lines[0].endswith(" · user")
    assert lines[1].strip() == "Is the deploy blocked on the database migration?"
    assert len(lines) == 2 and "1 message" in err


def test_search_json_is_one_object_per_message_newest_first(db: str) -> None:
    code, out, _ = run("--db", db, "search", "--json", "deploy")
    found = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(f["resource_id"], f["thread_id"], f["role"]) for f in found] == [
        ("bob", "misc", "user"), ("ann", "ops", "assistant"), ("ann", "ops", "user")]
    assert found[1]["text"] == "Yes: the deploy waits for review."
    assert {"message_id", "created_at", "thread_title"} <= found[0].keys()


def test_search_in_one_thread(db: str) -> None:
    code, out, _ = run("--db", db, "search", "-t", "ops", "--json", "deploy")
    assert code == 0 and {json.loads(line)["thread_id"] for line in out.splitlines()} == {"ops"}


def test_nothing_found_exits_1_and_bad_input_exits_2_with_one_line(db: str) -> None:
    code, out, err = run("--db", db, "search", "kubernetes")
    assert (code, out) == (1, "") and "0 messages" in err
    code, _, err = run("--db", db, "search", "-t", "nope", "deploy")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith(f"tui-agent: search: no thread 'nope' in store {db}")
    code, _, err = run("--db", db, "search", "--", "--")
    assert code == 2 and "has no words" in err and "Traceback" not in err
    code, _, err = run("--db", db, "search", "--limit", "0", "deploy")
    assert code == 2 and "--limit must be at least 1, not 0" in err

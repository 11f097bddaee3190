"""Export and import (issue 23): a thread made by a real agent (answers with a tool call whose
payload ``hooks["transform"]`` hides, a message from a named sender, a state lane with two
versions, a notification) leaves SQLite as JSON, goes into PostgreSQL and back into SQLite, and
exports the same JSON each time; what the imported thread reads back is what the first had.
The commands: a thread that exists is refused unless --replace; a file that is not an export gets
one line and nothing is written; Markdown shows the thread to a person."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tui_agent import Agent, Memory
from tui_agent.errors import ConfigError, StoreError
from tui_agent.export import archive_markdown, export_text, read_archive
from tui_agent.state.lanes import state_update
from tui_agent.store import Store, open_store
from tui_agent.testing import ScriptedModel
from tui_agent.tools import create_tool

ROOT = Path(__file__).resolve().parent.parent
R, T = "ann", "ops"
SECRET = "sk-live-123"


def lookup_tool() -> Any:
    return create_tool(
        id="lookup", description="Look a customer up",
        input_schema={"type": "object", "properties": {"id": {"type": "string"},
                                                        "secret": {"type": "string"}}},
        execute=lambda tool_input: {"name": "Acme", "api_key": SECRET})


def hide(ctx: dict[str, Any]) -> Any:
    if ctx["phase"] == "input-available":
        return {"id": ctx["input"]["id"]}
    return {"name": ctx["output"]["name"]}


async def make_thread(store: Store) -> None:
    model = ScriptedModel([
        {"tool_calls": [{"name": "lookup", "args": {"id": "c1", "secret": "raw-input"}}]},
        "Acme is the customer.", "Noted, Bea.",
    ])
    agent = Agent(name="ops", instructions="x", model=model, tools={"lookup": lookup_tool()},
                  hooks={"transform": hide}, memory=Memory(store=store))
    try:
        await agent.memory.create_thread(T, resource_id=R, title="Release week")
        await agent.generate("who is c1?", memory={"resource": R, "thread": T})
        receipt = agent.send_message(
            {"contents": "ship it friday", "attributes": {"name": "bea", "from": "slack"}},
            resource_id=R, thread_id=T)
        await receipt.accepted
        await agent.wait_for_local_runs()
        for tabs in (1, 3):
            await agent.send_state_signal(state_update("browser", {"tabs": tabs}),
                                          resource_id=R, thread_id=T,
                                          if_idle={"behavior": "persist"})
        await agent.send_notification_signal(
            {"source": "ci", "kind": "build", "summary": "build failed", "priority": "high"},
            resource_id=R, thread_id=T)
        await agent.wait_for_local_runs()
    finally:
        await agent.close()


async def test_a_thread_goes_sqlite_to_postgres_to_sqlite_and_exports_the_same_json(
    tmp_path: Path, pg_database: str
) -> None:
    source = open_store(tmp_path / "source.db")
    postgres = open_store(pg_database)
    back = open_store(tmp_path / "back.db")
    try:
        await make_thread(source)
        exported = await export_text(source, T, "json")
        document = json.loads(exported)
        assert SECRET not in exported and "raw-input" not in exported  # hidden stays hidden
        assert [m["role"] for m in document["messages"]].count("tool") == 1
        assert {s["data"]["attributes"].get("name") for s in document["signals"]} >= {"bea"}
        [lane] = document["state_lanes"]
        assert [v["value"] for v in lane["history"]] == [{"tabs": 1}, {"tabs": 3}]
        assert [n["summary"] for n in document["notifications"]] == ["build failed"]

        await postgres.import_thread(read_archive(exported, "x"))
        assert await export_text(postgres, T, "json") == exported
        await back.import_thread(read_archive(await export_text(postgres, T, "json"), "x"))
        assert await export_text(back, T, "json") == exported

        def shown(messages: list[Any]) -> list[tuple[str, Any]]:
            return [(m.role, m.content) for m in messages]

        assert shown(await back.list_messages(T, limit=100)) == shown(
            await source.list_messages(T, limit=100))
        assert (await back.get_state_lane(T, "browser")).version == 2  # type: ignore[union-attr]
        assert [h.text for h in await postgres.search_messages("friday")] == ["ship it friday"]
    finally:
        for store in (source, postgres, back):
            await store.close()


async def test_an_existing_thread_is_refused_unless_replaced(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")
    try:
        await make_thread(store)
        archive = await store.export_thread(T)
        assert archive is not None
        await store.append(T, R, messages=[])  # nothing changes it
        with pytest.raises(StoreError, match="exists already"):
            await store.import_thread(archive)
        from tui_agent.store.records import MessageIn

        await store.append(T, R, messages=[MessageIn("user", "added after the export")])
        await store.import_thread(archive, replace=True)
        assert await store.export_thread(T) == archive
        assert await store.search_messages("added") == []  # its index went with it
    finally:
        await store.close()


@pytest.mark.parametrize(("text", "expected"), [
    ("hello", "not JSON"),
    ('{"messages": []}', 'no "format": "tui-agent-thread"'),
    ('{"format": "tui-agent-thread", "version": 9}', "version 9"),
    ('{"format": "tui-agent-thread", "version": 1, "thread": {"id": "t"}}',
     "thread.resource_id: Field required"),
])
def test_a_file_that_is_not_an_export_is_named_in_one_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=r"f\.json") as raised:
        read_archive(text, "f.json")
    assert expected in str(raised.value) and "\n" not in str(raised.value)


async def test_markdown_shows_who_said_what(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")
    try:
        await make_thread(store)
        archive = await store.export_thread(T)
        assert archive is not None
        text = archive_markdown(archive)
    finally:
        await store.close()
    assert text.startswith("# Release week\n")
    assert "### user · bea · slack — " in text and "ship it friday" in text
    assert "- calls `lookup(" in text and SECRET not in text
    assert "### browser (version 2, 2 kept)" in text and '"tabs": 3' in text
    assert "- **high** ci/build: build failed" in text


def run(*args: str) -> tuple[int, str, str]:
    process = subprocess.run([sys.executable, "-m", "tui_agent", *args], cwd=ROOT,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL,
                             timeout=30, env=dict(os.environ))
    return process.returncode, process.stdout, process.stderr


async def test_the_commands_export_and_import(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    store = open_store(source)
    try:
        await make_thread(store)
    finally:
        await store.close()
    code, out, err = run("--db", str(source), "export", "-r", R, "-t", T, "--format", "json")
    assert code == 0, err
    file = tmp_path / "ops.json"
    file.write_text(out)
    code, _, err = run("--db", str(target), "import", str(file))
    count = len(json.loads(out)["messages"])
    assert code == 0 and f"imported ann/ops: {count} messages" in err, err
    code, again, _ = run("--db", str(target), "export", "-r", R, "-t", T, "--format", "json",
                         "-o", str(tmp_path / "again.json"))
    assert code == 0 and again == "" and (tmp_path / "again.json").read_text() == out
    code, _, err = run("--db", str(target), "import", str(file))
    assert code == 2 and "--replace" in err and len(err.strip().splitlines()) == 1
    assert run("--db", str(target), "import", "--replace", str(file))[0] == 0
    code, md, _ = run("--db", str(target), "export", "-r", R, "-t", T)
    assert code == 0 and md.startswith("# Release week")
    code, _, err = run("--db", str(target), "export", "-r", R, "-t", "nope")
    assert code == 2 and "no thread 'nope'" in err


def test_importing_a_file_that_is_not_an_export_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"title": "my notes"}')
    target = tmp_path / "new.db"
    code, out, err = run("--db", str(target), "import", str(bad))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.strip().splitlines() == [
        f'tui-agent: {bad} is not a tui-agent export (no "format": "tui-agent-thread")']
    assert not target.exists()

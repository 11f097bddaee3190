"""The real ``tui-agent`` commands, run as subprocesses on a temp store.

The agent comes from ``tests/helpers/cli_agents.py`` (ScriptedModel: no model, no network), so
what is tested is the command line itself: routing decisions, streams seen from another process,
errors, and the chat driven through stdin.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from helpers.sql import messages_sync

ROOT = Path(__file__).resolve().parent.parent
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"
TIMEOUT_S = 30.0


class Command:
    """A running ``python -m tui_agent ...``; its output is collected by reader threads,
    so a test can wait for a marker (a condition wait, not a sleep)."""

    started: ClassVar[list[Command]] = []  # ended after each test by _commands_ended

    def __init__(self, *args: str, stdin: bool = False, env: dict[str, str] | None = None):
        Command.started.append(self)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tui_agent", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self._changed = threading.Condition()
        self.output = {"stdout": "", "stderr": ""}
        for name in self.output:
            threading.Thread(target=self._read, args=(name,), daemon=True).start()

    def _read(self, name: str) -> None:
        stream = getattr(self.process, name)
        while chunk := os.read(stream.fileno(), 65536):
            with self._changed:
                self.output[name] += chunk.decode("utf-8", "replace")
                self._changed.notify_all()
        with self._changed:
            self.output[name] += "\0"  # end of stream
            self._changed.notify_all()

    def wait_for(self, marker: str, stream: str = "stdout", times: int = 1) -> str:
        """Until ``marker`` is in the output ``times`` times (or the stream ended)."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: self.output[stream].count(marker) >= times
                or "\0" in self.output[stream], TIMEOUT_S
            )
            text = self.output[stream]
        assert found and text.count(marker) >= times, (
            f"{marker!r} not {times} times in {stream}: {text!r}\n{self.output}")
        return text

    def write(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def finish(self) -> tuple[int, str, str]:
        code = self.process.wait(TIMEOUT_S)
        self.wait_for("\0", "stdout")
        self.wait_for("\0", "stderr")
        self._close_pipes()
        return code, self.output["stdout"].rstrip("\0"), self.output["stderr"].rstrip("\0")

    def end(self) -> None:
        """Kill the command if it still runs (a test failed before finishing it)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT_S)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    return Command(*args, env=env).finish()


@pytest.fixture(autouse=True)
def _commands_ended() -> Iterator[None]:
    yield
    while Command.started:
        Command.started.pop().end()


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


def stored_messages(db: str) -> list[tuple[str, Any, dict[str, Any]]]:
    """Every thread's messages as the store reads them back (a signal's text is stored once,
    in the signal's row), in the order they were stored."""
    return [(m.role, m.content, m.metadata) for m in messages_sync(db)]


# -- send --------------------------------------------------------------------------------------


def test_send_wakes_a_run_and_prints_its_answer(db: str) -> None:
    code, out, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", "t1", "--new",
                         "--as", "Devin", "--attr", "from=slack", "hello", "there")
    assert code == 0, err
    assert err.startswith("wake → run ")
    assert "Devin · slack › hello there" in out
    assert 'echo: <user name="Devin" from="slack">hello there</user>' in out
    assert [m[0] for m in stored_messages(db)] == ["user", "assistant"]


def test_send_shows_tool_calls_and_results(db: str) -> None:
    code, out, _ = run("--db", db, "send", "--agent", SCRIPTED, "please use the tool")
    assert code == 0
    assert '⚙ shout({"text": "hi"})' in out
    assert "↳ HI" in out
    assert out.index("↳ HI") < out.index("the tool said HI")


def test_watch_json_prints_a_run_woken_by_another_process(db: str) -> None:
    watch = Command("--db", db, "watch", "--agent", SCRIPTED, "-r", "ann", "-t", "shared",
                    "--json", "--wait")
    watch.wait_for("watching ann/shared", "stderr")  # subscribed
    code, _, err = run("--db", db, "send", "--agent", SCRIPTED, "-r", "ann", "-t", "shared",
                       "--new", "--as", "Devin", "--quiet", "hi from afar")
    assert code == 0, err
    watch.wait_for('"type": "finish"')
    watch.process.send_signal(signal.SIGINT)
    code, out, _ = watch.finish()
    assert code == 0
    chunks = [json.loads(line) for line in out.splitlines()]
    assert [set(c) for c in chunks] == [{"type", "run_id", "from", "payload"}] * len(chunks)
    types = [c["type"] for c in chunks]
    assert types[:3] == ["start", "data-user-message", "step-start"]
    assert types[-2:] == ["step-finish", "finish"]
    assert chunks[1]["payload"]["attributes"] == {"name": "Devin"}
    text = "".join(c["payload"]["text"] for c in chunks if c["type"] == "text-delta")
    assert text == 'echo: <user name="Devin">hi from afar</user>'
    assert {c["run_id"] for c in chunks} == {err.split()[-1]}


def test_send_into_another_process_live_run_is_delivered(db: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    held = {"CLI_TEST_GATE": str(gate)}
    watch = Command("--db", db, "watch", "--agent", SCRIPTED, "-t", "busy", "--json", "--wait")
    watch.wait_for("watching", "stderr")
    first = Command("--db", db, "send", "--agent", SCRIPTED, "-t", "busy", "--new", "--as", "ann",
                    "a long first message that takes a while to echo back", env=held)
    watch.wait_for('"type": "step-start"')  # the first run is live, its model held at the gate
    code, _, err = run("--db", db, "send", "--agent", SCRIPTED, "-t", "busy", "--as", "bob",
                       "second")
    assert code == 0
    run_id = first.wait_for("wake → run", "stderr").split("wake → run ")[1].split()[0]
    assert err.strip() == f"deliver → run {run_id}"
    gate.touch()
    code, out, _ = first.finish()  # the first process answers both, in one run
    assert code == 0
    assert "bob › second" in out
    assert out.rstrip().endswith('echo: <user name="bob">second</user>')
    watch.process.send_signal(signal.SIGINT)
    watch.finish()


def test_queue_on_an_idle_thread_starts_at_once(db: str) -> None:
    code, out, err = run("--db", db, "send", "--agent", SCRIPTED, "--queue", "queued one")
    assert code == 0
    assert err.startswith("wake → run ")
    assert "echo: queued one" in out


# -- errors: one clear line, exit code 2 ------------------------------------------------------


# The app itself ([]) starts without a key: its pane names the variable and offers the local
# model (issue 23, tests/app/test_thread_model.py).
@pytest.mark.parametrize("command", [["chat"], ["send", "hi"]])
def test_missing_credential_is_one_clear_line(db: str, command: list[str]) -> None:
    code, out, err = run("--db", db, "--model", "openai/gpt-4o-mini", *command)
    assert code == 2
    assert "Traceback" not in err + out
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0], err
    assert not Path(db).exists() or stored_messages(db) == []  # nothing was sent


def test_missing_local_runtime_says_how_to_install(db: str) -> None:
    # xllamacpp hidden from this interpreter: what a machine without the runtime sees.
    script = (
        "import sys; sys.modules['xllamacpp'] = None; "
        "from tui_agent.main import main; sys.exit(main())"
    )
    process = subprocess.run(
        [sys.executable, "-c", script, "--db", db, "chat"], cwd=ROOT, capture_output=True,
        text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S,
    )
    assert process.returncode == 2
    assert "Traceback" not in process.stderr
    assert "pip install" in process.stderr and "xllamacpp" in process.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["send", "--attr", "nonsense", "hi"], "--attr 'nonsense': write it as name=value"),
        (["send", "--attr", "bad name=x", "hi"], "bad name"),
        (["send", "--agent", "tests/helpers/nope.py:x", "hi"], "does not exist"),
        (["send", "--agent", "tests/helpers/cli_agents.py:nope", "hi"], "no attribute 'nope'"),
        (["send", "--agent", "tests/helpers/cli_agents.py:pair", "hi"], "first, second"),
        (["send", "--model", "gpt-4o", "hi"], "not a router string"),
        (["send", "--model", "local/nonexistent", "hi"], "unknown local model"),
    ],
)
def test_bad_input_is_one_clear_line(db: str, args: list[str], message: str) -> None:
    code, out, err = run("--db", db, *args)
    assert code == 2, out + err
    assert message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("flag", "env", "message"),
    [
        # port 1 of this machine: nothing listens (the tests never leave the machine)
        ("postgresql://me:s3cret@127.0.0.1:1/team", None, "cannot open the PostgreSQL store"),
        (None, "mysql://host/db", "unknown scheme 'mysql'"),
    ],
)
def test_a_store_url_it_cannot_open_is_one_clear_line(
    flag: str | None, env: str | None, message: str
) -> None:
    db = ["--db", flag] if flag else []
    code, out, err = run(*db, "send", "--agent", SCRIPTED, "hi",
                         env={"TUI_AGENT_DB": env} if env else None)
    assert code == 2, out + err
    assert message in err and "Traceback" not in err and "s3cret" not in err


def test_a_sqlite_url_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "by-url.db"
    code, out, err = run("--db", f"sqlite://{file}", "send", "--agent", SCRIPTED, "hello")
    assert code == 0, out + err
    assert stored_messages(str(file))[0][:2] == ("user", "hello")


def test_agent_name_picks_one_of_several(db: str) -> None:
    code, out, _ = run("--db", db, "send", "--agent", "tests/helpers/cli_agents.py:pair",
                       "--agent-name", "second", "hi")
    assert code == 0
    assert "● second" in out and out.rstrip().endswith("two")


# -- chat ----------------------------------------------------------------------------------------


def test_chat_through_stdin(db: str) -> None:
    chat = Command("--db", db, "chat", "--agent", SCRIPTED, "-r", "lab", "-t", "c", "--as", "zoe",
                   "--attr", "from=cli", stdin=True)
    chat.write("hello chat")
    chat.wait_for('echo: <user name="zoe" from="cli">hello chat</user>')
    chat.write("/history 2")
    chat.wait_for("zoe · cli › hello chat\necho:")  # the stored pair, read back from memory
    chat.write("/quit")
    code, out, err = chat.finish()
    assert code == 0, err
    assert f"· thread lab/c · store {db}" in out  # the banner names where the chat lives


def test_chat_sees_another_terminals_run(db: str) -> None:
    chat = Command("--db", db, "chat", "--agent", SCRIPTED, "-t", "room", stdin=True)
    chat.wait_for("model ready")
    code, _, _ = run("--db", db, "send", "--agent", SCRIPTED, "-t", "room", "--as", "Devin",
                     "--attr", "from=slack", "--quiet", "from elsewhere")
    assert code == 0
    chat.wait_for('echo: <user name="Devin" from="slack">from elsewhere</user>')
    assert "Devin · slack › from elsewhere" in chat.output["stdout"]
    chat.write("/quit")
    assert chat.finish()[0] == 0


def test_ctrl_c_aborts_the_answer_and_keeps_the_partial_text(db: str) -> None:
    chat = Command("--db", db, "chat", "--agent", SCRIPTED, "-t", "abort", stdin=True,
                   env={"CLI_TEST_DELAY_S": "0.05"})
    chat.write("x" * 400)  # ~100 chunks, 5 s: long enough to abort in the middle
    chat.wait_for("echo: xx")
    chat.process.send_signal(signal.SIGINT)
    chat.wait_for("aborted — the partial answer is kept")
    chat.write("/quit")
    code, _, err = chat.finish()
    assert code == 0, err
    role, content, metadata = stored_messages(db)[-1]
    assert role == "assistant" and metadata.get("aborted") is True
    assert content.startswith("echo: xx") and len(content) < len("echo: " + "x" * 400)


def test_ctrl_d_quits(db: str) -> None:
    chat = Command("--db", db, "chat", "--agent", SCRIPTED, stdin=True)
    assert chat.process.stdin is not None
    chat.process.stdin.close()
    assert chat.finish()[0] == 0


def test_help_lists_the_commands_and_flags() -> None:
    code, out, _ = run("--help")
    assert code == 0
    for word in ("chat", "send", "watch", "--db", "--agent", "--model", "--tools"):
        assert word in out
    code, out, _ = run("send", "--help")
    assert code == 0 and "--queue" in out and "--attr" in out


@pytest.mark.local_model
@pytest.mark.timeout(180)  # the weights loaded cold, answers generated by a real model
def test_chat_on_the_real_local_model(db: str) -> None:
    chat = Command("--db", db, "chat", "--resource", "me", stdin=True)
    chat.write("Say hello in one short sentence.")
    chat.wait_for("● demo\n")
    chat.write("/quit")
    code, out, err = chat.finish()
    assert code == 0, err
    answer = out.split("● demo\n", 1)[1].strip()
    assert answer, out
    assert stored_messages(db)[-1][0] == "assistant"

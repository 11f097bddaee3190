"""The command line never shows a traceback for bad input or an unusable store: one line, exit
code 2 (issue 11). Also: ``--agent FILE.py:NAME`` leaves no folder on sys.path, and
``--agent module:NAME`` takes only Agents (or a function returning them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_agent.errors import ConfigError
from tui_agent.startup.agents import load_agents

ROOT = Path(__file__).resolve().parent.parent
SCRIPTED = f"{ROOT / 'tests' / 'helpers' / 'cli_agents.py'}:scripted"
TIMEOUT_S = 30.0


def run(*args: str | bytes, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = subprocess.run(
        [sys.executable, "-m", "tui_agent", *args], cwd=ROOT, capture_output=True,
        stdin=subprocess.DEVNULL, timeout=TIMEOUT_S, env={**os.environ, **(env or {})},
    )
    return (process.returncode, process.stdout.decode("utf-8", "replace"),
            process.stderr.decode("utf-8", "replace"))


def _one_clear_line(code: int, out: str, err: str, expected: str) -> None:
    assert code == 2, out + err
    assert "Traceback" not in err, err
    assert expected in err, err


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


@pytest.mark.parametrize(("content", "expected"), [
    (b"hello, not a database\n" * 100, "is not a SQLite database"),
    (b"SQLite format 3\x00" + b"\x10\x00\x01\x01" + b"\xff" * 5000, "cli.db"),
    (None, "is a directory"),
])
@pytest.mark.parametrize("command", [["send", "hi"], ["watch"]])
def test_an_unusable_store_is_one_line_and_exit_2(
    db: str, content: bytes | None, expected: str, command: list[str]
) -> None:
    if content is None:
        os.mkdir(db)
    else:
        Path(db).write_bytes(content)
        Path(db).chmod(0o600)
    _one_clear_line(*run("--db", db, *command[:1], "--agent", SCRIPTED, *command[1:]), expected)


def test_invalid_utf8_in_argv_is_one_clear_line(db: str) -> None:
    _one_clear_line(*run("--db", db, "send", "--agent", SCRIPTED, b"caf\xe9 \xff"),
                    "lone surrogate")
    _one_clear_line(*run("--db", db, "send", "--agent", SCRIPTED, "-t", b"\xff", "hi"),
                    "thread")


def test_an_empty_thread_is_an_error_not_main(db: str) -> None:
    _one_clear_line(*run("--db", db, "send", "--agent", SCRIPTED, "-t", "", "hi"), "thread")
    _one_clear_line(*run("--db", db, "send", "--agent", SCRIPTED, "-r", " ", "hi"), "resource")
    _one_clear_line(*run("--db", db, "config", "-t", ""), "thread")  # was accepted as ""


def test_an_agent_file_with_a_syntax_error_shows_the_file_and_line(
    db: str, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("from tui_agent import Agent\n\n\nagent = = Agent(name='x')\n")
    code, out, err = run("--db", db, "send", "--agent", f"{broken}:agent", "hi")
    _one_clear_line(code, out, err, f"{broken}:4")
    assert "SyntaxError" in err


def test_an_agent_file_that_raises_shows_the_file_and_line(db: str, tmp_path: Path) -> None:
    failing = tmp_path / "failing.py"
    failing.write_text("x = 1\nraise RuntimeError('no key configured')\n")
    code, out, err = run("--db", db, "send", "--agent", f"{failing}:agent", "hi")
    _one_clear_line(code, out, err, f"{failing}:2")
    assert "no key configured" in err


def test_watch_with_a_resource_that_does_not_own_the_thread_is_refused(db: str) -> None:
    code, out, err = run("--db", db, "-r", "alice", "send", "--agent", SCRIPTED, "secret")
    assert code == 0, out + err
    _one_clear_line(*run("--db", db, "-r", "mallory", "watch", "--agent", SCRIPTED),
                    "belongs to resource 'alice'")


# -- --agent loading (in process: what sys.path and the loaded values are) ---------------------


def test_an_agent_file_leaves_no_folder_on_sys_path(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "helper_for_agents.py").write_text("NAME = 'from a sibling'\n")
    (folder / "litellm.py").write_text("raise RuntimeError('the shadow litellm was imported')\n")
    (folder / "agents.py").write_text(
        "from helper_for_agents import NAME\n"  # a sibling import still works
        "from tui_agent import Agent\n"
        "from tui_agent.testing import ScriptedModel\n"
        "agent = Agent(name=NAME.replace(' ', '-'), instructions='x',\n"
        "              model=ScriptedModel(replies=['ok']))\n"
    )
    before = list(sys.path)
    try:
        agents = load_agents(f"{folder / 'agents.py'}:agent")
        assert agents[0].name == "from-a-sibling"
        assert sys.path == before
        assert str(folder) not in sys.path
    finally:
        sys.path[:] = before
        sys.modules.pop("helper_for_agents", None)


@pytest.mark.parametrize(("spec", "expected"), [
    ("os:getcwd", "must be an Agent"),  # a function returning something else
    ("os.path:join", "takes arguments"),  # never called with what it needs: not called at all
    ("collections:OrderedDict", "the class OrderedDict"),
    ("os:sep", "got str"),
    ("json:decoder", "got module"),
    ("tests.helpers.cli_agents:_last_user_text", "takes arguments"),
])
def test_agent_module_name_only_takes_agents(spec: str, expected: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    with pytest.raises(ConfigError, match=expected):
        load_agents(spec)


def test_agent_module_name_takes_agents_lists_dicts_and_factories(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    assert [a.id for a in load_agents("tests.helpers.cli_agents:scripted")] == ["scripted"]
    assert len(load_agents("tests.helpers.cli_agents:pair")) == 2


@pytest.mark.parametrize("body", [
    "async def agent():\n    return None\n",
    # an awaitable that is no coroutine (it has no close()): refused the same way
    "class Later:\n    def __await__(self):\n        yield\n\n\ndef agent():\n    return Later()\n",
])
def test_an_agent_function_that_returns_an_awaitable_is_refused(tmp_path: Path,
                                                                body: str) -> None:
    (tmp_path / "agents.py").write_text(body)
    with pytest.raises(ConfigError, match="the function must not be async"):
        load_agents(f"{tmp_path / 'agents.py'}:agent")

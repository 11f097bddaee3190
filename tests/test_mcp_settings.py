"""MCP servers from the settings file (``[mcp.servers.NAME]``): parsed and checked (a bad entry
is one error naming the server and the field), listed by ``tui-agent config`` without their
secrets, and given to the agent the CLI builds (tui_agent/startup/mcp_tools.py): its tools
reach a ``send`` run, a server that does not start is one warning line and nothing else stops,
require_approval is carried per server and per tool."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tui_agent import Agent, create_tool
from tui_agent.errors import ConfigError
from tui_agent.settings import load_settings
from tui_agent.startup.mcp_tools import (
    MCPToolbox,
    attach_mcp_tools,
    close_mcp_tools,
    start_mcp_tools,
)
from tui_agent.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "helpers" / "mcp_server.py"
CALLING = f"{ROOT / 'tests' / 'helpers' / 'mcp_agents.py'}:calling"
TIMEOUT_S = 30.0


def toml_string(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string


def calc_server(name: str = "calc", extra: str = "") -> str:
    return (
        f"[mcp.servers.{name}]\ncommand = {toml_string(sys.executable)}\n"
        f"args = [{toml_string(str(SERVER))}]\n{extra}"
    )


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("TUI_AGENT_DB", raising=False)
    return folder


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui_agent", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S * 2,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


# -- the settings ------------------------------------------------------------------------------


def test_servers_are_read_from_the_file(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text(
        calc_server(extra='env = { UNITS = "si" }\nrequire_approval = ["crash"]\ntimeout = 5\n')
        + '[mcp.servers.docs]\nurl = "http://127.0.0.1:8000/mcp"\nrequire_approval = true\n'
    )
    settings = load_settings()
    calc, docs = settings.mcp.servers["calc"], settings.mcp.servers["docs"]
    assert (calc.command, calc.args, calc.env) == (sys.executable, [str(SERVER)], {"UNITS": "si"})
    assert (calc.timeout, calc.require_approval) == (5.0, ["crash"])
    assert (docs.url, docs.require_approval, docs.command) == (
        "http://127.0.0.1:8000/mcp",
        True,
        None,
    )
    assert settings.sources["mcp"].startswith("file ")


def test_a_home_folder_in_command_and_cwd_is_expanded(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text(
        '[mcp.servers.calc]\ncommand = "~/bin/calc"\ncwd = "~/servers"\n'
    )
    calc = load_settings().mcp.servers["calc"]
    assert (calc.command, calc.cwd) == (
        str(Path.home() / "bin" / "calc"),
        str(Path.home() / "servers"),
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            '[mcp.servers.calc]\nargs = ["x"]\n',
            "mcp.servers.calc: value error, give either command (a server on stdio) or url",
        ),
        ('[mcp.servers.calc]\ncommand = "x"\nurl = "http://h/mcp"\n', "mcp.servers.calc: "),
        (
            '[mcp.servers.calc]\ncommand = "x"\nargs = "a b"\n',
            "mcp.servers.calc.args: input should be a valid list",
        ),
        ('[mcp.servers.calc]\nurl = "ftp://h/mcp"\n', "mcp.servers.calc.url: value error, an http"),
        (
            '[mcp.servers.calc]\ncommand = "x"\nenv = { A = 1 }\n',
            "mcp.servers.calc.env.A: input should be a valid string",
        ),
        (
            '[mcp.servers.calc]\ncommand = "x"\ntimeout = 0\n',
            "mcp.servers.calc.timeout: value error, a number of seconds > 0",
        ),
        (
            '[mcp.servers.calc]\ncommand = "x"\nrequire_approval = "yes"\n',
            "mcp.servers.calc.require_approval",
        ),
        (
            '[mcp.servers.calc]\ncommand = "x"\ncommnd = "y"\n',
            "unknown key 'mcp.servers.calc.commnd' (known keys: command, args, env, cwd, url",
        ),
        ('[mcp.server.calc]\ncommand = "x"\n', "unknown key 'mcp.server' (known keys: servers)"),
    ],
)
def test_a_bad_entry_is_one_error_naming_the_server_and_the_field(
    workdir: Path, table: str, message: str
) -> None:
    (workdir / "tui-agent.toml").write_text(table)
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert str(raised.value).startswith(f"file {workdir / 'tui-agent.toml'}: ")
    assert message in str(raised.value)


def test_a_bad_entry_stops_the_cli_with_one_line(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text('[mcp.servers.calc]\ncommand = "x"\ntimeout = -1\n')
    done = run_cli("config", cwd=workdir)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1
    assert "mcp.servers.calc.timeout" in lines[0]


# -- tui-agent config ----------------------------------------------------------------------------


def test_config_lists_the_servers_without_their_secrets(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text(
        '[mcp.servers.github]\ncommand = "npx"\n'
        'args = ["-y", "server-github", "--token", "ghp_cli", "--api-key=sk-arg"]\n'
        'env = { GITHUB_TOKEN = "ghp_env", LOG_LEVEL = "debug" }\n'
        'require_approval = ["create_issue"]\n'
        '[mcp.servers.docs]\nurl = "https://me:hunter2@docs.example/mcp?api_key=sk-url&lang=en"\n'
    )
    done = run_cli("config", cwd=workdir)
    assert done.returncode == 0, done.stderr
    for secret in ("ghp_cli", "sk-arg", "ghp_env", "debug", "hunter2", "sk-url"):
        assert secret not in done.stdout
    lines = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    github, docs = lines["mcp.servers.github"], lines["mcp.servers.docs"]
    shown = json.loads(github.split("  ", 1)[1].rsplit("  #", 1)[0])
    assert shown == {
        "command": "npx",
        "args": ["-y", "server-github", "--token", "***", "--api-key=***"],
        "env": {"GITHUB_TOKEN": "***", "LOG_LEVEL": "***"},
        "require_approval": ["create_issue"],
    }
    assert github.endswith(f"# file {workdir / 'tui-agent.toml'}")
    assert "https://me:***@docs.example/mcp?api_key=***&lang=en" in docs
    assert "mcp " not in done.stdout.replace("mcp.servers", ""), "one line per server instead"


def test_config_without_servers_shows_the_default(workdir: Path) -> None:
    done = run_cli("config", cwd=workdir)
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert '{"servers": {}}' in lines["mcp"] and "# default" in lines["mcp"]


# -- the CLI's agent ----------------------------------------------------------------------------


def test_send_runs_with_the_servers_tools(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text(calc_server())
    done = run_cli(
        "--db", str(workdir / "x.db"), "send", "--agent", CALLING, "hello mcp", cwd=workdir
    )
    assert done.returncode == 0, done.stderr
    assert 'the server said {"result": "echo: hello mcp"}' in done.stdout
    assert "warning" not in done.stderr


def test_a_server_that_does_not_start_is_one_line_and_the_run_goes_on(workdir: Path) -> None:
    (workdir / "tui-agent.toml").write_text(
        calc_server() + '[mcp.servers.ghost]\ncommand = "/no/such/mcp-server"\n'
    )
    done = run_cli(
        "--db", str(workdir / "x.db"), "send", "--agent", CALLING, "still here", cwd=workdir
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert warnings == [
        "tui-agent: warning: MCP server 'ghost' did not start: "
        "FileNotFoundError: No such file or directory: /no/such/mcp-server; "
        "its tools are left out"
    ]
    assert 'the server said {"result": "echo: still here"}' in done.stdout


# -- attach_mcp_tools, in process ----------------------------------------------------------------


def settings_with(workdir: Path, text: str) -> Any:
    (workdir / "tui-agent.toml").write_text(text)
    return load_settings()


async def test_tools_carry_require_approval_from_the_settings(workdir: Path) -> None:
    settings = settings_with(
        workdir,
        calc_server("all", "require_approval = true\n")
        + calc_server("some", 'require_approval = ["crash"]\n'),
    )
    agent = Agent(name="a", instructions="x", model=ScriptedModel(["ok"]))
    attach_mcp_tools(agent, settings)
    try:
        assert await asyncio.wait_for(start_mcp_tools(agent), TIMEOUT_S) == []
        tools = await agent.tools(None)
    finally:
        await close_mcp_tools(agent)
    assert tools["all_add"].require_approval and tools["all_echo"].require_approval
    assert tools["some_crash"].require_approval
    assert not tools["some_add"].require_approval and not tools["some_echo"].require_approval


async def test_the_agents_own_tool_wins_a_name_and_the_clash_is_reported(workdir: Path) -> None:
    settings = settings_with(workdir, calc_server())
    own = create_tool(id="calc_add", description="mine", execute=lambda _: "mine")
    model = ScriptedModel([{"tool_calls": [{"name": "calc_add", "args": {}}]}, "done"])
    agent = Agent(name="a", instructions="x", model=model, tools={"calc_add": own})
    attach_mcp_tools(agent, settings)
    try:
        problems = await asyncio.wait_for(start_mcp_tools(agent), TIMEOUT_S)
        result = await asyncio.wait_for(agent.generate("go"), TIMEOUT_S)
    finally:
        await close_mcp_tools(agent)
    assert problems == ["MCP tool 'calc_add' is left out: the agent has a tool of that name"]
    assert [r.result for r in result.tool_results] == ["mine"]
    sent = {tool["function"]["name"] for tool in model.requests[0].tools}
    assert {"calc_add", "calc_echo", "calc_crash"} <= sent


async def test_without_servers_the_agent_is_left_as_it_was(workdir: Path) -> None:
    settings = settings_with(workdir, "")
    tools = {"t": create_tool(id="t", execute=lambda _: 1)}
    agent = Agent(name="a", instructions="x", model=ScriptedModel(["ok"]), tools=tools)
    attach_mcp_tools(agent, settings)
    assert agent.tools == tools and not isinstance(agent.tools, MCPToolbox)
    assert await start_mcp_tools(agent) == []


async def test_servers_start_on_the_first_run_if_not_before(workdir: Path) -> None:
    """A command that never called start_mcp_tools (watch, notify) still runs with the tools;
    what failed is warned once."""
    warned: list[str] = []
    settings = settings_with(workdir, calc_server() + '[mcp.servers.ghost]\ncommand = "/nope"\n')
    model = ScriptedModel(
        [{"tool_calls": [{"name": "calc_echo", "args": {"text": "x"}}]}, "done", "again"]
    )
    agent = Agent(name="a", instructions="x", model=model)
    agent.tools = MCPToolbox(agent.tools, dict(settings.mcp.servers), warn=warned.append)
    try:
        result = await asyncio.wait_for(agent.generate("go"), TIMEOUT_S)
        await asyncio.wait_for(agent.generate("again"), TIMEOUT_S)
    finally:
        await close_mcp_tools(agent)
    assert [r.result for r in result.tool_results] == [{"result": "echo: x"}]
    assert len(warned) == 1 and warned[0].startswith("MCP server 'ghost' did not start")


def test_chat_starts_the_servers_and_reports_one_that_does_not_start(workdir: Path) -> None:
    from test_cli import Command

    config = workdir / "config"  # the config folder's file this time (the chat runs in ROOT)
    (config / "tui-agent").mkdir(parents=True)
    (config / "tui-agent" / "tui-agent.toml").write_text(
        calc_server() + '[mcp.servers.ghost]\ncommand = "/no/such/mcp-server"\n'
    )
    chat = Command(
        "--db",
        str(workdir / "x.db"),
        "chat",
        "--agent",
        CALLING,
        stdin=True,
        env={"XDG_CONFIG_HOME": str(config)},
    )
    try:
        chat.wait_for("MCP server 'ghost' did not start")  # before the first message is typed
        chat.write("hello chat")
        chat.wait_for('the server said {"result": "echo: hello chat"}')
        chat.write("/quit")
        code, out, err = chat.finish()
    finally:
        chat.end()
    assert code == 0, err
    [warning] = [line for line in out.splitlines() if "warning" in line]
    assert warning == (
        "tui-agent: warning: MCP server 'ghost' did not start: FileNotFoundError: "
        "No such file or directory: /no/such/mcp-server; its tools are left out"
    )

"""MCP servers as tools (tui_agent.mcp.MCPClient), against a real server written with the SDK
(tests/helpers/mcp_server.py), started by the test on stdio or on streamable HTTP on 127.0.0.1:
its tools listed with their schemas, called through an Agent run on the scripted model, and the
server that does not start, exits mid-call or does not answer in time, each the call's tool
error naming the server, the run going on to its end."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tui_agent import Agent
from tui_agent.errors import ConfigError
from tui_agent.mcp import MCPClient, MCPServerError, MCPToolError, connection
from tui_agent.mcp.client import tool_id
from tui_agent.testing import ScriptedModel

SERVER = str(Path(__file__).parent / "helpers" / "mcp_server.py")
STDIO = {"command": sys.executable, "args": [SERVER]}
#: Each test's waits: generous for a loaded machine, yet far below the test's own timeout.
TIMEOUT_S = 20.0


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


def agent_with(tools: dict[str, Any], *replies: Any) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(list(replies))
    return Agent(name="mcp", instructions="Be brief.", model=model, tools=tools), model


def tool_texts(model: ScriptedModel) -> list[str]:
    """What the model was given as tool results, in its last request."""
    return [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]


@pytest.fixture
async def calc() -> AsyncIterator[MCPClient]:
    client = MCPClient(
        servers={"calc": {**STDIO, "env": {"SHOUT": "hello"}}},
        timeout=TIMEOUT_S,
        connect_timeout=TIMEOUT_S,
    )
    yield client
    await client.disconnect()


# -- listing -------------------------------------------------------------------------------


async def test_tools_are_named_server_tool_with_the_servers_schemas(calc: MCPClient) -> None:
    tools = await calc.get_tools()
    assert sorted(tools) == [
        "calc_add",
        "calc_crash",
        "calc_echo",
        "calc_fail",
        "calc_pid",
        "calc_pixel",
        "calc_shout",
        "calc_sleepy",
    ]
    add = tools["calc_add"]
    assert add.id == "calc_add"
    assert add.description == "Add two whole numbers."
    assert add.parameters["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    assert add.parameters["required"] == ["a", "b"]
    assert not add.require_approval
    toolsets = await calc.get_toolsets()
    assert list(toolsets) == ["calc"] and sorted(toolsets["calc"]) == sorted(tools)
    assert sorted(await calc.list_tools()) == sorted(tools), "Mastra's newer name"


async def test_require_approval_per_server_and_per_tool() -> None:
    async with MCPClient(
        servers={
            "all": {**STDIO, "require_approval": True},
            "some": {**STDIO, "require_approval": ["crash", "sleepy"]},
        },
        connect_timeout=TIMEOUT_S,
    ) as client:
        tools = await client.get_tools()
    assert all(tools[f"all_{name}"].require_approval for name in ("add", "echo", "crash"))
    assert [t for t in sorted(tools) if t.startswith("some_") and tools[t].require_approval] == [
        "some_crash",
        "some_sleepy",
    ]


async def test_require_approval_naming_no_tool_leaves_the_server_out() -> None:
    """A guard on a misspelt tool guards nothing: the server's tools are not offered unguarded."""
    async with MCPClient(
        servers={"calc": {**STDIO, "require_approval": ["crsh"]}}, connect_timeout=TIMEOUT_S
    ) as client:
        with pytest.raises(
            MCPServerError,
            match=r"'calc': require_approval names no tool of "
            r"the server: crsh \(its tools: add, crash",
        ):
            await client.get_tools()


# -- calling, through an agent run -----------------------------------------------------------


async def test_a_tool_result_reaches_the_model(calc: MCPClient) -> None:
    agent, model = agent_with(await calc.get_tools(), call("calc_add", a=2, b=40), "It is 42.")
    result = await asyncio.wait_for(agent.generate("2 + 40?"), TIMEOUT_S)
    assert result.text == "It is 42."
    assert [(r.tool_name, r.result, r.is_error) for r in result.tool_results] == [
        ("calc_add", {"result": 42}, False)
    ]
    assert tool_texts(model) == ['{"result": 42}']


async def test_env_reaches_the_server_and_text_and_images_map(calc: MCPClient) -> None:
    tools = await calc.get_tools()
    assert await tools["calc_shout"].execute({}) == {"result": "HELLO"}
    [image] = await tools["calc_pixel"].execute({})
    assert image["type"] == "image" and image["mime_type"] == "image/png"
    assert image["data"].startswith("iVBORw0KGgo")  # the PNG, base64


async def test_input_is_checked_against_the_schema_before_the_server_sees_it(
    calc: MCPClient,
) -> None:
    agent, _ = agent_with(await calc.get_tools(), call("calc_add", a="two"), "Sorry.")
    result = await asyncio.wait_for(agent.generate("add"), TIMEOUT_S)
    [failed] = result.tool_results
    assert failed.is_error and "a: 'two' is not of type 'integer'" in failed.result["error"]


async def test_an_error_result_is_the_calls_tool_error(calc: MCPClient) -> None:
    agent, _ = agent_with(await calc.get_tools(), call("calc_fail", reason="why"), "Failed.")
    result = await asyncio.wait_for(agent.generate("fail"), TIMEOUT_S)
    [failed] = result.tool_results
    assert failed.is_error
    assert failed.result["error"].startswith("MCPToolError: MCP server 'calc', tool 'fail': ")
    assert result.text == "Failed."
    with pytest.raises(MCPToolError):
        await (await calc.get_tools())["calc_fail"].execute({"reason": "again"})


# -- servers that fail ---------------------------------------------------------------------------


async def test_a_server_that_dies_mid_call_is_that_calls_error_and_starts_again(
    calc: MCPClient,
) -> None:
    tools = await calc.get_tools()
    agent, _ = agent_with(tools, call("calc_crash"), call("calc_echo", text="again"), "Done.")
    started = time.monotonic()
    result = await asyncio.wait_for(agent.generate("crash it"), TIMEOUT_S)
    crashed, echoed = result.tool_results
    assert crashed.is_error
    assert crashed.result["error"] == (
        "MCPServerError: MCP server 'calc' went away during the call to tool 'crash' (it exited "
        "or closed the connection)"
    )
    assert (echoed.is_error, echoed.result) == (False, {"result": "echo: again"}), (
        "the next call starts the server again"
    )
    assert result.text == "Done." and result.finish_reason == "stop"
    assert time.monotonic() - started < TIMEOUT_S / 2


async def test_a_server_that_exited_while_idle_is_started_again_without_an_error(
    calc: MCPClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "IDLE_S", 0.0)  # ping before every call, not after 1 s idle
    tools = await calc.get_tools()
    first = (await tools["calc_pid"].execute({}))["result"]
    os.kill(first, signal.SIGKILL)  # between calls: no call of ours is in flight
    assert await tools["calc_add"].execute({"a": 1, "b": 2}) == {"result": 3}
    assert (await tools["calc_pid"].execute({}))["result"] != first, "a new server process"


async def test_a_call_past_the_timeout_is_a_tool_error_and_the_run_ends() -> None:
    async with MCPClient(
        servers={"slow": {**STDIO, "timeout": 0.5}}, connect_timeout=TIMEOUT_S
    ) as client:
        agent, _ = agent_with(
            await client.get_tools(), call("slow_sleepy", seconds=30), "Too slow."
        )
        started = time.monotonic()
        result = await asyncio.wait_for(agent.generate("sleep"), TIMEOUT_S)
        elapsed = time.monotonic() - started
    [late] = result.tool_results
    assert late.is_error and late.result["error"] == (
        "MCPServerError: MCP server 'slow' did not answer the call to tool 'sleepy' within "
        "0.5 s (its timeout)"
    )
    assert result.text == "Too slow."
    assert elapsed < 5, f"the call waited {elapsed:.1f} s, not its 0.5 s timeout"


async def test_a_server_that_does_not_start_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "no_such_server.py"
    async with MCPClient(
        servers={"ghost": {"command": sys.executable, "args": [str(missing)]}},
        connect_timeout=TIMEOUT_S,
    ) as client:
        with pytest.raises(MCPServerError) as raised:
            await client.get_tools()
    message = str(raised.value)
    assert message.startswith("MCP server 'ghost' did not start: ")
    assert "no_such_server.py" in message, "the server's own stderr line says why"


async def test_a_command_that_does_not_exist_is_an_error_naming_the_server() -> None:
    async with MCPClient(servers={"ghost": {"command": "/no/such/mcp-server"}}) as client:
        with pytest.raises(
            MCPServerError,
            match=r"^MCP server 'ghost' did not start: "
            r"FileNotFoundError",
        ):
            await client.get_tools()


async def test_a_server_that_never_answers_is_bounded_by_connect_timeout() -> None:
    silent = {
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)"],
        "connect_timeout": 0.5,
    }
    started = time.monotonic()
    async with MCPClient(servers={"mute": silent}) as client:
        with pytest.raises(MCPServerError, match=r"'mute' did not start within 0.5 s"):
            await client.get_tools()
    assert time.monotonic() - started < 10  # the SDK's own stop: 2 s, then it kills


async def test_skip_failed_keeps_the_good_servers_and_names_the_bad(calc: MCPClient) -> None:
    async with MCPClient(
        servers={"calc": STDIO, "ghost": {"command": "/no/such/mcp-server"}},
        connect_timeout=TIMEOUT_S,
    ) as client:
        tools = await client.get_tools(skip_failed=True)
        assert "calc_add" in tools and not any(t.startswith("ghost_") for t in tools)
        assert list(client.failures) == ["ghost"]
        assert client.failures["ghost"].startswith("MCP server 'ghost' did not start")


async def test_a_server_that_cannot_restart_gives_the_call_an_error_naming_it(
    tmp_path: Path,
) -> None:
    """Listed once, then the server cannot be started again: the call's error says so."""
    script = tmp_path / "server.py"
    script.write_text(Path(SERVER).read_text())
    async with MCPClient(
        servers={"calc": {"command": sys.executable, "args": [str(script)]}},
        connect_timeout=TIMEOUT_S,
    ) as client:
        tools = await client.get_tools()
        script.unlink()
        agent, _ = agent_with(tools, call("calc_crash"), call("calc_add", a=1, b=2), "Gone.")
        result = await asyncio.wait_for(agent.generate("go"), TIMEOUT_S)
    crashed, restarted = result.tool_results
    assert (
        crashed.is_error and "went away during the call to tool 'crash'" in crashed.result["error"]
    )
    assert restarted.is_error
    assert restarted.result["error"].startswith("MCPServerError: MCP server 'calc' did not start: ")
    assert result.text == "Gone."


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"calc": {}}, "MCP server 'calc': give either command (a server on stdio) or url"),
        ({"calc": {"command": "x", "url": "http://h/mcp"}}, "MCP server 'calc': give either"),
        (
            {"calc": {"command": "x", "args": "a b"}},
            "MCP server 'calc': args: Input should be a valid list",
        ),
        ({"calc": {"url": "ftp://h"}}, "MCP server 'calc': url: an http://"),
        (
            {"calc": {"command": "x", "timeout": 0}},
            "MCP server 'calc': timeout: a number of seconds > 0",
        ),
        ({"calc": {"command": "x", "bogus": 1}}, "MCP server 'calc': bogus: Extra inputs"),
        ({"a.b": {"command": "x"}}, "MCP server name 'a.b': letters, digits"),
    ],
)
def test_bad_server_configs_are_errors_naming_server_and_field(
    servers: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match="^" + re.escape(message)):
        MCPClient(servers=servers)


def test_tool_ids_fit_what_providers_take_and_stay_unique() -> None:
    assert tool_id("calc", "add") == "calc_add"
    assert tool_id("fs", "read.file/v2") == "fs_read_file_v2"
    long = tool_id("github", "x" * 80)
    assert len(long) == 64 and long.startswith("github_xxx") and long != tool_id("github", "x" * 81)
    taken = {"fs_read_file": object()}
    clash = tool_id("fs", "read.file", taken)  # comes out as the taken "fs_read_file"
    assert clash != "fs_read_file" and clash.startswith("fs_read_file_") and len(clash) <= 64


def test_importing_tui_agent_mcp_does_not_import_the_sdk() -> None:
    code = (
        "import sys, tui_agent.mcp; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT_S, check=True
    )
    assert out.stdout.strip() == "[]"


# -- streamable HTTP ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP MCP server exited ({process.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the HTTP MCP server did not listen on {port} within {timeout} s")


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process, TIMEOUT_S)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait(timeout=TIMEOUT_S)


async def test_a_streamable_http_server_lists_and_answers_through_a_run(
    http_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _ = http_server
    async with MCPClient(
        servers={"web": {"url": url}}, timeout=TIMEOUT_S, connect_timeout=TIMEOUT_S
    ) as client:
        tools = await client.get_tools()
        assert "web_add" in tools and tools["web_add"].parameters["required"] == ["a", "b"]
        agent, model = agent_with(tools, call("web_echo", text="over http"), "Heard.")
        result = await asyncio.wait_for(agent.generate("echo"), TIMEOUT_S)
    assert [(r.result, r.is_error) for r in result.tool_results] == [
        ({"result": "echo: over http"}, False)
    ]
    assert tool_texts(model) == ['{"result": "echo: over http"}']


async def test_an_http_server_that_dies_mid_call_is_a_tool_error_naming_it(
    http_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    url, _process = http_server
    async with MCPClient(
        servers={"web": {"url": url, "timeout": 10}}, connect_timeout=TIMEOUT_S
    ) as client:
        agent, _ = agent_with(
            await client.get_tools(), call("web_crash"), call("web_add", a=1, b=1), "Down."
        )
        started = time.monotonic()
        result = await asyncio.wait_for(agent.generate("crash"), TIMEOUT_S)
    crashed, after = result.tool_results
    assert crashed.is_error and crashed.result["error"] == (
        "MCPServerError: MCP server 'web' went away during the call to tool 'crash' (it exited "
        "or closed the connection)"
    )
    assert after.is_error and after.result["error"].startswith(
        "MCPServerError: MCP server 'web' could not be reached: "
    ), "nothing listens there now"
    assert result.text == "Down."
    assert time.monotonic() - started < 15
    # What the SDK logs of it (a session it could not end) never reaches the app's terminal.
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("mcp").handlers)


async def test_an_http_server_that_is_not_there_is_an_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    async with MCPClient(servers={"web": {"url": url, "connect_timeout": 5}}) as client:
        with pytest.raises(MCPServerError, match=r"^MCP server 'web' could not be reached: "):
            await client.get_tools()

"""Settings: flags > TUI_AGENT_* > the settings file > defaults; a bad file or value is one
clear error naming where, which key and what was expected; the CLI reads them once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tui_agent.errors import ConfigError
from tui_agent.memory import Memory
from tui_agent.settings import current_settings, load_settings
from tui_agent.startup.configured import build_configured_agent, function_tool

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("TUI_AGENT_DB", raising=False)
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_flags_beat_env_beat_file_beat_defaults(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workdir / "tui-agent.toml", 'model = "openai/gpt-4o"\nthread = "file"\n'
          'theme = "nord"\n')
    monkeypatch.setenv("TUI_AGENT_THREAD", "env")
    monkeypatch.setenv("TUI_AGENT_THEME", "dracula")
    settings = load_settings({"theme": "monokai", "db": None})
    assert (settings.model, settings.thread, settings.theme) == ("openai/gpt-4o", "env",
                                                                  "monokai")
    assert settings.db is None and settings.lease_ttl_s is None
    sources = settings.sources
    assert sources["model"].startswith("file ") and sources["model"].endswith("tui-agent.toml")
    assert (sources["thread"], sources["theme"], sources["db"]) == ("env", "flag", "default")


def test_the_working_directory_file_comes_before_the_config_directory_one(
    workdir: Path, tmp_path: Path
) -> None:
    write(tmp_path / "xdg-config" / "tui-agent" / "tui-agent.toml", 'thread = "from-config"\n')
    assert load_settings().thread == "from-config"
    write(workdir / "tui-agent.toml", 'thread = "from-cwd"\n')
    assert load_settings().thread == "from-cwd"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("modle = 1\n", "unknown key 'modle' (known keys: db, model,"),
        ('lease_ttl_s = "soon"\n', "lease_ttl_s: input should be a valid number"),
        ("x = [\n", "not valid TOML"),
        ('model = "gpt4"\n', "model: value error, not a router string"),
        ('[[agents]]\nname = "x"\n', "agents.0.id: field required"),
        ('[[agents]]\nid = "x"\ncolour = 1\n', "unknown key 'agents.0.colour' (known keys: id,"),
        ("local_threads = 0\n", "local_threads: value error, a whole number >= 1"),
    ],
)
def test_a_bad_settings_file_is_one_error_naming_the_file_key_and_expectation(
    workdir: Path, content: str, expected: str
) -> None:
    path = write(workdir / "tui-agent.toml", content)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert str(path) in str(caught.value) and expected in str(caught.value)


def test_a_bad_environment_value_names_the_variable(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TUI_AGENT_LEASE_TTL_S", "-3")
    with pytest.raises(ConfigError, match="environment variable TUI_AGENT_LEASE_TTL_S: "
                                          "lease_ttl_s: value error, a number of seconds > 0"):
        load_settings()


def test_library_defaults_follow_the_settings_and_see_a_changed_environment(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(workdir / "tui-agent.toml", "lease_ttl_s = 40\n")
    assert Memory(store=None).lease_ttl_s == 40  # type: ignore[arg-type]
    monkeypatch.setenv("TUI_AGENT_LEASE_TTL_S", "9")
    assert current_settings().lease_ttl_s == 9
    assert Memory().lease_renew_s == 3


def add_numbers(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


async def test_configured_agents_get_their_tools_by_import_path(
    workdir: Path, agents: object
) -> None:
    write(workdir / "tui-agent.toml", """
[[agents]]
id = "helper"
name = "Helper"
model = "openai/gpt-4o-mini"
instructions = "Be terse."
tools = ["tui_agent.cli.demo:demo_tools", "test_settings:add_numbers"]

[[agents]]
id = "other"
""")
    settings = load_settings()
    agent = build_configured_agent(settings, "Helper", None)
    assert (agent.id, agent.name, agent.model) == ("helper", "Helper", "openai/gpt-4o-mini")
    assert set(agent.tools) == {"calculator", "current_time", "add_numbers"}
    assert build_configured_agent(settings, None, None).id == "helper"  # the first
    with pytest.raises(ConfigError, match="agent 'nobody' is not in the settings' agents"):
        build_configured_agent(settings, "nobody", None)
    tool = function_tool("add_numbers", add_numbers)
    assert tool.description == "Add two numbers."


def test_a_tool_path_that_does_not_resolve_is_a_clear_error(workdir: Path) -> None:
    write(workdir / "tui-agent.toml", '[[agents]]\nid = "a"\ntools = ["tui_agent.nope:x"]\n')
    with pytest.raises(ConfigError, match=r"agents\[a\].tools: 'tui_agent.nope:x': cannot "
                                          "import 'tui_agent.nope'"):
        build_configured_agent(load_settings(), None, None)


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tui_agent", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})


def test_config_prints_each_value_and_its_source(workdir: Path) -> None:
    write(workdir / "tui-agent.toml", 'theme = "nord"\n[keymap]\n"pane.abort" = "f5"\n')
    done = run_cli("--db", str(workdir / "x.db"), "config", cwd=workdir)
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert '"nord"' in lines["theme"] and "# file " in lines["theme"]
    assert '"f5"' in lines["keymap"]  # a keymap is not a key
    assert "# flag" in lines["db"] and "# default" in lines["model"]


def test_config_prints_the_value_in_force_for_a_default_never_null(workdir: Path) -> None:
    """Issue 21: a default shows the value it stands for, an environment value its variable."""
    done = subprocess.run([sys.executable, "-m", "tui_agent", "config"], cwd=workdir,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "USER": "ann",
                               "TUI_AGENT_LEASE_TTL_S": "9"})
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "null" not in done.stdout
    assert '"ann"' in lines["resource"] and "# default ($USER)" in lines["resource"]
    assert "9.0" in lines["lease_ttl_s"] and "# environment TUI_AGENT_LEASE_TTL_S" in lines[
        "lease_ttl_s"]
    assert "3.0" in lines["lease_renew_s"] and "# default" in lines["lease_renew_s"]
    assert '"tui-agent-dark"' in lines["theme"] and '"demo"' in lines["default_agent"]
    assert "1000000" in lines["max_text_bytes"] and "256" in lines["max_id_length"]
    default_db = Path(os.environ["XDG_DATA_HOME"]) / "tui-agent" / "tui-agent.db"
    assert lines["db"].split()[1] == json.dumps(str(default_db))


def test_help_documents_the_exit_statuses(workdir: Path) -> None:
    for command in ([], ["notify"], ["send"]):
        done = run_cli(*command, "--help", cwd=workdir)
        assert done.returncode == 0
        assert "exit:    0 done, 1 failed" in done.stdout and "2 bad usage" in done.stdout


def test_config_hides_the_password_of_a_store_url(workdir: Path) -> None:
    done = run_cli("--db", "postgresql://me:s3cret@127.0.0.1:1/team", "config", cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "s3cret" not in done.stdout and "postgresql://me:***@127.0.0.1:1/team" in done.stdout


@pytest.mark.parametrize("variable", ["TUI_AGENT_KEYMAP", "TUI_AGENT_AGENTS"])
def test_an_environment_value_that_is_not_json_names_the_variable(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """A list or table setting from the environment is JSON; anything else is one ConfigError
    naming the variable (it was a pydantic-settings traceback)."""
    monkeypatch.setenv(variable, "{not json")
    with pytest.raises(ConfigError, match=f"environment variable {variable}: not valid JSON"):
        load_settings()


def test_a_bad_settings_file_stops_the_cli_with_one_line_and_exit_2(workdir: Path) -> None:
    write(workdir / "tui-agent.toml", "modle = 'x'\n")
    done = run_cli("config", cwd=workdir)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "unknown key 'modle'" in lines[0] and "Traceback" not in lines[0]


def test_notify_and_state_commands_feed_the_inbox_and_lanes(workdir: Path) -> None:
    db = str(workdir / "x.db")
    common = ("--db", db, "-r", "me", "-t", "t1")
    done = run_cli("notify", *common, "--new", "--source", "ci", "--kind", "build",
                   "--priority", "low", "--coalesce-key", "ci", "build failed", cwd=workdir)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert first["record"]["priority"] == "low" and first["decision"]["action"] == "summarize"
    again = json.loads(run_cli("notify", *common, "--source", "ci", "--kind", "build",
                               "--coalesce-key", "ci", "failed again", cwd=workdir).stdout)
    assert again["record"]["id"] == first["record"]["id"]
    assert again["record"]["coalesced_count"] == 2
    lane = run_cli("state", *common, "--lane", "browser", '{"tabs": 3}', cwd=workdir)
    assert lane.returncode == 0 and json.loads(lane.stdout)["version"] == 1
    same = run_cli("state", *common, "--lane", "browser", '{"tabs": 3}', cwd=workdir)
    assert "unchanged" in same.stderr and json.loads(same.stdout)["version"] == 1
    patch = run_cli("state", *common, "--lane", "browser", "--delta", '{"url": "x"}',
                    cwd=workdir)
    assert json.loads(patch.stdout)["value"] == {"tabs": 3, "url": "x"}
    bad = run_cli("state", *common, "--lane", "browser", "{nope", cwd=workdir)
    assert bad.returncode == 2 and "state: not JSON" in bad.stderr

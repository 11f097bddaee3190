"""The agent a front end talks to (the demo's, the settings' or the user's), on the chosen store,
and the checks and labels the app and the CLI both show: shared by both, imported by neither's
other half."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tui_agent.errors import ConfigError


def default_resource() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser() or "local"
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "local"


def parse_attrs(pairs: list[str] | None, name: str | None = None) -> dict[str, str]:
    """``["from=slack", ...]`` (+ ``--as NAME``) → attributes, in the order given."""
    attributes: dict[str, str] = {}
    if name:
        attributes["name"] = name
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--attr {pair!r}: write it as name=value, e.g. --attr from=slack")
        attributes[key.strip()] = value
    return attributes


# -- the agent ---------------------------------------------------------------------------------


def open_memory(args: argparse.Namespace) -> Any:
    """Memory on the chosen store (``args.db``: --db, else $TUI_AGENT_DB, else the settings
    file's, else the default file), with the settings' lease timing: what every command
    reads and writes through (those with no agent, such as ``search`` and ``export``, too)."""
    from tui_agent.memory import Memory
    from tui_agent.store import open_store
    from tui_agent.store.location import default_file

    settings = args.settings
    if args.db:
        check_store_folder(args.db, settings.sources.get("db", "flag"))
    return Memory(store=open_store(args.db or default_file()), lease_ttl_s=settings.lease_ttl_s,
                  lease_renew_s=settings.lease_renew_s)


def check_store_folder(location: str, source: str) -> None:
    """A store named by a flag, variable or the settings file must be in a folder that exists:
    a typo creates no folders (only the default location is created)."""
    from tui_agent.store.location import MEMORY, scheme_of, sqlite_path

    if scheme_of(location) not in (None, "sqlite"):
        return  # a PostgreSQL URL
    path = sqlite_path(location)
    if path == MEMORY:
        return
    folder = Path(path).parent
    if not folder.is_dir():
        given = {"flag": "--db", "env": "TUI_AGENT_DB"}.get(source, f"db in {source}")
        raise ConfigError(f"store folder {folder} does not exist ({given} {location}); "
                          "create it first, or give another path")


def build_agent(args: argparse.Namespace) -> Any:
    """The agent the command talks to, with memory on the chosen store: ``--agent FILE:NAME``,
    else one of the settings' ``[[agents]]`` (``--agent-name`` / ``default_agent``, else the
    first), else the demo agent on the settings' model; with the tools of the settings' MCP
    servers (``[mcp.servers.NAME]``, tui_agent/startup/mcp_tools.py), but not on ``--demo``."""
    agent = _build_agent(args)
    if not getattr(args, "demo", False):
        from tui_agent.startup.mcp_tools import attach_mcp_tools

        attach_mcp_tools(agent, args.settings)
    return agent


def _build_agent(args: argparse.Namespace) -> Any:
    settings = args.settings
    memory = open_memory(args)
    if args.agent:
        agent = pick_agent(load_agents(args.agent), args.agent_name, args.agent)
        if agent.memory is None:
            agent.memory = memory  # the CLI's store: that is how terminals share threads
        if args.model:
            from tui_agent.models.resolve import validate_model_spec

            validate_model_spec(args.model)
            agent.model = args.model
        return agent
    if settings.agents and not getattr(args, "demo", False):
        from tui_agent.startup.configured import build_configured_agent

        return build_configured_agent(settings, settings.default_agent, memory, args.model)
    from tui_agent.demo.agent import build_demo_agent

    return build_demo_agent(args.model or settings.model, tools=args.tools, memory=memory)


def load_agents(spec: str) -> list[Any]:
    """``path/to/file.py:name`` or ``package.module:name`` → the Agent objects it names: an
    Agent, a list/tuple or dict of them, or a function (taking no arguments) returning one of
    those. Anything else is refused, and nothing else is called."""
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ConfigError(
            f"--agent {spec!r}: write it as path/to/agents.py:name or package.module:name"
        )
    module = _load_module(target, spec)
    if not hasattr(module, attr):
        raise ConfigError(f"--agent {spec!r}: {target} has no attribute {attr!r}")
    value = getattr(module, attr)
    if inspect.isfunction(value):
        value = _call_factory(value, spec)
    agents = _as_agents(value)
    if agents is None:
        raise ConfigError(
            f"--agent {spec!r}: {attr} must be an Agent, a list or dict of Agents, or a "
            f"function returning one; got {_kind(value)}"
        )
    return agents


def _call_factory(factory: Any, spec: str) -> Any:
    required = [p for p in inspect.signature(factory).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                       p.KEYWORD_ONLY)]
    if required:
        raise ConfigError(f"--agent {spec!r}: the function takes arguments "
                          f"({', '.join(p.name for p in required)}); it must take none")
    value = factory()
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: no "was never awaited" warning
        raise ConfigError(f"--agent {spec!r}: the function must not be async")
    return value


def _as_agents(value: Any) -> list[Any] | None:
    from tui_agent.agent.agent import Agent

    if isinstance(value, Agent):
        return [value]
    items = list(value.values()) if isinstance(value, Mapping) else (
        list(value) if isinstance(value, list | tuple) else [])
    return items if items and all(isinstance(a, Agent) for a in items) else None


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        return f"the class {value.__name__} (give an instance, or a function returning one)"
    return type(value).__name__


def _load_module(target: str, spec: str) -> Any:
    if target.endswith(".py") or os.sep in target or "/" in target:
        return _load_file(Path(target), spec)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as error:
        raise ConfigError(f"--agent {spec!r}: no module {error.name!r}") from None
    except SyntaxError as error:
        raise ConfigError(f"--agent {spec!r}: {_syntax_error(error)}") from None


def _load_file(path: Path, spec: str) -> Any:
    """Import the file as a module. Its folder is on sys.path only while it runs, and last: its
    sibling modules import, but a ``litellm.py`` beside it cannot shadow an installed package,
    neither then nor later."""
    if not path.is_file():
        raise ConfigError(f"--agent {spec!r}: file {path} does not exist")
    module_name = f"tui_agent_user_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"--agent {spec!r}: cannot load {path} as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    folder = str(path.resolve().parent)
    added = folder not in sys.path
    if added:
        sys.path.append(folder)
    try:
        module_spec.loader.exec_module(module)
    except SyntaxError as error:
        sys.modules.pop(module_name, None)
        raise ConfigError(f"--agent {spec!r}: {_syntax_error(error)}") from None
    except Exception as error:
        sys.modules.pop(module_name, None)
        raise ConfigError(f"--agent {spec!r}: importing {path} failed at "
                          f"{_where_in(error, path)}: {type(error).__name__}: {error}") from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)
    return module


def _syntax_error(error: SyntaxError) -> str:
    line = (error.text or "").strip()
    shown = f": {line}" if line else ""
    return f"{error.filename}:{error.lineno}: {type(error).__name__}: {error.msg}{shown}"


def _where_in(error: BaseException, path: Path) -> str:
    """``file:line`` of the deepest frame of the traceback in the user's file."""
    where = str(path)
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            where = f"{path}:{frame.lineno}"
    return where


def pick_agent(agents: list[Any], name: str | None, spec: str) -> Any:
    if name is None:
        if len(agents) == 1:
            return agents[0]
        names = ", ".join(a.id for a in agents)
        raise ConfigError(f"--agent {spec!r} has several agents ({names}): pick one with "
                          "--agent-name")
    for agent in agents:
        if name in (agent.id, agent.name):
            return agent
    names = ", ".join(a.id for a in agents)
    raise ConfigError(f"--agent-name {name!r}: no such agent in {spec} (agents: {names})")


def model_label(agent: Any) -> str:
    model = agent.model
    if isinstance(model, str):
        return model
    if isinstance(model, list | tuple):
        return " → ".join(model_label_of(m) for m in model)
    return model_label_of(model)


def model_label_of(model: Any) -> str:
    if isinstance(model, str):
        return model
    if isinstance(model, Mapping):
        return str(model.get("id", "?"))
    return str(getattr(model, "model_id", None) or getattr(model, "id", None)
               or type(model).__name__)


def is_local_model(agent: Any) -> bool:
    return isinstance(agent.model, str) and agent.model.startswith("local/")


async def check_model(agent: Any, *, warm: bool) -> None:
    """Raise the model's setup error now (missing runtime, weights or key), before anything is
    sent. ``warm`` also loads it (the local server, litellm's import) off the event loop."""
    spec = agent.model
    if callable(spec) and not hasattr(spec, "stream"):
        return  # depends on the request context: checked when a run starts
    from tui_agent.models.resolve import resolve_model

    model = resolve_model(spec)
    model.check_ready()  # cheap: finds files, reads the environment, loads nothing
    ensure = getattr(model, "ensure_ready", None)
    if warm and ensure is not None:
        await asyncio.gather(ensure(), _preload_litellm(model))


async def missing_credential(agent: Any) -> Exception | None:
    """:func:`check_model` without loading, except that a missing credential is returned, not
    raised: the app starts without any key (its pane names the variable)."""
    from tui_agent.errors import MissingCredentialError

    try:
        await check_model(agent, warm=False)
    except MissingCredentialError as error:
        return error
    return None


async def _preload_litellm(model: Any) -> None:
    """Import litellm (seconds, in a thread) while the model loads rather than when it is first
    needed: for a model on litellm's path, or for the cost map the app reads for a provider's
    model. A local model on the direct path never needs it (no cost, no routing)."""
    local = str(getattr(model, "model_id", "")).startswith("local/")
    if local and getattr(model, "route", None) != "litellm":
        return
    from tui_agent.models.litellm_model import load_litellm

    await asyncio.to_thread(load_litellm)


def store_path(agent: Any) -> str:
    return str(agent.memory.store.location)

"""One settings object: flags beat ``TUI_AGENT_*`` environment variables, which beat the
settings file, which beats the defaults.

The file is the first of ``./tui-agent.toml`` and ``$XDG_CONFIG_HOME/tui-agent/tui-agent.toml``
that exists. ``load_settings(flags)`` reads it all once (the command line does, and passes the
object down); ``current_settings()`` is the same without flags, for library defaults (``Memory()``,
``open_store()``), cached for as long as the environment and working directory stay the same.
Nothing else reads ``TUI_AGENT_*`` variables. A bad file or value is one ``ConfigError`` naming
the file (or variable), the key and what was expected (tests: ``tests/test_settings.py``).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from tui_agent.errors import ConfigError
from tui_agent.paths import config_dir
from tui_agent.settings_mcp import MCPServerSettings, MCPSettings

ENV_PREFIX = "TUI_AGENT_"
FILE_NAME = "tui-agent.toml"
DEFAULT_MODEL = "local/smollm2"


class AgentSettings(BaseModel):
    """An agent defined in the settings file (``[[agents]]``)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str | None = None
    model: str = DEFAULT_MODEL
    instructions: str = "You are a helpful assistant."
    tools: list[str] = Field(default_factory=list)  # "package.module:attribute" each
    max_tokens: int | None = None


class Settings(BaseSettings):
    """Every setting, typed. ``sources`` says where each value came from."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid",
                                      env_ignore_empty=True)
    toml_path: ClassVar[Path | None] = None  # the file load_settings chose

    db: str | None = None  # a path or URL for tui_agent.store.open_store; None: the XDG data dir
    model: str = DEFAULT_MODEL  # the demo agent's model
    resource: str | None = None  # default resource of threads (None: $USER)
    thread: str = "main"
    theme: str | None = None  # None: the remembered choice, else tui-agent-dark
    keymap: dict[str, str] = Field(default_factory=dict)  # binding id → keys, "ctrl+x,f5"
    # The app's sidebars where there is room for them (f2 / f3 and a click keep the choice).
    show_inbox: bool = True
    show_state: bool = True
    agents: list[AgentSettings] = Field(default_factory=list)
    default_agent: str | None = None
    mcp: MCPSettings = Field(default_factory=MCPSettings)  # [mcp.servers.NAME]: tools from MCP
    lease_ttl_s: float | None = None
    lease_renew_s: float | None = None
    local_threads: int | None = None
    # Input bounds (tui_agent.signals.limits, where the defaults are documented): None = default.
    max_text_bytes: int | None = None
    max_attributes: int | None = None
    max_attribute_bytes: int | None = None
    max_id_length: int | None = None
    max_depth: int | None = None
    _sources: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("db")
    @classmethod
    def _home(cls, value: str | None) -> str | None:
        return str(Path(value).expanduser()) if value and value.startswith("~") else value

    @field_validator("local_threads", "max_text_bytes", "max_attributes", "max_attribute_bytes",
                     "max_id_length", "max_depth")
    @classmethod
    def _at_least_one(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("a whole number >= 1")
        return value

    @field_validator("thread", "resource")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an id must not be empty")  # -t '' is a mistake, not "main"
        return value

    @field_validator("lease_ttl_s", "lease_renew_s")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("a number of seconds > 0")
        return value

    @field_validator("model")
    @classmethod
    def _router_string(cls, value: str) -> str:
        provider, slash, name = value.partition("/")
        if not slash or not provider.strip() or not name.strip():
            raise ValueError("not a router string: write it as 'provider/model', e.g. "
                             "'openai/gpt-4o-mini' or 'local/smollm2'")
        return value

    @property
    def sources(self) -> dict[str, str]:
        """Where each value came from: "default", "file PATH", "env" or "flag"."""
        return dict(self._sources)

    def note_sources(self, sources: dict[str, str]) -> None:
        """Record where each value came from (``load_settings`` does, once)."""
        self._sources = dict(sources)

    @staticmethod
    def input_limits_names() -> tuple[str, ...]:
        """The settings that bound input (``tui_agent.signals.limits.InputLimits``)."""
        return ("max_text_bytes", "max_attributes", "max_attribute_bytes", "max_id_length",
                "max_depth")

    def input_limits(self) -> dict[str, int]:
        """The input bounds set here (those left unset keep their defaults)."""
        return {name: getattr(self, name) for name in self.input_limits_names()
                if getattr(self, name) is not None}

    def agent(self, agent_id: str) -> AgentSettings | None:
        return next((a for a in self.agents if agent_id in (a.id, a.name)), None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (init) > environment > the TOML file; no .env, no secrets dir."""
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls.toml_path is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=cls.toml_path))
        return tuple(sources)


# -- loading ----------------------------------------------------------------------------------

def settings_file(cwd: Path | None = None) -> Path | None:
    """The settings file in use: the working directory's, else the config directory's."""
    for candidate in ((cwd or Path.cwd()) / FILE_NAME, config_dir() / FILE_NAME):
        if candidate.is_file():
            return candidate
    return None


def load_settings(flags: Mapping[str, Any] | None = None, *, cwd: Path | None = None) -> Settings:
    """Defaults < file < environment < ``flags`` (None values in flags are not given)."""
    path = settings_file(cwd)
    given = {k: v for k, v in (flags or {}).items() if v is not None}
    # Read first, each failing with its own ConfigError: the explanation below needs both.
    file_values = _read_file(path) if path is not None else {}
    origins = _origins(path, file_values, _read_env(), given)
    Settings.toml_path = path
    try:
        settings = Settings(**given)
    except ValidationError as error:
        raise ConfigError(_explain(error, origins)) from None
    finally:
        Settings.toml_path = None
    settings.note_sources({name: origins.get(name, "default") for name in Settings.model_fields})
    return settings


def _origins(path: Path | None, file_values: dict[str, Any], env_values: dict[str, Any],
             given: dict[str, Any]) -> dict[str, str]:
    origins = {key: f"file {path}" for key in file_values}
    origins |= {key: "env" for key in env_values}
    return origins | {key: "flag" for key in given}


_CACHE: dict[tuple[Any, ...], Settings] = {}


def current_settings() -> Settings:
    """``load_settings()`` for library defaults, read again when the environment changes."""
    key = (tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(ENV_PREFIX))),
           os.environ.get("XDG_CONFIG_HOME"), os.getcwd())
    settings = _CACHE.get(key)
    if settings is None:
        _CACHE.clear()
        settings = _CACHE[key] = load_settings()
    return settings


def _read_file(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror}") from None


def _read_env() -> dict[str, Any]:
    """The ``TUI_AGENT_*`` values. A list or table value that is not JSON is a ConfigError
    naming its variable (tests/test_settings.py), not pydantic-settings' traceback."""
    try:
        return EnvSettingsSource(Settings)()
    except SettingsError as error:
        field = re.search(r'field "([^"]+)"', str(error))
        name = f"{ENV_PREFIX}{field.group(1).upper()}" if field else f"a {ENV_PREFIX}* variable"
        raise ConfigError(f"environment variable {name}: not valid JSON "
                          f"(a list or table value is written as JSON)") from None


def _explain(error: ValidationError, sources: dict[str, str]) -> str:
    """The first problem, as "<where>: <key>: <what was expected>"."""
    problem = error.errors()[0]
    location = ".".join(str(part) for part in problem["loc"])
    top = str(problem["loc"][0]) if problem["loc"] else ""
    origin = sources.get(top, "settings")
    if origin == "env":
        origin = f"environment variable {ENV_PREFIX}{top.upper()}"
    if problem["type"] == "extra_forbidden":
        known = ", ".join(name for name in _known_keys(problem["loc"]))
        return f"{origin}: unknown key {location!r} (known keys: {known})"
    got = problem.get("input")
    shown = "" if isinstance(got, dict | list) else f", got {got!r}"
    return f"{origin}: {location}: {problem['msg'].lower()}{shown}"


def _known_keys(location: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = AgentSettings if location[:1] == ("agents",) else Settings
    if location[:1] == ("mcp",):  # mcp.KEY, mcp.servers.NAME.KEY
        model = MCPServerSettings if len(location) > 3 else MCPSettings
    return list(model.model_fields)

"""App fixtures: a ``TuiAgentApp`` on a scripted agent and a store under tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.app import AppFactory
from helpers.common import AgentFactory

from tui_agent import Memory, SqliteStore
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.widgets.composer import Identity
from tui_agent.testing import ScriptedModel


@pytest.fixture(autouse=True)
def _app_config_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Themes and the remembered theme live under tmp_path, never in the user's home (and so
    do crash files and copies a terminal refused, ``XDG_STATE_HOME``)."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return config / "tui-agent"


@pytest.fixture
def make_app(agents: AgentFactory, store: SqliteStore) -> AppFactory:
    """``make_app(handler=…, replies=…, threads=[(resource, thread)], **agent options)``: an
    app on an agent with a ScriptedModel (answers "ok" by default)."""

    def make(
        handler: Any = None,
        *,
        replies: list[Any] | None = None,
        threads: list[tuple[str, str]] | None = None,
        identity: Identity | None = None,
        chunk_size: int = 8,
        **options: Any,
    ) -> TuiAgentApp:
        if handler is None and replies is None:
            handler = lambda messages, tools: "ok"  # noqa: E731
        model = ScriptedModel(replies=replies, handler=handler, chunk_size=chunk_size)
        agent = agents(name="demo", model=model, memory=Memory(store=store), **options)
        config = AppConfig(
            agent=agent,
            threads=threads if threads is not None else [("me", "main")],
            identity=identity or Identity("zoe", {"from": "cli"}),
            agent_label="demo",
            model_label="scripted",
            default_resource="me",
            warm_model=False,
        )
        return TuiAgentApp(config)

    return make

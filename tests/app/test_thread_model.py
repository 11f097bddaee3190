"""A model per thread, chosen in the app (issue 23): the picker lists the local model and the
settings' models and takes any litellm string typed in; the choice is kept with the thread (in
the store: every terminal's runs use it); the header shows the model, tokens and cost; a model
whose key is missing is a banner that names the variable and offers the local model — the app
starts without any key."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.app import AppFactory, drained, pane_of, until
from helpers.common import AgentFactory
from openai_server import FakeOpenAIServer
from textual.widgets import Input, OptionList, Static

from tui_agent import Memory, SqliteStore
from tui_agent.app.app import AppConfig, TuiAgentApp
from tui_agent.app.screens.model_picker import ModelPicker
from tui_agent.app.thread_model import model_choices
from tui_agent.app.widgets.composer import Composer, Identity
from tui_agent.app.widgets.model_banner import ModelBanner
from tui_agent.app.widgets.pane_header import PaneHeader
from tui_agent.startup.agents import missing_credential


def header(pane: Any) -> str:
    return str(pane.query_one(PaneHeader).render())


def banner(pane: Any) -> ModelBanner:
    return pane.query_one(ModelBanner)


def app_on(agent: Any, models: list[str] | None = None) -> TuiAgentApp:
    return TuiAgentApp(AppConfig(
        agent=agent, threads=[("me", "main")], identity=Identity("zoe"), agent_label="demo",
        model_label=str(agent.model), default_resource="me", warm_model=False,
        models=models or []))


def test_the_picker_lists_the_local_model_first_then_each_model_once() -> None:
    assert model_choices(["openai/gpt-4o-mini", "local/smollm2"], "anthropic/x", "openai/"
                         "gpt-4o-mini") == ["local/smollm2", "openai/gpt-4o-mini", "anthropic/x"]
    assert model_choices("openai/a → local/smollm2", "scripted") == ["local/smollm2"]


async def test_a_missing_key_is_no_reason_not_to_start(agents: AgentFactory,
                                                        store: SqliteStore) -> None:
    agent = agents(model="openai/gpt-4o-mini", memory=Memory(store=store))
    error = await missing_credential(agent)
    assert error is not None and "OPENAI_API_KEY" in str(error)


async def test_without_its_key_the_thread_shows_a_banner_and_takes_the_local_model(
    agents: AgentFactory, store: SqliteStore
) -> None:
    """The app starts on an agent whose model has no key; its pane names the variable; a
    click on the banner keeps the local model with the thread."""
    agent = agents(model="openai/gpt-4o-mini", memory=Memory(store=store))
    app = app_on(agent)
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: banner(pane).problem is not None, "the banner")
        text = str(banner(pane).render())
        assert "openai/gpt-4o-mini needs OPENAI_API_KEY in the environment" in text
        assert "local/smollm2" in text and banner(pane).display
        await until(pilot, lambda: "openai/gpt-4o-mini" in header(pane), "the header's model")
        await pilot.click(banner(pane))
        await until(pilot, lambda: banner(pane).problem is None, "the banner gone")
        assert await agent.memory.thread_model("main") == "local/smollm2"
        # The header shows it at the pane's next sync (on the app's grid), not at once.
        await until(pilot, lambda: "local/smollm2" in header(pane), "the header's model")
        assert not banner(pane).display


async def test_the_picker_keeps_a_typed_model_with_the_thread(
    make_app: AppFactory, agents: AgentFactory, store: SqliteStore
) -> None:
    app = make_app()
    app.config.models = ["anthropic/claude-3-5-haiku-latest"]
    async with app.run_test(size=(120, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        await pilot.press("ctrl+l")
        await until(pilot, lambda: isinstance(app.screen, ModelPicker), "the picker")
        picker = app.screen
        listed = [str(o.prompt) for o in picker.query_one(OptionList).options]
        assert listed[0].strip().startswith("local/smollm2")
        assert any("anthropic/claude-3-5-haiku-latest" in row for row in listed)
        picker.query_one(Input).value = "nonsense"
        await pilot.press("enter")
        error = picker.query_one("#model-error", Static)
        await until(pilot, lambda: "not a model string" in str(error.render()), "refused")
        assert app.screen is picker
        picker.query_one(Input).value = "openai/gpt-4o-mini"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, ModelPicker), "chosen")
        await until(pilot, lambda: banner(pane).problem is not None, "no key: the banner")
        assert await app.config.agent.memory.thread_model("main") == "openai/gpt-4o-mini"
        # The header shows the choice at its next refresh, not in the same tick as the save.
        await until(pilot, lambda: "openai/gpt-4o-mini" in header(pane), "the header")
    other = agents(model="local/smollm2", memory=Memory(store=store))  # another terminal
    assert await other.memory.thread_model("main") == "openai/gpt-4o-mini"


async def test_the_header_shows_the_tokens_and_cost_of_the_run_and_the_thread(
    agents: AgentFactory, store: SqliteStore, openai_server: FakeOpenAIServer
) -> None:
    """On the thread's own model (a provider's, priced by litellm's cost map): the last run
    and the thread so far, in tokens and dollars."""
    usage = {"prompt_tokens": 100_000, "completion_tokens": 20_000}
    openai_server.script({"text": "one", "usage": usage}, {"text": "two", "usage": usage})
    agent = agents(model="local/smollm2", memory=Memory(store=store))
    await agent.memory.set_thread_model("main", "openai/gpt-4o-mini", resource_id="me")
    app = app_on(agent)
    async with app.run_test(size=(160, 30)) as pilot:
        pane = pane_of(app)
        await until(pilot, lambda: pane.feed.attached, "the pane subscribed")
        for text in ("first", "second"):
            composer = pane.query_one(Composer)
            composer.focus()
            composer.value = text
            await pilot.press("enter")
            await until(pilot, lambda t=text: any(e.text == t for e in
                                                  pane.feed.transcript.entries), "sent")
            await agent.wait_for_local_runs()
            await drained(pilot, pane)
        # gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens
        await until(pilot, lambda: "last run 120.0k tok $0.0270 · thread 240.0k $0.0540"
                    in header(pane), "the costs", timeout=30.0)
        assert "openai/gpt-4o-mini" in header(pane)


async def test_the_local_model_is_free(agents: AgentFactory, store: SqliteStore,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tui_agent.app.thread_model import run_cost

    assert run_cost("local/smollm2", 1000, 1000) == 0.0

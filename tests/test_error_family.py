"""What the core refuses on purpose it refuses with its own error family (tui_agent/errors.py),
each still the builtin a caller may already catch: ``ConfigError`` is a ``ValueError``,
``ArgumentTypeError`` a ``TypeError`` too."""

from __future__ import annotations

import pytest

from tui_agent import (
    Agent,
    ArgumentTypeError,
    ConfigError,
    Memory,
    ScriptedModel,
    TuiAgentError,
)


def test_the_family_keeps_the_builtins() -> None:
    assert issubclass(ConfigError, ValueError) and issubclass(ConfigError, TuiAgentError)
    assert issubclass(ArgumentTypeError, TypeError) and issubclass(ArgumentTypeError, ConfigError)


def test_a_scripted_model_without_a_script_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs replies"):
        ScriptedModel()
    with pytest.raises(ConfigError, match="chunk_size must be at least 1"):
        ScriptedModel(replies=["hi"], chunk_size=0)


async def test_a_scripted_reply_of_the_wrong_type_fails_the_run_naming_it() -> None:
    agent = Agent(name="a", instructions="x", model=ScriptedModel(replies=[42]))
    with pytest.raises(ArgumentTypeError, match="reply must be str, dict or exception, not 42"):
        await agent.generate("hi")


async def test_an_inbox_query_that_is_not_text_is_an_argument_type_error(memory: Memory) -> None:
    with pytest.raises(ArgumentTypeError, match="query must be a string, got int"):
        await memory.search_notifications(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="unknown notification status 'unread'"):
        await memory.list_notifications(status="unread")

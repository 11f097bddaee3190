"""Agent(...): every constructor argument of API.md, instructions in all five forms, bad input
rejected at construction with a clear error, and the editor's override rules."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tui_agent import Agent, Memory, RequestContext, SqliteStore, create_tool
from tui_agent.errors import (
    ConfigError,
    MissingCredentialError,
    ProcessorError,
    ToolDefinitionError,
)
from tui_agent.testing import ScriptedModel

CACHE = {"anthropic": {"cache_control": {"type": "ephemeral"}}}


def echo_tool(tool_id: str = "echo", description: str = "Echo the text back") -> Any:
    return create_tool(
        id=tool_id,
        description=description,
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
        execute=lambda tool_input: tool_input["text"],
    )


def agent(**kwargs: Any) -> Agent:
    base: dict[str, Any] = {
        "name": "helper",
        "instructions": "Be brief.",
        "model": ScriptedModel(["ok"]),
    }
    return Agent(**{**base, **kwargs})


def system_part(model: ScriptedModel, call: int = 0) -> list[dict[str, Any]]:
    return [m for m in model.requests[call].messages if m["role"] == "system"]


class Lower:
    id = "lower"

    def process_input(self, messages: list[dict[str, Any]], ctx: Any) -> None:
        return None


# -- the arguments ---------------------------------------------------------------------------


def test_id_defaults_to_name_and_every_argument_is_kept(tmp_path: Path) -> None:
    memory = Memory(store=SqliteStore(tmp_path / "s.db"))
    sub = agent(name="sub")
    tools = {"echo": echo_tool()}
    hooks = {"before_tool_call": lambda call: None}
    scorer = {"len": lambda run: len(run["output"])}

    full = Agent(
        id="helper-1",
        name="Helper",
        instructions=["a", "b"],
        model="openai/gpt-4o-mini",
        description="Answers briefly",
        metadata={"team": "core"},
        tools=tools,
        agents={"sub": sub},
        workflows={"wf": lambda data: data},
        memory=memory,
        hooks=hooks,
        default_options={"max_steps": 2},
        input_processors=[Lower()],
        output_processors=[Lower()],
        max_processor_retries=1,
        request_context_schema={"type": "object"},
        editor=False,
        scorers=scorer,
        notifications={"delivery_policy": {"default": "persist"}},
        voice=None,  # anything else is refused: tests/test_conformance.py
    )
    assert (full.id, full.name, full.description) == ("helper-1", "Helper", "Answers briefly")
    assert full.metadata == {"team": "core"}
    assert full.tools == tools and full.agents == {"sub": sub}
    assert full.memory is memory
    assert full.max_processor_retries == 1 and full.editor is False
    assert list(full.scorers) == ["len"]
    assert agent().id == "helper", "id defaults to name"
    assert "helper" in repr(agent())


async def test_constructing_does_not_touch_the_network_or_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    attempts: list[Any] = []

    def record(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise ConnectionRefusedError("this test makes no connection")

    monkeypatch.setattr(socket.socket, "connect", record)
    monkeypatch.setattr(socket, "getaddrinfo", record)
    # No OPENAI_API_KEY in the environment: construction still works, touching nothing...
    built = Agent(name="a", instructions="x", model="openai/gpt-4o-mini")
    assert attempts == []
    # ...and the first call names the missing key, still before any connection.
    with pytest.raises(MissingCredentialError, match="OPENAI_API_KEY"):
        await built.generate("hi")
    assert attempts == []


async def test_default_options_apply_and_a_call_overrides_them() -> None:
    model = ScriptedModel(
        handler=lambda messages, tools: {"tool_calls": [{"name": "echo", "args": {"text": "x"}}]}
    )
    defaulted = agent(model=model, tools={"echo": echo_tool()}, default_options={"max_steps": 2})
    result = await defaulted.generate("go")
    assert model.calls == 2 and result.finish_reason == "tool-calls"
    result = await defaulted.generate("go", max_steps=1)
    assert model.calls == 3 and len(result.steps) == 1


async def test_description_is_what_the_model_sees_for_a_subagent() -> None:
    sub = agent(name="researcher", description="Finds facts")
    model = ScriptedModel(["done"])
    await agent(model=model, agents={"researcher": sub}).generate("hi")
    specs = {t["function"]["name"]: t["function"] for t in model.requests[0].tools}
    assert specs["agent-researcher"]["description"] == "Finds facts"
    assert specs["agent-researcher"]["parameters"]["required"] == ["prompt"]


# -- instructions in all five forms ----------------------------------------------------------


@pytest.mark.parametrize(
    ("instructions", "expected"),
    [
        ("Be brief.", [{"role": "system", "content": "Be brief."}]),
        (
            ["One.", "Two."],
            [{"role": "system", "content": "One."}, {"role": "system", "content": "Two."}],
        ),
        (
            {"role": "system", "content": "Cached.", "provider_options": CACHE},
            [{"role": "system", "content": "Cached.", "provider_options": CACHE}],
        ),
        (
            [
                "Plain.",
                {"role": "system", "content": "Cached.", "provider_options": CACHE},
                {"role": "system", "content": "Last."},
            ],
            [
                {"role": "system", "content": "Plain."},
                {"role": "system", "content": "Cached.", "provider_options": CACHE},
                {"role": "system", "content": "Last."},
            ],
        ),
    ],
    ids=["string", "list", "system-message", "mixed"],
)
async def test_each_instruction_reaches_the_model_as_its_own_system_message(
    instructions: Any, expected: list[dict[str, Any]]
) -> None:
    model = ScriptedModel(["ok"])
    await agent(instructions=instructions, model=model).generate("hi")
    sent = model.requests[0].messages
    assert sent[: len(expected)] == expected, "system messages first, in order"
    assert sent[len(expected)] == {"role": "user", "content": "hi"}


async def test_callable_instructions_get_the_request_context_sync_and_async() -> None:
    seen: list[Any] = []

    def sync(ctx: RequestContext) -> list[Any]:
        seen.append(ctx)
        return [
            f"User tier: {ctx['tier']}",
            {"role": "system", "content": "Cached.", "provider_options": CACHE},
        ]

    async def asynchronous(ctx: RequestContext) -> str:
        return f"Locale: {ctx['locale']}"

    model = ScriptedModel(["a", "b"])
    await agent(instructions=sync, model=model).generate("hi", request_context={"tier": "pro"})
    assert isinstance(seen[0], RequestContext) and seen[0]["tier"] == "pro"
    assert system_part(model) == [
        {"role": "system", "content": "User tier: pro"},
        {"role": "system", "content": "Cached.", "provider_options": CACHE},
    ]
    await agent(instructions=asynchronous, model=model).generate(
        "hi", request_context=RequestContext(locale="de")
    )
    assert system_part(model, 1) == [{"role": "system", "content": "Locale: de"}]


async def test_a_callable_returning_a_wrong_type_fails_before_the_model() -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError, match="wrong type"):
        await agent(instructions=lambda ctx: 42, model=model).generate("hi")
    assert model.calls == 0


# -- bad input at construction ---------------------------------------------------------------


@pytest.mark.parametrize("model", [None, "", [], "gpt-4o", "openai/", 42])
def test_no_model_or_a_malformed_one_is_a_clear_error(model: Any) -> None:
    with pytest.raises(ConfigError, match="model"):
        Agent(name="a", instructions="x", model=model)


@pytest.mark.parametrize(
    ("instructions", "message"),
    [
        (None, "needs instructions"),
        (42, "wrong type"),
        (["ok", 3], r"instructions\[1\].*wrong type"),
        ({"role": "user", "content": "x"}, "role must be 'system'"),
        ({"role": "system", "content": 5}, "content must be a string"),
        ({"role": "system", "content": "x", "cache": True}, "unknown keys"),
        ({"role": "system", "content": "x", "provider_options": "anthropic"}, "must be a dict"),
    ],
)
def test_instructions_of_a_wrong_type_are_a_clear_error(instructions: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        agent(instructions=instructions)


def test_a_missing_name_is_an_error() -> None:
    with pytest.raises(ConfigError, match="name"):
        Agent(name="", instructions="x", model=ScriptedModel(["ok"]))


def test_an_unknown_constructor_argument_is_rejected() -> None:
    with pytest.raises(TypeError, match="temperature"):
        Agent(name="a", instructions="x", model=ScriptedModel(["ok"]), temperature=0.2)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "no-such-type"}}},
            "not a valid JSON schema",
        ),
        ({"type": "string"}, "must describe an object"),
        (42, "pydantic model class or a JSON schema"),
        (str, "pydantic model class or a JSON schema"),
    ],
)
def test_a_tool_whose_schema_is_not_a_schema_is_rejected(schema: Any, message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        create_tool(id="bad", description="", input_schema=schema, execute=lambda x: x)


def test_bad_tool_definitions_are_rejected() -> None:
    with pytest.raises(ToolDefinitionError, match="tool id"):
        create_tool(id="has space", execute=lambda x: x)
    with pytest.raises(ToolDefinitionError, match="execute must be a function"):
        create_tool(id="t", execute="not callable")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"tools\['raw'\] is not a tool"):
        agent(tools={"raw": lambda x: x})
    with pytest.raises(ConfigError, match="tools must be a dict"):
        agent(tools=[echo_tool()])


def test_other_bad_arguments_name_what_is_wrong(tmp_path: Path) -> None:
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"hooks": {"before_tool": print}}, ConfigError, "unknown hook"),
        ({"hooks": {"after_tool_call": "nope"}}, ConfigError, "must be a function"),
        ({"memory": str(tmp_path)}, ConfigError, "memory must be a Memory"),
        ({"agents": {"x": "not an agent"}}, ConfigError, "is not an Agent"),
        ({"editor": {"model": True}}, ConfigError, "editor must be"),
        ({"request_context_schema": 3}, ConfigError, "request_context_schema"),
        ({"input_processors": [object()]}, ProcessorError, "has none of the methods"),
        ({"output_processors": Lower()}, ProcessorError, "must be a list"),
        ({"default_options": {"max_step": 3}}, ConfigError, "unknown option"),
        ({"default_options": {"max_steps": 0}}, ConfigError, "max_steps"),
        ({"id": 7}, ConfigError, "id must be a string"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            agent(**kwargs)


class NoScore:
    score = "not a method"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("workflows", {"w": 42}, r"workflows\['w'\] must be a function .* not int"),
        ("workflows", {"has space": print}, r"workflows\['has space'\]: the name must be"),
        ("workflows", [print], r"workflows must be a dict"),
        ("scorers", {"s": 42}, r"scorers\['s'\] must be a function .* not int"),
        ("scorers", {"s": NoScore()}, r"scorers\['s'\] must be a function"),
        ("scorers", {3: len}, r"scorers: key 3 must be a non-empty string"),
        ("tools", {"a b": echo_tool()}, r"tools\['a b'\]: the name must be"),
        ("tools", {"": echo_tool()}, r"tools: key '' must be"),
        ("tools", {"raw": 42}, r"tools\['raw'\] is not a tool \(int\)"),
        ("agents", {"sub": 42}, r"agents\['sub'\] is not an Agent \(int\)"),
        ("agents", {"a/b": None}, r"agents\['a/b'\]: the name must be"),
        ("metadata", {1: "x"}, r"metadata: key 1 must be a string"),
        ("metadata", "team", r"metadata must be a dict"),
        ("input_processors", [Lower(), 42], r"input_processors\[1\]: 42 has none"),
        ("memory", 42, r"memory must be a Memory"),
        ("model", 42, r"model"),
        ("description", 42, r"description must be a string"),
        ("max_processor_retries", -1, r"max_processor_retries must be an integer >= 0"),
        ("max_processor_retries", "3", r"max_processor_retries must be an integer"),
        ("request_context_schema", {"type": "no-such"}, r"request_context_schema is not a valid"),
        ("editor", {"instructions": "yes"}, r"editor\['instructions'\]"),
        ("editor", {"tools": {"name": True}}, r"editor\['tools'\]"),
        ("default_options", {"max_steps": "many"}, r"default_options: .*max_steps"),
        ("hooks", {"transform": 42}, r"hooks\['transform'\]"),
        ("notifications", {"delivery_policy": 42}, r"notifications: delivery_policy"),
    ],
)
def test_every_field_is_checked_when_the_agent_is_built(
    field: str, value: Any, message: str
) -> None:
    """Issue 21: nothing given is dropped or left to fail at the first run; the error names
    the field and the key (or index) at fault."""
    with pytest.raises((ConfigError, ProcessorError), match=message):
        agent(**{field: value})


async def test_a_field_given_as_a_function_is_checked_by_the_same_check_at_run_time() -> None:
    model = ScriptedModel(["never"])
    built = agent(model=model, workflows=lambda ctx: {"w": 42})
    with pytest.raises(ConfigError, match=r"workflows\['w'\] must be a function.*returned by"):
        await built.generate("hi")
    assert model.calls == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"temperature": 0.1}, "unknown option"),
        ({"max_steps": 0}, "max_steps must be a positive integer"),
        ({"max_steps": True}, "max_steps"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"hooks": {"on_tool": print}}, "unknown hook"),
        ({"memory": {"resource": "r", "thread": "t"}}, "agent has no memory"),
        (
            {"request_context": ["tier", "pro"]},
            "request_context must be a RequestContext or a dict",
        ),
    ],
)
async def test_bad_call_options_raise_before_the_model_is_called(
    options: dict[str, Any], message: str
) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError, match=message):
        await agent(model=model).generate("hi", **options)
    assert model.calls == 0


@pytest.mark.parametrize("messages", [42, [{"role": "tool", "content": "x"}], [{"text": "x"}]])
async def test_messages_of_a_wrong_shape_are_a_clear_error(messages: Any) -> None:
    model = ScriptedModel(["never"])
    with pytest.raises(ConfigError, match="messages"):
        await agent(model=model).generate(messages)
    assert model.calls == 0


# -- editor ----------------------------------------------------------------------------------


async def test_editor_overrides_instructions_and_tools_on_a_copy() -> None:
    model = ScriptedModel(["a", "b"])
    original = agent(model=model, tools={"echo": echo_tool()})
    edited = original.apply_editor_overrides(
        {
            "instructions": "Be verbose.",
            "tools": {"echo": {"description": "Repeat it"}, "shout": echo_tool("shout")},
        }
    )
    await edited.generate("hi")
    assert system_part(model) == [{"role": "system", "content": "Be verbose."}]
    specs = {t["function"]["name"]: t["function"]["description"] for t in model.requests[0].tools}
    assert specs == {"echo": "Repeat it", "shout": "Echo the text back"}
    await original.generate("hi")
    assert system_part(model, 1) == [{"role": "system", "content": "Be brief."}]
    assert original.tools["echo"].description == "Echo the text back", "original untouched"
    assert original.apply_editor_overrides({"tools": {"echo": None}}).tools == {}


@pytest.mark.parametrize("field", ["id", "name", "model"])
def test_id_name_and_model_can_never_be_overridden(field: str) -> None:
    """Code-owned: dropped from the overrides, as the reference does (issue 12), not raised."""
    for editor in (None, {"instructions": True, "tools": True}):
        original = agent(editor=editor)
        edited = original.apply_editor_overrides({field: "other", "instructions": "x"})
        assert getattr(edited, field) == getattr(original, field)
        assert edited.instructions == "x"


def test_editor_false_locks_the_agent() -> None:
    locked = agent(editor=False)
    with pytest.raises(ConfigError, match="locked"):
        locked.apply_editor_overrides({"instructions": "x"})
    with pytest.raises(ConfigError, match="locked"):
        locked.apply_editor_overrides({"tools": {}})


def test_editor_false_gives_a_plain_copy_for_nothing_to_edit() -> None:
    """A locked agent's permission is never read as a dict (agent.py read ``.get`` on what can
    be False): nothing editable given (only code-owned fields, dropped) is a plain copy."""
    locked = agent(editor=False, tools={"echo": echo_tool()})
    for overrides in ({}, {"id": "other", "name": "other", "model": "other"}):
        copied = locked.apply_editor_overrides(overrides)
        assert copied is not locked and copied.runtime is not locked.runtime
        assert (copied.id, copied.name, copied.instructions, copied.tools) == (
            locked.id, locked.name, locked.instructions, locked.tools)
        assert copied.editor is False


def test_editor_allows_only_what_it_names() -> None:
    only_instructions = agent(editor={"instructions": True}, tools={"echo": echo_tool()})
    assert only_instructions.apply_editor_overrides({"instructions": "x"}).instructions == "x"
    with pytest.raises(ConfigError, match="does not allow editing tools"):
        only_instructions.apply_editor_overrides({"tools": {"echo": {"description": "y"}}})

    descriptions = agent(editor={"tools": {"description": True}}, tools={"echo": echo_tool()})
    edited = descriptions.apply_editor_overrides({"tools": {"echo": {"description": "y"}}})
    assert edited.tools["echo"].description == "y"
    with pytest.raises(ConfigError, match="does not allow editing instructions"):
        descriptions.apply_editor_overrides({"instructions": "x"})
    with pytest.raises(ConfigError, match="descriptions only"):
        descriptions.apply_editor_overrides({"tools": {"echo": None}})
    with pytest.raises(ConfigError, match="descriptions only"):
        descriptions.apply_editor_overrides({"tools": {"new": echo_tool("new")}})


def test_editor_overrides_are_validated() -> None:
    editable = agent(tools={"echo": echo_tool()})
    with pytest.raises(ConfigError, match="wrong type"):
        editable.apply_editor_overrides({"instructions": 42})
    with pytest.raises(ConfigError, match="unknown editor override"):
        editable.apply_editor_overrides({"voice": "x"})
    with pytest.raises(ConfigError, match="no tool 'missing'"):
        editable.apply_editor_overrides({"tools": {"missing": {"description": "x"}}})


class Args(BaseModel):
    text: str


def test_tools_given_as_pydantic_models_describe_their_schema() -> None:
    tool = create_tool(id="say", description="Say it", input_schema=Args, execute=lambda i: i.text)
    spec = tool.spec()
    assert spec["function"]["name"] == "say"
    assert spec["function"]["parameters"]["properties"]["text"]["type"] == "string"
    assert spec["function"]["parameters"]["required"] == ["text"]

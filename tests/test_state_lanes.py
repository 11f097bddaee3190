"""State lanes: send_state_signal, skip-if-unchanged, versions, deltas and reading back."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers.common import AgentFactory, Seen

from tui_agent import Agent, Memory
from tui_agent.errors import ConfigError, SignalError
from tui_agent.state import merge_patch
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "user-1", "thread-1"


@pytest.fixture
async def memory(memory: Memory) -> Memory:
    """conftest's memory, with the thread T of resource R."""
    await memory.store.ensure_thread(T, R)
    return memory


@pytest.fixture
def agent(agents: AgentFactory, memory: Memory, seen: Seen) -> Any:
    return agents(name="lanes", instructions="watch", model=ScriptedModel(handler=seen),
                  memory=memory)


async def send(agent: Any, state: dict[str, Any], **kw: Any) -> dict[str, Any]:
    result = await agent.send_state_signal(state, resource_id=R, thread_id=T, **kw)
    if not result["skipped"] and result["accepted"]["action"] == "wake":
        await result["accepted"]["output"].result()  # let the woken run finish
    return result


# -- RFC 7396 --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [  # the examples of RFC 7396, appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_follows_rfc_7396(target: Any, patch: Any, expected: Any) -> None:
    before = json.dumps(target)
    assert merge_patch(target, patch) == expected
    assert json.dumps(target) == before  # the target is not modified in place


# -- sending ---------------------------------------------------------------------------------------

async def test_snapshot_wakes_the_model_with_a_state_element(agent: Any, seen: Seen) -> None:
    result = await send(agent, {"id": "browser", "cache_key": "k1", "contents": "3 tabs open",
                                "value": {"tabs": 3}, "attributes": {"url": "https://x.io"}})
    assert result["skipped"] is False
    assert result["version"] == 1
    assert result["accepted"]["action"] == "wake"
    assert result["lane"].value == {"tabs": 3}
    assert seen.user_texts() == [
        '<state id="browser" version="1" url="https://x.io">3 tabs open</state>'
    ]


async def test_same_cache_key_and_mode_is_skipped(agent: Any, memory: Any, seen: Seen) -> None:
    state = {"id": "browser", "cache_key": "k1", "contents": "a", "value": {"n": 1}}
    await send(agent, state)
    again = await send(agent, {**state, "contents": "b", "value": {"n": 2}})
    assert again == {"skipped": True, "reason": "unchanged"}
    lane = await memory.get_state_lane(T, "browser")
    assert (lane.version, lane.value) == (1, {"n": 1})
    assert len(await memory.state_lane_history(T, "browser")) == 1
    assert len(seen.calls) == 1  # nothing was routed the second time


async def test_the_same_cache_key_in_the_other_mode_is_a_change(
    agent: Any, memory: Any, seen: Seen
) -> None:
    await send(agent, {"id": "browser", "cache_key": "k1", "value": {"n": 1, "tab": "a"}})
    delta = await send(agent, {"id": "browser", "cache_key": "k1", "mode": "delta",
                               "delta": {"n": 5}})
    assert delta["skipped"] is False and delta["version"] == 2
    lane = await memory.get_state_lane(T, "browser")
    assert (lane.mode, lane.value) == ("delta", {"n": 5, "tab": "a"})
    assert seen.user_texts()[-1] == '<state id="browser" version="2">{"n":5}</state>'


async def test_a_new_cache_key_in_the_same_mode_is_a_change(
    agent: Any, memory: Any, seen: Seen
) -> None:
    await send(agent, {"id": "browser", "cache_key": "k1", "contents": "a", "value": 1})
    result = await send(agent, {"id": "browser", "cache_key": "k2", "contents": "b", "value": 2})
    assert result["skipped"] is False and result["version"] == 2
    assert (await memory.get_state_lane(T, "browser")).value == 2
    assert seen.user_texts()[-1] == '<state id="browser" version="2">b</state>'


async def test_only_the_current_cache_key_is_skipped_not_an_older_one(
    agent: Any, memory: Any
) -> None:
    for key, value in [("k1", 1), ("k2", 2)]:
        await send(agent, {"id": "ed", "cache_key": key, "value": value})
    back = await send(agent, {"id": "ed", "cache_key": "k1", "value": 1})  # back to k1: a change
    assert back["skipped"] is False and back["version"] == 3
    assert (await memory.get_state_lane(T, "ed")).value == 1


async def test_cache_keys_are_per_lane_and_per_thread(agent: Any, memory: Any) -> None:
    await memory.store.ensure_thread("thread-2", R)
    first = await send(agent, {"id": "a", "cache_key": "k", "value": "a"})
    other_lane = await send(agent, {"id": "b", "cache_key": "k", "value": "b"})
    other_thread = await agent.send_state_signal(
        {"id": "a", "cache_key": "k", "value": "a2"}, resource_id=R, thread_id="thread-2",
        if_idle={"behavior": "persist"})
    assert [r["skipped"] for r in (first, other_lane, other_thread)] == [False, False, False]
    assert (await memory.get_state_lane(T, "b")).value == "b"
    assert (await memory.get_state_lane("thread-2", "a")).value == "a2"
    assert (await memory.get_state_lane(T, "a")).value == "a"


async def test_deltas_apply_in_order_and_history_is_newest_first(
    agent: Any, memory: Any
) -> None:
    await send(agent, {"id": "ed", "cache_key": "s", "value": {"file": "a.py", "line": 1}})
    await send(agent, {"id": "ed", "cache_key": "d1", "mode": "delta", "delta": {"line": 9}})
    await send(agent, {"id": "ed", "cache_key": "d2", "mode": "delta",
                       "delta": {"file": None, "sel": [1, 2]}})
    lane = await memory.get_state_lane(T, "ed")
    assert lane.version == 3
    assert lane.mode == "delta"
    assert lane.cache_key == "d2"
    assert lane.value == {"line": 9, "sel": [1, 2]}
    assert lane.updated_at.tzinfo is not None
    history = await memory.state_lane_history(T, "ed")
    assert [h.version for h in history] == [3, 2, 1]
    assert history[0].delta == {"file": None, "sel": [1, 2]}
    assert history[1].value == {"file": "a.py", "line": 9}
    assert history[2].delta is None
    assert [h.version for h in await memory.state_lane_history(T, "ed", limit=1)] == [3]


async def test_delta_without_snapshot_starts_from_empty_object(
    agent: Any, memory: Any, seen: Seen
) -> None:
    result = await send(agent, {"id": "watch", "cache_key": "c", "mode": "delta",
                                "delta": {"failing": 2}})
    assert result["lane"].value == {"failing": 2}
    # no contents given: the model sees the delta as JSON
    assert seen.user_texts() == ['<state id="watch" version="1">{"failing":2}</state>']


async def test_lanes_are_listed_per_thread(agent: Any, memory: Any) -> None:
    await send(agent, {"id": "b", "cache_key": "1", "value": 1})
    await send(agent, {"id": "a", "cache_key": "1", "value": 2}, if_idle={"behavior": "persist"})
    lanes = await memory.list_state_lanes(T)
    assert [(lane.id, lane.value) for lane in lanes] == [("a", 2), ("b", 1)]
    assert await memory.list_state_lanes("other") == []
    assert await memory.get_state_lane(T, "missing") is None


async def test_custom_tag_and_persist_branch(agent: Any, memory: Any, seen: Seen) -> None:
    result = await send(agent, {"id": "ci", "cache_key": "x", "contents": "green",
                                "tag_name": "ci-state"}, if_idle={"behavior": "persist"})
    assert result["accepted"] == {"action": "persist"}
    assert seen.calls == []
    messages = await memory.store.list_messages(T)
    assert messages[-1].content == '<ci-state id="ci" version="1">green</ci-state>'


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("state", "match"),
    [
        ({"cache_key": "k"}, "'id'"),
        ({"id": "b"}, "'cache_key'"),
        ({"id": "", "cache_key": "k"}, "'id'"),
        ({"id": "b", "cache_key": "k", "mode": "patch"}, "unknown state mode 'patch'"),
        ({"id": "b", "cache_key": "k", "mode": "delta"}, "needs 'delta'"),
        ({"id": "b", "cache_key": "k", "delta": {}}, "'delta' is for mode 'delta'"),
        ({"id": "b", "cache_key": "k", "cacheKey": "k"}, "'cacheKey' → 'cache_key'"),
        ({"id": "b", "cache_key": "k", "tag_name": ""}, "tag_name"),
        ({"id": "b", "cache_key": "k", "tag_name": "no spaces"}, "tag_name"),
        ({"id": "b", "cache_key": "k", "attributes": {"version": 3}}, "set by the lane"),
        ({"id": "b", "cache_key": "k", "value": {1, 2}}, "must be JSON"),
    ],
)
async def test_bad_state_raises_and_stores_nothing(
    agent: Any, memory: Any, seen: Seen, state: dict[str, Any], match: str
) -> None:
    with pytest.raises(SignalError, match=match):
        await agent.send_state_signal(state, resource_id=R, thread_id=T)
    assert await memory.list_state_lanes(T) == []
    assert seen.calls == []


async def test_bad_branch_option_stores_nothing(agent: Any, memory: Any) -> None:
    with pytest.raises(SignalError, match="behavior"):
        await agent.send_state_signal({"id": "b", "cache_key": "k"}, resource_id=R,
                                      thread_id=T, if_idle={"behavior": "sleep"})
    assert await memory.list_state_lanes(T) == []


async def test_unknown_thread_and_incomplete_target(agent: Any, memory: Any) -> None:
    with pytest.raises(SignalError, match="no thread 'nope'"):
        await agent.send_state_signal({"id": "b", "cache_key": "k"}, resource_id=R,
                                      thread_id="nope")
    with pytest.raises(SignalError, match="resource_id"):
        await agent.send_state_signal({"id": "b", "cache_key": "k"}, thread_id=T)
    assert await memory.store.get_thread("nope") is None


async def test_memory_is_required() -> None:
    agent = Agent(name="bare", instructions="x", model=ScriptedModel(replies=["ok"]))
    with pytest.raises(ConfigError, match="no memory"):
        await agent.send_state_signal({"id": "b", "cache_key": "k"}, resource_id=R, thread_id=T)

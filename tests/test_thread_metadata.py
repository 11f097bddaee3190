"""Issue 21, point 5: ``update_thread(metadata=…)`` merges into the thread's metadata, as the
reference's updateThread does (the keys given replace theirs, every other key stays; ``unset``
removes keys), so the thread's model (``set_thread_model``, kept in its metadata) survives an
update and a run's ``memory={"thread": {"id", "metadata"}}``, and two writers merging keys of
one thread at once both keep theirs. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest
from helpers.common import AgentFactory, StoreFactory

from tui_agent import Memory
from tui_agent.errors import ArgumentTypeError, StoreError
from tui_agent.store import Store
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

R, T = "res-m", "thread-m"
MODEL = "openai/gpt-4o-mini"


async def test_update_thread_merges_metadata_and_unset_removes_keys(store: Store) -> None:
    memory = Memory(store=store)
    await memory.create_thread(T, resource_id=R, metadata={"a": 1})
    assert (await memory.update_thread(T, metadata={"b": 2})).metadata == {"a": 1, "b": 2}
    assert (await memory.update_thread(T, metadata={"a": 3})).metadata == {"a": 3, "b": 2}
    renamed = await memory.update_thread(T, title="renamed")
    assert (renamed.title, renamed.metadata) == ("renamed", {"a": 3, "b": 2})
    assert (await memory.update_thread(T, unset=["a", "absent"])).metadata == {"b": 2}
    both = await memory.update_thread(T, metadata={"c": [1]}, unset=["b"])
    assert both.metadata == {"c": [1]} and both.title == "renamed"
    with pytest.raises(ArgumentTypeError, match="unset must be a list"):
        await memory.update_thread(T, unset="c")
    with pytest.raises(StoreError, match="no thread 'ghost'"):
        await memory.update_thread("ghost", metadata={"x": 1})


async def test_the_thread_model_and_other_metadata_keep_each_other(
    agents: AgentFactory, store: Store
) -> None:
    model = ScriptedModel(["one"])
    agent = agents(model=model, memory=Memory(store=store))
    memory = agent.memory
    assert memory is not None
    await memory.create_thread(T, resource_id=R, metadata={"pinned": True})
    await memory.set_thread_model(T, MODEL, resource_id=R)
    await memory.update_thread(T, metadata={"category": "billing"})
    assert await memory.thread_model(T) == MODEL
    thread = await memory.get_thread(T)
    assert thread is not None
    assert thread.metadata == {"pinned": True, "model": MODEL, "category": "billing"}
    # A run that names the thread with metadata merges it too: the model stays chosen.
    await memory.set_thread_model(T, None, resource_id=R)
    await agent.generate("hi", memory={"resource": R, "thread": {"id": T, "metadata": {"n": 1}}})
    await memory.set_thread_model(T, MODEL, resource_id=R)
    thread = await memory.get_thread(T)
    assert thread is not None
    assert thread.metadata == {"pinned": True, "model": MODEL, "category": "billing", "n": 1}
    await memory.set_thread_model(T, None, resource_id=R)  # back to the agent's: only "model"
    thread = await memory.get_thread(T)
    assert thread is not None
    assert thread.metadata == {"pinned": True, "category": "billing", "n": 1}


async def test_two_writers_merging_keys_of_one_thread_keep_every_key(
    stores: StoreFactory,
) -> None:
    """Two store objects on one store (as two processes are): each write reads and merges
    under the thread's row lock, so no key is lost to the other's write."""
    first, second = stores(), stores()
    await Memory(store=first).create_thread(T, resource_id=R)
    writes = [
        Memory(store=store).update_thread(T, metadata={f"{name}{n}": n})
        for n in range(15)
        for name, store in (("a", first), ("b", second))
    ]
    await asyncio.gather(*writes)
    thread = await Memory(store=first).get_thread(T)
    assert thread is not None
    assert sorted(thread.metadata) == sorted(f"{x}{n}" for n in range(15) for x in "ab")

"""The run lease: configurable TTL and renewal, and a live run that outlasts its TTL keeps it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.common import AgentFactory, Held

from tui_agent import Memory, SqliteStore
from tui_agent.errors import ConfigError
from tui_agent.testing import ScriptedModel

pytestmark = pytest.mark.both_stores

GUARD_S = 10.0  # failure guard only


def test_ttl_and_renewal_come_from_arguments_or_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = SqliteStore(tmp_path / "lease.db")
    assert (Memory(store=store).lease_ttl_s, Memory(store=store).lease_renew_s) == (15.0, 5.0)
    assert Memory(store=store, lease_ttl_s=3).lease_renew_s == 1.0
    monkeypatch.setenv("TUI_AGENT_LEASE_TTL_S", "30")
    monkeypatch.setenv("TUI_AGENT_LEASE_RENEW_S", "2")
    memory = Memory(store=store)
    assert (memory.lease_ttl_s, memory.lease_renew_s) == (30.0, 2.0)
    assert Memory(store=store, lease_ttl_s=9, lease_renew_s=4).lease_renew_s == 4


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_ttl_s": 0}, "lease_ttl_s must be positive"),
        ({"lease_ttl_s": 5, "lease_renew_s": 5}, "shorter than lease_ttl_s"),
        ({"lease_renew_s": -1}, "lease_renew_s must be positive"),
    ],
)
def test_bad_lease_settings_are_clear_errors(
    kwargs: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=message):
        Memory(store=SqliteStore(tmp_path / "lease.db"), **kwargs)


def test_a_bad_environment_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TUI_AGENT_LEASE_RENEW_S", "soon")
    with pytest.raises(ConfigError, match="TUI_AGENT_LEASE_RENEW_S"):
        Memory(store=SqliteStore(tmp_path / "lease.db"))


async def test_a_run_longer_than_its_ttl_keeps_the_thread(
    store: SqliteStore, agents: AgentFactory
) -> None:
    held = Held("done")
    memory = Memory(store=store, lease_ttl_s=0.6, lease_renew_s=0.1)
    agent = agents(name="a", instructions="x", model=ScriptedModel(handler=held), memory=memory)
    output = await agent.stream("go", memory={"resource": "r", "thread": "t"})
    await asyncio.wait_for(held.entered.wait(), GUARD_S)
    first = await store.active_run("t")
    assert first is not None
    deadline = time.monotonic() + 3 * memory.lease_ttl_s  # outlive the TTL several times
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)  # polling the lease; the run's renewals are what is tested
        live = await store.active_run("t")
        assert live is not None and live.run_id == first.run_id, "the lease lapsed mid-run"
    assert live.expires_at > first.expires_at
    held.gate.set()
    assert (await output.result()).text == "done"
    assert await store.active_run("t") is None

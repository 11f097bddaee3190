"""A silent provider ends the run as failed with "provider timed out after N s", on both model
paths (the direct httpx one and litellm): before its first byte and mid-stream, the partial text
kept, the thread's lease released (issue 11)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers.common import AgentFactory
from openai_server import FakeOpenAIServer

from tui_agent import Memory
from tui_agent.errors import ModelCallError

pytestmark = pytest.mark.integration

THREAD = {"resource": "r", "thread": "t"}
SILENCE_S = 0.5


@pytest.fixture(params=["direct", "litellm"])
def route(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def model_on(route: str) -> dict[str, Any]:
    return {"id": "openai/gpt-test", "route": "litellm" if route == "litellm" else "auto"}


@pytest.mark.parametrize(
    ("hold", "timeout", "which", "partial"),
    [
        ("start", {"first_byte": SILENCE_S}, "first-byte", None),
        (True, {"first_byte": 30, "between_chunks": SILENCE_S}, "between-chunks", "firs"),
    ],
    ids=["before-the-first-byte", "mid-stream"],
)
async def test_a_silent_provider_fails_the_run_and_releases_the_thread(
    openai_server: FakeOpenAIServer, memory: Memory, agents: AgentFactory, route: str,
    hold: Any, timeout: dict[str, float], which: str, partial: str | None,
) -> None:
    openai_server.script({"text": "first then silence", "hold": hold})
    agent = agents(name="wire", model=model_on(route), memory=memory)
    started = time.monotonic()
    try:
        with pytest.raises(ModelCallError) as info:
            await agent.generate(
                "hi", memory=THREAD, model_settings={"timeout": timeout, "max_retries": 0}
            )
    finally:
        openai_server.release()
    assert f"provider timed out after {SILENCE_S:g} s" in str(info.value)
    assert f"{which} timeout" in str(info.value)
    assert time.monotonic() - started < 10
    assert await memory.store.active_run("t") is None
    (run,) = await memory.store.list_runs("t")
    assert run.status == "failed" and "provider timed out" in (run.error or "")
    stored = [(m.role, m.content) for m in await memory.list_messages("t")]
    assert stored == [("user", "hi")] + ([("assistant", partial)] if partial else [])


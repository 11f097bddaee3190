"""Tools that wait for a person (issue 24), in one process, on both stores: a run stops before
a call that needs approval (a ``tool-call-approval`` chunk, the call stored), and goes on when
it is approved (maybe with an edited input) or declined (the model reads the reason as the
tool's error). Answers from another store object (another process's path: the change feed),
timeouts, refused answers, signals sent while it waits, aborts, and runs without memory.

Across processes, through the CLI, with an owner killed while it waits:
tests/test_approvals_cli.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from tui_agent import (
    Agent,
    ApprovalError,
    Memory,
    RunSetAsideError,
    ScriptedModel,
    create_tool,
)
from tui_agent.agent.output import AgentOutput

pytestmark = pytest.mark.both_stores

THREAD = {"resource": "ann", "thread": "deploys"}
GUARD_S = 10.0


class Deploy(BaseModel):
    env: str
    replicas: int = 1


def deploy_tool(**extra: Any) -> Any:
    return create_tool(
        id="deploy",
        description="Deploy the app",
        input_schema=Deploy,
        execute=lambda i: f"deployed to {i.env} x{i.replicas}",
        **extra,
    )


def calls_deploy(*then: str, args: dict[str, Any] | None = None) -> ScriptedModel:
    call = {"tool_calls": [{"name": "deploy", "args": args or {"env": "prod"}}]}
    return ScriptedModel(replies=[call, *then])


_READERS: dict[int, Any] = {}  # an output is iterated once: one iterator per output


def _chunks(output: AgentOutput) -> Any:
    if id(output) not in _READERS:
        _READERS[id(output)] = output.__aiter__()
    return _READERS[id(output)]


async def until_waiting(output: AgentOutput) -> dict[str, Any]:
    """Read the stream up to its ``tool-call-approval`` chunk (bounded)."""

    async def read() -> dict[str, Any]:
        async for chunk in _chunks(output):
            if chunk["type"] == "tool-call-approval":
                return chunk
        raise AssertionError("the run ended without waiting for approval")

    return await asyncio.wait_for(read(), GUARD_S)


async def rest(output: AgentOutput) -> list[str]:
    """The types of the chunks left, to the run's end (bounded)."""

    async def read() -> list[str]:
        return [chunk["type"] async for chunk in _chunks(output)]

    try:
        return await asyncio.wait_for(read(), GUARD_S)
    finally:
        _READERS.pop(id(output), None)


async def test_a_tool_that_requires_approval_waits_then_runs_with_the_edited_input(
    agents: Any, memory: Memory
) -> None:
    model = calls_deploy("Deployed.")
    agent = agents(model=model, tools={"deploy": deploy_tool(require_approval=True)}, memory=memory)
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    payload = chunk["payload"]
    assert (payload["tool_name"], payload["args"]) == ("deploy", {"env": "prod"})
    assert len(model.requests) == 1  # the model is not asked again while it waits
    pending = await memory.list_approvals()
    assert [(a.id, a.thread_id, a.tool_name, a.status) for a in pending] == [
        (payload["approval_id"], "deploys", "deploy", "pending")
    ]
    answer = await agent.approve_tool_call(
        run_id=chunk["run_id"],
        tool_call_id=payload["tool_call_id"],
        args={"env": "staging", "replicas": 2},
    )
    assert answer.run_id == chunk["run_id"] and answer.output is None  # the owner goes on
    after = [t for t in await rest(output) if t != "text-delta"]
    assert after == ["tool-result", "step-finish", "step-start", "step-finish", "finish"]
    result = await output.result()
    assert [r.result for r in result.tool_results] == ["deployed to staging x2"]
    assert model.requests[-1].messages[-1]["content"] == "deployed to staging x2"
    assert await memory.list_approvals() == []
    (done,) = await memory.list_approvals(status="approved")
    assert done.answer_args == {"env": "staging", "replicas": 2}
    log = [e["type"] for e in await memory.store.read_events("deploys", after_seq=0)]
    assert log.index("tool-call") < log.index("tool-call-approval") < log.index("tool-result")


async def test_a_declined_call_gives_the_model_the_reason_as_the_tools_error(
    agents: Any, memory: Memory
) -> None:
    model = calls_deploy("Not deployed, as asked.")
    agent = agents(model=model, tools={"deploy": deploy_tool(require_approval=True)}, memory=memory)
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    await agent.decline_tool_call(
        run_id=chunk["run_id"],
        tool_call_id=chunk["payload"]["tool_call_id"],
        reason="not on a Friday",
    )
    await rest(output)
    result = await output.result()
    assert result.tool_results[0].is_error
    seen = model.requests[-1].messages[-1]
    assert seen["role"] == "tool" and "not on a Friday" in seen["content"]
    assert result.text == "Not deployed, as asked."


async def test_require_tool_approval_holds_every_call_and_generate_returns_at_the_end(
    agents: Any, stores: Any
) -> None:
    """``generate()`` waits through the approval; the answer comes from another store object
    on the same store (as another process would give it: the parked run hears it through the
    store's change feed)."""
    memory = Memory(store=stores())
    agent = agents(model=calls_deploy("Done."), tools={"deploy": deploy_tool()}, memory=memory)
    other = agents(
        name="other",
        model=ScriptedModel(replies=[]),
        tools={"deploy": deploy_tool()},
        memory=Memory(store=stores()),
    )
    generating = asyncio.ensure_future(
        agent.generate("ship it", memory=THREAD, require_tool_approval=True)
    )
    pending = await _pending(other.memory)
    assert not generating.done()
    await other.approve_tool_call(run_id=pending.run_id, tool_call_id=pending.tool_call_id)
    result = await asyncio.wait_for(generating, GUARD_S)
    assert result.text == "Done." and result.tool_results[0].result == "deployed to prod x1"


async def test_an_unanswered_call_is_declined_after_the_timeout(
    agents: Any, memory: Memory
) -> None:
    model = calls_deploy("Gave up.")
    agent = agents(model=model, tools={"deploy": deploy_tool(require_approval=True)}, memory=memory)
    result = await asyncio.wait_for(
        agent.generate("ship it", memory=THREAD, approval_timeout_s=0.2), GUARD_S
    )
    assert result.text == "Gave up." and result.tool_results[0].is_error
    assert "no answer within 0.2 s" in model.requests[-1].messages[-1]["content"]
    (declined,) = await memory.list_approvals(status="declined")
    assert declined.reason == "no answer within 0.2 s"


async def test_an_unknown_answered_or_invalid_answer_is_refused_and_changes_nothing(
    agents: Any, memory: Memory
) -> None:
    agent = agents(
        model=calls_deploy("ok"),
        tools={"deploy": deploy_tool(require_approval=True)},
        memory=memory,
    )
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    run_id, call_id = chunk["run_id"], chunk["payload"]["tool_call_id"]
    with pytest.raises(ApprovalError, match="waits for no approval"):
        await agent.approve_tool_call(run_id=run_id, tool_call_id="nope")
    with pytest.raises(ApprovalError, match=r"edited input of deploy was refused: .*replicas"):
        await agent.approve_tool_call(
            run_id=run_id, tool_call_id=call_id, args={"env": "prod", "replicas": "many"}
        )
    (still,) = await memory.list_approvals()
    assert still.status == "pending" and still.answer_args is None
    await agent.approve_tool_call(run_id=run_id, tool_call_id=call_id)
    with pytest.raises(ApprovalError, match="approved already"):
        await agent.decline_tool_call(run_id=run_id, tool_call_id=call_id, reason="late")
    await rest(output)
    assert (await output.result()).tool_results[0].result == "deployed to prod x1"


async def test_signals_sent_while_a_run_waits_are_delivered_when_it_goes_on(
    agents: Any, memory: Memory
) -> None:
    model = calls_deploy("Deployed.", "Noted the message.")
    agent = agents(model=model, tools={"deploy": deploy_tool(require_approval=True)}, memory=memory)
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    receipt = agent.send_message("also tag the release", resource_id="ann", thread_id="deploys")
    assert (await receipt.accepted)["action"] == "deliver"
    await asyncio.sleep(0)  # nothing reaches the model while it waits
    assert len(model.requests) == 1
    await agent.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
    )
    await rest(output)
    after = model.requests[1].messages
    assert [m["role"] for m in after[-3:]] == ["assistant", "tool", "user"]
    assert after[-1]["content"] == "also tag the release"
    roles = [m.role for m in await memory.list_messages("deploys")]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]


async def test_a_run_aborted_while_it_waits_cancels_the_call(agents: Any, memory: Memory) -> None:
    agent = agents(
        model=calls_deploy("never"),
        tools={"deploy": deploy_tool(require_approval=True)},
        memory=memory,
    )
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    assert output.abort()
    assert (await rest(output))[-1] == "abort"
    (cancelled,) = await memory.list_approvals(status="cancelled")
    assert cancelled.tool_call_id == chunk["payload"]["tool_call_id"]
    with pytest.raises(ApprovalError, match="cancelled already"):
        await agent.approve_tool_call(
            run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
        )


async def test_only_the_calls_that_need_approval_wait(agents: Any, memory: Memory) -> None:
    both = {
        "tool_calls": [
            {"name": "deploy", "args": {"env": "prod"}},
            {"name": "echo", "args": {"text": "hi"}},
        ]
    }
    ran: list[str] = []
    echo = create_tool(id="echo", description="Echo", execute=lambda i: ran.append("echo") or "hi")
    agent = agents(
        model=ScriptedModel(replies=[both, "Both done."]),
        tools={"deploy": deploy_tool(require_approval=True), "echo": echo},
        memory=memory,
    )
    output = await agent.stream("go", memory=THREAD)
    chunk = await until_waiting(output)
    assert ran == ["echo"]  # ran before the run parked; stored with the step
    assert [m.role for m in await memory.list_messages("deploys")] == ["user", "assistant", "tool"]
    await agent.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
    )
    await rest(output)
    result = await output.result()
    assert [r.tool_name for r in result.tool_results] == ["deploy", "echo"]  # call order


async def test_a_run_without_memory_waits_for_an_answer_in_this_process(agents: Any) -> None:
    agent = agents(model=calls_deploy("ok"), tools={"deploy": deploy_tool(require_approval=True)})
    output = await agent.stream("ship it")
    chunk = await until_waiting(output)
    await agent.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"], args={"env": "dev"}
    )
    await rest(output)
    assert (await output.result()).tool_results[0].result == "deployed to dev x1"


def test_bad_approval_options_are_refused() -> None:
    with pytest.raises(Exception, match="require_approval must be True or False"):
        deploy_tool(require_approval="yes")
    agent = Agent(name="a", instructions="x", model=ScriptedModel(replies=["x"]))

    async def bad() -> None:
        await agent.generate("hi", approval_timeout_s=-1)

    with pytest.raises(Exception, match="approval_timeout_s must be a positive number"):
        asyncio.run(bad())


async def _pending(memory: Memory | None) -> Any:
    assert memory is not None
    for _ in range(int(GUARD_S / 0.01)):
        found = await memory.list_approvals()
        if found:
            return found[0]
        await asyncio.sleep(0.01)  # polling the store from the test: a bounded failure guard
    raise AssertionError("no call waited for approval")


async def test_a_waiting_run_survives_its_process_closing_and_goes_on_where_answered(
    agents: Any, stores: Any
) -> None:
    """``Agent.close()`` (an app quitting) sets a waiting run aside: its call stays pending,
    and the agent that answers it, in a process started later, goes on with it."""
    first = agents(
        model=calls_deploy(),
        tools={"deploy": deploy_tool(require_approval=True)},
        memory=Memory(store=stores()),
    )
    output = await first.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    assert await asyncio.wait_for(first.close(), GUARD_S) == []  # not aborted: set aside
    with pytest.raises(RunSetAsideError, match="whoever answers them goes on"):
        await output.result()
    model = ScriptedModel(replies=["Deployed after the restart."])
    later = agents(
        model=model,
        tools={"deploy": deploy_tool(require_approval=True)},
        memory=Memory(store=stores()),
    )
    (pending,) = await later.memory.list_approvals()
    assert pending.id == chunk["payload"]["approval_id"]
    receipt = later.send_message("meanwhile", resource_id="ann", thread_id="deploys")
    assert (await receipt.accepted) == {"action": "deliver", "run_id": chunk["run_id"]}
    answer = await later.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
    )
    assert answer.output is not None and answer.run_id != chunk["run_id"]
    result = await asyncio.wait_for(answer.output.result(), GUARD_S)
    assert result.text == "Deployed after the restart."
    assert [r.result for r in result.tool_results] == ["deployed to prod x1"]
    roles = [m["role"] for m in model.requests[0].messages]
    assert roles[-3:] == ["assistant", "tool", "user"]  # the call's result, then what waited


async def test_the_approval_chunk_shows_the_display_form_and_the_tool_gets_the_real_input(
    agents: Any, memory: Memory
) -> None:
    """A tool's transform policy hides a secret from what the stream shows: the
    ``tool-call-approval`` chunk (and the log) get the display form, the stored call and the
    tool the real input."""
    seen: list[str] = []

    def hide(ctx: dict[str, Any]) -> Any:
        if ctx["phase"] == "input-available":
            return {**ctx["input"], "env": "***"}
        return None

    tool = create_tool(
        id="deploy",
        description="Deploy",
        input_schema=Deploy,
        execute=lambda i: seen.append(i.env) or "ok",
        transform=hide,
        require_approval=True,
    )
    agent = agents(model=calls_deploy("ok"), tools={"deploy": tool}, memory=memory)
    output = await agent.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    assert chunk["payload"]["args"] == {"env": "***"}
    (stored,) = await memory.list_approvals()
    assert stored.args == {"env": "prod"}
    log = await memory.store.read_events("deploys", after_seq=0)
    (logged,) = [e for e in log if e["type"] == "tool-call-approval"]
    assert logged["payload"]["args"] == {"env": "***"}
    await agent.approve_tool_call(
        run_id=chunk["run_id"], tool_call_id=chunk["payload"]["tool_call_id"]
    )
    await rest(output)
    assert seen == ["prod"]


def test_how_long_a_call_waited_reads_at_a_glance() -> None:
    from tui_agent.text import waited

    assert [waited(s) for s in (-1, 12.7, 75, 3599, 7800, 288000)] == [
        "0s",
        "12s",
        "1m 15s",
        "59m 59s",
        "2h 10m",
        "3d 8h",
    ]


async def test_a_waiting_run_costs_no_abort_poll_and_hears_an_abort_from_elsewhere(
    agents: Any, stores: Any
) -> None:
    """While it waits its lease watch only renews (here every 30 s): no abort poll every
    0.1 s. An abort asked through another store connection (another process) still stops it:
    the commit wakes the waiting run, which looks."""
    store = stores()
    looks: list[float] = []
    real = store.abort_requested

    async def counted(thread_id: str, run_id: str) -> bool:
        looks.append(asyncio.get_running_loop().time())
        return await real(thread_id, run_id)

    store.abort_requested = counted
    agent = agents(
        model=calls_deploy("never"),
        tools={"deploy": deploy_tool(require_approval=True)},
        memory=Memory(store=store, lease_ttl_s=90.0, lease_renew_s=30.0),
    )
    output = await agent.stream("ship it", memory=THREAD)
    await until_waiting(output)
    before = len(looks)
    await asyncio.sleep(0.5)  # measuring idle cost: a polling watch would look 5 times
    assert len(looks) - before <= 2  # at most the poll already under way, and a feed wake
    other = agents(name="elsewhere", model=ScriptedModel(replies=[]), memory=Memory(store=stores()))
    sub = await other.subscribe_to_thread(resource_id="ann", thread_id="deploys")
    assert sub.abort()
    assert (await rest(output))[-1] == "abort"
    sub.unsubscribe()
    (cancelled,) = await other.memory.list_approvals(status="cancelled")
    assert cancelled.tool_name == "deploy"


async def test_an_answer_taken_and_run_to_its_end_between_two_reads_is_the_owner_s(
    agents: Any, stores: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tui-agent approve`` waits until the run's owner takes the answer, or takes over a
    run whose owner died. An owner that takes the answer and ends the run between the
    answerer's reads went on: it is not taken for dead (a CI run under load caught the CLI
    printing "its run has ended"). The owner here takes the answer only after the answerer's
    first read, and ends its run before the second."""
    from tui_agent.agent.approvals import answer
    from tui_agent.cli.approvals import unless_owner_goes_on

    owner_store, answerer_store = stores(), stores()
    read_once = asyncio.Event()
    real_take = owner_store.take_answers

    async def take_after_the_first_read(thread_id: str, run_id: str) -> Any:
        await asyncio.wait_for(read_once.wait(), GUARD_S)
        return await real_take(thread_id, run_id)

    monkeypatch.setattr(owner_store, "take_answers", take_after_the_first_read)
    tools = {"deploy": deploy_tool(require_approval=True)}
    owner = agents(model=calls_deploy("Deployed."), tools=tools, memory=Memory(store=owner_store))
    output = await owner.stream("ship it", memory=THREAD)
    chunk = await until_waiting(output)
    answerer = agents(
        model=ScriptedModel(replies=[]), tools=tools, memory=Memory(store=answerer_store)
    )
    done = await answer(answerer, chunk["payload"]["approval_id"], approved=True)
    assert done.run_id == chunk["run_id"] and done.approval is not None  # its owner is live
    ended: list[list[str]] = []

    def then_the_owner_ends(read: Any) -> Any:
        async def spied(*args: Any) -> Any:
            found = await read(*args)
            if not read_once.is_set():
                read_once.set()
                ended.append(await rest(output))
            return found

        return spied

    monkeypatch.setattr(
        answerer_store, "active_run", then_the_owner_ends(answerer_store.active_run)
    )
    monkeypatch.setattr(
        answerer.memory, "get_approval", then_the_owner_ends(answerer.memory.get_approval)
    )
    taken = await asyncio.wait_for(unless_owner_goes_on(answerer, done.approval), GUARD_S)
    assert taken == (True, None)
    assert ended and ended[0][-1] == "finish"
    assert (await output.result()).text == "Deployed."

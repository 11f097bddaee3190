"""Answering a tool call that waits for a person: ``Agent.approve_tool_call`` and
``Agent.decline_tool_call`` (by run and tool call id, as Mastra's ``approveToolCall`` /
``declineToolCall``), and :func:`answer` by the store's approval id (the CLI's and the app's).

An answer is checked before anything changes (an unknown or answered id, or an edited input
that fails the tool's schema, raise ``ApprovalError``), then stored in one transaction. The run
goes on where it lives: in its owner, told at once if that is this process, else through the
store's change feed; or, if its owner died while it waited, here: the last answer takes the
run over and a new run of this agent executes the answers (:class:`ApprovalAnswer`'s
``output``). Tested by tests/test_approvals.py and tests/test_approvals_cli.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tui_agent.agent.approval_gate import LocalAnswer
from tui_agent.errors import ApprovalError
from tui_agent.signals.limits import as_given_dict
from tui_agent.tools import ToolInputError

if TYPE_CHECKING:
    from tui_agent.agent.output import AgentOutput
    from tui_agent.agent.ports import AgentCore
    from tui_agent.store.records import ApprovalRecord
    from tui_agent.tools import Tool


@dataclass(slots=True)
class ApprovalAnswer:
    """What an answer did. ``approval``: the call as answered (None for a run without
    memory); ``run_id``: the run that goes on now (None: it still waits for other calls, or a
    process with its agent goes on); ``output``: that run's output when it goes on in this
    process because its owner died."""

    approval: ApprovalRecord | None
    run_id: str | None = None
    output: AgentOutput | None = None


async def approve_tool_call(
    agent: AgentCore, *, run_id: str, tool_call_id: str, args: Any = None
) -> ApprovalAnswer:
    """Approve run ``run_id``'s waiting call ``tool_call_id`` (``args``: an edited input,
    checked against the tool's schema)."""
    return await _by_call(agent, run_id, tool_call_id, LocalAnswer(True, args))


async def decline_tool_call(
    agent: AgentCore, *, run_id: str, tool_call_id: str, reason: str | None = None
) -> ApprovalAnswer:
    """Decline run ``run_id``'s waiting call ``tool_call_id``: the model gets ``reason`` as
    the tool's error."""
    return await _by_call(agent, run_id, tool_call_id, LocalAnswer(False, None, reason))


async def answer(
    agent: AgentCore,
    approval_id: str,
    *,
    approved: bool,
    args: Any = None,
    reason: str | None = None,
) -> ApprovalAnswer:
    """Answer the stored call ``approval_id`` (``tui-agent approve ID``)."""
    memory = agent.memory
    if memory is None:
        raise ApprovalError("answering a stored tool call needs memory: Agent(memory=...)")
    record = await memory.store.get_approval(_id(approval_id))
    if record is None:
        raise ApprovalError(f"no tool call waits for approval under id {approval_id!r}")
    return await _stored(agent, record, LocalAnswer(approved, args, reason))


async def _by_call(
    agent: AgentCore, run_id: str, tool_call_id: str, given: LocalAnswer
) -> ApprovalAnswer:
    parked = agent.runtime.parked.get(run_id)
    if parked is not None and parked.memoryless:
        call = parked.calls.get(tool_call_id)
        if call is not None and given.approved and given.args is not None:
            given.args = _checked(parked.tools.get(call.tool_name), call.tool_name, given.args)
        parked.answer_here(tool_call_id, given)
        return ApprovalAnswer(None, run_id)
    memory = agent.memory
    record = None if memory is None else await memory.store.find_approval(run_id, tool_call_id)
    if record is None:
        raise ApprovalError(f"run {run_id!r} waits for no approval of tool call {tool_call_id!r}")
    return await _stored(agent, record, given)


async def _stored(agent: AgentCore, record: ApprovalRecord, given: LocalAnswer) -> ApprovalAnswer:
    memory = agent.memory
    assert memory is not None
    if record.status != "pending":
        raise ApprovalError(
            f"tool call {record.id!r} ({record.tool_name}) was {record.status} already"
        )
    args = given.args
    if given.approved and args is not None:
        args = _checked(await _tool(agent, record), record.tool_name, args)
    runtime = agent.runtime
    answered = await memory.store.answer_approval(
        record.id,
        approved=given.approved,
        args=args,
        reason=given.reason,
        owner=runtime.owner,
        ttl_s=memory.lease_ttl_s,
        agent_id=agent.id,
    )
    runtime.parked.tell(record.run_id)  # the owner is here: it looks now
    if answered.takeover is None:
        return ApprovalAnswer(answered.record, answered.live_run)
    runtime.ensure_dispatcher()
    output = await runtime.start_woken_run(
        record.thread_id, record.resource_id, answered.takeover, {}, answered.answers
    )
    return ApprovalAnswer(answered.record, answered.takeover, output)


async def _tool(agent: AgentCore, record: ApprovalRecord) -> Tool | None:
    parked = agent.runtime.parked.get(record.run_id)
    if parked is not None and record.tool_name in parked.tools:
        return parked.tools[record.tool_name]
    return (await agent.resolve_tools()).get(record.tool_name)


def _checked(tool: Tool | None, tool_name: str, args: Any) -> Any:
    """An edited input, checked against the tool's schema (as the model's would be)."""
    edited = as_given_dict(args)
    if edited is None:
        raise ApprovalError(
            f"the edited input of {tool_name} must be a JSON object, not {type(args).__name__}"
        )
    if tool is None:
        raise ApprovalError(f"cannot check the edited input: this agent has no tool {tool_name!r}")
    try:
        tool.parse_input(edited)
    except ToolInputError as error:
        raise ApprovalError(f"the edited input of {tool_name} was refused: {error}") from None
    return edited


def _id(approval_id: object) -> str:
    if not isinstance(approval_id, str) or not approval_id.strip():
        raise ApprovalError(f"an approval id is a non-empty string, not {approval_id!r}")
    return approval_id.strip()

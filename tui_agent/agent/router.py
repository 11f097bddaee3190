"""Routing signals: send_message, queue_message and send_signal.

The call reads the input into a checked Signal in one pass (``tui_agent.signals``: a bad signal
raises and nothing is stored), returns a receipt, and routes in the background, handing the
store the record of each branch (``signals.stored.branch_records``): the decision — deliver into the
live run, wake a new run, persist, discard — is taken inside one store transaction, so it
holds across processes. A send to a named thread queues its decision at once, with no task of
its own: a burst of sends shares the store's next group commit, and each receipt resolves once
its signal is committed, all of a group's receipts in one pass of the store's writer
(tests/test_group_commit.py). A plain text message (the common send) is routed as its text, id
and time (``PlainText``): its Signal is built only if ``receipt.signal`` is asked for, and what
is stored is its data's JSON, written without pydantic or a JSON encoder
(``signals.stored.branch_records``); tests/test_signal_fast_path.py proves it gives exactly the
general path's signal, model message and stored rows. The store keeps the data only (the model
message is rendered from it when read: a message is stored once, tests/test_store_once.py).

It takes the agent as :class:`~tui_agent.agent.ports.AgentCore` (it spawns and starts runs
through the agent's runtime); ``tui_agent.signals`` holds the signal data, its rendering and
its stored record. Tested by tests/test_signals_*.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

from tui_agent.agent.options import check_wake_options
from tui_agent.agent.ports import AgentCore
from tui_agent.errors import ConfigError, SignalError
from tui_agent.signals.data import (
    IfActive,
    IfIdle,
    PlainText,
    Signal,
    Target,
    normalize_message,
    normalize_signal,
    parse_if_active,
    parse_if_idle,
    parse_target,
)
from tui_agent.signals.stored import branch_records, signal_in
from tui_agent.store.records import RouteResult

# The branches of a send that names none (almost every send): parsed once, never mutated.
_DEFAULT_ACTIVE, _DEFAULT_IDLE = parse_if_active(None), parse_if_idle(None)


@dataclass(slots=True)  # one per send: no __dict__ to allocate
class SignalReceipt:
    """What ``send_*`` returns at once. ``await receipt.accepted`` gives the routing decision:
    ``{"action": "wake", "run_id", "output"}``, ``{"action": "deliver", "run_id"}``,
    ``{"action": "persist"}`` or ``{"action": "discard"}``. ``receipt.signal`` is the Signal
    sent (a plain text message's is built when first asked for: see ``PlainText``)."""

    sent: Signal | PlainText = field(repr=False)
    accepted: asyncio.Future[dict[str, Any]]
    #: Resolves once the signal is stored; made when a branch of the send may persist.
    persist_future: asyncio.Future[None] | None = field(default=None, repr=False)
    #: The background task routing the signal (None when routed without one: a named thread
    #: joins the next group commit directly; a memoryless agent routes at once).
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    #: The action routing took, once it is known.
    action: str | None = field(default=None, repr=False)

    @property
    def signal(self) -> Signal:
        if isinstance(self.sent, PlainText):
            self.sent = self.sent.signal()  # built once, when first asked for
        return self.sent

    def __repr__(self) -> str:
        return f"SignalReceipt(signal={self.signal!r}, accepted={self.accepted!r})"

    @property
    def persisted(self) -> asyncio.Future[None] | None:
        """Only for a persist action, as in the reference: None when no branch of the send
        persists, and None once routing took another action (deliver, wake, discard); until
        the decision, the future of a send that may persist (it resolves whatever the action,
        so awaiting it never hangs)."""
        if self.action is not None and self.action != "persist":
            return None
        return self.persist_future


def send(
    agent: AgentCore,
    message: Any,
    kind: str,
    run_id: Any,
    resource_id: Any,
    thread_id: Any,
    if_active: Any,
    if_idle: Any,
) -> SignalReceipt:
    """``agent.send_message`` (``kind`` "message"), ``queue_message`` ("queue") or
    ``send_signal`` ("signal"): the target and branches as the caller gave them (checked
    here), positional (a burst sends hundreds)."""
    sent: Signal | PlainText | None = None
    given = cast(object, message)  # the caller's: narrowed by its type here
    if type(given) is str:  # most of what is sent: its Signal can wait
        if kind != "signal":
            sent = PlainText.of(given)
    elif kind == "signal" and type(given) is dict:  # a typed dict's can wait too
        sent = PlainText.of_signal_dict(cast("dict[Any, Any]", given))
    if sent is None:
        sent = normalize_signal(message) if kind == "signal" else normalize_message(message)
    target = parse_target(run_id, resource_id, thread_id)
    active = _DEFAULT_ACTIVE if if_active is None else parse_if_active(if_active)
    idle = _DEFAULT_IDLE if if_idle is None else parse_if_idle(if_idle)
    if idle.stream_options:  # fail now (without any, the agent's own were checked when built)
        given = agent.default_options  # a dict, or a function of the request context
        defaults = cast("dict[str, Any]", given) if isinstance(given, dict) else {}
        check_wake_options(idle.stream_options, defaults, agent.hooks)
    if agent.memory is None:
        return _send_in_process(agent, _signal_of(sent), target, active, kind == "queue")
    loop = asyncio.get_running_loop()
    receipt = SignalReceipt(sent, loop.create_future())
    if active.behavior == "persist" or idle.behavior == "persist":
        receipt.persist_future = loop.create_future()
    if target.thread_id is not None:
        _route_now(agent, sent, target, active, idle, kind == "queue", receipt)
        return receipt
    signal = receipt.signal
    receipt.task = agent.runtime.spawn(
        _route(agent, signal, target, active, idle, kind == "queue", receipt),
        name=f"route signal {signal.id}",
    )
    return receipt


def _send_in_process(
    agent: AgentCore, signal: Signal, target: Target, active: IfActive, queue: bool
) -> SignalReceipt:
    """Without memory there is no thread to wake, persist to, or reach from another process:
    a signal can only go into a live run of this agent in this process, by its run id."""
    needs_memory = "give the agent memory (Agent(memory=Memory(...))) to reach threads"
    if target.thread_id is not None or target.run_id is None:
        raise ConfigError(f"without memory, signals can only target a live run_id; {needs_memory}")
    if queue or active.behavior == "persist":
        what = "queue_message" if queue else "if_active persist"
        raise ConfigError(f"{what} needs memory; {needs_memory}")
    run = agent.runtime.run(target.run_id)
    if run is None or run.memory is not None:
        raise SignalError(
            f"no live run {target.run_id!r} of this agent in this process; {needs_memory}"
        )
    accepted: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    if active.behavior == "discard":
        accepted.set_result({"action": "discard"})
        return SignalReceipt(signal, accepted)
    branch = signal_in(signal, active.attributes)
    routed = {"id": signal.id, "type": signal.type, "message": branch.message, "data": branch.data}
    if not run.deliver_local(routed):
        raise SignalError(f"run {target.run_id!r} has finished taking signals")
    accepted.set_result({"action": "deliver", "run_id": run.run_id})
    return SignalReceipt(signal, accepted)


def _signal_of(sent: Signal | PlainText) -> Signal:
    return sent.signal() if isinstance(sent, PlainText) else sent


def _route_now(
    agent: AgentCore,
    sent: Signal | PlainText,
    target: Target,
    active: IfActive,
    idle: IfIdle,
    queue: bool,
    receipt: SignalReceipt,
) -> None:
    """The thread is known: queue the routing transaction now (it joins the store's next group
    commit); the store's writer settles the receipt once it is committed, for every signal of
    the group in one pass — no task and no loop callback per signal, so a burst of sends costs
    little more than its commits."""
    assert agent.memory is not None
    assert target.resource_id is not None and target.thread_id is not None
    agent.runtime.track(receipt.accepted)  # close() waits for it, as for a routing task
    if type(sent) is not PlainText or active.attributes or idle.attributes:
        sent = receipt.signal  # built now (and kept by the receipt): a branch needs it
    when_active, when_idle = branch_records(sent, active.attributes, idle.attributes)
    agent.memory.store.route_signal_then(  # keywords spelled out: no dict per signal
        partial(_on_routed, agent, target, idle, receipt),
        target.thread_id,
        target.resource_id,
        when_active,
        if_active=active.behavior,
        if_idle=_idle_behavior(agent, idle),
        queue=queue,
        owner=agent.runtime.owner,
        ttl_s=agent.memory.lease_ttl_s,
        agent_id=agent.id,
        echo_when_idle=when_idle,
        claim_on_wake=agent.runtime.wake_claim(idle.stream_options),
    )


def _on_routed(
    agent: AgentCore,
    target: Target,
    idle: IfIdle,
    receipt: SignalReceipt,
    result: RouteResult | None,
    error: BaseException | None,
) -> None:
    if error is not None:
        _fail_receipt(receipt, error)
        return
    assert result is not None
    try:  # a callback's error would only be logged: the receipt must hear of it
        assert target.resource_id is not None and target.thread_id is not None  # named
        if result.action != "wake":
            _accept(receipt, _decision(agent, result, target.thread_id, receipt.sent.id))
            return
        if result.started is not None:  # before any later delivery's decision is heard
            assert result.run_id is not None
            agent.runtime.claimed_early(result.run_id, result.started)
        agent.runtime.spawn(
            _route_woken(agent, target.resource_id, target.thread_id, result, idle, receipt),
            name=f"wake for signal {receipt.sent.id}",
        )
    except Exception as failure:
        _fail_receipt(receipt, failure)


async def _route(
    agent: AgentCore,
    signal: Signal,
    target: Target,
    active: IfActive,
    idle: IfIdle,
    queue: bool,
    receipt: SignalReceipt,
) -> None:
    """The routing of a signal sent by run id: find its thread first."""
    try:
        resource_id, thread_id = await _thread_of(agent, target)
        result = await _submit_route(agent, signal, resource_id, thread_id, active, idle, queue)
    except BaseException as error:
        _fail_receipt(receipt, error)
        return
    if result.action != "wake":
        _accept(receipt, _decision(agent, result, thread_id, signal.id))
        return
    if result.started is not None:
        assert result.run_id is not None
        agent.runtime.claimed_early(result.run_id, result.started)
    await _route_woken(agent, resource_id, thread_id, result, idle, receipt)


async def _route_woken(
    agent: AgentCore,
    resource_id: str,
    thread_id: str,
    result: RouteResult,
    idle: IfIdle,
    receipt: SignalReceipt,
) -> None:
    """The signal won the thread's lease: start the run it woke."""
    assert result.run_id is not None
    agent.runtime.ensure_dispatcher()
    try:
        output = await agent.runtime.start_woken_run(
            thread_id, resource_id, result.run_id, idle.stream_options, started=result.started
        )
    except BaseException as error:
        _fail_receipt(receipt, error)
        return
    _accept(receipt, {"action": "wake", "run_id": result.run_id, "output": output})


def _submit_route(
    agent: AgentCore,
    signal: Signal,
    resource_id: str,
    thread_id: str,
    active: IfActive,
    idle: IfIdle,
    queue: bool,
) -> asyncio.Future[RouteResult]:
    assert agent.memory is not None
    when_active, when_idle = branch_records(signal, active.attributes, idle.attributes)
    return agent.memory.store.route_signal_soon(
        thread_id,
        resource_id,
        when_active,
        if_active=active.behavior,
        if_idle=_idle_behavior(agent, idle),
        queue=queue,
        owner=agent.runtime.owner,
        ttl_s=agent.memory.lease_ttl_s,
        agent_id=agent.id,
        echo_when_idle=when_idle,
        claim_on_wake=agent.runtime.wake_claim(idle.stream_options),
    )


def _idle_behavior(agent: AgentCore, idle: IfIdle) -> str:
    """A sender-only process (``tui-agent notify``, ``send --no-wait``) holds a wake on the
    thread for a host to answer (``ThreadRuntime.sender_only``) instead of running it here."""
    if idle.behavior == "wake" and agent.runtime.sender_only:
        return "hold"
    return idle.behavior


def _decision(
    agent: AgentCore, result: RouteResult, thread_id: str, signal_id: str
) -> dict[str, Any]:
    """The receipt's answer for a decision other than a wake (of signal ``signal_id``, sent
    to ``thread_id``)."""
    runtime = agent.runtime
    if result.action == "deliver":
        waits_on = result.behind or result.run_id  # a queued signal waits on the live run
        if waits_on is None or runtime.run(waits_on) is None:
            runtime.ensure_dispatcher()
            runtime.rescue_soon(thread_id)  # a run of another process, which may die
            if result.run_id is not None:  # or a woken run of ours not started yet
                runtime.delivered(result.run_id, signal_id)
        # else a live run of this process, which started the dispatcher when it started and
        # starts the queued runs behind it when it ends (a burst delivers or queues hundreds:
        # no check each)
        return {"action": "deliver", "run_id": result.run_id}
    runtime.ensure_dispatcher()
    return {"action": result.action}


def _accept(receipt: SignalReceipt, decision: dict[str, Any]) -> None:
    receipt.action = decision["action"]
    future = receipt.persist_future
    if future is not None and not future.done():
        # The decision is stored by now whatever the branch (a delivered or woken signal is
        # stored too), so waiting on ``persisted`` never hangs.
        future.set_result(None)
    if not receipt.accepted.done():  # close() may have cancelled it
        receipt.accepted.set_result(decision)


def _fail_receipt(receipt: SignalReceipt, error: BaseException) -> None:
    _fail(receipt.accepted, error)
    if receipt.persist_future is not None:
        _fail(receipt.persist_future, error)


async def _thread_of(agent: AgentCore, target: Target) -> tuple[str, str]:
    if target.thread_id is not None:
        assert target.resource_id is not None
        return target.resource_id, target.thread_id
    assert agent.memory is not None and target.run_id is not None
    run = await agent.memory.store.get_run(target.run_id)
    if run is None:
        raise SignalError(
            f"unknown run_id {target.run_id!r} and no thread given: pass resource_id= and "
            f"thread_id= too"
        )
    return run.resource_id, run.thread_id


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
        future.add_done_callback(lambda f: f.exception())  # awaiting it is optional


# -- signals routed by another write's transaction (store/compound.py) ---------------------------


class RoutedElsewhere:
    """What a write that routes its signal in its own transaction (a state lane's version, a
    notification's record: ``tui_agent.store.compound``; one group commit a burst) needs of
    :func:`send`: the branches checked as it checks them, the store's routing arguments, and
    the receipt settled as a send's is once its routing commits (``Agent.signal_routing``)."""

    __slots__ = ("agent",)

    def __init__(self, agent: AgentCore) -> None:
        self.agent = agent

    def branches(self, if_active: Any, if_idle: Any) -> tuple[IfActive, IfIdle]:
        """The branches of a send, parsed and checked as :func:`send` checks them."""
        active = _DEFAULT_ACTIVE if if_active is None else parse_if_active(if_active)
        idle = _DEFAULT_IDLE if if_idle is None else parse_if_idle(if_idle)
        if idle.stream_options:
            given = self.agent.default_options
            defaults = cast("dict[str, Any]", given) if isinstance(given, dict) else {}
            check_wake_options(idle.stream_options, defaults, self.agent.hooks)
        return active, idle

    def options(
        self, active: IfActive, idle: IfIdle, queue: bool = False
    ) -> tuple[str, str, bool, str, float, str | None, int | None]:
        """The store's routing arguments after the signal's two records (``signal_writes.RouteCall``
        from ``if_active`` on), as :func:`send` routes: (if_active, if_idle, queue, owner,
        ttl_s, agent_id, claim_on_wake)."""
        agent = self.agent
        assert agent.memory is not None
        return (active.behavior, _idle_behavior(agent, idle), queue, agent.runtime.owner,
                agent.memory.lease_ttl_s, agent.id,
                agent.runtime.wake_claim(idle.stream_options))

    def settle(
        self, signal: Signal | PlainText, target: Target, active: IfActive, idle: IfIdle,
        result: RouteResult,
    ) -> SignalReceipt:
        """The receipt of ``signal``, whose routing ``result`` is committed: settled as a
        send's is (a delivery accepted at once, a wake's run started)."""
        loop = asyncio.get_running_loop()
        receipt = SignalReceipt(signal, loop.create_future())
        if active.behavior == "persist" or idle.behavior == "persist":
            receipt.persist_future = loop.create_future()
        _on_routed(self.agent, target, idle, receipt, result, None)
        if not receipt.accepted.done():  # a wake's run starting: close() waits for it
            self.agent.runtime.track(receipt.accepted)
        return receipt

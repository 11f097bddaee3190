"""The thread runtime: what one agent has going in this process.

An :class:`~tui_agent.agent.agent.Agent` holds one ``ThreadRuntime``. It owns the agent's live
runs, the background tasks it keeps references to (routing a signal, starting a woken or queued
run), the lease owner id this process writes into the store, and the notification dispatcher
handle. Routing, subscriptions, the dispatcher and the CLI reach the agent's runs only through
this public interface — never through the agent's private members (ruff ``SLF001``, on for the
package). Each agent, and each copy of one (``apply_editor_overrides``), has its own runtime, so
closing a copy never stops the original's work (tests/test_agent_runtime.py). It reads its agent
as :class:`~tui_agent.agent.ports.AgentCore` and is, for each run it starts, the run's
:class:`~tui_agent.agent.ports.RunHost`.

It also rescues stranded signals: signals that wait on a thread with no live run (its owner was
killed, or exited with a message queued) are taken over by a new run here, so nothing accepted
is left unanswered while any process has the agent open (tests/test_rescue.py). When to look is
event-driven (``tui_agent.agent.rescuer``): at the expiry of the lease they wait behind, or when
told of a change; no polling.

A process that holds the agent open to answer its threads (the app, ``tui-agent chat`` and
``watch``) says so with :meth:`ThreadRuntime.host`: dispatcher and rescuer run from then on,
woken by the store's change feed, and the store file's host registry (``tui_agent.hosts``)
tells senders that someone answers. A process that only sends (``tui-agent notify``, ``send
--no-wait``) sets :attr:`ThreadRuntime.sender_only`: it starts neither, and a signal that
would wake an idle thread is held there, pending, for a host (tests/test_cli_notify.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from tui_agent.agent.approval_gate import ParkedRuns
from tui_agent.agent.options import RunOptions, parse_run_options, wake_options
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.plan import RunDeps, RunPlan
from tui_agent.agent.ports import AgentCore
from tui_agent.agent.rescuer import Rescuer
from tui_agent.agent.run import Run
from tui_agent.events import ERROR
from tui_agent.hosts import HostLock, register
from tui_agent.notifications.dispatcher import ensure_dispatcher, stop_dispatcher
from tui_agent.notifications.ports import DispatcherHandle
from tui_agent.store.changes import ChangeFeed, ChangeWatch
from tui_agent.store.records import ApprovalRecord, EventIn, WakeStart

# One lease owner per process: a run's lease names the process that runs it.
PROCESS_OWNER = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

log = logging.getLogger(__name__)

Planner = Callable[[RunOptions, list[dict[str, Any]], WakeStart | None], Awaitable[RunPlan]]


class ThreadRuntime:
    """The runs, background tasks, lease owner and dispatcher of one agent in this process.

    ``agent`` is the agent it serves (its memory, id, options and hooks are read when needed);
    ``plan`` resolves a run's model, instructions and tools; ``deps`` builds the bundle a run
    gets from its agent. Both come from the agent, which keeps them private.
    """

    def __init__(
        self,
        agent: AgentCore,
        *,
        plan: Planner,
        deps: Callable[[], RunDeps],
        owner: str = PROCESS_OWNER,
    ) -> None:
        self.agent = agent
        self._plan = plan
        self._deps = deps
        self._owner = owner
        self._runs: dict[str, Run] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._prune_tracked_at = _FIRST_PRUNE  # see track
        #: The notification dispatcher running for this agent in this process, if any: set and
        #: stopped by :mod:`tui_agent.notifications.dispatcher`.
        self.dispatcher: DispatcherHandle | None = None
        self._rescuer: asyncio.Task[None] | None = None  # see rescue_stranded
        self._rescue: Rescuer | None = None  # the rescuer task's state (poke it)
        self._parked = ParkedRuns()  # this runtime's runs waiting for answers to tool calls
        #: This process only sends (``tui-agent notify``, ``send --no-wait``): no dispatcher or
        #: rescuer here, and a wake it would win is held on the thread for a host instead.
        self.sender_only = False
        self._host_watch: ChangeWatch | None = None  # see host
        self._host_lock: HostLock | None = None
        self._early_claims = _EarlyClaims()  # woken runs claimed by their routing, not started

    @property
    def owner(self) -> str:
        """The lease owner id this process writes into the store for the runs it runs."""
        return self._owner

    @property
    def parked(self) -> ParkedRuns:
        """The runs of this runtime waiting for answers to tool calls (``approval_gate``)."""
        return self._parked

    # -- runs ---------------------------------------------------------------------------------

    def launch(self, plan: RunPlan) -> AgentOutput:
        """Start a planned run as a task of the running loop; its output at once."""
        output = AgentOutput(plan.options.run_id)
        run = Run(self._deps(), plan, output)
        self._runs[run.run_id] = run
        task = asyncio.get_running_loop().create_task(run.execute(), name=f"run {run.run_id}")
        task.add_done_callback(_retrieve_exception)
        output.attach(task, run.abort_event)
        return output

    def forget(self, run_id: str) -> None:
        """A run ended: it is no longer one of this runtime's live runs."""
        self._runs.pop(run_id, None)

    def run(self, run_id: str) -> Run | None:
        """The live run ``run_id`` of this agent in this process, if there is one."""
        return self._runs.get(run_id)

    def run_on(self, thread_id: str) -> Run | None:
        """The live run of this agent in this process on ``thread_id``, if there is one."""
        for run in self._runs.values():
            if run.thread_id == thread_id:
                return run
        return None

    def outputs(self) -> list[AgentOutput]:
        """The outputs of the live runs (not done yet)."""
        return [run.output for run in self._runs.values() if not run.output.done()]

    async def start_woken_run(
        self, thread_id: str, resource_id: str, run_id: str, stream_options: dict[str, Any],
        resume: list[ApprovalRecord] | None = None, started: WakeStart | None = None,
    ) -> AgentOutput:
        """Start run ``run_id``, whose lease this process already holds (it won a wake, or a
        queued message's turn came, or it took over a parked run: ``resume``, the answered
        calls it executes first). Its input is the thread's pending signals — taken already
        when its wake's routing claimed its start (``started``: see :meth:`wake_claim`). If it
        cannot even start (a misconfigured agent), the lease is released and the run marked
        failed."""
        agent = self.agent
        memory = agent.memory
        options = wake_options(stream_options, resource_id, thread_id, run_id)
        if resume and resume[0].options.get("require_tool_approval"):
            options["require_tool_approval"] = True  # as the run it goes on for was asked
        took = started is not None and bool(started.taken)  # the run's signals are taken
        try:
            defaults = await agent.resolve_default_options(options.get("request_context"))
            run_options = parse_run_options(options, defaults, agent.hooks)
            known, history = None, []
            wake_start = getattr(memory, "wake_start", None)  # a memory-like object: none
            if resume is None and wake_start is not None:
                # One round trip to the model call (none if the routing claimed it): history,
                # signals and what the plan reads. Cancelled while it is under way, it may
                # have committed all the same.
                took = True
                history, known = await wake_start(
                    thread_id, resource_id, run_id, run_options.last_messages,
                    agent_id=agent.id, claimed=started)
                took = bool(known.taken)
            waited = _Waited(asyncio.get_running_loop())
            plan = await self._plan(run_options, [], known)
            plan.resume = resume
            if known is not None:
                plan.started = (history, known.taken)
                # Sends let in after the claim (the plan waited: a model or instructions
                # function, say; or they were delivered before this task ran) are taken
                # before the run's first call, as they would have been.
                plan.started_late = waited.done() or self._early_claims.late(run_id)
        except BaseException as error:
            assert memory is not None
            message = f"{type(error).__name__}: {error}"
            # Cancelled (the process is exiting): its signals wait for a live process (taken
            # already: a marker says they are owed an answer, as a run cut short leaves).
            cancelled = isinstance(error, asyncio.CancelledError)
            await memory.store.finish_run(
                thread_id,
                resource_id,
                run_id,
                owner=self._owner,
                status="failed",
                finish_reason="error",
                error=message,
                force=True,
                keep_pending=cancelled,
                resume=cancelled and took,
                events=[EventIn(ERROR, {"error": message, "finish_reason": "error"}, run_id)],
            )
            raise
        finally:
            self._early_claims.forget(run_id)
        return self.launch(plan)

    def wake_claim(self, stream_options: dict[str, Any]) -> int | None:
        """``route_signal``'s ``claim_on_wake`` for a send whose wake would start its run here
        with ``stream_options``: the run's ``last_messages`` (its memory's), so the routing
        claims the run's start in its own transaction. None — the run claims it itself — when
        the run's options may change that (stream options given), this process only sends
        (the wake is held), or the memory cannot take a claimed start."""
        memory = self.agent.memory
        if stream_options or self.sender_only or memory is None:
            return None
        if getattr(memory, "wake_start", None) is None:  # a memory-like object
            return None
        return memory.last_messages

    def claimed_early(self, run_id: str, started: WakeStart) -> None:
        """A wake's routing claimed run ``run_id``'s start (``started``); the run starts soon,
        in a task of its own. Until it does, :meth:`delivered` says what came in meanwhile."""
        self._early_claims.claimed(run_id, started)

    def delivered(self, run_id: str, signal_id: str) -> None:
        """Signal ``signal_id`` was delivered into run ``run_id``, not live here (yet): if that
        run's start was claimed early without it, the run takes it before its first call."""
        self._early_claims.delivered(run_id, signal_id)

    def start_queued_run(
        self, thread_id: str | None, resource_id: str | None, run_id: str
    ) -> None:
        """A queued message's turn came: run it under the lease this process already holds."""
        assert thread_id and resource_id
        self.spawn(
            self.start_woken_run(thread_id, resource_id, run_id, {}),
            name=f"queued run {run_id}",
        )

    # -- background tasks ---------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """A background task the runtime keeps a reference to (asyncio only keeps weak ones)
        until it ends; its exception, if any, is retrieved (it surfaces elsewhere)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        task.add_done_callback(_retrieve_exception)
        return task

    def track(self, future: asyncio.Future[Any]) -> None:
        """Work in flight with no task of its own (a signal's routing, queued in the store's
        next group commit) that :meth:`settle` and ``Agent.close`` wait for, like a task.

        No callback per future (a burst tracks hundreds of receipts): the done ones are dropped
        together each time the set has doubled, and :meth:`background` skips them meanwhile."""
        background = self._background
        background.add(future)  # type: ignore[arg-type]
        if len(background) >= self._prune_tracked_at:
            for done in [item for item in background if item.done()]:
                background.discard(done)
            self._prune_tracked_at = max(_FIRST_PRUNE, 2 * len(background))

    def background(self) -> list[asyncio.Task[Any]]:
        """The background tasks still going: signals being routed, runs starting."""
        return [task for task in self._background if not task.done()]

    def pending(self) -> list[asyncio.Task[Any]]:
        """This agent's work still going in this process: runs starting (woken or queued) and
        signals being routed, then the runs themselves."""
        runs = [run.output.task for run in self._runs.values()]
        return self.background() + [task for task in runs if task is not None and not task.done()]

    # -- the dispatcher -----------------------------------------------------------------------

    def ensure_dispatcher(self) -> None:
        """Start the notification dispatcher and the stranded-signal rescuer in the running
        loop if they are not running there (agents with memory only)."""
        if self.agent.memory is None or self.sender_only:
            return
        loop = asyncio.get_running_loop()
        rescuer, dispatcher = self._rescuer, self.dispatcher
        if (rescuer is not None and dispatcher is not None and not rescuer.done()
                and rescuer.get_loop() is loop and dispatcher.running_in(loop)):
            return  # both run here already: the common case (every routing decision asks)
        ensure_dispatcher(self.agent)
        if rescuer is None or rescuer.done() or rescuer.get_loop() is not loop:
            self._rescue = Rescuer(self.agent.memory.store, self.rescue_stranded,
                                  lambda run_id: self.run(run_id) is not None)
            self._rescuer = loop.create_task(self._rescue.run(), name="tui-agent rescuer")

    def host(self) -> None:
        """This process holds the agent open to answer its threads (the app, chat, watch): the
        dispatcher and the rescuer run from now on, not only once a run or a subscription starts
        them (issue 21: digests waited forever in an app with no pane open); a change watch of
        its own keeps the store's change feed running, so both hear other processes' commits
        at once; and the store file's host registry says a host lives (``tui_agent.hosts``).
        Idempotent; undone by :meth:`stop_dispatcher` (``Agent.close``)."""
        memory = self.agent.memory
        if memory is None:
            return
        self.sender_only = False
        self.ensure_dispatcher()
        if self._host_watch is None:
            if self.dispatcher is not None:
                self.dispatcher.poke()  # what waits for a host goes out now
            self._host_watch = ChangeFeed.of(memory.store).watch(local=False)
            self._host_lock = register(getattr(memory.store, "path", None))

    @property
    def hosting(self) -> bool:
        """Whether :meth:`host` was called (and not undone)."""
        return self._host_watch is not None

    @property
    def rescuer(self) -> Rescuer | None:
        """The stranded-signal rescuer of this runtime, once started (``ensure_dispatcher``)."""
        return self._rescue

    def rescue_soon(self, thread_id: str) -> None:
        """A signal went into a run of ``thread_id`` that this process does not run (its owner
        may be dead, or may exit before answering): the rescuer looks again now, and minds the
        thread until that run ends (``Rescuer.poke``)."""
        if self._rescue is not None:
            self._rescue.poke(thread_id)

    async def stop_dispatcher(self) -> None:
        """Stop the dispatcher and the rescuer, if they run, and wait for their current pass
        to end."""
        watch, self._host_watch = self._host_watch, None
        if watch is not None:
            watch.close()
        lock, self._host_lock = self._host_lock, None
        if lock is not None:
            lock.release()
        rescuer, self._rescuer = self._rescuer, None
        if rescuer is not None and rescuer.get_loop() is asyncio.get_running_loop():
            rescuer.cancel()
            await asyncio.gather(rescuer, return_exceptions=True)
        await stop_dispatcher(self.agent)

    # -- stranded signals ---------------------------------------------------------------------

    async def rescue_stranded(self) -> list[str]:
        """Take over the threads whose accepted signals wait with no live run (the run's owner
        was killed, or exited while they waited): a new run here answers them. The ids of the
        runs started. Any process with the agent open does this (``ensure_dispatcher`` starts
        the rescuer, which calls it when signals are stranded: ``tui_agent.agent.rescuer``), so
        nothing accepted is stranded while one lives (tests/test_rescue.py)."""
        memory = self.agent.memory
        if memory is None:
            return []
        started = await self.resume_parked()
        for thread_id in await memory.store.stranded_threads():
            rescued = await memory.store.rescue_stranded(
                thread_id, owner=self._owner, ttl_s=memory.lease_ttl_s, agent_id=self.agent.id
            )
            if rescued is not None:
                run_id, resource_id = rescued
                await self.start_woken_run(thread_id, resource_id, run_id, {})
                started.append(run_id)
        return started

    async def resume_parked(self) -> list[str]:
        """Go on for the parked runs of this agent that are answered but whose owner died: a
        new run here executes the answers and goes on (a rescue pass does this, told by the
        store's change feed of the answer; ``Store.resume_parked``). The ids of the runs."""
        memory = self.agent.memory
        if memory is None:
            return []
        started: list[str] = []
        for thread_id in await memory.store.resumable_threads():
            resumed = await memory.store.resume_parked(
                thread_id, owner=self._owner, ttl_s=memory.lease_ttl_s, agent_id=self.agent.id
            )
            if resumed is not None:
                run_id, resource_id, answers = resumed
                await self.start_woken_run(thread_id, resource_id, run_id, {}, answers)
                started.append(run_id)
        return started

    async def set_aside_parked(self) -> list[str]:
        """This process closes: the runs waiting for answers (with memory) stop waiting here
        without an end, their calls pending and their threads held, their leases given up, so
        whoever answers goes on with them — pending approvals survive the process
        (tests/test_approvals.py). The ids of the runs set aside."""
        ids = self._parked.set_aside_all()
        tasks = [run.output.task for run_id in ids if (run := self._runs.get(run_id))]
        waiting = [task for task in tasks if task is not None and not task.done()]
        if waiting:
            await asyncio.wait(waiting)
        return ids

    # -- settling -----------------------------------------------------------------------------

    async def settle(self, timeout: float | None) -> bool:
        """Wait (never cancelling) until :meth:`pending` is empty; False if ``timeout`` seconds
        passed first."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while pending := self.pending():
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(pending, timeout=left)
        return True

    async def stop_work(self, timeout: float | None) -> list[str]:
        """Abort the runs still going until nothing is left: a run that starts meanwhile (a
        queued one, whose turn came when the one before it ended) is aborted too, once it runs
        (cancelled before, it would keep the thread's lease). After ``timeout`` more seconds,
        cancel what is left. The ids of the aborted runs."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        aborted: list[str] = []
        while pending := self.pending():
            for output in self.outputs():
                if output.abort() and output.run_id not in aborted:
                    aborted.append(output.run_id)
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending, timeout=timeout)
                break
            await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        return aborted


class _EarlyClaims:
    """The woken runs whose routing claimed their start (``ThreadRuntime.claimed_early``) and
    have not started yet: for each, the signals it took, and whether one was delivered into it
    since (its run must take that before its first call). Checked by
    tests/test_wake_path.py."""

    __slots__ = ("_late", "_taken")

    def __init__(self) -> None:
        self._taken: dict[str, set[str]] = {}
        self._late: set[str] = set()

    def claimed(self, run_id: str, started: WakeStart) -> None:
        self._taken[run_id] = {signal["id"] for signal in started.taken}

    def delivered(self, run_id: str, signal_id: str) -> None:
        taken = self._taken.get(run_id)
        if taken is not None and signal_id not in taken:
            self._late.add(run_id)

    def late(self, run_id: str) -> bool:
        return run_id in self._late

    def forget(self, run_id: str) -> None:
        self._taken.pop(run_id, None)
        self._late.discard(run_id)


class _Waited:
    """Whether the event loop went round since it was made: the awaits in between suspended,
    so other tasks (a send routing into the run) may have run meanwhile."""

    __slots__ = ("_handle", "_went")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._went = False
        self._handle = loop.call_soon(self._round)

    def _round(self) -> None:
        self._went = True

    def done(self) -> bool:
        self._handle.cancel()
        return self._went


_FIRST_PRUNE = 256  # tracked futures kept before the done ones are dropped (see track)


def _retrieve_exception(task: asyncio.Task[Any]) -> None:
    # A woken run's failure surfaces on its output; nobody may await the task itself.
    if not task.cancelled():
        task.exception()

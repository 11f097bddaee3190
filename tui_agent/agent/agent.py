"""The Agent: instructions, a model, tools with hooks, memory threads and signals.

What the agent has going in this process (runs, background tasks, the lease owner, the
dispatcher) lives in its :class:`~tui_agent.agent.runtime.ThreadRuntime`; a run gets what it
needs from the agent as a :class:`~tui_agent.agent.plan.RunDeps` bundle.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from tui_agent._util import as_dict, json_round_trip, maybe_await
from tui_agent.agent import approvals, editor
from tui_agent.agent.approvals import ApprovalAnswer
from tui_agent.agent.checks import (
    check_agents,
    check_context_schema,
    check_description,
    check_editor,
    check_memory,
    check_metadata,
    check_retries,
    check_scorers,
    check_tools,
    check_workflows,
    named,
    static_or_fn,
)
from tui_agent.agent.delegates import subagent_tool, workflow_tool
from tui_agent.agent.inputs import check_memory_target, check_run_id, input_messages
from tui_agent.agent.instructions import check_instructions, resolve_instructions
from tui_agent.agent.options import RunOptions, parse_hooks, parse_run_options
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.plan import RunDeps, RunPlan, RunView
from tui_agent.agent.processors import (
    ProcessorContext,
    check_processors,
    processor_name,
)
from tui_agent.agent.result import GenerateResult
from tui_agent.agent.router import RoutedElsewhere, SignalReceipt, send
from tui_agent.agent.runtime import PROCESS_OWNER, ThreadRuntime
from tui_agent.agent.subscription import ThreadSubscription, subscribe
from tui_agent.context import RequestContext
from tui_agent.errors import ConfigError, ProcessorError, RequestContextError, ThreadBusyError
from tui_agent.models.resolve import ModelCache, resolve_model, validate_model_spec
from tui_agent.notifications import inbox
from tui_agent.notifications.policy import NotificationsConfig, parse_notifications_config
from tui_agent.state import lanes
from tui_agent.tools import Tool

if TYPE_CHECKING:
    from tui_agent.agent.checks import ContextSchema
    from tui_agent.memory import Memory
    from tui_agent.models.base import LanguageModel
    from tui_agent.store.contract import Store
    from tui_agent.store.records import WakeStart

class Agent:
    def __init__(
        self,
        *,
        name: str,
        instructions: Any,
        model: Any,
        id: str | None = None,
        description: str | None = None,
        metadata: dict[str, Any] | Callable[..., Any] | None = None,
        tools: Mapping[str, Tool] | Callable[..., Any] | None = None,
        agents: Mapping[str, Agent] | Callable[..., Any] | None = None,
        workflows: Mapping[str, Any] | Callable[..., Any] | None = None,
        memory: Any = None,
        hooks: dict[str, Any] | None = None,
        default_options: dict[str, Any] | Callable[..., Any] | None = None,
        input_processors: list[Any] | Callable[..., Any] | None = None,
        output_processors: list[Any] | Callable[..., Any] | None = None,
        max_processor_retries: int | None = None,
        request_context_schema: Any = None,
        editor: bool | dict[str, Any] | None = None,
        scorers: Mapping[str, Any] | Callable[..., Any] | None = None,
        notifications: dict[str, Any] | None = None,
        voice: Any = None,
        mastra: Any = None,
        default_generate_options_legacy: Any = None,
        default_stream_options_legacy: Any = None,
    ) -> None:
        _refuse_unsupported(
            voice=voice,
            mastra=mastra,
            default_generate_options_legacy=default_generate_options_legacy,
            default_stream_options_legacy=default_stream_options_legacy,
        )
        if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("Agent needs a name (a non-empty string)")
        self.name = name
        self.id: str = id or name
        if not isinstance(self.id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"Agent id must be a string, got {type(self.id).__name__}")
        check_instructions(instructions)
        self.instructions = instructions
        validate_model_spec(model)
        self.model = model
        self._models = ModelCache()  # the models its specs resolve to, built once each
        self.description = check_description(description)
        # Every field is checked now (tui_agent.agent.checks: the error names the field and the
        # key). Each below may also be a function of the request context (sync or async), as in
        # the reference: kept as given, resolved and checked once per run (_per_run).
        self.metadata = static_or_fn(metadata, check_metadata)
        self.tools = static_or_fn(tools, check_tools)
        self.agents = static_or_fn(agents, _check_agents)
        self.workflows = static_or_fn(workflows, check_workflows)
        #: The memory, or None; ``memory_fn`` holds a memory given as a function instead.
        self.memory_fn = memory if callable(memory) else None
        self.memory: Memory | None = None if self.memory_fn else check_memory(memory)
        self.hooks = parse_hooks(hooks)
        self.default_options = static_or_fn(default_options, _check_default_options)
        self.input_processors = static_or_fn(input_processors, _input_processors)
        self.output_processors = static_or_fn(output_processors, _output_processors)
        self.max_processor_retries = check_retries(max_processor_retries)
        self.request_context_schema: ContextSchema = check_context_schema(request_context_schema)
        self.editor: Literal[False] | dict[str, Any] = check_editor(editor)
        self.scorers = static_or_fn(scorers, check_scorers)
        self.notifications = notifications
        self._parsed_notifications: tuple[Any, NotificationsConfig] | None = None
        if notifications is not None:  # a bad config fails now, not at the first notification
            parsed = named("notifications", parse_notifications_config, notifications)
            self._parsed_notifications = (notifications, parsed)
        self.runtime = self._new_runtime(PROCESS_OWNER)  # runs, tasks, lease owner, dispatcher

    def __repr__(self) -> str:
        return f"Agent(id={self.id!r}, name={self.name!r})"

    @property
    def notifications_config(self) -> NotificationsConfig:
        """``notifications=`` parsed; parsed again only once the attribute is replaced."""
        raw = self.notifications
        parsed = self._parsed_notifications
        if parsed is None or parsed[0] is not raw:
            parsed = self._parsed_notifications = (raw, parse_notifications_config(raw))
        return parsed[1]

    def __copy__(self) -> Agent:
        """A shallow copy with its own runtime: sharing one, closing the copy would stop the
        original's runs and dispatcher."""
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.runtime = copied._new_runtime(self.runtime.owner)
        return copied

    def _new_runtime(self, owner: str) -> ThreadRuntime:
        return ThreadRuntime(self, plan=self._plan, deps=self._run_deps, owner=owner)

    def _run_deps(self) -> RunDeps:
        """What a run gets from this agent (built as each run starts)."""
        return RunDeps(
            agent=self,
            agent_id=self.id,
            agent_name=self.name,
            memory=self.memory,
            max_processor_retries=self.max_processor_retries,
            process_input=self._process_input,
            process_output_chunk=self._process_output_chunk,
            process_output=self._process_output,
            score=self._score,
            host=self.runtime,
        )

    # -- generate / stream --------------------------------------------------------------------

    async def generate(self, messages: Any, **options: Any) -> GenerateResult:
        """Run to the end and return the result; raises if the run failed."""
        output = await self.stream(messages, **options)
        await output.consume_stream()
        return await output.result()

    async def generate_legacy(self, *args: Any, **kwargs: Any) -> Any:
        """Not applicable: see :data:`_NOT_APPLICABLE`."""
        raise ConfigError(_NOT_APPLICABLE["generate_legacy"])

    async def stream_legacy(self, *args: Any, **kwargs: Any) -> Any:
        """Not applicable: see :data:`_NOT_APPLICABLE`."""
        raise ConfigError(_NOT_APPLICABLE["stream_legacy"])

    async def stream(self, messages: Any, **options: Any) -> AgentOutput:
        """Start a run; the returned output streams its chunks and gives its result."""
        defaults = await self.resolve_default_options(options.get("request_context"))
        run_options = parse_run_options(options, defaults, self.hooks)
        inputs = input_messages(messages)  # bad input raises here: nothing is stored
        if options.get("run_id") is not None:
            run_options.run_id = check_run_id(options["run_id"])
        if run_options.memory is not None:
            target = run_options.memory
            check_memory_target(target.resource_id, target.thread_id, target.metadata)
        plan = await self._plan(run_options, inputs)
        await self._check_new_run_id(run_options.run_id, plan.memory)
        if run_options.memory is not None:
            await self._take_thread(run_options, plan.memory)
        return self.runtime.launch(plan)

    async def retry(self, *, resource_id: str, thread_id: str, **options: Any) -> AgentOutput:
        """A new run on the thread's last input: the answer to its last user message is kept
        in the history, marked superseded by the new run (``Memory.supersede``), and the new
        run's model is given the history without it. ``ThreadBusyError`` while a run is live;
        ``ConfigError`` for a thread with no user message (tests/test_supersede.py)."""
        if self.memory is None:
            raise ConfigError("retry needs memory: Agent(memory=Memory(...))")
        exchange = await self.memory.last_exchange(thread_id)
        if exchange.user is None:
            raise ConfigError(f"thread {thread_id!r} has no message to answer again")
        defaults = await self.resolve_default_options(options.get("request_context"))
        memory = {"resource": resource_id, "thread": thread_id}
        run_options = parse_run_options({**options, "memory": memory}, defaults, self.hooks)
        plan = await self._plan(run_options, [])
        await self._take_thread(run_options, plan.memory)
        # Marked once the lease is ours (no other run can answer in between), before the run
        # reads its history.
        await self.memory.supersede(thread_id, [m.id for m in exchange.answer],
                                    by=run_options.run_id)
        return self.runtime.launch(plan)

    async def resolve_default_options(self, request_context: Any) -> dict[str, Any]:
        """``default_options``, called with the request context when it is a function."""
        return await _per_run(
            self.default_options, RequestContext.coerce(request_context), _check_default_options
        )

    async def resolve_tools(self, request_context: Any = None) -> dict[str, Tool]:
        """The tools a run gets (``tools``, or its function's for the request context, with
        the subagents' and workflows')."""
        return await self._resolve_tools(RequestContext.coerce(request_context))

    # -- tool calls waiting for a person (agent/approvals.py) ---------------------------------

    async def approve_tool_call(
        self, *, run_id: str, tool_call_id: str, args: Any = None
    ) -> ApprovalAnswer:
        """Approve a call run ``run_id`` waits on (``args``: an edited input, checked against
        the tool's schema); the run goes on. ``ApprovalError`` if none waits, and nothing
        changes."""
        return await approvals.approve_tool_call(
            self, run_id=run_id, tool_call_id=tool_call_id, args=args)

    async def decline_tool_call(
        self, *, run_id: str, tool_call_id: str, reason: str | None = None
    ) -> ApprovalAnswer:
        """Decline a call run ``run_id`` waits on: the model gets ``reason`` as the tool's
        error, and the run goes on."""
        return await approvals.decline_tool_call(
            self, run_id=run_id, tool_call_id=tool_call_id, reason=reason)

    async def resolve_metadata(self, request_context: Any = None) -> dict[str, Any]:
        """``metadata``, called with the request context when it is a function."""
        context = RequestContext.coerce(request_context)
        return await _per_run(self.metadata, context, check_metadata)

    async def _check_new_run_id(self, run_id: str, memory: Memory | None) -> None:
        """A run id names one run: reusing one (live here, or stored) is refused."""
        used = self.runtime.run(run_id) is not None
        if not used and memory is not None:
            used = await memory.store.get_run(run_id) is not None
        if used:
            raise ConfigError(f"run_id {run_id!r} is already used by another run; "
                              "give each run its own id (or none: one is made)")

    async def _take_thread(self, options: RunOptions, memory: Memory | None) -> None:
        assert memory is not None and options.memory is not None
        target = options.memory
        started = await memory.store.start_run(
            target.thread_id,
            target.resource_id,
            options.run_id,
            owner=self.runtime.owner,
            ttl_s=memory.lease_ttl_s,
            agent_id=self.id,
            title=target.title,
            metadata=target.metadata,
        )
        if not started:
            active = await memory.store.active_run(target.thread_id)
            raise ThreadBusyError(
                f"thread {target.thread_id!r} already has a live run "
                f"({active.run_id if active else 'finishing'}); use agent.send_message() to "
                f"add to it or agent.queue_message() to run after it"
            )
        self.runtime.ensure_dispatcher()

    async def _plan(
        self, options: RunOptions, input_messages: list[dict[str, Any]],
        known: WakeStart | None = None,
    ) -> RunPlan:
        """Resolve everything a run needs; bad input raises here, before any model call.
        ``known``: what a woken run's start read already (``Store.claim_wake``: the thread's
        model, the stored overrides), read in its claim's transaction instead of two more round
        trips (the runtime passes it only for this agent's own memory)."""
        context = options.request_context
        self._validate_request_context(context)
        memory = self.memory
        if self.memory_fn is not None:
            memory = await _per_run(self.memory_fn, context, check_memory)
        if options.memory is not None and memory is None:
            raise ConfigError(
                "memory option given but the agent has no memory: Agent(memory=Memory(...))"
            )
        if known is None:
            chosen = await _thread_model(memory, options)
            stored = await self._read_overrides(memory)
        else:
            chosen = known.thread_model
            if chosen is not None:
                validate_model_spec(chosen)
            stored = known.overrides or {}
        model = await self._resolve_model(context, chosen)
        edits = editor.allowed_overrides(self.editor, stored)  # the editor's, stored per agent
        instructions = edits.get("instructions", self.instructions)
        if options.instructions is not None:  # the call's own wins
            instructions = options.instructions
        system = await resolve_instructions(instructions, context)
        tools = await self._resolve_tools(context, options.tools_override)
        if "tools" in edits and options.tools_override is None:
            tools = editor.with_stored_tool_edits(tools, edits["tools"])
        specs = [tool.spec(name) for name, tool in tools.items()]
        plan = RunPlan(model, system, tools, specs, options, input_messages)
        plan.memory = memory
        plan.metadata = await _per_run(self.metadata, context, check_metadata)
        plan.input_processors = await _per_run(self.input_processors, context, _input_processors)
        plan.output_processors = await _per_run(self.output_processors, context, _output_processors)
        plan.scorers = await _per_run(self.scorers, context, check_scorers)
        return plan

    async def _resolve_model(
        self, context: RequestContext, chosen: str | None = None
    ) -> LanguageModel:
        """The thread's chosen model (``chosen``, kept with the thread) or the agent's."""
        spec = self.model if chosen is None else chosen
        if callable(spec) and not hasattr(spec, "stream"):
            spec = await maybe_await(spec(context))
            validate_model_spec(spec)
            model = resolve_model(spec)  # the function's: its result may differ per run
        else:
            model = self._models.resolve(spec)
        ensure_ready = getattr(model, "ensure_ready", None)
        if ensure_ready is not None:
            await ensure_ready()
        else:
            model.check_ready()
        return model

    async def _resolve_tools(
        self, context: RequestContext, override: Any = None
    ) -> dict[str, Tool]:
        """The agent's tools (or the call's ``tools_override``), subagents and workflows."""
        tools = self.tools if override is None else override
        if callable(tools):
            tools = check_tools(await maybe_await(tools(context)))
        tools = dict(tools)
        agents = await _per_run(self.agents, context, _check_agents)
        for key, agent in agents.items():
            tools.setdefault(f"agent-{key}", subagent_tool(key, agent))
        workflows = await _per_run(self.workflows, context, check_workflows)
        for key, workflow in workflows.items():
            if callable(workflow):
                tools.setdefault(f"workflow-{key}", workflow_tool(key, workflow))
        return tools

    def _validate_request_context(self, context: RequestContext) -> None:
        schema = self.request_context_schema
        if schema is None:
            return
        values = context.to_dict()
        if isinstance(schema, dict):
            from jsonschema.validators import validator_for

            validator: Any = validator_for(schema)(schema)  # jsonschema has no type hints
            errors: list[Any] = list(validator.iter_errors(values))
            if errors:
                details = "; ".join(
                    f"{'.'.join(map(str, e.path)) or '(context)'}: {e.message}" for e in errors
                )
                raise RequestContextError(f"request context does not match the schema: {details}")
            return
        from pydantic import ValidationError

        try:
            schema.model_validate(values)
        except ValidationError as error:
            details = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(context)'}: {e['msg']}" for e in error.errors()
            )
            raise RequestContextError(
                f"request context does not match {schema.__name__}: {details}"
            ) from None

    # -- processors and scorers (called by the run) -------------------------------------------

    async def _process_input(self, messages: list[Any], run: RunView) -> list[Any]:
        processors = run.plan.input_processors  # resolved for this run
        return await self._apply_processors(processors, "process_input", messages, run)

    async def _process_output_chunk(self, text: str, run: RunView) -> str:
        processors = run.plan.output_processors
        return await self._apply_processors(processors, "process_output_stream", text, run)

    async def _process_output(self, text: str, run: RunView) -> str:
        processors = run.plan.output_processors
        return await self._apply_processors(processors, "process_output_result", text, run)

    async def _apply_processors(
        self, processors: list[Any], method_name: str, value: Any, run: RunView
    ) -> Any:
        """Each processor that has ``method_name`` may replace the value (None: unchanged)."""
        for processor in processors:
            method = getattr(processor, method_name, None)
            if method is not None:
                changed = await maybe_await(method(value, self._processor_context(processor, run)))
                if changed is not None:
                    value = changed
        return value

    def _processor_context(self, processor: Any, run: RunView) -> ProcessorContext:
        return ProcessorContext(
            self, run.run_id, run.options.request_context, processor_name(processor)
        )

    async def _score(self, run: RunView, result: GenerateResult) -> dict[str, Any]:
        """Run the scorers on a finished run; results are stored on the run."""
        scorers = run.plan.scorers  # resolved for this run
        if not scorers:
            return {}
        inputs = [m for m in run.messages if m.get("role") == "user"]
        scores: dict[str, Any] = {}
        for name, scorer in scorers.items():
            fn = getattr(scorer, "score", scorer)
            try:
                scores[name] = await maybe_await(
                    fn({"input": inputs, "output": result.text, "result": result})
                )
            except Exception as error:  # a broken scorer must not fail the answer
                scores[name] = {"error": f"{type(error).__name__}: {error}"}
        if run.memory is not None:
            await run.memory.store.set_run_scores(run.run_id, json_round_trip(scores))
        return scores

    # -- editor -------------------------------------------------------------------------------

    def apply_editor_overrides(self, overrides: dict[str, Any]) -> Agent:
        """A copy of this agent with an editor's overrides, within what ``editor`` allows.
        ``id``, ``name`` and ``model`` are code-owned: dropped, as the reference does."""
        return editor.apply_overrides(self, overrides)

    async def save_editor_overrides(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """Store an editor's overrides for this agent (by ``id``) in its memory's store,
        replacing what was stored; every later run applies them. Storable: ``instructions``
        (strings or system messages) and ``tools`` as ``{name: {"description": ...}}`` or
        ``{name: None}`` (remove), within what ``editor=`` allows. ``id``, ``name`` and
        ``model`` are dropped (code-owned). Returns what was stored."""
        stored = editor.storable_overrides(self, editor.without_code_owned(overrides))
        await self._overrides_store().set_agent_overrides(self.id, stored)
        return stored

    async def editor_overrides(self) -> dict[str, Any]:
        """The editor's overrides stored for this agent ({} when none)."""
        return await self._overrides_store().get_agent_overrides(self.id) or {}

    async def clear_editor_overrides(self) -> None:
        await self._overrides_store().set_agent_overrides(self.id, None)

    def _overrides_store(self) -> Store:
        if self.memory is None:
            raise ConfigError(
                "stored editor overrides live in the memory's store: Agent(memory=Memory(...))"
            )
        return self.memory.store

    async def _read_overrides(self, memory: Memory | None) -> dict[str, Any]:
        """What is stored for this agent ({} when ``editor=False``: nothing is read)."""
        if memory is None or self.editor is False:
            return {}
        return await memory.store.get_agent_overrides(self.id) or {}

    # -- signals, subscriptions, state, notifications -----------------------------------------

    # The target spelled out, not ``**target``: a misspelt keyword is a TypeError naming this
    # method, and a burst of sends packs no dict per call (~0.3 µs each, issue 22).
    def send_message(
        self, message: Any, *, run_id: Any = None, resource_id: Any = None,
        thread_id: Any = None, if_active: Any = None, if_idle: Any = None,
    ) -> SignalReceipt:
        self._check_thread_memory("send_message")
        return send(self, message, "message", run_id, resource_id, thread_id, if_active, if_idle)

    def queue_message(
        self, message: Any, *, run_id: Any = None, resource_id: Any = None,
        thread_id: Any = None, if_active: Any = None, if_idle: Any = None,
    ) -> SignalReceipt:
        self._check_thread_memory("queue_message")
        return send(self, message, "queue", run_id, resource_id, thread_id, if_active, if_idle)

    def send_signal(
        self, signal: Any, *, run_id: Any = None, resource_id: Any = None,
        thread_id: Any = None, if_active: Any = None, if_idle: Any = None,
    ) -> SignalReceipt:
        self._check_thread_memory("send_signal")
        return send(self, signal, "signal", run_id, resource_id, thread_id, if_active, if_idle)

    async def subscribe_to_thread(
        self, *, thread_id: str, resource_id: str | None = None
    ) -> ThreadSubscription:
        self._check_thread_memory("subscribe_to_thread")
        return await subscribe(self, resource_id=resource_id, thread_id=thread_id)

    @property
    def signal_routing(self) -> RoutedElsewhere:
        """For the writes that route their signal in their own transaction (state lanes,
        notifications: ``tui_agent.store.compound``): the send's checks and receipts."""
        return RoutedElsewhere(self)

    async def send_state_signal(self, signal: Any, **target: Any) -> Any:
        self._check_thread_memory("send_state_signal")
        return await lanes.send_state_signal(self, signal, **target)

    async def send_notification_signal(self, notification: Any, **target: Any) -> Any:
        self._check_thread_memory("send_notification_signal")
        return await inbox.send_notification_signal(self, notification, **target)

    def _check_thread_memory(self, what: str) -> None:
        """Signals and subscriptions have no request context to resolve a memory function
        with: they need a memory given as such."""
        if self.memory is None and self.memory_fn is not None:
            raise ConfigError(
                f"{what} needs Agent(memory=Memory(...)): a memory given as a function of the "
                "request context is resolved per generate()/stream() call, and signals and "
                "subscriptions have no request context"
            )

    def local_runs(self) -> list[AgentOutput]:
        """The outputs of this agent's runs that live in this process and are not done."""
        return self.runtime.outputs()

    async def wait_for_local_runs(self) -> None:
        """Wait until this process runs nothing for this agent (a queued message's run may
        start here when the one before it ends: that one is waited for too)."""
        await self.runtime.settle(None)

    async def close(self, *, timeout: float | None = None) -> list[str]:
        """Wait for this agent's runs in this process to end (those of generate()/stream() too:
        a run left going would write to a store its caller closes next, reopening it), then stop
        background work (dispatcher).

        A run waiting for a person's approval is not waited for: it is set aside (its calls
        stay pending, whoever answers them goes on with it; its result raises
        ``RunSetAsideError``). ``timeout`` (seconds) bounds each wait: runs still going after
        it are aborted as ``output.abort()`` does (the partial answer kept, the run ends
        "aborted"; a queued run that starts meanwhile too) and waited for, again at most
        ``timeout``; what is still left then (a run or a signal's routing stuck where an abort
        cannot reach) is cancelled.
        Returns the ids of the runs it had to abort: [] when everything ended in time, as always
        without a timeout."""
        runtime = self.runtime
        aborted: list[str] = []
        await runtime.set_aside_parked()  # runs waiting for approval: answered from anywhere
        if not await runtime.settle(timeout):
            aborted += await runtime.stop_work(timeout)
        with contextlib.suppress(TimeoutError):  # a dispatcher pass stuck past it is cancelled
            await asyncio.wait_for(runtime.stop_dispatcher(), timeout)
        if not await runtime.settle(timeout):  # a run that the dispatcher's last pass woke
            aborted += await runtime.stop_work(timeout)
        from tui_agent.models.http_client import close_shared_client

        await close_shared_client()  # the direct model path's idle keep-alive connections
        return aborted




_LEGACY = (
    "{} belongs to Mastra's legacy generate/stream over its old AI SDK, which tui_agent does "
    "not have: use {} (see docs/choices.md)"
)
#: Options and methods of the reference that are refused with these reasons (docs/choices.md).
_NOT_APPLICABLE = {
    "voice": (
        "voice is not supported: tui_agent has no speech adapter (speak/listen); pass "
        "voice=None or leave it out (see docs/choices.md)"
    ),
    "mastra": (
        "mastra is not applicable: it is the Mastra runtime instance that Mastra injects; "
        "tui_agent has no such runtime (see docs/choices.md)"
    ),
    "default_generate_options_legacy": _LEGACY.format(
        "default_generate_options_legacy", "default_options="
    ),
    "default_stream_options_legacy": _LEGACY.format(
        "default_stream_options_legacy", "default_options="
    ),
    "generate_legacy": _LEGACY.format("generate_legacy()", "generate()"),
    "stream_legacy": _LEGACY.format("stream_legacy()", "stream()"),
}


async def _thread_model(memory: Memory | None, options: RunOptions) -> str | None:
    """The model kept with the run's thread (``Memory.set_thread_model``), if one is."""
    read = getattr(memory, "thread_model", None)  # a memory-like object may not keep one
    if read is None or options.memory is None:
        return None
    chosen = await read(options.memory.thread_id)
    if chosen is not None:
        validate_model_spec(chosen)
    return chosen


def _refuse_unsupported(**given: Any) -> None:
    for name, value in given.items():
        if value is not None:
            raise ConfigError(_NOT_APPLICABLE[name])




async def _per_run(value: Any, context: RequestContext, check: Callable[[Any], Any]) -> Any:
    """An option's value for one run: a function is called with the request context (sync or
    async) and what it returns is checked like a static value, naming the function."""
    static: Any = value  # the user's option, or a function of the context giving it
    if not callable(static) or isinstance(static, Mapping | list | tuple):
        return value
    returned = await maybe_await(static(context))
    try:
        return check(returned)
    except (ConfigError, ProcessorError) as error:
        note = f"{error} (returned by the function of the request context)"
        raise type(error)(note) from None








def _check_default_options(options: object) -> dict[str, Any]:
    options = as_dict(options, "default_options")
    try:
        parse_run_options({}, options, {})  # bad defaults fail now, not at some later call
    except ConfigError as error:
        raise ConfigError(f"default_options: {error}") from None
    return options


def _input_processors(processors: object) -> list[Any]:
    return check_processors(processors, "input_processors")


def _output_processors(processors: object) -> list[Any]:
    return check_processors(processors, "output_processors")


def _check_agents(agents: object) -> dict[str, Agent]:
    return check_agents(agents, Agent)

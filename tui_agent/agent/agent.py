"""The Agent: instructions, a model, tools with hooks, memory threads and signals.

What the agent has going in this process (runs, background tasks, the lease owner, the
dispatcher) lives in its :class:`~tui_agent.agent.runtime.ThreadRuntime`; a run gets what it
needs from the agent as a :class:`~tui_agent.agent.run.RunDeps` bundle.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from tui_agent._util import as_dict, json_round_trip, maybe_await
from tui_agent.agent.inputs import check_memory_target, check_run_id, input_messages
from tui_agent.agent.instructions import check_instructions, resolve_instructions
from tui_agent.agent.options import RunOptions, parse_hooks, parse_run_options
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.processors import (
    ProcessorContext,
    check_processors,
    processor_name,
)
from tui_agent.agent.result import GenerateResult
from tui_agent.agent.router import SignalReceipt, send
from tui_agent.agent.run import Run, RunDeps, RunPlan
from tui_agent.agent.runtime import PROCESS_OWNER, ThreadRuntime
from tui_agent.agent.subscription import ThreadSubscription, subscribe
from tui_agent.context import RequestContext
from tui_agent.errors import ConfigError, RequestContextError, ThreadBusyError
from tui_agent.models.resolve import resolve_model, validate_model_spec
from tui_agent.notifications import inbox
from tui_agent.notifications.policy import NotificationsConfig, parse_notifications_config
from tui_agent.state import lanes
from tui_agent.tools import Tool, create_tool

_EDITOR_FIELDS = ("instructions", "tools")


class Agent:
    def __init__(
        self,
        *,
        name: str,
        instructions: Any,
        model: Any,
        id: str | None = None,
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        tools: Mapping[str, Tool] | Callable[..., Any] | None = None,
        agents: Mapping[str, Agent] | None = None,
        workflows: Mapping[str, Any] | None = None,
        memory: Any = None,
        hooks: dict[str, Any] | None = None,
        default_options: dict[str, Any] | None = None,
        input_processors: list[Any] | None = None,
        output_processors: list[Any] | None = None,
        max_processor_retries: int | None = None,
        request_context_schema: Any = None,
        editor: bool | dict[str, Any] | None = None,
        scorers: Mapping[str, Any] | None = None,
        notifications: dict[str, Any] | None = None,
        voice: Any = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("Agent needs a name (a non-empty string)")
        self.name = name
        self.id = id or name
        if not isinstance(self.id, str):
            raise ConfigError(f"Agent id must be a string, got {type(self.id).__name__}")
        check_instructions(instructions)
        self.instructions = instructions
        validate_model_spec(model)
        self.model = model
        self.description = description
        self.metadata = dict(metadata or {})
        self.tools = _check_tools(tools)
        self.agents = _check_agents(agents)
        self.workflows = dict(workflows or {})
        self.memory = _check_memory(memory)
        self.hooks = parse_hooks(hooks)
        self.default_options = as_dict(default_options, "default_options")
        parse_run_options({}, self.default_options, {})  # bad defaults fail now, not per call
        self.input_processors = check_processors(input_processors, "input_processors")
        self.output_processors = check_processors(output_processors, "output_processors")
        self.max_processor_retries = 3 if max_processor_retries is None else max_processor_retries
        self.request_context_schema = _check_context_schema(request_context_schema)
        self.editor = _check_editor(editor)
        self.scorers = dict(scorers or {})
        self.notifications = notifications
        self._parsed_notifications: tuple[Any, NotificationsConfig] | None = None
        if notifications is not None:  # a bad config fails now, not at the first notification
            self._parsed_notifications = (notifications, parse_notifications_config(notifications))
        self.voice = voice
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
            runtime=self.runtime,
        )

    # -- generate / stream --------------------------------------------------------------------

    async def generate(self, messages: Any, **options: Any) -> GenerateResult:
        """Run to the end and return the result; raises if the run failed."""
        output = await self.stream(messages, **options)
        await output.consume_stream()
        return await output.result()

    async def stream(self, messages: Any, **options: Any) -> AgentOutput:
        """Start a run; the returned output streams its chunks and gives its result."""
        run_options = parse_run_options(options, self.default_options, self.hooks)
        inputs = input_messages(messages)  # bad input raises here: nothing is stored
        if options.get("run_id") is not None:
            run_options.run_id = check_run_id(options["run_id"])
        if run_options.memory is not None:
            target = run_options.memory
            check_memory_target(target.resource_id, target.thread_id, target.metadata)
        await self._check_new_run_id(run_options.run_id)
        plan = await self._plan(run_options, inputs)
        if run_options.memory is not None:
            await self._take_thread(run_options)
        return self.runtime.launch(plan)

    async def _check_new_run_id(self, run_id: str) -> None:
        """A run id names one run: reusing one (live here, or stored) is refused."""
        used = self.runtime.run(run_id) is not None
        if not used and self.memory is not None:
            used = await self.memory.store.get_run(run_id) is not None
        if used:
            raise ConfigError(f"run_id {run_id!r} is already used by another run; "
                              "give each run its own id (or none: one is made)")

    async def _take_thread(self, options: RunOptions) -> None:
        assert self.memory is not None and options.memory is not None
        target = options.memory
        started = await self.memory.store.start_run(
            target.thread_id,
            target.resource_id,
            options.run_id,
            owner=self.runtime.owner,
            ttl_s=self.memory.lease_ttl_s,
            agent_id=self.id,
            title=target.title,
            metadata=target.metadata,
        )
        if not started:
            active = await self.memory.store.active_run(target.thread_id)
            raise ThreadBusyError(
                f"thread {target.thread_id!r} already has a live run "
                f"({active.run_id if active else 'finishing'}); use agent.send_message() to "
                f"add to it or agent.queue_message() to run after it"
            )
        self.runtime.ensure_dispatcher()

    async def _plan(self, options: RunOptions, input_messages: list[dict[str, Any]]) -> RunPlan:
        """Resolve everything a run needs; bad input raises here, before any model call."""
        if options.memory is not None and self.memory is None:
            raise ConfigError(
                "memory option given but the agent has no memory: Agent(memory=Memory(...))"
            )
        context = options.request_context
        self._validate_request_context(context)
        model = await self._resolve_model(context)
        system = await resolve_instructions(self.instructions, context)
        tools = await self._resolve_tools(context)
        specs = [tool.spec(name) for name, tool in tools.items()]
        return RunPlan(model, system, tools, specs, options, input_messages)

    async def _resolve_model(self, context: RequestContext) -> Any:
        spec = self.model
        if callable(spec) and not hasattr(spec, "stream"):
            spec = await maybe_await(spec(context))
            validate_model_spec(spec)
        model = resolve_model(spec)
        ensure_ready = getattr(model, "ensure_ready", None)
        if ensure_ready is not None:
            await ensure_ready()
        else:
            model.check_ready()
        return model

    async def _resolve_tools(self, context: RequestContext) -> dict[str, Tool]:
        tools = self.tools
        if callable(tools):
            tools = _check_tools(await maybe_await(tools(context)))
        tools = dict(tools)
        for key, agent in self.agents.items():
            tools.setdefault(f"agent-{key}", _subagent_tool(key, agent))
        for key, workflow in self.workflows.items():
            if callable(workflow):
                tools.setdefault(f"workflow-{key}", _workflow_tool(key, workflow))
        return tools

    def _validate_request_context(self, context: RequestContext) -> None:
        schema = self.request_context_schema
        if schema is None:
            return
        values = context.to_dict()
        if isinstance(schema, dict):
            import jsonschema

            errors = list(jsonschema.validators.validator_for(schema)(schema).iter_errors(values))
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

    async def _process_input(self, messages: list[Any], run: Run) -> list[Any]:
        return await self._apply_processors(self.input_processors, "process_input", messages, run)

    async def _process_output_chunk(self, text: str, run: Run) -> str:
        return await self._apply_processors(
            self.output_processors, "process_output_stream", text, run
        )

    async def _process_output(self, text: str, run: Run) -> str:
        return await self._apply_processors(
            self.output_processors, "process_output_result", text, run
        )

    async def _apply_processors(
        self, processors: list[Any], method_name: str, value: Any, run: Run
    ) -> Any:
        """Each processor that has ``method_name`` may replace the value (None: unchanged)."""
        for processor in processors:
            method = getattr(processor, method_name, None)
            if method is not None:
                changed = await maybe_await(method(value, self._processor_context(processor, run)))
                if changed is not None:
                    value = changed
        return value

    def _processor_context(self, processor: Any, run: Run) -> ProcessorContext:
        return ProcessorContext(
            self, run.run_id, run.options.request_context, processor_name(processor)
        )

    async def _score(self, run: Run, result: GenerateResult) -> dict[str, Any]:
        """Run the scorers on a finished run; results are stored on the run."""
        if not self.scorers:
            return {}
        inputs = [m for m in run.messages if m.get("role") == "user"]
        scores: dict[str, Any] = {}
        for name, scorer in self.scorers.items():
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
        """A copy of this agent with an editor's overrides, within what ``editor`` allows."""
        from copy import copy

        forbidden = {"id", "name", "model"} & set(overrides)
        if forbidden:
            raise ConfigError(f"an editor can never override {sorted(forbidden)}")
        unknown = set(overrides) - set(_EDITOR_FIELDS)
        if unknown:
            raise ConfigError(f"unknown editor override(s) {sorted(unknown)}")
        allowed = self.editor
        if allowed is False and overrides:
            raise ConfigError(f"agent {self.id!r} is locked (editor=False)")
        edited = copy(self)  # with its own runtime (__copy__)
        if "instructions" in overrides:
            if not allowed.get("instructions", False):
                raise ConfigError(f"agent {self.id!r} does not allow editing instructions")
            check_instructions(overrides["instructions"])
            edited.instructions = overrides["instructions"]
        if "tools" in overrides:
            edited.tools = _edit_tools(self, allowed.get("tools", False), overrides["tools"])
        return edited

    # -- signals, subscriptions, state, notifications -----------------------------------------

    def send_message(self, message: Any, **target: Any) -> SignalReceipt:
        return send(self, message, kind="message", **target)

    def queue_message(self, message: Any, **target: Any) -> SignalReceipt:
        return send(self, message, kind="queue", **target)

    def send_signal(self, signal: Any, **target: Any) -> SignalReceipt:
        return send(self, signal, kind="signal", **target)

    async def subscribe_to_thread(self, *, resource_id: str, thread_id: str) -> ThreadSubscription:
        return await subscribe(self, resource_id=resource_id, thread_id=thread_id)

    async def send_state_signal(self, signal: Any, **target: Any) -> Any:
        return await lanes.send_state_signal(self, signal, **target)

    async def send_notification_signal(self, notification: Any, **target: Any) -> Any:
        return await inbox.send_notification_signal(self, notification, **target)

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

        ``timeout`` (seconds) bounds each wait: runs still going after it are aborted as
        ``output.abort()`` does (the partial answer kept, the run ends "aborted"; a queued run
        that starts meanwhile too) and waited for, again at most ``timeout``; what is still left
        then (a run or a signal's routing stuck where an abort cannot reach) is cancelled.
        Returns the ids of the runs it had to abort: [] when everything ended in time, as always
        without a timeout."""
        runtime = self.runtime
        aborted: list[str] = []
        if not await runtime.settle(timeout):
            aborted += await runtime.stop_work(timeout)
        with contextlib.suppress(TimeoutError):  # a dispatcher pass stuck past it is cancelled
            await asyncio.wait_for(runtime.stop_dispatcher(), timeout)
        if not await runtime.settle(timeout):  # a run that the dispatcher's last pass woke
            aborted += await runtime.stop_work(timeout)
        from tui_agent.models.http_client import close_shared_client

        await close_shared_client()  # the direct model path's idle keep-alive connections
        return aborted


def _check_tools(tools: Any) -> Any:
    if tools is None:
        return {}
    if callable(tools) and not isinstance(tools, Mapping):
        return tools
    if not isinstance(tools, Mapping):
        raise ConfigError(
            f"tools must be a dict {{name: tool}} or a callable, not {type(tools).__name__}"
        )
    for name, tool in tools.items():
        if not isinstance(tool, Tool):
            raise ConfigError(f"tools[{name!r}] is not a tool: build it with create_tool(...)")
    return dict(tools)


def _check_agents(agents: Any) -> dict[str, Agent]:
    if agents is None:
        return {}
    if not isinstance(agents, Mapping):
        raise ConfigError("agents must be a dict {name: Agent}")
    for name, agent in agents.items():
        if not isinstance(agent, Agent):
            raise ConfigError(f"agents[{name!r}] is not an Agent")
    return dict(agents)


def _check_memory(memory: Any) -> Any:
    if memory is None:
        return None
    if not hasattr(memory, "store") or not hasattr(memory, "model_history"):
        raise ConfigError(f"memory must be a Memory(...), not {type(memory).__name__}")
    return memory


def _check_context_schema(schema: Any) -> Any:
    if schema is None or isinstance(schema, dict):
        return schema
    if isinstance(schema, type) and hasattr(schema, "model_validate"):
        return schema
    raise ConfigError("request_context_schema must be a pydantic model class or a JSON schema")


def _check_editor(editor: Any) -> Any:
    if editor is None:
        return {"instructions": True, "tools": True}  # the reference's default
    if editor is False:
        return False
    if not isinstance(editor, dict) or set(editor) - set(_EDITOR_FIELDS):
        raise ConfigError(
            "editor must be False or {'instructions': bool, 'tools': bool | {'description': bool}}"
        )
    return editor


def _edit_tools(agent: Agent, allowed: Any, changes: Any) -> dict[str, Tool]:
    """Editor tool overrides: ``{name: {"description": ...} | None(remove) | Tool(add)}``."""
    if not allowed:
        raise ConfigError(f"agent {agent.id!r} does not allow editing tools")
    descriptions_only = isinstance(allowed, dict)
    if descriptions_only and not allowed.get("description"):
        raise ConfigError(f"agent {agent.id!r} does not allow editing tools")
    if callable(agent.tools):
        raise ConfigError("tools given as a callable cannot be edited")
    tools = dict(agent.tools)
    for name, change in dict(changes).items():
        if isinstance(change, dict) and set(change) <= {"description"}:
            if name not in tools:
                raise ConfigError(f"no tool {name!r} to describe")
            from dataclasses import replace

            tools[name] = replace(tools[name], description=change["description"])
        elif descriptions_only:
            raise ConfigError(f"agent {agent.id!r} allows editing tool descriptions only")
        elif change is None:
            tools.pop(name, None)
        elif isinstance(change, Tool):
            tools[name] = change
        else:
            raise ConfigError(f"tool override {name!r} must be {{'description'}}, None or a Tool")
    return tools


def _subagent_tool(key: str, agent: Agent) -> Tool:
    async def ask(tool_input: dict[str, Any], context: Any) -> str:
        result = await agent.generate(tool_input["prompt"], request_context=context.request_context)
        return result.text

    return create_tool(
        id=f"agent-{key}",
        description=agent.description or f"Ask the agent {agent.name!r}; give it a prompt.",
        input_schema={
            "type": "object",
            "properties": {"prompt": {"type": "string"}},
            "required": ["prompt"],
        },
        execute=ask,
    )


def _workflow_tool(key: str, workflow: Callable[..., Any]) -> Tool:
    async def run(tool_input: dict[str, Any]) -> Any:
        return await maybe_await(workflow(tool_input.get("input_data")))

    return create_tool(
        id=f"workflow-{key}",
        description=getattr(workflow, "__doc__", None) or f"Run the workflow {key!r}.",
        input_schema={"type": "object", "properties": {"input_data": {}}},
        execute=run,
    )


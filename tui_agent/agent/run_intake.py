"""What comes into a run: the thread's history and the call's input messages when it starts
(stored as the model saw them, each user input echoed), and between steps the signals pending
on its thread (taken in one transaction with what the step produced; a memoryless run takes
those sent to it in this process: tests/test_signals_without_memory.py).

A user input's stored echo refers to its stored message for its contents, so the text is
stored once (tests/test_store_once.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tui_agent.agent.inputs import model_input
from tui_agent.agent.output import AgentOutput
from tui_agent.agent.ports import RunMemory
from tui_agent.agent.run_log import RunLog
from tui_agent.events import DATA_USER_MESSAGE, FROM_USER, ChunkType, Source, echo_source, echo_type
from tui_agent.store.records import EventIn, MessageIn

Emit = Callable[[ChunkType, dict[str, Any], Source, EventIn | None], None]


class RunIntake:
    """The messages a run's model gets from outside the run. ``answer_owed``: it took signals
    and has not answered them yet."""

    def __init__(
        self,
        run_id: str,
        output: AgentOutput,
        memory: RunMemory | None,
        log: RunLog | None,
        emit: Emit,
    ) -> None:
        self._run_id, self._output, self._memory, self._log, self._emit = (
            run_id, output, memory, log, emit)
        self._local: list[dict[str, Any]] = []  # memoryless runs only
        self.accepting = True
        self.answer_owed = False

    async def start(
        self, system: list[dict[str, Any]], inputs: list[dict[str, Any]],
        last_messages: int | None, *, take_signals: bool = True,
        started: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
        started_late: bool = False,
    ) -> list[dict[str, Any]]:
        """The run's first messages: its system messages, the thread's history, the inputs
        (stored and echoed, with memory), then the pending signals (unless not
        ``take_signals``: a run going on for a parked one takes them after its tool calls).
        ``started``: a woken run's history and signals, claimed before it started
        (``RunPlan.started``): nothing more is read, unless ``started_late`` (its plan waited
        after the claim): then the signals sent meanwhile are taken too."""
        messages = list(system)
        if started is not None:
            history, taken = started
            messages += history
            self._took(messages, taken)
            if started_late:
                await self.take_signals(messages)
            return messages
        model_inputs = [model_input(m) for m in inputs]  # user text neutralised, as signals'
        memory, log = self._memory, self._log
        if memory is None or log is None:
            return messages + model_inputs
        if not take_signals:
            return messages + await memory.model_history(log.thread_id, last_messages)
        if not inputs and not log.pending:  # a woken run: history and signals in one trip
            history, taken = await memory.history_and_signals(
                log.thread_id, log.resource_id, self._run_id, last_messages)
            messages += history
            self._took(messages, taken)
            return messages
        messages += await memory.model_history(log.thread_id, last_messages)
        if inputs:
            # Stored as the model saw them, each in its own role (a system message stays one).
            stored = [MessageIn(m["role"], m["content"], self._run_id) for m in model_inputs]
            for message, m in zip(stored, inputs, strict=True):
                if m["role"] != "user":
                    continue  # the caller's own system/assistant turns: history, not chat
                self._emit(
                    DATA_USER_MESSAGE,
                    {"id": message.id, "type": "user", "contents": m["content"]},
                    FROM_USER,
                    self._input_echo(message, m["content"]),
                )
            await log.write(stored)
            messages += model_inputs
        await self.take_signals(messages)
        return messages

    def _input_echo(self, message: MessageIn, contents: Any) -> EventIn | None:
        """The stored echo of a user input: a reference to its message when its contents are
        the message's content; None (a copy) when neutralising changed them."""
        if message.content is not contents and message.content != contents:
            return None
        payload = {"id": message.id, "type": "user"}
        return EventIn(DATA_USER_MESSAGE, payload, self._run_id, FROM_USER, message_id=message.id)

    async def take_signals(
        self, messages: list[dict[str, Any]], produced: list[MessageIn] | None = None
    ) -> list[str]:
        """Store what the step ``produced`` and take the pending signals, in one transaction;
        each is appended to ``messages`` and echoed. The ids of the signals taken."""
        if produced and produced[0].role == "assistant" and not produced[0].metadata:
            self.answer_owed = False  # a final answer (no tool calls) to what it took
        memory, log = self._memory, self._log
        if memory is None or log is None:
            taken, self._local = self._local, []
        else:
            taken = await memory.store.claim_signals(
                log.thread_id,
                log.resource_id,
                self._run_id,
                messages_before=produced or (),
                events_before=log.take(),
            )
        self._took(messages, taken)
        return [signal["id"] for signal in taken]

    def _took(self, messages: list[dict[str, Any]], taken: list[dict[str, Any]]) -> None:
        """Signals taken into the run: each appended to ``messages`` and echoed."""
        self.answer_owed = self.answer_owed or bool(taken)
        for signal in taken:
            messages.append(signal["message"])
            self._output.push(
                {
                    "type": echo_type(signal["type"]),
                    "run_id": self._run_id,
                    "from": echo_source(signal["type"]),
                    "payload": signal["data"],
                }
            )

    def deliver_local(self, signal: dict[str, Any]) -> bool:
        """Hand a signal to this memoryless run (taken between steps). False once the run has
        taken its last signals: it would never see this one."""
        if not self.accepting:
            return False
        self._local.append(signal)
        return True
